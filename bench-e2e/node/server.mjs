// The npm package's landlord served over node:http, the way a Node user would host it: one
// LandlordDriver (expiry on setTimeout) answering `POST <any path>` with driver.serve (binary,
// or JSON for application/json). Prints `listening <port>` once bound.
// Usage: LEASEHOLD_PKG=bindings-wasm/pkg/node.js node server.mjs [PORT]
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';

const { Landlord, LandlordDriver, Policy } = await import(process.env.LEASEHOLD_PKG);
const LEASE = 600_000;
const landlord = new Landlord({ id: 1, policy: Policy.bounded(LEASE, LEASE), seed: new Uint8Array(randomBytes(32)) });
const driver = new LandlordDriver(landlord, { keepAlive: true });

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const json = (req.headers['content-type'] || '').toLowerCase().startsWith('application/json');
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    const reply = driver.serve(json ? body.toString('utf8') : body, json ? 'json' : 'binary');
    res.writeHead(200, {
      'Content-Type': json ? 'application/json' : 'application/octet-stream',
      'Content-Length': typeof reply === 'string' ? Buffer.byteLength(reply) : reply.length,
    });
    res.end(reply);
  });
});
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
