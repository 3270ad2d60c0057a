// Hostile input: random, truncated, oversized and malformed bytes never crash the module and
// never throw anything but the documented errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Landlord, Lease, Policy, decodeRequest, decodeReply, encodeRequest, DecodeError,
  ArgumentTypeError, InvalidArgumentError, ErrorCode,
} from 'leasehold';

// Small deterministic PRNG (xorshift32) so failures reproduce.
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
  };
}

const okError = (e) => e instanceof DecodeError || e instanceof InvalidArgumentError || e instanceof ArgumentTypeError;

test('random and mutated bytes: decode errors only, landlord keeps answering', () => {
  const ll = new Landlord({ id: 3, seed: new Uint8Array(32), policy: Policy.fixed(1000) });
  const r = rng(12345);
  const valid = [
    encodeRequest({ id: 1, body: { op: 'grant', resource: new Uint8Array([9, 9]), duration: 5 } }),
    encodeRequest({ id: 2, body: { op: 'renew_all', items: [['ab'.repeat(16), 5], ['cd'.repeat(16), 6]] } }),
    encodeRequest({ id: 3, body: { op: 'cancel_all', cookies: ['ab'.repeat(16)] } }),
  ];
  let decodeErrors = 0;
  for (let i = 0; i < 3000; i++) {
    let b;
    if (i % 3 === 0) {
      b = new Uint8Array(r() % 64).map(() => r() & 0xff);
    } else {
      const base = valid[i % valid.length];
      b = base.slice(0, r() % (base.length + 1));
      if (b.length && i % 2) b[r() % b.length] ^= 1 << (r() % 8);
    }
    for (const dec of [decodeRequest, decodeReply]) {
      try {
        dec(b);
      } catch (e) {
        assert.ok(e instanceof DecodeError, `unexpected ${e}`);
        assert.equal(e.code, ErrorCode.DECODE);
        decodeErrors++;
      }
    }
    try { Lease.fromBytes(b, 0); } catch (e) { assert.ok(e instanceof DecodeError); }
    const reply = decodeReply(ll.handleBytes(b, i));
    assert.equal(typeof reply.body.op, 'string');
  }
  assert.ok(decodeErrors > 1000);
  // still healthy afterwards
  assert.equal(ll.grant('after', 10, 5000).duration, 10);
});

test('announced counts larger than the message, oversized messages and batches', () => {
  // renew_all claiming 2^32-1 entries with nothing behind it
  const b = new Uint8Array([0x4c, 1, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 4, 0xff, 0xff, 0xff, 0xff]);
  assert.throws(() => decodeRequest(b), /batch of 4294967295 leases is more than the 10000 allowed/);
  // resource length past the limit
  const g = new Uint8Array([0x4c, 1, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0x7f, 0xff, 0xff, 0xff]);
  assert.throws(() => decodeRequest(g), DecodeError);
  assert.throws(() => decodeRequest(new Uint8Array(2_000_000)), /more than the 1048576 allowed/);
  assert.throws(() => decodeRequest(new Uint8Array(100), 'binary', { maxMessageBytes: 10 }), /more than the 10 allowed/);
  const many = { id: 1, body: { op: 'cancel_all', cookies: Array(11).fill('00'.repeat(16)) } };
  assert.throws(() => decodeRequest(encodeRequest(many), 'binary', { maxBatch: 10 }), /batch of 11/);
});

test('malformed JSON: deep nesting, wrong types, unknown fields, huge numbers', () => {
  const texts = [
    '['.repeat(100000),
    '{"v":1,"id":1,"body":{"op":"renew","cookie":"zz","duration":5}}',
    '{"v":1,"id":1,"body":{"op":"renew","cookie":"' + 'ab'.repeat(16) + '","duration":5,"x":1}}',
    '{"v":1,"id":-1,"body":{"op":"cancel","cookie":"' + 'ab'.repeat(16) + '"}}',
    '{"v":1,"id":1,"body":{"op":"grant","resource":"abc","duration":5}}',
    '{"v":1,"id":1,"body":{"op":"renew","cookie":"' + 'ab'.repeat(16) + '","duration":99999999999999999999999}}',
    '{"v":9,"id":1,"body":{"op":"cancel","cookie":"' + 'ab'.repeat(16) + '"}}',
    '\u0000\uffff',
    '',
  ];
  for (const t of texts) {
    assert.throws(() => decodeRequest(t, 'json'), DecodeError, t.slice(0, 60));
  }
  assert.throws(() => Lease.fromJson('{"v":1,"format":"duration","landlord":"0000000000000001","cookie":"' + 'ab'.repeat(16) + '"}', 0), DecodeError);
});

test('hostile JavaScript values: wrong shapes give TypeError/RangeError, never a crash', () => {
  const ll = new Landlord({ id: 3, seed: new Uint8Array(32), policy: Policy.fixed(1000) });
  const weird = [undefined, null, 0, -0, NaN, Infinity, '', 'x'.repeat(1e5), {}, [], Symbol('s'), () => 1, 1n, new Uint8Array(4), { valueOf: () => 5 }];
  for (const v of weird) {
    for (const call of [
      () => ll.grant('r', v, 0),
      () => ll.grant('r', 10, v),
      () => ll.renew(v, 10, 0),
      () => ll.cancel(v, 0),
      () => ll.renewAll(v, 0),
      () => ll.cancelAll(v, 0),
      () => ll.handleRequest(v, 0),
      () => ll.handleRequest({ id: v, body: { op: 'cancel', cookie: 'ab'.repeat(16) } }, 0),
      () => ll.handleBytes(v, 0),
      () => encodeRequest(v),
      () => new Lease(v, 'ab'.repeat(16), 0),
      () => new Landlord({ id: 1, policy: v }),
      () => new Landlord({ id: v, policy: Policy.fixed(1) }),
    ]) {
      try {
        call();
      } catch (e) {
        assert.ok(okError(e) || e instanceof Error, `not an Error: ${String(e)}`);
        assert.ok(!(e instanceof WebAssembly.RuntimeError), `wasm trap: ${e}`);
      }
    }
  }
  // the landlord still works
  assert.equal(ll.grant('ok', 5, 1).duration, 5);
});
