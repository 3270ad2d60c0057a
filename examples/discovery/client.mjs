// A Node client of the lookup discovery service, on the `leasehold` npm package: registers over
// HTTP (the discovery wire protocol, `POST /discovery`), receives discovery events on its own
// small HTTP listener and answers each with an event reply, renews its registration lease
// (`POST /lease`, the lease protocol) and cancels it when told to quit.
//
// The same contract as examples/discovery/client.rs (run.py drives both): the flags below; one
// JSON line on stdout per thing that happens (`listening`, `registered`, `event`, `registrars`,
// `renew_failed`, `lost`, `cancelled`); commands on stdin (`registrars`, `quit`).
//
//   node client.mjs --lds URL --name NAME [--groups all|none|a,b] [--locators h:p,...]
//     [--lease-ms 10000] [--encoding json|binary]
//
// Run it where the package is installed (scripts/test-discovery.sh copies it next to one).
import http from 'node:http';
import { createInterface } from 'node:readline';
import {
  ALL_GROUPS, NO_GROUPS, ErrorCode, encodeDiscoveryRequest, decodeDiscoveryReply,
  discoveryEventFromBytes, encodeEventReply, encodeRequest, decodeReply,
} from 'leasehold';

const LISTENER_HEADER = 'leasehold-listener';
const USAGE = 'usage: node client.mjs --lds URL --name NAME [--groups all|none|a,b] [--locators h:p,...] [--lease-ms MS] [--encoding json|binary]';

function args(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) throw new Error(`${USAGE}\n(bad argument ${argv[i]})`);
    o[argv[i].slice(2)] = argv[i + 1];
  }
  return o;
}

// One JSON line; 64-bit numbers (bigints) are written as JSON integers, exactly.
function say(v) {
  const text = JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `\u0000${x}` : x)).replace(/"\\u0000(\d+)"/g, '$1');
  process.stdout.write(`${text}\n`);
}
const int = (s) => (BigInt(s) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(s) : BigInt(s));

const o = args(process.argv.slice(2));
if (!o.lds || !o.name) {
  console.error(USAGE);
  process.exit(2);
}
const lds = o.lds.replace(/\/+$/, '');
const name = o.name;
const groupsArg = o.groups ?? 'none';
const groups = groupsArg === 'all' ? ALL_GROUPS : groupsArg === 'none' || groupsArg === '' ? [...NO_GROUPS] : groupsArg.split(',');
const locators = o.locators ? o.locators.split(',') : [];
const leaseMs = Number(o['lease-ms'] ?? 10_000);
const enc = o.encoding ?? 'json';
if (enc !== 'json' && enc !== 'binary') throw new Error(`--encoding must be json or binary, got ${enc}`);
const contentType = (e) => (e === 'json' ? 'application/json' : 'application/octet-stream');
const encodingOf = (ct) => ((ct ?? '').trim().startsWith('application/json') ? 'json' : 'binary');

// The registration lease's landlord (16 hex digits), once registered: named in every later
// request, so that a leasehold-server with landlord shards beside its discovery service sends
// them to the service.
let landlord = null;
const hex16 = (l) => (typeof l === 'string' ? l : BigInt(l).toString(16).padStart(16, '0'));

async function post(path, body, headers = {}) {
  const query = landlord === null ? '' : `?landlord=${landlord}`;
  const res = await fetch(`${lds}${path}${query}`, {
    method: 'POST', body, headers: { 'content-type': contentType(enc), ...headers }, signal: AbortSignal.timeout(5_000),
  });
  // An error reply comes with a status that says what it is (404, 409, ...) and the reply in
  // the body; any other status (503: not served now) is a failure to retry.
  const type = res.headers.get('content-type') ?? '';
  if (res.status !== 200 && !(res.status >= 400 && res.status < 500 && encodingOf(type) === enc)) {
    throw new Error(`HTTP ${res.status}`);
  }
  return enc === 'json' ? res.text() : new Uint8Array(await res.arrayBuffer());
}
let nextId = 1;
const discovery = async (body, headers) => {
  const reply = decodeDiscoveryReply(
    await post('/discovery', encodeDiscoveryRequest({ v: 1, id: String(nextId++), body }, enc), headers), enc);
  if (reply.body.op === 'registered') landlord = hex16(reply.landlord);
  return reply.body;
};
const lease = async (body) => decodeReply(await post('/lease', encodeRequest({ id: nextId++, body }, enc), {}), enc).body;

// The listener: each event is a POST; the answer is an event reply in the event's encoding.
const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const e = encodingOf(req.headers['content-type']);
  const body = Buffer.concat(chunks);
  let event;
  try {
    event = discoveryEventFromBytes(e === 'json' ? body.toString('utf8') : new Uint8Array(body), e);
  } catch {
    res.writeHead(400).end();
    return;
  }
  say({
    type: 'event', name, event_id: event.eventId, sequence: event.sequence, discarded: event.discarded,
    registrars: event.registrars.map((r) => r.id), handback: new TextDecoder().decode(event.handback),
  });
  const reply = encodeEventReply({ v: 1, event_id: String(event.eventId), sequence: String(event.sequence), body: { op: 'received' } }, e);
  res.writeHead(200, { 'content-type': contentType(e) }).end(reply);
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${server.address().port}/events`;
say({ type: 'listening', name, url });

const reg = await discovery(
  { op: 'register', groups, locators, handback: Buffer.from(name).toString('hex'), duration: String(leaseMs) },
  { [LISTENER_HEADER]: url },
);
if (reg.op !== 'registered') {
  console.error(`client.mjs: register answered ${JSON.stringify(reg)}`);
  process.exit(2);
}
const cookie = reg.cookie;
say({
  type: 'registered', name, registration: int(reg.registration), cookie, event_id: int(reg.event_id),
  sequence: int(reg.sequence), duration: int(reg.duration),
});

// Renewals: every third of the lease; a failure is retried soon after.
let renewal = null;
let stopped = false;
function renewIn(ms) {
  renewal = setTimeout(async () => {
    if (stopped) return;
    let wait = leaseMs / 3;
    try {
      const r = await lease({ op: 'renew', cookie, duration: leaseMs });
      if (r.op === 'error' && r.code === ErrorCode.UNKNOWN_LEASE) {
        say({ type: 'lost', name, error: r.message });
        return;
      }
      if (r.op !== 'renewed') {
        say({ type: 'renew_failed', name, error: JSON.stringify(r) });
        wait = 250;
      }
    } catch (err) {
      say({ type: 'renew_failed', name, error: String(err?.message ?? err) });
      wait = 250;
    }
    if (!stopped) renewIn(wait);
  }, ms);
}
renewIn(leaseMs / 3);

async function quit() {
  stopped = true;
  clearTimeout(renewal);
  let ok = false;
  try {
    ok = (await lease({ op: 'cancel', cookie })).op === 'cancelled';
  } catch {}
  say({ type: 'cancelled', name, ok });
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
}

const lines = createInterface({ input: process.stdin });
lines.on('line', async (line) => {
  const cmd = line.trim();
  if (cmd === 'registrars') {
    try {
      const r = await discovery({ op: 'get_registrars', cookie });
      if (r.op !== 'registrars') throw new Error(JSON.stringify(r));
      say({ type: 'registrars', name, registrars: r.registrars.map((x) => x.id) });
    } catch (err) {
      say({ type: 'registrars', name, error: String(err?.message ?? err) });
    }
  } else if (cmd === 'quit') {
    lines.close();
  } else if (cmd !== '') {
    console.error(`client.mjs: unknown command ${JSON.stringify(cmd)}`);
  }
});
lines.on('close', quit);
