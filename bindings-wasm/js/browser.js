// Browser (and bundler) entry: fetches and instantiates the WebAssembly module beside this one.
// A store named by a string is an IndexedDB database of this origin (IndexedDbStore).
import init from './leasehold_wasm.js';
import { __install, IndexedDbStore } from './api.js';

const exports = await init({ module_or_path: new URL('./leasehold_wasm_bg.wasm', import.meta.url) });
__install(exports, { openStore: (name) => IndexedDbStore.open(String(name)) });

export * from './api.js';

/** Files need Node: in browsers a store is an IndexedDbStore (or a MemoryStore). */
export class FileStore {
  static async open() {
    throw new TypeError('FileStore needs Node (node:fs); in a browser use IndexedDbStore.open(name), or pass a name as the store');
  }
}
