// Sizes are checked before bytes are copied into WebAssembly memory (issue 13, finding 6): a
// 100 MB body is refused with the documented error, and the module's memory (which never
// shrinks) does not grow by more than a little.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Landlord, RenewalService, Lease, Policy, decodeRequest, decodeReply, wasmMemoryBytes,
  DecodeError, InvalidArgumentError, ErrorCode,
} from 'leasehold';

const MB = 1 << 20;
const big = new Uint8Array(100 * 1000 * 1000).fill(7);
const bigText = 'x'.repeat(100 * 1000 * 1000);
const seed = new Uint8Array(32).fill(5);

// Runs `f` and checks the module's memory grew by at most 1 MiB while it ran.
function withinMemory(what, f) {
  const before = wasmMemoryBytes();
  const out = f();
  const grown = wasmMemoryBytes() - before;
  assert.ok(grown <= MB, `${what}: wasm memory grew by ${grown} bytes`);
  return out;
}

function errorReply(bytes) {
  return decodeReply(bytes);
}

test('Landlord.handleBytes refuses 100 MB (bytes and JSON text) before copying it', () => {
  const ll = new Landlord({ id: 1, seed, policy: Policy.fixed(1000) });
  for (const [body, enc] of [[big, 'binary'], [big.subarray(1), 'binary'], [big.buffer, 'binary'], [new DataView(big.buffer), 'binary'], [bigText, 'json']]) {
    const reply = withinMemory(`handleBytes ${enc}`, () => ll.handleBytes(body, 0, enc));
    const r = enc === 'json' ? decodeReply(reply, 'json') : errorReply(reply);
    assert.equal(r.id, 0);
    assert.equal(r.body.op, 'error');
    assert.equal(r.body.code, ErrorCode.DECODE);
    assert.match(r.body.message, /message is (at least )?\d+ bytes, more than the 1048576 allowed/);
  }
  // the limit is the configured one, and a message within it still works
  const small = new Landlord({ id: 1, seed, policy: Policy.fixed(1000), limits: { maxMessageBytes: 64 } });
  const r = errorReply(small.handleBytes(new Uint8Array(65), 0));
  assert.equal(r.body.message, 'message is 65 bytes, more than the 64 allowed');
  assert.equal(ll.grant('ok', 10, 0).duration, 10);
});

test('RenewalService.handleBytes refuses 100 MB before copying it', () => {
  const svc = new RenewalService({ id: 2, seed });
  const r = errorReply(withinMemory('service handleBytes', () => svc.handleBytes(big, 0)));
  assert.equal(r.body.op, 'error');
  assert.equal(r.body.code, ErrorCode.DECODE);
  assert.equal(r.landlord, '0000000000000002');
});

test('decodeRequest and decodeReply throw DecodeError for 100 MB without copying it', () => {
  for (const dec of [decodeRequest, decodeReply]) {
    withinMemory(dec.name, () => assert.throws(() => dec(big), (e) => e instanceof DecodeError && /more than the 1048576 allowed/.test(e.message)));
    withinMemory(dec.name, () => assert.throws(() => dec(bigText, 'json'), DecodeError));
    withinMemory(dec.name, () => assert.throws(() => dec(big.subarray(0, 2 * MB), 'binary', { maxMessageBytes: MB }), DecodeError));
  }
});

test('Lease.fromBytes, Lease.fromJson and a Landlord seed check the length first', () => {
  withinMemory('fromBytes', () => assert.throws(() => Lease.fromBytes(big, 0), (e) => e instanceof DecodeError && /a binary lease is 36 bytes, got 100000000/.test(e.message)));
  withinMemory('fromJson', () => assert.throws(() => Lease.fromJson(bigText, 0), (e) => e instanceof DecodeError && /more than the 1024 allowed/.test(e.message)));
  withinMemory('seed', () => assert.throws(() => new Landlord({ id: 1, seed: big, policy: Policy.fixed(1) }), (e) => e instanceof InvalidArgumentError && /seed must be 32 bytes, got 100000000/.test(e.message)));
  assert.throws(() => Lease.fromBytes('x'.repeat(5), 0), TypeError, 'a string is still a type error');
});
