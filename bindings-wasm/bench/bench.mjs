// One benchmark cell in a fresh process: `node --expose-gc bench.mjs <impl> <n> <mode>`.
//   impl: heap   pure JS: Map + binary heap with lazy deletion, 32-hex cookies (heap-landlord.mjs)
//         ttl    npm's @isaacs/ttlcache (renew = get + set with a new TTL; checkAgeOnGet)
//         timers pure JS: Map + one setTimeout per lease (purejs-landlord.mjs; the old baseline)
//         wasm   leasehold, string cookies: grant / renew / cancel
//         words  leasehold, cookies as 4 u32 words in a Uint32Array: grantWords / renewWords / cancelWords
//         batch  leasehold word batches of 1024: grantBatch / renewBatch / cancelBatch
//   mode: speed  grant n leases (ops/s), then K = min(n, 200 000) renewals, cancels and mixed
//                operations on leases drawn at random (same seeded sequence for every impl);
//                mix = 80% renew, 10% grant, 10% cancel, with an expiry sweep every 1000 ops
//         memory bytes held for n leases (JS heap growth + wasm memory growth, after GC); the
//                holder keeps nothing, so only the landlord's state counts
// Rates are operations per CPU-second of this process (see `timed`).
// Every landlord is given `now` (a virtual clock advancing 1 ms per 1000 operations), except
// ttlcache and timers, which read their own clocks. Prints one JSON line.
import { HeapLandlord, HexCookies } from './heap-landlord.mjs';
import { PureJsLandlord } from './purejs-landlord.mjs';

const [impl, nArg, mode] = process.argv.slice(2);
const n = Number(nArg);
const K = Math.min(n, 200_000);
const B = 1024;
const MAX = 600_000;
const DEF = 300_000;
const policy = { kind: 'bounded', max: MAX, default: DEF };

function gc() {
  for (let i = 0; i < 4; i++) global.gc();
}

// xorshift32: the same operation sequence in every process
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
  };
}

let clock = Date.now();
let ticks = 0;
const now = () => (++ticks % 1000 === 0 ? ++clock : clock);

// A string-cookie landlord (heap, ttl, timers, wasm) behind one interface.
async function stringImpl() {
  if (impl === 'heap') {
    const ll = new HeapLandlord(policy);
    return {
      size: () => ll.size,
      grant: (r, t) => ll.grant(r, -1, t).cookie,
      renew: (c, t) => ll.renew(c, DEF, t),
      cancel: (c, t) => ll.cancel(c, t),
      sweep: (t) => ll.expire(t, () => {}),
      wasmBytes: () => 0,
    };
  }
  if (impl === 'ttl') {
    const { TTLCache } = await import(process.env.TTLCACHE_PKG || '@isaacs/ttlcache');
    const cache = new TTLCache({ ttl: DEF, checkAgeOnGet: true });
    const cookies = new HexCookies(); // the same cookies as heap
    const cookie = () => cookies.next();
    return {
      size: () => cache.size,
      grant: (r) => {
        const c = cookie();
        cache.set(c, r, { ttl: DEF });
        return c;
      },
      renew: (c) => {
        const v = cache.get(c);
        if (v === undefined) throw new Error('unknown lease');
        cache.set(c, v, { ttl: DEF });
        return DEF;
      },
      cancel: (c) => {
        const v = cache.get(c);
        if (v === undefined) throw new Error('unknown lease');
        cache.delete(c);
        return v;
      },
      sweep: () => cache.purgeStale(),
      wasmBytes: () => 0,
    };
  }
  if (impl === 'timers') {
    const ll = new PureJsLandlord(policy);
    return {
      size: () => ll.size,
      grant: (r) => ll.grant(r, -1).cookie,
      renew: (c) => ll.renew(c, DEF),
      cancel: (c) => ll.cancel(c),
      sweep: () => {},
      close: () => ll.close(),
      wasmBytes: () => 0,
    };
  }
  const lh = await import(process.env.LEASEHOLD_PKG);
  const ll = new lh.Landlord({ id: 1, policy });
  return {
    size: () => ll.size,
    grant: (r, t) => ll.grant(r, -1, t).cookie,
    renew: (c, t) => ll.renew(c, DEF, t),
    cancel: (c, t) => ll.cancel(c, t),
    sweep: (t) => {
      ll.handleTimeout(t);
      while (ll.pollExpired() !== undefined);
    },
    wasmBytes: () => lh.wasmMemoryBytes(),
  };
}

