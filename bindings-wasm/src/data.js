// The case walk of src/data.rs, in JavaScript: one call into it per value instead of a
// boundary crossing per key. `dataIn` writes a value as the core's JSON text (keys to
// snake_case, a `kind` tag too, `Infinity` as FOREVER, BigInts exact, bytes as arrays of
// numbers, members whose value is `undefined` absent); Rust reads it with serde_json.
// `dataOut` renames what serde-wasm-bindgen made (keys to camelCase, FOREVER as `Infinity`,
// safe BigInts as numbers). Maps keep their keys (data), and their values as they are.

const FOREVER = 9223372036854775807n;
const SAFE = 9007199254740991n;
const snakes = new Map();
const camels = new Map();

const snake = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** `"snake_key":`, remembered for the keys seen (field names: few). */
function member(k) {
  let s = snakes.get(k);
  if (s === undefined) {
    s = `${JSON.stringify(snake(k))}:`;
    if (snakes.size < 4096) snakes.set(k, s);
  }
  return s;
}

function camel(k) {
  let s = camels.get(k);
  if (s === undefined) {
    s = k.replace(/_+(.?)/g, (_, c) => c.toUpperCase());
    if (camels.size < 4096) camels.set(k, s);
  }
  return s;
}

function plain(v) {
  return !Array.isArray(v) && !(v instanceof Map) && !(v instanceof Uint8Array) && !(v instanceof ArrayBuffer);
}

function text(v, rename) {
  switch (typeof v) {
    case 'number':
      return v === Infinity ? '9223372036854775807' : JSON.stringify(v);
    case 'string':
      return JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return v.toString();
    case 'undefined':
      return 'null';
    case 'object':
      break;
    default:
      throw new TypeError(`invalid type: ${typeof v}`);
  }
  if (v === null) return 'null';
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ',' : '') + text(v[i], rename);
    return `${s}]`;
  }
  if (v instanceof Uint8Array) return `[${v.join(',')}]`;
  if (v instanceof ArrayBuffer) return `[${new Uint8Array(v).join(',')}]`;
  let s = '{';
  let first = true;
  if (v instanceof Map) {
    for (const [k, x] of v) {
      s += `${first ? '' : ','}${JSON.stringify(String(k))}:${text(x, false)}`;
      first = false;
    }
    return `${s}}`;
  }
  for (const k of Object.keys(v)) {
    let x = v[k];
    if (x === undefined) continue;
    // A tag written in JavaScript's case (`kind: "resourceAware"`) is read as the core's.
    if (rename && k === 'kind' && typeof x === 'string') x = snake(x);
    s += `${first ? '' : ','}${rename ? member(k) : `${JSON.stringify(k)}:`}${text(x, rename)}`;
    first = false;
  }
  return `${s}}`;
}

export function dataIn(v) {
  return text(v, true);
}

export function dataOut(v) {
  if (typeof v === 'bigint') {
    if (v === FOREVER) return Infinity;
    return v <= SAFE && v >= -SAFE ? Number(v) : v;
  }
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(dataOut);
  if (!plain(v)) return v;
  const o = {};
  for (const k of Object.keys(v)) {
    const x = v[k];
    if (x !== undefined) o[camel(k)] = dataOut(x);
  }
  return o;
}
