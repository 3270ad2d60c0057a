// Public API of `leasehold`. The classes come from the Rust core through wasm-bindgen (their
// documentation is in leasehold_wasm.d.ts); the drivers and errors are JavaScript.
import type { Landlord, LeaseEntry } from './leasehold_wasm.js';

export {
  Lease,
  Landlord,
  LeaseMap,
  RenewalManager,
  RenewalService,
  GapTracker,
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
  RenewalServiceOptions,
  EventRegistration,
  SetEvent,
} from './leasehold_wasm.js';
export * from './errors.js';

declare module './leasehold_wasm.js' {
  interface Landlord {
    /** Every lease held, like `entries()`. */
    [Symbol.iterator](): Iterator<LeaseEntry>;
    /**
     * The word API: a cookie as four unsigned 32-bit words (least significant first) in a
     * Uint32Array, so no string is made or parsed per call (`cookieFromWords` gives the 32 hex
     * digits for the wire). Grants like `grant`, writes the cookie to `out[offset..offset+4]`
     * and returns the granted duration (the expiration is `now + duration`).
     */
    grantWords(resource: unknown, duration: number, now: number, out: Uint32Array, offset?: number): number;
    /** Renews the lease whose cookie is `cookie[offset..offset+4]`; like `renew`. */
    renewWords(cookie: Uint32Array, offset: number, duration: number, now: number): number;
    /** Cancels the lease whose cookie is `cookie[offset..offset+4]`; like `cancel`. */
    cancelWords(cookie: Uint32Array, offset: number, now: number): unknown;
    /**
     * Grants one lease per resource in one call (each for at most `duration`, or `duration[i]`).
     * `cookies` gets 4 words per lease (zeros where refused), `durations` the granted duration
     * or minus the error code (`-ErrorCode.LEASE_DENIED`, ...); `failed` counts the refusals.
     */
    grantBatch(resources: unknown[], duration: number | Float64Array, now: number, cookies?: Uint32Array, durations?: Float64Array):
      { cookies: Uint32Array; durations: Float64Array; failed: number };
    /**
     * Renews the leases whose cookies are `cookies` (4 words each) in one call; returns `out`
     * with the granted duration per lease, or minus the error code (`-ErrorCode.UNKNOWN_LEASE`, ...).
     * One failure never aborts the batch.
     */
    renewBatch(cookies: Uint32Array, duration: number | Float64Array, now: number, out?: Float64Array): Float64Array;
    /**
     * Cancels the leases whose cookies are `cookies` (4 words each) in one call; returns their
     * resources (undefined where it failed); `out` gets 0 or minus the error code per lease.
     */
    cancelBatch(cookies: Uint32Array, now: number, out?: Float64Array): unknown[];
  }
  interface RenewalService {
    /** A handle on one set. */
    set(id: number): RenewalSet;
  }
}

/** The cookie in `words[offset..offset+4]` (least significant word first), as 32 hex digits. */
export declare function cookieFromWords(words: Uint32Array, offset?: number): string;
/** Writes a cookie (32 hex digits) as four words to `out[offset..offset+4]`; returns `out`. */
export declare function cookieToWords(cookie: string, out?: Uint32Array, offset?: number): Uint32Array;

type L = import('./leasehold_wasm.js').Lease;
/** A handle on one set of a RenewalService (Jini LeaseRenewalSet). */
export declare class RenewalSet {
  constructor(service: import('./leasehold_wasm.js').RenewalService, id: number);
  readonly id: number;
  readonly service: import('./leasehold_wasm.js').RenewalService;
  lease(now: number): L | undefined;
  renewFor(lease: L, membershipDuration: number, renewDuration: number, now: number): void;
  remove(lease: L, now: number): L | undefined;
  leases(now: number): L[];
  membership(lease: L, now: number): { expiration: number; renewDuration: number } | undefined;
  setExpirationWarningListener(minWarning: number, handback: Uint8Array | string, now: number): import('./leasehold_wasm.js').EventRegistration;
  setRenewalFailureListener(handback: Uint8Array | string, now: number): import('./leasehold_wasm.js').EventRegistration;
  clearExpirationWarningListener(now: number): void;
  clearRenewalFailureListener(now: number): void;
  registrations(now: number): import('./leasehold_wasm.js').EventRegistration[];
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
    manager: import('./leasehold_wasm.js').RenewalManager | import('./leasehold_wasm.js').RenewalService,
    options: DriverOptions & {
      transport: Transport;
      encoding?: import('./leasehold_wasm.js').Encoding;
      onEvent?: (event: import('./leasehold_wasm.js').RenewalEvent | import('./leasehold_wasm.js').SetEvent) => void;
    },
  );
  readonly manager: import('./leasehold_wasm.js').RenewalManager | import('./leasehold_wasm.js').RenewalService;
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
