// The tabs demo: every tab of this origin runs electLeader('demo'); the page shows who leads, until
// when this tab may act, and the landlord's record of every lease (granted, renewed, cancelled,
// expired) as a live timeline. Query parameters: leaseMs (default 3000), label, name, span (s),
// resignOnFreeze (default 1; 0 lets a frozen leader's lease run out instead).
import { electLeader, now, tabId } from '/pkg/tabs.js';

const params = new URLSearchParams(location.search);
const leaseMs = Number(params.get('leaseMs') ?? 3000);
const name = params.get('name') ?? 'demo';
const SPAN = Number(params.get('span') ?? 30) * 1000;
const label = params.get('label') ?? `tab ${tabId().slice(0, 4)}`;
document.title = `${label} · leasehold tabs`;

const $ = (id) => document.getElementById(id);
const events = []; // what this tab saw, for the tests: {type, at, ...}
const leases = new Map(); // lease id -> {tab, label, start, until, end, endType, renewals}
const resignOnFreeze = params.get('resignOnFreeze') !== '0';
const election = electLeader(name, { leaseMs, label, resignOnFreeze });
window.tabsDemo = { election, events, leases, label };

// Tabs get colours in the order they first appear (blue, green, pink, teal, olive, grey, navy).
const PALETTE = ['#0969da', '#1a7f37', '#bf3989', '#0a7d8c', '#7d6c00', '#57606a', '#1b1f5e'];
const colours = new Map();
function color(tab) {
  if (!colours.has(tab)) colours.set(tab, PALETTE[colours.size % PALETTE.length]);
  return colours.get(tab);
}
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function log(text) {
  const t = new Date().toISOString().slice(11, 23);
  $('log').textContent = `${t} ${text}\n` + $('log').textContent.slice(0, 4000);
}

election.addEventListener('leader', (e) => {
  events.push({ type: 'leader', at: now(), until: e.until });
  log(`this tab leads (may act until +${e.until - now()} ms)`);
});
election.addEventListener('lost', (e) => {
  events.push({ type: 'lost', at: now(), reason: e.reason, cause: e.cause, until: e.until });
  log(`this tab lost the lead: ${e.reason} (${e.cause})`);
});
election.addEventListener('change', (e) => {
  events.push({ type: 'change', at: now(), leader: e.leader?.tab ?? null });
  if (e.leader) log(`leader: ${e.leader.label ?? e.leader.tab}${e.leader.self ? ' (this tab)' : ''}`);
  else log('no leader');
});
election.addEventListener('record', ({ record: r }) => {
  let l = leases.get(r.lease);
  if (!l) {
    l = { tab: r.tab, label: r.label, start: r.at, until: r.until, end: undefined, endType: undefined, renewals: [] };
    leases.set(r.lease, l);
  }
  if (r.type === 'renewed') {
    l.renewals.push(r.at);
    l.until = r.until;
  } else if (r.type === 'expired' || r.type === 'cancelled') {
    l.end = r.at;
    l.endType = r.type;
  }
});

$('me').textContent = label;
$('mode').textContent = election.mode;
$('span').textContent = String(SPAN / 1000);
$('open').onclick = () => window.open(location.href.replace(/([?&])label=[^&]*&?/, '$1'), '_blank');
$('resign').onclick = () => {
  if (election.campaigning) {
    election.resign();
    $('resign').textContent = 'Campaign';
  } else {
    election.campaign();
    $('resign').textContent = 'Resign';
  }
};
$('freeze').onclick = () => {
  // Stands in for a frozen or throttled tab: no timer, no message runs until the loop ends.
  log(`blocking for ${leaseMs + 1000} ms`);
  setTimeout(() => {
    const end = Date.now() + leaseMs + 1000;
    while (Date.now() < end);
  }, 0);
};

function draw() {
  const t = now();
  const leader = election.leader;
  const me = $('me');
  const leading = election.isLeader;
  me.className = leading ? 'leading' : 'following';
  me.textContent = `${label}${leading ? ' · leads' : ''}`;
  $('leader').innerHTML = leader
    ? `<span class="badge" style="background:${color(leader.tab)}"></span>`
    : '<span style="color:#8a91a2">none</span>';
  if (leader) $('leader').firstChild.textContent = `${leader.label ?? leader.tab}${leader.self ? ' (this tab)' : ''}`;
  const until = election.leaderUntil;
  $('until').textContent = until === undefined ? '–' : `+${((until - t) / 1000).toFixed(2)} s`;
  $('untilbar').style.width = until === undefined ? '0' : `${Math.max(0, Math.min(100, ((until - t) / leaseMs) * 100))}%`;

  const from = t - SPAN;
  const to = t + leaseMs;
  const x = (v) => `${(((Math.max(from, Math.min(to, v)) - from) / (to - from)) * 100).toFixed(3)}%`;
  const w = (a, b) => `${(((Math.min(to, b) - Math.max(from, a)) / (to - from)) * 100).toFixed(3)}%`;
  const rows = new Map(); // tab -> html
  const names = new Map(); // tab -> label
  for (const [id, l] of leases) {
    const end = l.end ?? t;
    if (end < from && l.end !== undefined) continue;
    let html = rows.get(l.tab) ?? '';
    html += `<div class="bar" data-lease="${id}" style="left:${x(l.start)};width:${w(l.start, end)};background:${color(l.tab)}"></div>`;
    if (l.end === undefined && l.until > t) {
      html += `<div class="bar granted" style="left:${x(t)};width:${w(t, l.until)};background:${color(l.tab)}"></div>`;
    }
    for (const r of l.renewals) if (r >= from) html += `<div class="tick" style="left:${x(r)}"></div>`;
    if (l.end !== undefined) html += `<div class="end ${l.endType}" style="left:${x(l.end)}"></div>`;
    rows.set(l.tab, html);
    names.set(l.tab, l.label ?? l.tab);
  }
  $('timeline').innerHTML = [...rows]
    .map(([tab, html]) => `<div class="row" data-tab="${esc(tab)}"><div class="name" style="color:${color(tab)}">${esc(names.get(tab))}${tab === tabId() ? ' ◂' : ''}</div><div class="track">${html}</div></div>`)
    .join('');
  $('axis0').textContent = `−${SPAN / 1000} s`;
  document.body.dataset.leader = leader?.tab ?? '';
  document.body.dataset.leading = leading ? '1' : '0';
}
setInterval(draw, 100);
draw();
