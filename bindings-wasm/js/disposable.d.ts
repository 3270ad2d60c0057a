// `Symbol.dispose`, `Symbol.asyncDispose`, `Disposable` and `AsyncDisposable` as TypeScript's
// `esnext.disposable` lib declares them, declared here as well so that the package's types
// check under `tsc --strict` with the default lib of any target from ES2015 on (no `lib` to
// add for `using` and `await using`). The declarations merge with the lib's when a program
// has it too. At run time, Node 18+ and browsers without the symbols get them from
// `Symbol.for('Symbol.dispose')` (api.js).
export {};

declare global {
  interface SymbolConstructor {
    readonly dispose: unique symbol;
    readonly asyncDispose: unique symbol;
  }
  interface Disposable {
    [Symbol.dispose](): void;
  }
  interface AsyncDisposable {
    [Symbol.asyncDispose](): PromiseLike<void>;
  }
}
