/// <reference path="./disposable.d.ts" />
// Public API of `leasehold`. The classes come from the Rust core through wasm-bindgen (their
// documentation is in leasehold_wasm.d.ts); the drivers and errors are JavaScript.
import type { Landlord, LeaseEntry } from './leasehold_wasm.js';
import type { StoreConfig as StoreSettings, FileOp } from './generated.js';
import type { IndefiniteError } from './errors.js';

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
  JournalGate,
  DiscoveryService,
  encodeAnnouncement,
  decodeAnnouncement,
} from './leasehold_wasm.js';
export {
  DiscoveryDriver, ALL_GROUPS, NO_GROUPS, encodeDiscoveryRequest, decodeDiscoveryRequest, encodeDiscoveryReply,
  decodeDiscoveryReply, encodeDiscoveryEvent, decodeDiscoveryEvent, encodeEventReply, decodeEventReply,
  discoveryEventFromBytes,
} from './discovery.js';
export type {
  DiscoveryDriverOptions, DurableDiscoveryOptions, DiscoveryGroups, Registrar, Announcement, DiscoveryEvent,
  DiscoveryRegistered, UnicastRequest, DeliveryFailure, DiscoveryServiceOptions, DiscoveryRequestMessage,
  DiscoveryReplyMessage, DiscoveryEventMessage, EventReplyMessage,
} from './discovery.js';
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
  RenewalManagerConfig,
  RenewalStats,
  Transmit,
  RenewalEvent,
  RenewalServiceOptions,
  EventRegistration,
  SetEvent,
} from './leasehold_wasm.js';
export type { FileOp, StoreConfig } from './generated.js';
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
  interface RenewalManager {
    /** The settings in force. */
    readonly config: import('./leasehold_wasm.js').RenewalManagerConfig;
    /**
     * Counters (requestsSent, renewRequests, cancelRequests, leasesRenewed, failures,
     * desiredReached, indefiniteFailures, timeouts, leasesCancelled, repliesIgnored).
     */
    readonly stats: import('./leasehold_wasm.js').RenewalStats;
    /**
     * Renews `lease` until `desiredExpiration` (holder's clock; `Infinity` = forever), asking
     * for `renewDuration` each time (positive, `FOREVER`, or `ANY` with a FOREVER desire).
     */
    renewUntil(lease: L, desiredExpiration: number, renewDuration: number, now: number): void;
    /** Stops managing `lease` and queues a cancel request for it. */
    cancel(lease: L, now: number): void;
    /** The desired expiration of `lease`. */
    expiration(lease: L): number;
    /** Sets the desired expiration of `lease`. */
    setExpiration(lease: L, desiredExpiration: number, now: number): void;
    /** The renew duration of `lease`. */
    renewDuration(lease: L): number;
    /** When `lease` will next be sent for renewal, or undefined. */
    nextRenewal(lease: L): number | undefined;
    /** The round-trip estimate for `landlord`: `{srtt, rttvar, rto, requestTimeout, samples}`. */
    rtt(landlord: string | number | bigint): import('./leasehold_wasm.js').RttEstimate | undefined;
    /** The leases managed, with their current actual expirations. */
    leases(): L[];
    /**
     * Reports that request `id` could not be sent or answered (an indefinite failure unless
     * `error` carries a definite leasehold `code`); its `message` describes it.
     */
    handleFailure(id: number | bigint, error: unknown, now: number): void;
  }
  interface RenewalService {
    /** A handle on one set. */
    set(id: number): RenewalSet;
    /** The landlord id of the set leases, 16 hex digits. */
    readonly id: string;
    /** The policy of set leases, as given. */
    readonly setPolicy: import('./leasehold_wasm.js').PolicyDescription;
    /** Creates a renewal set leased for `leaseDuration` ms (ANY lets the service choose). */
    createSet(leaseDuration: number, now: number): { set: number; lease: L };
    /** The live sets' ids. */
    sets(): number[];
    /** The set's lease (service's clock), or undefined. */
    setLease(set: number, now: number): L | undefined;
    /** The set whose lease `lease` is, or undefined. */
    setOf(lease: L, now: number): number | undefined;
    /** Adds `lease` to a set (Jini `renewFor`): kept `membershipDuration` ms, renewed `renewDuration` ms at a time. */
    add(set: number, lease: L, membershipDuration: number, renewDuration: number, now: number): void;
    /** Takes `lease` out of a set (not cancelled); returns it, or undefined if it was not there. */
    remove(set: number, lease: L, now: number): L | undefined;
    /** The client leases of a set. */
    leases(set: number, now: number): L[];
    /** `{expiration, renewDuration}` of `lease` in a set, or undefined. */
    membership(set: number, lease: L, now: number): { expiration: number; renewDuration: number } | undefined;
    /** Registers for the set's expiration-warning event, `minWarning` ms before its lease expires. */
    setExpirationWarningListener(set: number, minWarning: number, handback: Uint8Array | string, now: number): import('./leasehold_wasm.js').EventRegistration;
    /** Registers for the set's renewal-failure events. */
    setRenewalFailureListener(set: number, handback: Uint8Array | string, now: number): import('./leasehold_wasm.js').EventRegistration;
    /** Ends the set's expiration-warning registration. */
    clearExpirationWarningListener(set: number, now: number): void;
    /** Ends the set's renewal-failure registration. */
    clearRenewalFailureListener(set: number, now: number): void;
    /** The listener of `eventId` answered "unknown event": that registration ends. Whether it was active. */
    unknownEvent(eventId: number): boolean;
    /** Event `(eventId, sequence)` reached its listener (or was given up on): not handed out again after a restart. Whether it was handed out and not yet reported. */
    delivered(eventId: number, sequence: number, now: number): boolean;
    /** The set's active event registrations. */
    registrations(set: number, now: number): import('./leasehold_wasm.js').EventRegistration[];
    /** Answers a request about set leases (renew or cancel a set's lease), object form. */
    handleRequest(request: import('./leasehold_wasm.js').Request, now: number): import('./leasehold_wasm.js').Reply;
    /** The next renewal request for a client lease's landlord, or undefined. */
    pollTransmit(now: number): import('./leasehold_wasm.js').Transmit | undefined;
    /** A client lease landlord's reply, received at `now`. */
    handleReply(reply: import('./leasehold_wasm.js').Reply, now: number): void;
    /** Request `id` failed in transport (indefinite unless `error` carries a definite code). */
    handleFailure(id: number | bigint, error: unknown, now: number): void;
    /** The next set event for a listener, or undefined. */
    pollEvent(now?: number): import('./leasehold_wasm.js').SetEvent | undefined;
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

/** What opening a store found. */
export interface Recovery {
  /** The directory held no store: a new one was written. */
  created: boolean;
  /** Journal records applied on top of the snapshot. */
  replayed: number;
  /** Why a torn tail was cut (a write cut short by a crash), if one was. */
  torn?: string;
  /** Sequence number of the last record now in the state. */
  journalSeq: number;
}

/**
 * Where a journaled object is kept: something that reads a store's files and carries out the
 * core's file operations in order, each completely, before resolving. `FileStore` (Node),
 * `IndexedDbStore` (browsers), `MemoryStore` (nowhere durable), or your own.
 */
export interface StoreHost {
  /** Every file of the store, `[name, bytes]`. */
  read(): Promise<Array<[string, Uint8Array]>>;
  /** Carries out `ops` in order; resolves once all of them are done (durable where they say sync). */
  apply(ops: FileOp[]): Promise<void>;
  /** Lets go of the store (files, lock). */
  close?(): Promise<void>;
}

/**
 * A store's directory on disk (Node only; in browsers `open` throws). `FileStore.open(dir)`
 * creates the directory if needed and takes its lock (`StoreLockedError` while another live
 * process, or another FileStore of this one, holds it; a lock left by a killed process is taken
 * over). Appends are fdatasync'ed (and the directory fsync'ed for a new file), the snapshot is
 * replaced atomically (tmp file, fsync, rename, directory fsync).
 */
export declare class FileStore implements StoreHost {
  static open(dir: string | URL, options?: { lock?: boolean }): Promise<FileStore>;
  readonly path: string;
  read(): Promise<Array<[string, Uint8Array]>>;
  apply(ops: FileOp[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * A store in an IndexedDB database of this origin (browsers, workers): each batch of
 * operations is one transaction committed with `durability: "strict"`; a Web Lock on the name
 * keeps other tabs and workers out. Storage of an origin may be evicted by the browser unless
 * `navigator.storage.persist()` was granted (`persisted`).
 */
export declare class IndexedDbStore implements StoreHost {
  static open(name: string, options?: { lock?: boolean; persist?: boolean; indexedDB?: IDBFactory }): Promise<IndexedDbStore>;
  static destroy(name: string, options?: { indexedDB?: IDBFactory }): Promise<void>;
  readonly name: string;
  readonly persisted: boolean | undefined;
  read(): Promise<Array<[string, Uint8Array]>>;
  apply(ops: FileOp[]): Promise<void>;
  close(): Promise<void>;
}

/** A store in memory (nothing survives the process): for tests, or nowhere durable to write. */
export declare class MemoryStore implements StoreHost {
  static from(files: Iterable<[string, Uint8Array]>): MemoryStore;
  read(): Promise<Array<[string, Uint8Array]>>;
  /** Every file, sorted by name. */
  files(): Array<[string, Uint8Array]>;
  apply(ops: FileOp[]): Promise<void>;
  close(): Promise<void>;
}

/** A store is in use by another process, tab or worker. `code` is `"ELOCKED"`. */
export declare class StoreLockedError extends Error {
  readonly code: 'ELOCKED';
}
/** A store's write failed: nothing more is acknowledged until it is reopened (an IndefiniteError). */
export declare class StoreFailedError extends IndefiniteError {}

/** Group commit for one journaled object (used by the durable drivers). */
export declare class StoreWriter {
  constructor(target: Landlord, host: StoreHost, options?: { onError?: (error: unknown) => void });
  readonly host: StoreHost;
  readonly failed: StoreFailedError | null;
  readonly durableSeq: number;
  /** Batches of operations carried out so far. */
  readonly writes: number;
  /** Resolves once every record written so far is durable. */
  durable(): Promise<void>;
  /** Calls `f` once every record written so far is durable. */
  after(f: () => void): void;
  kick(): void;
  compact(): Promise<void>;
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Options of `LandlordDriver.open`. */
export interface DurableLandlordOptions extends DriverOptions, StoreSettings {
  /**
   * Where the landlord is kept: a directory (Node) or an IndexedDB database name (browsers),
   * or a store object. The driver closes it when it closes.
   */
  store: string | URL | StoreHost;
  /**
   * The landlord's options. `id` and `policy` every time (checked against the store; the
   * policy is code, not data); the rest is used when the store is new. `seed` is needed to
   * reopen a store whose snapshot is lost while its log still starts at record 1.
   */
  landlord: import('./leasehold_wasm.js').LandlordOptions;
  onExpired?: (expired: LeaseEntry) => void;
}

/**
 * A durable landlord and its driver (from `LandlordDriver.open`): expiry on setTimeout, and
 * every answer resolves only once the journal records behind it are durable (group commit).
 */
export declare class DurableLandlordDriver implements AsyncDisposable {
  private constructor();
  readonly landlord: Landlord;
  readonly store: StoreHost;
  readonly recovery: Recovery;
  readonly stats: { logBytes: number; snapshotBytes: number; committed: number; writes: number };
  readonly failed: StoreFailedError | null;
  readonly closed: boolean;
  now(): number;
  /** After changing the landlord directly: re-arms the timer and schedules a commit. */
  update(): void;
  /** Resolves once everything recorded so far is durable. */
  sync(): Promise<void>;
  /** Writes a new snapshot now and drops the log it covers. */
  compact(): Promise<void>;
  /** Answers one encoded request; resolves with the encoded reply once it may leave. */
  serve(bytes: Uint8Array | string, encoding?: import('./leasehold_wasm.js').Encoding): Promise<Uint8Array>;
  /** Answers one request in object form, once durable. */
  handleRequest(request: import('./leasehold_wasm.js').Request): Promise<import('./leasehold_wasm.js').Reply>;
  grant(resource: Uint8Array | string, duration: number): Promise<import('./leasehold_wasm.js').Grant>;
  renew(cookie: string, duration: number): Promise<number>;
  /** Resolves with the lease's resource (bytes). */
  cancel(cookie: string): Promise<Uint8Array>;
  /** Stops the timer, writes what is pending, closes the store. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Runs a landlord's expiry on setTimeout. */
export declare class LandlordDriver implements Disposable {
  /** Opens a durable landlord from its store; see `DurableLandlordDriver`. */
  static open(options: DurableLandlordOptions): Promise<DurableLandlordDriver>;
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
  /**
   * `endpoint: 'coord'`: a coordination message (js/coord.js); `'renewal'`: a renewal set
   * message (js/renewal.js, JSON); `wait`: ms a server may hold it; `onAttempt`: called as each
   * server is tried, just before its request goes out (the last call before the reply is when
   * the answered request was sent).
   */
  options?: { endpoint?: 'lease' | 'coord' | 'renewal'; wait?: number; onAttempt?: () => void },
) => Promise<Uint8Array | ArrayBuffer | string>;

/**
 * A transport over HTTP fetch to one server or a cluster (a bare origin means its `/lease`):
 * renewals and cancels name their landlord as the wire writes it (`?landlord=<16 hex digits>`).
 * An answer that carries a wire reply (the request's content type and a body that decodes) is
 * the landlord's definite answer whatever its status (a 404 unknown lease, a 409 denial).
 * Each send tries the servers in turn on network errors, time-outs (`timeout` ms per attempt,
 * default 1000), HTTP 5xx and answers without a wire reply, follows redirects, remembers
 * `X-Leasehold-Owner`, and rejects with an IndefiniteError only when every server failed.
 */
/** `landlord=` and the id as the wire writes it, 16 hex digits (`landlordQuery(16)` is
 * `'landlord=0000000000000010'`); a string must already be 16 hex digits. */
export declare function landlordQuery(landlord: string | number | bigint): string;

/** Options of {@link fetchTransport}. */
export interface FetchTransportOptions {
  /** The fetch to use (default `globalThis.fetch`). */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** The wire encoding (default binary). */
  encoding?: import('./leasehold_wasm.js').Encoding;
  /** Per-attempt time-out in ms (default 1000). */
  timeout?: number;
  /** A leasehold-server token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Node: an undici `Agent` (e.g. `new Agent({ connect: { ca, cert, key } })`) for a CA
   * bundle and a client certificate, passed to each `fetch` call. */
  dispatcher?: unknown;
}

export declare function fetchTransport(
  urls: string | URL | Array<string | URL>,
  options?: FetchTransportOptions,
): Transport;

/** What a driver of `M` hands to `onEvent`: a RenewalManager's events (a union on `type`:
 * `'renewed'`, `'desiredExpirationReached'`, `'renewalFailed'`), or a RenewalService's set events. */
export type DriverEvent<M> = M extends import('./leasehold_wasm.js').RenewalService
  ? import('./leasehold_wasm.js').SetEvent
  : import('./leasehold_wasm.js').RenewalEvent;

/** Runs a RenewalManager (or a RenewalService) on setTimeout with a Promise-returning transport. */
export declare class RenewalDriver<
  M extends import('./leasehold_wasm.js').RenewalManager | import('./leasehold_wasm.js').RenewalService =
    import('./leasehold_wasm.js').RenewalManager,
> implements Disposable {
  constructor(
    manager: M,
    options: DriverOptions & {
      transport: Transport;
      encoding?: import('./leasehold_wasm.js').Encoding;
      onEvent?: (event: DriverEvent<M>) => void;
    },
  );
  readonly manager: M;
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
export declare function __install(exports?: unknown, platform?: unknown): void;

export {
  Fence, FencedError, lock, elect, observe, encodeCoordRequest, decodeCoordRequest, encodeCoordReply, decodeCoordReply,
  type Lock, type LockOptions, type Leader, type Observer, type CoordRequest, type CoordReply, type CoordEvent,
  type CoordHolder, type Token,
} from './coord.js';
export {
  RemoteSet, encodeSetRequest, decodeSetRequest, encodeSetReply, decodeSetReply, encodeSetEvent, decodeSetEvent,
  type SetRequest, type SetReply, type SetEventMessage, type ClientLease, type SetEventType,
} from './renewal.js';
