// The word API (cookies as four 32-bit words) and its batches agree with the string API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Landlord, Policy, cookieFromWords, cookieToWords, wasmMemoryBytes, ANY, FOREVER, ErrorCode,
  UnknownLeaseError, LeaseDeniedError, InvalidArgumentError, ArgumentTypeError,
} from 'leasehold';

const seed = (b) => new Uint8Array(32).fill(b);

test('cookieToWords and cookieFromWords round-trip, least significant word first', () => {
  const c = '0123456789abcdef0011223344556677';
  const w = cookieToWords(c);
  assert.deepEqual([...w], [0x44556677, 0x00112233, 0x89abcdef, 0x01234567]);
  assert.equal(cookieFromWords(w), c);
  assert.equal(cookieFromWords(cookieToWords(c.toUpperCase(), new Uint32Array(8), 4), 4), c);
  assert.throws(() => cookieToWords('xyz'), InvalidArgumentError);
  assert.throws(() => cookieToWords(42), ArgumentTypeError);
  assert.throws(() => cookieFromWords(new Uint32Array(3)), InvalidArgumentError);
  assert.throws(() => cookieFromWords([1, 2, 3, 4]), ArgumentTypeError);
});

test('grantWords, renewWords, cancelWords behave as grant, renew, cancel', () => {
  const ll = new Landlord({ id: 3, seed: seed(9), policy: Policy.bounded(60_000, 30_000) });
  const twin = new Landlord({ id: 3, seed: seed(9), policy: Policy.bounded(60_000, 30_000) });
  const words = new Uint32Array(4 * 3);
  for (let i = 0; i < 3; i++) {
    const d = ll.grantWords({ n: i }, i === 2 ? FOREVER : ANY, 100, words, 4 * i);
    const g = twin.grant({ n: i }, i === 2 ? FOREVER : ANY, 100);
    assert.equal(d, i === 2 ? 60_000 : 30_000);
    assert.equal(d, g.duration);
    assert.equal(cookieFromWords(words, 4 * i), g.cookie, 'same cookies as the string API');
  }
  const c1 = cookieFromWords(words, 4);
  assert.equal(ll.renewWords(words, 4, 10_000, 200), 10_000);
  assert.equal(ll.get(c1, 200).expiration, 10_200);
  assert.equal(ll.renew(c1, 5000, 300), 5000, 'the string API takes a word-granted cookie');
  assert.deepEqual(ll.cancelWords(words, 4, 400), { n: 1 });
  assert.throws(() => ll.renewWords(words, 4, 1, 500), UnknownLeaseError);
  assert.throws(() => ll.cancelWords(words, 4, 500), UnknownLeaseError);
  assert.throws(() => ll.renewWords(words, 0, 0.5, 500), InvalidArgumentError);
  assert.throws(() => ll.renewWords(words, 0, '5', 500), ArgumentTypeError);
  assert.throws(() => ll.renewWords(words, 10, 5, 500), InvalidArgumentError, 'offset past the end');
  assert.throws(() => ll.grantWords('x', NaN, 0, words, 0), InvalidArgumentError);
  assert.equal(ll.size, 2);
  // after the errors the fast path still works
  assert.equal(ll.renewWords(words, 0, 1000, 600), 1000);
});

test('grantWords reports a denial with the policy error', () => {
  const ll = new Landlord({ id: 3, seed: seed(2), policy: Policy.capacity(1, Policy.fixed(1000)) });
  const w = new Uint32Array(8);
  ll.grantWords('a', ANY, 0, w, 0);
  assert.throws(() => ll.grantWords('b', ANY, 0, w, 4), LeaseDeniedError);
  assert.deepEqual([...w.subarray(4)], [0, 0, 0, 0]);
});

test('batches: per-lease results, minus the error code for failures, across memory growth', () => {
  const ll = new Landlord({ id: 5, seed: seed(3), policy: Policy.capacity(30_000, Policy.bounded(60_000, 30_000)) });
  const n = 20_000; // more than one chunk, and enough to grow the module's memory
  const resources = Array.from({ length: n }, (_, i) => i);
  const mem0 = wasmMemoryBytes();
  const { cookies, durations, failed } = ll.grantBatch(resources, ANY, 0);
  assert.equal(failed, 0);
  assert.ok(wasmMemoryBytes() > mem0, 'memory grew during the batch');
  assert.ok(durations.every((d) => d === 30_000));
  assert.equal(ll.size, n);
  assert.equal(ll.get(cookieFromWords(cookies, 4 * 12_345), 1).resource, 12_345);
  // a word grant after growth still reads the right cookie
  const w = new Uint32Array(4);
  ll.grantWords('late', 100, 1, w);
  assert.equal(ll.get(cookieFromWords(w), 2).resource, 'late');
  // renew: a cancelled lease and a bad duration fail alone
  ll.cancel(cookieFromWords(cookies, 4 * 7), 2);
  const per = new Float64Array(n).fill(1000);
  per[9] = 0.5;
  const out = ll.renewBatch(cookies, per, 3);
  assert.equal(out[7], -ErrorCode.UNKNOWN_LEASE);
  assert.equal(out[9], -ErrorCode.INVALID_ARGUMENT);
  assert.equal(out.filter((d) => d === 1000).length, n - 2);
  assert.equal(ll.get(cookieFromWords(cookies, 4 * 9), 3).expiration, 30_000, 'a refused renewal leaves the lease');
  // capacity: the batch grants up to the limit, then refuses
  const more = ll.grantBatch(Array.from({ length: 20_000 }, () => 'm'), 1000, 4);
  assert.equal(more.failed, 20_000 - (30_000 - (n - 1 + 1)));
  assert.equal(more.durations[more.durations.length - 1], -ErrorCode.LEASE_DENIED);
  // cancel
  const codes = new Float64Array(n);
  const res = ll.cancelBatch(cookies, 5, codes);
  assert.equal(res.length, n);
  assert.equal(res[7], undefined);
  assert.equal(codes[7], -ErrorCode.UNKNOWN_LEASE);
  assert.equal(res[100], 100);
  assert.equal(codes.filter((c) => c === 0).length, n - 1);
  assert.throws(() => ll.renewBatch(new Uint32Array(5), 1, 0), ArgumentTypeError);
  assert.throws(() => ll.grantBatch('nope', 1, 0), ArgumentTypeError);
});
