// Node entry: instantiates the WebAssembly module synchronously from the file beside this one.
import { readFileSync } from 'node:fs';
import { initSync } from './leasehold_wasm.js';
import { __install } from './api.js';

const exports = initSync({ module: readFileSync(new URL('./leasehold_wasm_bg.wasm', import.meta.url)) });
__install(exports);

export * from './api.js';
