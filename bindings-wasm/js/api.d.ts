// Public API of `leasehold`. The classes come from the Rust core through wasm-bindgen (their
// documentation is in leasehold_wasm.d.ts); the drivers and errors are JavaScript.
import type { Landlord, LeaseEntry } from './leasehold_wasm.js';

export {
  Lease,
  Landlord,
  LeaseMap,
  RenewalManager,
  grantRequest,
  leaseFromReply,
  encodeRequest,
  decodeRequest,
  encodeReply,
  decodeReply,
  errorFromWire,
  wasmMemoryBytes,
  coreVersion,
} from './leasehold_wasm.js';
export type {
  Encoding,
  Limits,
  PolicyDescription,
  LandlordOptions,
  Grant,
  LeaseEntry,
  Outcome,
  WireError,
  Request,
  Reply,
  RenewalManagerOptions,
  RttEstimate,
  RenewalStats,
  Transmit,
  RenewalEvent,
} from './leasehold_wasm.js';
export * from './errors.js';

declare module './leasehold_wasm.js' {
  interface Landlord {
    /** Every lease held, like `entries()`. */
    [Symbol.iterator](): Iterator<LeaseEntry>;
  }
}

/** `Lease.FOREVER`: never ends. `Infinity` in JavaScript (`i64::MAX` in the core); round-trips exactly. */
export declare const FOREVER: number;
/** `Lease.ANY`: lets the landlord choose the duration (-1). */
export declare const ANY: -1;
/** Serial format DURATION (1): stores the time left; read back against the reader's clock. */
export declare const DURATION: 1;
/** Serial format ABSOLUTE (2): stores the expiration (epoch ms). */
export declare const ABSOLUTE: 2;

/** Builders for policy descriptions. */
export declare const Policy: Readonly<{
  fixed(duration: number): { kind: 'fixed'; duration: number };
  bounded(max: number, defaultDuration: number): { kind: 'bounded'; max: number; default: number };
  capacity(maxLeases: number, inner: import('./leasehold_wasm.js').PolicyDescription): {
    kind: 'capacity';
    maxLeases: number;
    inner: import('./leasehold_wasm.js').PolicyDescription;
  };
  resourceAware(capacity: number, max: number, min: number): {
    kind: 'resourceAware';
    capacity: number;
    max: number;
    min: number;
  };
  adaptive(
    options:
      | { renewalsPerSecond: number; min: number; max: number; grantors?: number }
      | { bytesPerSecond: number; requestSize: number; grantSize: number; min: number; max: number; grantors?: number },
  ): import('./leasehold_wasm.js').PolicyDescription;
}>;

/** Options common to the drivers. */
export interface DriverOptions {
  /** The clock, ms (default Date.now). */
  now?: () => number;
  /** Keep Node's event loop alive while the driver runs (default false: timers are unref'd). */
  keepAlive?: boolean;
  /** Receives errors thrown by callbacks (default: rethrown asynchronously). */
  onError?: (error: unknown) => void;
}

/** Runs a landlord's expiry on setTimeout. */
export declare class LandlordDriver implements Disposable {
  constructor(landlord: Landlord, options?: DriverOptions & { onExpired?: (expired: LeaseEntry) => void });
  readonly landlord: Landlord;
  readonly closed: boolean;
  now(): number;
  /** Re-arms the timer after the landlord was changed directly. */
  update(): void;
  /** Answers one encoded request and returns the encoded reply (binary by default). */
  serve(bytes: Uint8Array | string, encoding?: import('./leasehold_wasm.js').Encoding): Uint8Array;
  grant(resource: unknown, duration: number): import('./leasehold_wasm.js').Grant;
  renew(cookie: string, duration: number): number;
  cancel(cookie: string): unknown;
  /** Stops the timer; no timer of the driver is left. */
  close(): void;
  [Symbol.dispose](): void;
}

/** A transport: sends one encoded request and resolves to the encoded reply. */
export type Transport = (
  body: Uint8Array | string,
  landlord: string | undefined,
) => Promise<Uint8Array | ArrayBuffer | string>;

/** A transport over HTTP fetch (POST to `url`). */
export declare function fetchTransport(
  url: string | URL,
  options?: { fetch?: typeof fetch; headers?: Record<string, string>; encoding?: import('./leasehold_wasm.js').Encoding },
): Transport;

/** Runs a RenewalManager on setTimeout with a Promise-returning transport. */
export declare class RenewalDriver implements Disposable {
  constructor(
    manager: import('./leasehold_wasm.js').RenewalManager,
    options: DriverOptions & {
      transport: Transport;
      encoding?: import('./leasehold_wasm.js').Encoding;
      onEvent?: (event: import('./leasehold_wasm.js').RenewalEvent) => void;
    },
  );
  readonly manager: import('./leasehold_wasm.js').RenewalManager;
  readonly closed: boolean;
  now(): number;
  /** Asks a landlord for a lease through the transport; resolves to it (counted from the send time). */
  grant(resource: Uint8Array | string, duration: number, landlord?: string): Promise<import('./leasehold_wasm.js').Lease>;
  renewFor(lease: import('./leasehold_wasm.js').Lease, duration: number, renewDuration: number): void;
  renewUntil(lease: import('./leasehold_wasm.js').Lease, desiredExpiration: number, renewDuration: number): void;
  cancel(lease: import('./leasehold_wasm.js').Lease): void;
  remove(lease: import('./leasehold_wasm.js').Lease): import('./leasehold_wasm.js').Lease;
  /** Sends what is due, delivers events, re-arms the timer. */
  pump(): void;
  close(): void;
  [Symbol.dispose](): void;
}

/** @internal Called by the package entry once the module is instantiated. */
export declare function __install(): void;
