// Browser (and bundler) entry: fetches and instantiates the WebAssembly module beside this one.
import init from './leasehold_wasm.js';
import { __install } from './api.js';

const exports = await init({ module_or_path: new URL('./leasehold_wasm_bg.wasm', import.meta.url) });
__install(exports);

export * from './api.js';
