// The JavaScript side of every sans-I/O part, written once. A part's wasm class (made by
// `machine_class!` in the Rust crate) takes every call as `handle({op, ...}, now)` with its data in
// camelCase; `defineCalls` gives the class one method per call from a table, so a part's own file
// only names its calls (and adds what is really its own).

const snake = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Adds one method per entry of `calls` to `Class.prototype`: `name: [field, ...]` makes
 * `name(field1, ..., now)` call `handle({op: snake(name), field1, ...}, now)`; `name: ['=op', ...]`
 * names the op explicitly; a leading `'-'` field means the method takes no `now`. `convert`, if
 * given for a name, maps the answer; `fieldIn`, if given for a field, maps that argument.
 */
export function defineCalls(Class, calls, convert = {}, fieldIn = {}) {
  for (const [name, spec] of Object.entries(calls)) {
    let fields = spec;
    let op = snake(name);
    if (fields[0]?.startsWith('=')) [op, ...fields] = [fields[0].slice(1), ...fields.slice(1)];
    const timeless = fields[0] === '-';
    if (timeless) fields = fields.slice(1);
    const out = convert[name] ?? ((x) => x);
    Object.defineProperty(Class.prototype, name, {
      configurable: true,
      writable: true,
      value(...args) {
        const input = { op };
        fields.forEach((f, i) => { input[f] = fieldIn[f] ? fieldIn[f](args[i]) : args[i]; });
        return out(this.handle(input, timeless ? undefined : args[fields.length]));
      },
    });
  }
}

/** `null` for `undefined` (an absent answer), anything else as it is. */
export const orUndefined = (x) => (x === null ? undefined : x);
