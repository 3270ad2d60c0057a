// The web example's page: holders run the WebAssembly RenewalManager under RenewalDriver with a
// fetch transport; the landlord (examples/web/server.mjs) streams what happens to every lease.
import { RenewalManager, RenewalDriver, fetchTransport, FOREVER } from '/pkg/browser.js';

// The timeline shows this visit only: the page asks the landlord for the events from the moment
// it connects (/events?fresh), starts its holders once the stream is open, and scales every bar
// from the first event it shows to the latest (at least SPAN), re-laying the marks out as time
// goes on, so that the leases of this visit fill the bar whatever the server did before.
const rows = new Map(); // cookie -> {tr, events}
const tbody = document.getElementById('leases');
const log = document.getElementById('log');
const SPAN = 7000; // ms the bar covers at least
const counts = { granted: 0, renewed: 0, expired: 0, cancelled: 0 };
let origin; // `at` of the first event shown (server's epoch ms)
let span = SPAN;
const marks = []; // {el, at}

function place(m) {
  m.el.style.left = `${Math.min(99.5, ((m.at - origin) / span) * 100)}%`;
}

function row(cookie, holder) {
  let r = rows.get(cookie);
  if (!r) {
    const tr = document.createElement('tr');
    tr.dataset.cookie = cookie;
    tr.innerHTML = `<td class="holder"></td><td class="cookie"></td><td class="state live">live</td><td><div class="chips"></div><div class="bar"></div></td>`;
    tr.querySelector('.cookie').textContent = cookie.slice(0, 12) + '…';
    tbody.append(tr);
    r = { tr, events: [] };
    rows.set(cookie, r);
  }
  if (holder) {
    r.tr.querySelector('.holder').textContent = holder;
    r.tr.dataset.holder = holder;
  }
  return r;
}

function show(ev) {
  if (!ev.cookie) return;
  // Rows are the leases granted during this visit: renewals of leases of an earlier visit (a
  // tab still open elsewhere) are not this page's.
  if (!rows.has(ev.cookie) && ev.type !== 'granted') return;
  origin ??= ev.at;
  const t = ev.at - origin; // ms since the first event this page shows
  if (t > span * 0.95) {
    span = Math.ceil((t / 0.8) / 1000) * 1000; // grow with headroom; every mark moves
    marks.forEach(place);
  }
  document.body.dataset.span = String(span);
  const r = row(ev.cookie, ev.holder);
  r.events.push(ev);
  counts[ev.type] = (counts[ev.type] ?? 0) + 1;
  const chips = r.tr.querySelector('.chips');
  const last = chips.lastElementChild;
  if (ev.type === 'renewed' && last?.classList.contains('renewed')) {
    const n = Number(last.dataset.n) + 1;
    last.dataset.n = n;
    last.textContent = `renewed ×${n} (last +${(t / 1000).toFixed(1)} s)`;
  } else {
    const chip = document.createElement('span');
    chip.className = `chip ${ev.type}`;
    chip.dataset.n = 1;
    chip.textContent = `${ev.type} +${(t / 1000).toFixed(1)} s`;
    chips.append(chip);
  }
  const mark = { el: document.createElement('i'), at: ev.at };
  mark.el.className = ev.type;
  mark.el.dataset.t = String(t);
  place(mark);
  marks.push(mark);
  r.tr.querySelector('.bar').append(mark.el);
  if (ev.type === 'expired' || ev.type === 'cancelled') {
    const st = r.tr.querySelector('.state');
    st.className = `state ${ev.type}`;
    st.textContent = ev.type;
  }
  r.tr.dataset.events = r.events.map((e) => e.type).join(' ');
  document.body.dataset.counts = JSON.stringify(counts);
}

const stream = new EventSource('/events?fresh');
stream.onmessage = (m) => show(JSON.parse(m.data));
const connected = new Promise((ok) => { stream.onopen = ok; });

function holder(name) {
  const driver = new RenewalDriver(new RenewalManager({ initialRtt: 50, minRto: 50 }), {
    transport: fetchTransport('/lease'),
    onEvent: (e) => {
      log.textContent += `${name}: ${e.type} ${e.lease.cookie.slice(0, 8)} until ${e.lease.expiration === FOREVER ? 'FOREVER' : new Date(e.lease.expiration).toISOString().slice(11, 23)}\n`;
    },
  });
  return driver;
}

async function run() {
  await connected; // every event of this visit's leases reaches the page
  const names = ['alpha', 'bravo', 'charlie'];
  const drivers = names.map(holder);
  const leases = [];
  for (const [i, d] of drivers.entries()) {
    const lease = await d.grant(names[i], 1500);
    d.renewFor(lease, FOREVER, 1500);
    leases.push(lease);
  }
  setTimeout(() => drivers[1].close(), 2500); // bravo stops: its lease will expire
  setTimeout(() => drivers[2].cancel(leases[2]), 3500); // charlie cancels
  await new Promise((r) => setTimeout(r, 5500));
  document.body.dataset.done = '1';
}

run().catch((e) => {
  document.body.dataset.error = String(e);
  log.textContent += `error: ${e}\n`;
});
