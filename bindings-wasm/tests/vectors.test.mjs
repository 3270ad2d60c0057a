// The shared test vectors of core/tests/vectors (the same files the Rust, C and Python tests
// read): the package must produce and accept exactly the same bytes and text as the core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Lease, encodeRequest, decodeRequest, encodeReply, decodeReply, errorFromWire, ErrorCode,
  LeaseError, UnknownLeaseError, LeaseDeniedError, LeaseMapError, InvalidArgumentError,
  DecodeError, IndefiniteError, DURATION, ABSOLUTE,
} from 'leasehold';

const dir = join(process.env.LEASEHOLD_ROOT, 'core/tests/vectors');
const load = (f) => JSON.parse(readFileSync(join(dir, f), 'utf8'));
const hex = (b) => Buffer.from(b).toString('hex');
const unhex = (s) => new Uint8Array(Buffer.from(s, 'hex'));

// A 64-bit decimal string the way the package gives it: FOREVER is Infinity, safe integers are
// numbers, anything else an exact bigint.
const FOREVER_S = '9223372036854775807';
function ms(s) {
  if (s === FOREVER_S) return Infinity;
  const b = BigInt(s);
  return b >= -(2n ** 53n - 1n) && b <= 2n ** 53n - 1n ? Number(b) : b;
}
const id = (s) => ms(s); // ids are u64: numbers when safe, else bigints
const limits = (l) => l && { maxMessageBytes: l.max_message_bytes, maxBatch: l.max_batch, maxResourceBytes: l.max_resource_bytes };

function leaseFields(l) {
  return { landlord: l.landlord, cookie: l.cookie, expiration: l.expiration, serialFormat: l.serialFormat };
}
function expectLease(d) {
  return { landlord: d.landlord, cookie: d.cookie, expiration: ms(d.expiration), serialFormat: d.format === 'duration' ? DURATION : ABSOLUTE };
}

// The canonical JSON object form of a message -> the package's object form.
function fromMessage(m, kind) {
  const b = { ...m.body };
  if ('resource' in b) b.resource = unhex(b.resource);
  if ('duration' in b) b.duration = ms(b.duration);
  if (b.items) b.items = b.items.map((it) => ({ cookie: it.cookie, duration: ms(it.duration) }));
  if (b.results) b.results = b.results.map((r) => ('duration' in r ? { duration: ms(r.duration) } : { ...r }));
  const out = { id: id(m.id), body: b };
  if (kind === 'reply') return { id: out.id, landlord: m.landlord, body: b };
  return out;
}

test('lease vectors: encode gives the same text and bytes; both decode back', () => {
  const v = load('lease.json');
  assert.ok(v.encode.length > 0);
  for (const c of v.encode) {
    const l = new Lease(c.lease.landlord, c.lease.cookie, ms(c.lease.expiration));
    l.serialFormat = c.lease.format;
    assert.equal(l.toJson(ms(c.write_now)), c.json, c.name);
    assert.equal(hex(l.toBytes(ms(c.write_now))), c.hex, c.name);
    assert.deepEqual(leaseFields(Lease.fromJson(c.json, ms(c.read_now))), expectLease(c.decoded), c.name);
    assert.deepEqual(leaseFields(Lease.fromBytes(unhex(c.hex), ms(c.read_now))), expectLease(c.decoded), c.name);
  }
});

test('lease vectors: decode cases, accepted and refused', () => {
  const v = load('lease.json');
  let refused = 0;
  for (const c of v.decode) {
    const read = () => (c.encoding === 'json' ? Lease.fromJson(c.text, ms(c.read_now)) : Lease.fromBytes(unhex(c.hex), ms(c.read_now)));
    if ('error_code' in c) {
      assert.throws(read, (e) => e instanceof LeaseError && e.code === c.error_code, c.name);
      refused++;
    } else {
      assert.deepEqual(leaseFields(read()), expectLease(c.decoded), c.name);
    }
  }
  assert.ok(refused > 0);
});

test('wire vectors: requests and replies encode to exactly the same JSON and binary', () => {
  const v = load('wire.json');
  for (const [kind, list, enc, dec] of [['request', v.requests, encodeRequest, decodeRequest], ['reply', v.replies, encodeReply, decodeReply]]) {
    assert.ok(list.length > 0);
    for (const c of list) {
      const fromJson = dec(c.json, 'json');
      const fromBin = dec(unhex(c.hex), 'binary');
      assert.deepEqual(fromJson, fromBin, c.name);
      assert.deepEqual(fromJson, fromMessage(c.message, kind), c.name);
      assert.equal(enc(fromJson, 'json'), c.json, c.name);
      assert.equal(hex(enc(fromJson, 'binary')), c.hex, c.name);
      // and from the object form built by hand
      assert.equal(enc(fromMessage(c.message, kind), 'json'), c.json, c.name);
    }
  }
});

test('wire vectors: decode cases (hostile input included) with their limits', () => {
  const v = load('wire.json');
  let refused = 0;
  for (const c of v.decode) {
    const dec = c.kind === 'request' ? decodeRequest : decodeReply;
    const run = () => dec(unhex(c.hex), c.encoding, limits(c.limits));
    if ('error_code' in c) {
      assert.throws(run, (e) => e instanceof DecodeError && e.code === c.error_code, c.name);
      refused++;
    } else {
      assert.deepEqual(run(), fromMessage(c.message, c.kind), c.name);
    }
  }
  assert.ok(refused > 10);
});

test('error vectors: every stable code maps to its class, code and definiteness', () => {
  const v = load('errors.json');
  const cls = {
    unknown_lease: UnknownLeaseError, lease_denied: LeaseDeniedError, lease_map: LeaseMapError,
    invalid_argument: InvalidArgumentError, decode: DecodeError, indefinite: IndefiniteError,
  };
  for (const c of v.codes) {
    assert.equal(ErrorCode[c.name.toUpperCase()], c.code, c.name);
    if (c.code === 0) continue; // "ok" is no error
    const e = errorFromWire({ code: c.code, message: 'm' });
    assert.ok(e instanceof cls[c.name], c.name);
    assert.equal(e.code, c.code);
    if (e instanceof LeaseError) assert.equal(e.isDefinite, c.definite, c.name);
  }
  // an unknown code from a newer peer reads as a decode error, never a crash
  assert.ok(errorFromWire({ code: 99, message: 'x' }) instanceof DecodeError);
});
