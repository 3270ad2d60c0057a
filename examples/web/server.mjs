// The landlord of the web example: a Node http server on 127.0.0.1 that
//   - answers wire requests at POST /lease (binary body in, binary reply out) with a durable
//     landlord: kept in a directory (LandlordDriver.open), each reply sent once its record is
//     on disk, so a restarted server still knows every lease it granted,
//   - streams what happens to every lease at GET /events (server-sent events: granted, renewed,
//     cancelled, expired, denied; each with `at`, the server's epoch ms): every event since the
//     server started, or with ?fresh only those from the moment the page connects (the page
//     uses it, so that a second visit shows its own leases, not the rows of earlier ones),
//   - serves the page (/), the tabs demo (/tabs: leader election among tabs, landlord in a
//     SharedWorker) and the browser build of the package (/pkg/...).
// Usage: node examples/web/server.mjs [port] [--data DIR | --memory]   (LEASEHOLD_PKG=dir of the
// built package, default bindings-wasm/pkg; DIR defaults to examples/web/data). Open
// http://127.0.0.1:<port>/.
import { createServer } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join, normalize, extname } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.ts': 'text/plain; charset=utf-8',
};

/**
 * Starts the example's server. Resolves to {url, port, landlord, history, close()}.
 * `maxLease` bounds every grant (ms), so leases expire within seconds of a holder stopping.
 * `data`: the landlord's directory (default: a new temporary one, removed by close());
 * `memory: true` keeps the landlord in memory only.
 */
export async function startServer({ port = 0, pkgDir, maxLease = 1500, log = () => {}, data, memory = false } = {}) {
  pkgDir ??= process.env.LEASEHOLD_PKG ?? join(here, '../../bindings-wasm/pkg');
  const lh = await import(pathToFileURL(join(pkgDir, 'node.js')).href);
  const clients = new Set();
  const history = [];
  let start; // times are shown from the first event
  const emit = (type, cookie, extra = {}) => {
    start ??= Date.now();
    const at = Date.now();
    const ev = { type, cookie, at, t: at - start, ...extra };
    history.push(ev);
    const line = `data: ${JSON.stringify(ev)}\n\n`;
    for (const res of clients) res.write(line);
    log(ev);
  };

  const temporary = !memory && data === undefined;
  if (temporary) data = await mkdtemp(join(tmpdir(), 'leasehold-web-'));
  const driver = await lh.LandlordDriver.open({
    store: memory ? new lh.MemoryStore() : data,
    landlord: { id: 0x5eb, policy: lh.Policy.bounded(maxLease, maxLease) },
    onExpired: (e) => emit('expired', e.cookie, { holder: new TextDecoder().decode(e.resource) }),
  });
  const landlord = driver.landlord;

  // Decode, answer (once durable), encode: the object form lets the server see what happened
  // to each lease.
  async function answer(body) {
    let request;
    try {
      request = lh.decodeRequest(body);
    } catch {
      return driver.serve(body); // undecodable: the landlord's own error reply
    }
    const reply = await driver.handleRequest(request);
    const q = request.body;
    const r = reply.body;
    if (q.op === 'grant') {
      if (r.op === 'granted') emit('granted', r.cookie, { holder: new TextDecoder().decode(q.resource), duration: r.duration });
      else emit('denied', null, { holder: new TextDecoder().decode(q.resource), code: r.code });
    } else if (q.op === 'renew' && r.op === 'renewed') {
      emit('renewed', q.cookie, { duration: r.duration });
    } else if (q.op === 'renew_all' && r.op === 'renewed_all') {
      q.items.forEach(({ cookie }, i) => 'duration' in r.results[i] && emit('renewed', cookie, { duration: r.results[i].duration }));
    } else if (q.op === 'cancel' && r.op === 'cancelled') {
      emit('cancelled', q.cookie);
    } else if (q.op === 'cancel_all' && r.op === 'cancelled_all') {
      q.cookies.forEach((c, i) => !('error' in r.results[i]) && emit('cancelled', c));
    }
    return lh.encodeReply(reply);
  }

  async function file(res, path, root) {
    const full = normalize(join(root, path));
    if (!full.startsWith(normalize(root))) {
      res.writeHead(403).end();
      return;
    }
    try {
      const data = await readFile(full);
      res.writeHead(200, { 'content-type': TYPES[extname(full)] ?? 'application/octet-stream' });
      res.end(data);
    } catch {
      res.writeHead(404).end('not found');
    }
  }

  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'POST' && url.pathname === '/lease') {
      const chunks = [];
      let size = 0;
      for await (const c of req) {
        size += c.length;
        if (size > 1 << 20) {
          res.writeHead(413).end();
          return;
        }
        chunks.push(c);
      }
      let reply;
      try {
        reply = await answer(new Uint8Array(Buffer.concat(chunks)));
      } catch (e) {
        res.writeHead(503, { 'retry-after': '1' }).end(String(e.message)); // the store failed
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(reply);
    } else if (url.pathname === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
      if (!url.searchParams.has('fresh')) for (const ev of history) res.write(`data: ${JSON.stringify(ev)}\n\n`);
      else res.write(': connected\n\n'); // opens the stream at once (the page waits for it)
      clients.add(res);
      req.on('close', () => clients.delete(res));
    } else if (url.pathname.startsWith('/pkg/')) {
      await file(res, url.pathname.slice(5), pkgDir);
    } else if (url.pathname === '/' || url.pathname === '/index.html') {
      await file(res, 'index.html', here);
    } else if (url.pathname === '/app.js') {
      await file(res, 'app.js', here);
    } else if (url.pathname === '/tabs' || url.pathname === '/tabs.html') {
      await file(res, 'tabs.html', here);
    } else if (url.pathname === '/tabs-app.js') {
      await file(res, 'tabs-app.js', here);
    } else {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = server.address().port;
  return {
    port: actual,
    url: `http://127.0.0.1:${actual}/`,
    landlord,
    driver,
    history,
    close: async () => {
      for (const res of clients) res.end();
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(() => resolve()));
      await driver.close();
      if (temporary) await rm(data, { recursive: true, force: true });
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const flag = (name) => {
    const i = args.indexOf(name);
    return i < 0 ? undefined : args.splice(i, name === '--memory' ? 1 : 2)[1] ?? true;
  };
  const memory = flag('--memory') !== undefined;
  const data = flag('--data') ?? join(here, 'data');
  const s = await startServer({
    port: Number(args[0] ?? 8080), memory, data: memory ? undefined : data,
    log: (e) => console.log(JSON.stringify(e)),
  });
  const r = s.driver.recovery;
  console.log(memory
    ? 'landlord in memory only (--memory): a restart forgets every lease'
    : `landlord kept in ${data}: ${r.created ? 'a new store' : `${s.landlord.size} leases recovered (${r.replayed} records replayed)`}`);
  console.log(`leasehold web example: ${s.url}`);
}