async function memory() {
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  let b;
  let wasm0 = 0;
  if (impl === 'wasm' || impl === 'words' || impl === 'batch') {
    const lh = await import(process.env.LEASEHOLD_PKG);
    wasm0 = lh.wasmMemoryBytes();
    const ll = new lh.Landlord({ id: 1, policy });
    for (let i = 0; i < n; i++) ll.grant(i, -1, 0);
    b = { size: () => ll.size, wasmBytes: () => lh.wasmMemoryBytes(), keep: ll };
  } else {
    b = await stringImpl();
    for (let i = 0; i < n; i++) b.grant(i, 0);
  }
  gc();
  const heap = process.memoryUsage().heapUsed - heap0;
  const wasm = b.wasmBytes() - wasm0;
  if (b.size() !== n) throw new Error(`expected ${n} leases, have ${b.size()}`);
  b.close?.();
  return { heapBytes: heap, wasmBytes: wasm, totalBytes: heap + wasm };
}

// The operation sequence: K random picks for renew and cancel, and K mixed operations.
function plan() {
  const r = rng(12345);
  const renewPick = new Int32Array(K);
  for (let i = 0; i < K; i++) renewPick[i] = r() % n;
  const mixOp = new Uint8Array(K);
  const mixPick = new Uint32Array(K);
  for (let i = 0; i < K; i++) {
    const x = r() % 10;
    mixOp[i] = x === 0 ? 1 : x === 1 ? 2 : 0; // 0 renew, 1 grant, 2 cancel
    mixPick[i] = r();
  }
  return { renewPick, mixOp, mixPick, cancelSeed: r() };
}

// Operations per second of CPU time used by this process (user + system, GC threads included):
// on a machine shared with other work, wall-clock time would mostly measure the scheduler.
function timed(count, f) {
  gc();
  const c = process.cpuUsage();
  f();
  const d = process.cpuUsage(c);
  return count / ((d.user + d.system) / 1e6);
}

async function speedStrings(p) {
  const b = await stringImpl();
  const cookies = new Array(n + K);
  // warm up the code paths on a separate landlord-sized workload of 2000 leases
  for (let i = 0; i < 2000; i++) cookies[i] = b.grant(-1, now());
  for (let i = 0; i < 2000; i++) b.renew(cookies[i], now());
  for (let i = 0; i < 2000; i++) b.cancel(cookies[i], now());
  const grant = timed(n, () => {
    for (let i = 0; i < n; i++) cookies[i] = b.grant(i, now());
  });
  const renew = timed(K, () => {
    const pick = p.renewPick;
    for (let i = 0; i < K; i++) b.renew(cookies[pick[i]], now());
  });
  // mix over the live set (indices into `cookies`), swap-remove on cancel
  const live = new Uint32Array(n + K);
  for (let i = 0; i < n; i++) live[i] = i;
  let liveN = n;
  let next = n;
  const mix = timed(K, () => {
    for (let i = 0; i < K; i++) {
      const t = now();
      const op = p.mixOp[i];
      if (op === 1) {
        cookies[next] = b.grant(next, t);
        live[liveN++] = next++;
      } else {
        const j = p.mixPick[i] % liveN;
        if (op === 0) b.renew(cookies[live[j]], t);
        else {
          b.cancel(cookies[live[j]], t);
          live[j] = live[--liveN];
        }
      }
      if ((i & 1023) === 1023) b.sweep(t);
    }
  });
  // cancel K leases still live, in random order
  const r = rng(p.cancelSeed);
  const victims = new Uint32Array(K);
  for (let i = 0; i < K; i++) {
    const j = r() % liveN;
    victims[i] = live[j];
    live[j] = live[--liveN];
  }
  const cancel = timed(K, () => {
    for (let i = 0; i < K; i++) b.cancel(cookies[victims[i]], now());
  });
  const size = b.size();
  if (size !== liveN) throw new Error(`expected ${liveN} leases, have ${size}`);
  b.close?.();
  return { grant, renew, cancel, mix };
}

