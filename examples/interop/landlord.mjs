// The Node landlord of the interop test: serves POST over loopback HTTP, commands on stdin.
// Usage: node landlord.mjs ID   (the line protocol is in examples/interop/README.md)
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';
import { Landlord, Policy } from 'leasehold';

const id = process.argv[2];
if (!/^[0-9]+$/.test(id ?? '')) {
  console.error('usage: node landlord.mjs ID');
  process.exit(2);
}
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const landlord = new Landlord({
  id: Number(id),
  policy: Policy.bounded(60_000, 30_000),
  seed: new Uint8Array(randomBytes(32)),
});

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    const reply = landlord.handleBytes(new Uint8Array(Buffer.concat(chunks)), Date.now(), json ? 'json' : 'binary');
    res.writeHead(200, {
      'Content-Type': json ? 'application/json' : 'application/octet-stream',
      'Content-Length': reply.length,
    });
    res.end(Buffer.from(reply));
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`url http://127.0.0.1:${server.address().port}/lease`);
});

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const words = line.trim().split(/\s+/);
  let answer;
  if (words.length === 2 && words[0] === 'grant') {
    const now = Date.now();
    const g = landlord.grant('interop', Number(words[1]), now);
    const lease = landlord.lease(g.cookie, now);
    answer = `granted ${g.cookie} ${g.expiration} ${now} ${lease.toJson(now)} ${hex(lease.toBytes(now))}`;
  } else if (words.length === 2 && words[0] === 'query') {
    const got = landlord.get(words[1], Date.now());
    answer = `expiration ${got ? got.expiration : 'none'}`;
  } else {
    answer = `error unknown command ${JSON.stringify(line)}`;
  }
  console.log(answer);
});
lines.on('close', () => server.close());
