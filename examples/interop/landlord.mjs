// The Node landlord of the interop test: serves POST over loopback HTTP, commands on stdin.
// Durable by default: the landlord is kept in a directory (LandlordDriver.open on node:fs) and
// answers a request, or a command, only once what it changed is on disk.
// Usage: node landlord.mjs ID [--data DIR | --memory]   (default: a new temporary directory,
// removed when stdin closes; the line protocol is in examples/interop/README.md)
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LandlordDriver, MemoryStore, Policy } from 'leasehold';

const [id, ...rest] = process.argv.slice(2);
const memory = rest[0] === '--memory';
const given = rest[0] === '--data' ? rest[1] : undefined;
if (!/^[0-9]+$/.test(id ?? '') || (rest.length > 0 && !memory && !given)) {
  console.error('usage: node landlord.mjs ID [--data DIR | --memory]');
  process.exit(2);
}
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const dir = memory ? undefined : given ?? mkdtempSync(join(tmpdir(), 'leasehold-interop-'));
const driver = await LandlordDriver.open({
  store: memory ? new MemoryStore() : dir,
  landlord: { id: Number(id), policy: Policy.bounded(60_000, 30_000), seed: new Uint8Array(randomBytes(32)) },
});
const landlord = driver.landlord;

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    let reply;
    try {
      reply = await driver.serve(new Uint8Array(Buffer.concat(chunks)), json ? 'json' : 'binary');
    } catch (e) {
      res.writeHead(503).end(`${e.message}\n`);
      return;
    }
    res.writeHead(200, {
      'Content-Type': json ? 'application/json' : 'application/octet-stream',
      'Content-Length': Buffer.byteLength(reply),
    });
    res.end(Buffer.from(reply));
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`url http://127.0.0.1:${server.address().port}/lease`);
});

async function command(line) {
  const words = line.trim().split(/\s+/);
  if (words.length === 2 && words[0] === 'grant') {
    const now = Date.now();
    const g = landlord.grant('interop', Number(words[1]), now);
    driver.update();
    await driver.sync(); // the grant is on disk before anyone hears of it
    const lease = landlord.lease(g.cookie, now);
    return `granted ${g.cookie} ${g.expiration} ${now} ${lease.toJson(now)} ${hex(lease.toBytes(now))}`;
  }
  if (words.length === 2 && words[0] === 'query') {
    const got = landlord.get(words[1], Date.now());
    return `expiration ${got ? got.expiration : 'none'}`;
  }
  return `error unknown command ${JSON.stringify(line)}`;
}

// One command at a time, answered in order.
let queue = Promise.resolve();
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  queue = queue.then(() => command(line)).then((answer) => console.log(answer), (e) => console.log(`error ${e.message}`));
});
lines.on('close', async () => {
  await queue;
  server.close();
  await driver.close();
  if (!given && dir) rmSync(dir, { recursive: true, force: true });
});