async function speedWords(p) {
  const lh = await import(process.env.LEASEHOLD_PKG);
  const ll = new lh.Landlord({ id: 1, policy });
  const store = new Uint32Array(4 * (n + K)); // the holder's cookies: 16 bytes each
  const batch = impl === 'batch';
  const words = new Uint32Array(4 * B);
  const out = new Float64Array(B);
  const resources = new Array(B);
  for (let i = 0; i < 2000; i++) ll.grantWords(-1, -1, now(), store, 4 * i);
  for (let i = 0; i < 2000; i++) ll.renewWords(store, 4 * i, DEF, now());
  for (let i = 0; i < 2000; i++) ll.cancelWords(store, 4 * i, now());
  // a batch of the words at `idx[from..to]`, gathered into `words`
  const gather = (idx, from, to) => {
    for (let i = from, k = 0; i < to; i++, k += 4) {
      const s = 4 * idx[i];
      words[k] = store[s];
      words[k + 1] = store[s + 1];
      words[k + 2] = store[s + 2];
      words[k + 3] = store[s + 3];
    }
    return words.subarray(0, 4 * (to - from));
  };
  const check = (d) => {
    for (let i = 0; i < d.length; i++) if (d[i] < 0) throw new Error(`batch failure ${d[i]}`);
  };
  let grant;
  if (batch) {
    grant = timed(n, () => {
      for (let i = 0; i < n; i += B) {
        const m = Math.min(B, n - i);
        for (let k = 0; k < m; k++) resources[k] = i + k;
        resources.length = m;
        const r = ll.grantBatch(resources, -1, now(), store.subarray(4 * i, 4 * (i + m)), out.subarray(0, m));
        if (r.failed) throw new Error('grant refused');
      }
    });
  } else {
    grant = timed(n, () => {
      for (let i = 0; i < n; i++) ll.grantWords(i, -1, now(), store, 4 * i);
    });
  }
  let renew;
  if (batch) {
    renew = timed(K, () => {
      for (let i = 0; i < K; i += B) {
        const to = Math.min(K, i + B);
        const d = ll.renewBatch(gather(p.renewPick, i, to), DEF, now(), out.subarray(0, to - i));
        check(d);
      }
    });
  } else {
    renew = timed(K, () => {
      const pick = p.renewPick;
      for (let i = 0; i < K; i++) ll.renewWords(store, 4 * pick[i], DEF, now());
    });
  }
  const live = new Uint32Array(n + K);
  for (let i = 0; i < n; i++) live[i] = i;
  let liveN = n;
  let next = n;
  let mix;
  if (batch) {
    // each chunk of 1024 operations goes as three batches: renewals, cancels, grants
    const ren = new Uint32Array(B);
    const can = new Uint32Array(B);
    mix = timed(K, () => {
      for (let i = 0; i < K; i += B) {
        const to = Math.min(K, i + B);
        let nr = 0;
        let nc = 0;
        let ng = 0;
        const first = next;
        for (let k = i; k < to; k++) {
          const op = p.mixOp[k];
          if (op === 1) {
            resources[ng++] = next++; // joins the live set after this chunk's batches
          } else {
            const j = p.mixPick[k] % liveN;
            if (op === 0) ren[nr++] = live[j];
            else {
              can[nc++] = live[j];
              live[j] = live[--liveN];
            }
          }
        }
        const t = now();
        check(ll.renewBatch(gather(ren, 0, nr), DEF, t, out.subarray(0, nr)));
        ll.cancelBatch(gather(can, 0, nc), t, out.subarray(0, nc));
        check(out.subarray(0, nc));
        resources.length = ng;
        if (ll.grantBatch(resources, -1, t, store.subarray(4 * first, 4 * (first + ng)), out.subarray(0, ng)).failed) throw new Error('grant refused');
        for (let g = first; g < next; g++) live[liveN++] = g;
        ll.handleTimeout(t);
        while (ll.pollExpired() !== undefined);
      }
    });
  } else {
    mix = timed(K, () => {
      for (let i = 0; i < K; i++) {
        const t = now();
        const op = p.mixOp[i];
        if (op === 1) {
          ll.grantWords(next, -1, t, store, 4 * next);
          live[liveN++] = next++;
        } else {
          const j = p.mixPick[i] % liveN;
          if (op === 0) ll.renewWords(store, 4 * live[j], DEF, t);
          else {
            ll.cancelWords(store, 4 * live[j], t);
            live[j] = live[--liveN];
          }
        }
        if ((i & 1023) === 1023) {
          ll.handleTimeout(t);
          while (ll.pollExpired() !== undefined);
        }
      }
    });
  }
  const r = rng(p.cancelSeed);
  const victims = new Uint32Array(K);
  for (let i = 0; i < K; i++) {
    const j = r() % liveN;
    victims[i] = live[j];
    live[j] = live[--liveN];
  }
  let cancel;
  if (batch) {
    cancel = timed(K, () => {
      for (let i = 0; i < K; i += B) {
        const to = Math.min(K, i + B);
        const res = ll.cancelBatch(gather(victims, i, to), now(), out.subarray(0, to - i));
        if (res.length !== to - i) throw new Error('short cancel batch');
        check(out.subarray(0, to - i));
      }
    });
  } else {
    cancel = timed(K, () => {
      for (let i = 0; i < K; i++) ll.cancelWords(store, 4 * victims[i], now());
    });
  }
  if (ll.size !== liveN) throw new Error(`expected ${liveN} leases, have ${ll.size}`);
  return { grant, renew, cancel, mix };
}

let row;
if (mode === 'memory') {
  row = await memory();
} else {
  const p = plan();
  row = impl === 'words' || impl === 'batch' ? await speedWords(p) : await speedStrings(p);
}
console.log(JSON.stringify({ impl, n, mode, ...row }));
