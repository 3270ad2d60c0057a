// One case of limits.test.mjs in a fresh process (a fresh WebAssembly memory: it never shrinks,
// so a copy made by an earlier case would hide one made by a later case). Prints one JSON line:
// how much the module's memory grew, and what the entry point answered or threw.
import {
  Landlord, RenewalService, Lease, Policy, decodeRequest, decodeReply, wasmMemoryBytes,
} from 'leasehold';

const big = new Uint8Array(100 * 1000 * 1000).fill(7);
const bigText = 'x'.repeat(100 * 1000 * 1000);
const seed = new Uint8Array(32).fill(5);
const landlord = () => new Landlord({ id: 1, seed, policy: Policy.fixed(1000) });
const reply = (bytes, enc) => {
  const r = decodeReply(bytes, enc);
  return { id: r.id, op: r.body.op, code: r.body.code, message: r.body.message, landlord: r.landlord };
};

const cases = {
  'landlord-bytes': (ll) => reply(ll.handleBytes(big, 0)),
  'landlord-subarray': (ll) => reply(ll.handleBytes(big.subarray(1), 0)),
  'landlord-arraybuffer': (ll) => reply(ll.handleBytes(big.buffer, 0)),
  'landlord-dataview': (ll) => reply(ll.handleBytes(new DataView(big.buffer), 0)),
  'landlord-json': (ll) => reply(ll.handleBytes(bigText, 0, 'json'), 'json'),
  'service-bytes': () => reply(new RenewalService({ id: 2, seed }).handleBytes(big, 0)),
  'decodeRequest-bytes': () => decodeRequest(big),
  'decodeRequest-json': () => decodeRequest(bigText, 'json'),
  'decodeReply-bytes': () => decodeReply(big),
  'decodeReply-limit': () => decodeReply(big.subarray(0, 2 << 20), 'binary', { maxMessageBytes: 1 << 20 }),
  'lease-fromBytes': () => Lease.fromBytes(big, 0),
  'lease-fromJson': () => Lease.fromJson(bigText, 0),
  'landlord-seed': () => new Landlord({ id: 1, seed: big, policy: Policy.fixed(1) }),
};

const ll = landlord(); // made before measuring: its own memory does not count
const before = wasmMemoryBytes();
let out;
try {
  out = { result: cases[process.argv[2]](ll) };
} catch (e) {
  out = { error: { name: e.name, code: e.code, message: e.message } };
}
out.grown = wasmMemoryBytes() - before;
out.after = ll.grant('still-ok', 10, 0).duration; // the landlord still answers
console.log(JSON.stringify(out));
