// fetchTransport over TLS with a token and a client certificate (Node: an undici Agent as the
// dispatcher), against a Node HTTPS server that checks them as leasehold-server does
// (--tls-client-ca --tls-client-auth optional --tokens). Certificates: scripts/lib/mkcerts.sh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { fetchTransport, encodeRequest, decodeReply, Landlord, Policy, IndefiniteError } from 'leasehold';

const TOKEN = `lh_0011223344556677_${'ab'.repeat(32)}`;
const dir = mkdtempSync(join(tmpdir(), 'leasehold-tls-'));
execFileSync('bash', [join(process.env.LEASEHOLD_ROOT ?? '../..', 'scripts/lib/mkcerts.sh'), dir]);
const pem = (name) => readFileSync(join(dir, name));

async function tlsServer() {
  const ll = new Landlord({ id: 7, policy: Policy.bounded(60_000, 30_000) });
  const seen = [];
  const s = createServer({
    cert: pem('server.pem'), key: pem('server.key'), ca: pem('ca.pem'), requestCert: true, rejectUnauthorized: false,
  }, async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = new Uint8Array(Buffer.concat(chunks));
    const cert = req.socket.authorized ? req.socket.getPeerCertificate() : null;
    const name = cert?.subjectaltname ?? '';
    seen.push({ auth: req.headers.authorization ?? '', name });
    if (req.headers.authorization === `Bearer ${TOKEN}` || name.includes('DNS:worker.example')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(ll.handleBytes(body, Date.now()));
    } else {
      // As leasehold-server refuses a request without an identity: 401 with a wire reply.
      const other = new Landlord({ id: 7, policy: Policy.bounded(1000, 1000) });
      const reply = other.handleBytes(encodeRequest({ id: 1, body: { op: 'renew', cookie: '00'.repeat(16), duration: 1000 } }), Date.now());
      res.writeHead(401, { 'content-type': 'application/octet-stream' }).end(reply);
    }
  });
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  return { url: `https://127.0.0.1:${s.address().port}`, seen, close: () => new Promise((r) => { s.closeAllConnections(); s.close(r); }) };
}

const grant = encodeRequest({ id: 1, body: { op: 'grant', resource: 'r', duration: 1000 } });

test('https with a CA bundle and a token; a client certificate names the identity', async () => {
  const s = await tlsServer();
  try {
    const ca = new Agent({ connect: { ca: pem('ca.pem') } });
    const t = fetchTransport(s.url, { fetch: undiciFetch, dispatcher: ca, token: TOKEN });
    assert.equal(decodeReply(await t(grant, undefined)).body.op, 'granted');
    assert.equal(s.seen.at(-1).auth, `Bearer ${TOKEN}`);
    const mtls = new Agent({ connect: { ca: pem('ca.pem'), cert: pem('client.pem'), key: pem('client.key') } });
    const t2 = fetchTransport(s.url, { fetch: undiciFetch, dispatcher: mtls });
    assert.equal(decodeReply(await t2(grant, undefined)).body.op, 'granted');
    assert.match(s.seen.at(-1).name, /worker\.example/);
    // No identity: the 401 carries a wire reply, a definite answer.
    const t3 = fetchTransport(s.url, { fetch: undiciFetch, dispatcher: ca });
    assert.equal(decodeReply(await t3(grant, undefined)).body.op, 'error');
    await Promise.all([ca.close(), mtls.close()]);
  } finally {
    await s.close();
  }
});

test('a server signed by another CA is refused: an IndefiniteError, nothing sent', async () => {
  const s = await tlsServer();
  try {
    const other = new Agent({ connect: { ca: pem('otherca.pem') } });
    const t = fetchTransport(s.url, { fetch: undiciFetch, dispatcher: other, token: TOKEN, timeout: 2000 });
    await assert.rejects(t(grant, undefined), IndefiniteError);
    assert.equal(s.seen.length, 0);
    await other.close();
  } finally {
    await s.close();
  }
});

test('a token that would split a header is refused up front', () => {
  assert.throws(() => fetchTransport('https://127.0.0.1:1', { token: 'a\r\nb' }), TypeError);
  assert.throws(() => fetchTransport('https://127.0.0.1:1', { token: '' }), TypeError);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
