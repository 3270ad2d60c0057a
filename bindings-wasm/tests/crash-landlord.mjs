// A durable Node landlord over loopback HTTP, for the crash test: serves POST /lease with
// `LandlordDriver.open` on the directory given, replying only once each answer is durable.
// Usage: node crash-landlord.mjs DIR PORT   (prints "url ..." and "recovered {...}" when up)
import { createServer } from 'node:http';
import { LandlordDriver, Policy } from 'leasehold';

const [dir, port] = process.argv.slice(2);
const driver = await LandlordDriver.open({
  store: dir,
  landlord: { id: 0xc4a5, policy: Policy.bounded(60_000, 30_000) },
  onError: (e) => console.error(`landlord: ${e?.stack ?? e}`),
});
console.log(`recovered ${JSON.stringify(driver.recovery)}`);
const server = createServer(async (req, res) => {
  if (req.url === '/healthz') {
    res.writeHead(200).end('ok\n');
    return;
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const json = (req.headers['content-type'] ?? '').startsWith('application/json');
  try {
    const reply = await driver.serve(new Uint8Array(Buffer.concat(chunks)), json ? 'json' : 'binary');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/octet-stream' }).end(reply);
  } catch (e) {
    res.writeHead(503, { 'retry-after': '1' }).end(`${e.message}\n`);
  }
});
server.keepAliveTimeout = 60_000;
server.listen(Number(port), '127.0.0.1', () => console.log(`url http://127.0.0.1:${server.address().port}/lease`));
