// The web example's page: holders run the WebAssembly RenewalManager under RenewalDriver with a
// fetch transport; the landlord (examples/web/server.mjs) streams what happens to every lease.
import { RenewalManager, RenewalDriver, fetchTransport, FOREVER } from '/pkg/browser.js';

const rows = new Map(); // cookie -> {tr, events}
const tbody = document.getElementById('leases');
const log = document.getElementById('log');
const SPAN = 6000; // ms shown by the timeline bar
const counts = { granted: 0, renewed: 0, expired: 0, cancelled: 0 };

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
  const r = row(ev.cookie, ev.holder);
  r.events.push(ev);
  counts[ev.type] = (counts[ev.type] ?? 0) + 1;
  const chips = r.tr.querySelector('.chips');
  const last = chips.lastElementChild;
  if (ev.type === 'renewed' && last?.classList.contains('renewed')) {
    const n = Number(last.dataset.n) + 1;
    last.dataset.n = n;
    last.textContent = `renewed ×${n} (last +${(ev.t / 1000).toFixed(1)} s)`;
  } else {
    const chip = document.createElement('span');
    chip.className = `chip ${ev.type}`;
    chip.dataset.n = 1;
    chip.textContent = `${ev.type} +${(ev.t / 1000).toFixed(1)} s`;
    chips.append(chip);
  }
  const mark = document.createElement('i');
  mark.className = ev.type;
  mark.style.left = `${Math.min(99, (ev.t / SPAN) * 100)}%`;
  r.tr.querySelector('.bar').append(mark);
  if (ev.type === 'expired' || ev.type === 'cancelled') {
    const st = r.tr.querySelector('.state');
    st.className = `state ${ev.type}`;
    st.textContent = ev.type;
  }
  r.tr.dataset.events = r.events.map((e) => e.type).join(' ');
  document.body.dataset.counts = JSON.stringify(counts);
}

new EventSource('/events').onmessage = (m) => show(JSON.parse(m.data));

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
