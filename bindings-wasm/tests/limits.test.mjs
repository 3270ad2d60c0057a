// Sizes are checked before bytes are copied into WebAssembly memory (issue 13, finding 6): a
// 100 MB body is refused with the documented error, and the module's memory (which never
// shrinks) does not grow by more than a little. Each case runs in a fresh process
// (limits-case.mjs), so a copy made by one case cannot hide another's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Landlord, Lease, Policy, decodeReply, ErrorCode } from 'leasehold';

const MB = 1 << 20;
const script = fileURLToPath(new URL('./limits-case.mjs', import.meta.url));

function run(name) {
  const out = JSON.parse(execFileSync(process.execPath, ['--max-old-space-size=4096', script, name], { encoding: 'utf8' }));
  assert.ok(out.grown <= MB, `${name}: wasm memory grew by ${out.grown} bytes`);
  assert.equal(out.after, 10, `${name}: the landlord still grants afterwards`);
  return out;
}

test('Landlord.handleBytes refuses 100 MB (bytes, views, JSON text) before copying it', () => {
  for (const name of ['landlord-bytes', 'landlord-subarray', 'landlord-arraybuffer', 'landlord-dataview', 'landlord-json']) {
    const { result: r } = run(name);
    assert.equal(r.id, 0, name);
    assert.equal(r.op, 'error', name);
    assert.equal(r.code, ErrorCode.DECODE, name);
    assert.match(r.message, /^message is (at least )?\d+ bytes, more than the 1048576 allowed$/, name);
  }
});

test('RenewalService.handleBytes refuses 100 MB before copying it', () => {
  const { result: r } = run('service-bytes');
  assert.equal(r.op, 'error');
  assert.equal(r.code, ErrorCode.DECODE);
  assert.equal(r.landlord, '0000000000000002');
});

test('decodeRequest and decodeReply throw DecodeError for 100 MB without copying it', () => {
  for (const name of ['decodeRequest-bytes', 'decodeRequest-json', 'decodeReply-bytes', 'decodeReply-limit']) {
    const { error } = run(name);
    assert.equal(error?.name, 'DecodeError', name);
    assert.equal(error.code, ErrorCode.DECODE);
    assert.match(error.message, /more than the 1048576 allowed/, name);
  }
});

test('Lease.fromBytes, Lease.fromJson and a Landlord seed check the length first', () => {
  assert.match(run('lease-fromBytes').error.message, /a binary lease is 36 bytes, got 100000000/);
  assert.equal(run('lease-fromBytes').error.name, 'DecodeError');
  const j = run('lease-fromJson').error;
  assert.equal(j.name, 'DecodeError');
  assert.match(j.message, /more than the 1024 allowed/);
  const s = run('landlord-seed').error;
  assert.equal(s.name, 'InvalidArgumentError');
  assert.match(s.message, /seed must be 32 bytes, got 100000000/);
});

test('the limit is the configured one; within it, messages and leases still work', () => {
  const small = new Landlord({ id: 1, seed: new Uint8Array(32), policy: Policy.fixed(1000), limits: { maxMessageBytes: 64 } });
  const r = decodeReply(small.handleBytes(new Uint8Array(65), 0));
  assert.equal(r.body.message, 'message is 65 bytes, more than the 64 allowed');
  assert.throws(() => Lease.fromBytes('x'.repeat(5), 0), TypeError, 'a string is still a type error');
  const lease = small.lease(small.grant('r', 100, 0).cookie, 0);
  assert.ok(Lease.fromBytes(lease.toBytes(1), 1).equals(lease));
});
