// The Node holder of the interop test: reads a lease in DURATION form, renews it over HTTP.
// Usage: node holder.mjs URL LEASE.json LEASE.hex RENEW_MS json|binary
// (the line protocol is in examples/interop/README.md)
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { Lease, encodeRequest, decodeReply } from 'leasehold';

const [url, jsonPath, hexPath, renewText, encoding] = process.argv.slice(2);
if (!['json', 'binary'].includes(encoding)) {
  console.error('usage: node holder.mjs URL LEASE.json LEASE.hex RENEW_MS json|binary');
  process.exit(2);
}
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const text = readFileSync(jsonPath, 'utf8').trim();
const bytes = new Uint8Array(Buffer.from(readFileSync(hexPath, 'utf8').trim(), 'hex'));

// POSTs one message and resolves with the reply body.
function post(body) {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(body);
    const req = request(url, {
      method: 'POST',
      headers: {
        'Content-Type': encoding === 'json' ? 'application/json' : 'application/octet-stream',
        'Content-Length': payload.length,
      },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => res.statusCode === 200
        ? resolve(Buffer.concat(chunks))
        : reject(new Error(`server answered ${res.statusCode}`)));
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('timed out')));
    req.end(payload);
  });
}

// Read both forms at one `now`, and write them back at that same `now`.
let now = Date.now();
const fromJson = Lease.fromJson(text, now);
const fromBytes = Lease.fromBytes(bytes, now);
const out = [
  ['runtime', 'node'],
  ['read_now', now],
  ['read_json', fromJson.expiration],
  ['read_hex', fromBytes.expiration],
  ['reser_json', fromJson.toJson(now)],
  ['reser_hex', hex(fromBytes.toBytes(now))],
];

// Renew over HTTP; the new expiration counts from when the request was sent.
const message = encodeRequest(
  { id: 1, body: { op: 'renew', cookie: fromJson.cookie, duration: Number(renewText) } },
  encoding,
);
const sentAt = Date.now();
const body = await post(message);
const receivedAt = Date.now();
const reply = decodeReply(encoding === 'json' ? body.toString('utf8') : new Uint8Array(body), encoding);
if (reply.body.op !== 'renewed') {
  console.error(`interop (node): renewal refused: ${JSON.stringify(reply.body)}`);
  process.exit(1);
}
const renewed = Lease.fromGrant(fromJson.landlord, fromJson.cookie, sentAt, reply.body.duration);
now = Date.now();
out.push(
  ['sent_at', sentAt],
  ['rtt', receivedAt - sentAt],
  ['granted', reply.body.duration],
  ['renewed', renewed.expiration],
  ['write_now', now],
  ['json', renewed.toJson(now)],
  ['hex', hex(renewed.toBytes(now))],
);
for (const [k, v] of out) console.log(`${k} ${v}`);
