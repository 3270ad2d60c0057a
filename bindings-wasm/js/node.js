// Node entry: instantiates the WebAssembly module synchronously from the file beside this one.
// A store named by a string is a directory (FileStore, on node:fs).
import { readFileSync } from 'node:fs';
import { initSync } from './leasehold_wasm.js';
import { __install } from './api.js';
import { FileStore } from './node-store.js';

const exports = initSync({ module: readFileSync(new URL('./leasehold_wasm_bg.wasm', import.meta.url)) });
__install(exports, { openStore: (dir) => FileStore.open(dir) });

export * from './api.js';
export { FileStore };
