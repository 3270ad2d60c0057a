/// <reference path="./disposable.d.ts" />
// Types of coordination (js/coord.js): the Fence, the coordination messages, and the lock /
// elect / observe recipes over fetchTransport.
import type { Lease, RenewalManager, Encoding, Limits } from './leasehold_wasm.js';
import type { LeaseError } from './errors.js';
import type { Transport, RenewalDriver } from './api.js';

/** A fencing token: a number, or a BigInt beyond 2^53. */
export type Token = number | bigint;

/** A Fence refused a token older than the highest it accepted. */
export declare class FencedError extends LeaseError {
  readonly token: Token;
  readonly highest: Token;
}

/** The resource's side of fencing tokens: accepts an operation only with a token at least the
 * highest it has accepted, and then remembers it. */
export declare class Fence {
  constructor(highest?: Token);
  static restore(snapshot: string): Fence;
  snapshot(): string;
  /** Accepts `token` (and remembers it), or throws FencedError. */
  check(token: Token): void;
  admits(token: Token): boolean;
  readonly highest: Token;
  free(): void;
}

/** A holder as a watch or a `holders` reply lists it (wire form: hex bytes, decimal strings). */
export interface CoordHolder { resource: string; token: string; holder: string; remaining: string }
/** One event of a watch (wire form). */
export interface CoordEvent {
  sequence: string; kind: 'granted' | 'renewed' | 'cancelled' | 'expired';
  resource: string; token: string; holder: string; duration: string;
}
/** A coordination request message, JSON object form (core/src/coord/wire.rs). */
export interface CoordRequest {
  v: 1; id: string;
  body:
    | { op: 'acquire'; resource: string; duration: string; wait: string; holder: string }
    | { op: 'watch'; resource: string; prefix: boolean; renewals: boolean; duration: string; handback: string }
    | { op: 'poll'; cookie: string; since: string; wait: string; max: number }
    | { op: 'holders'; resource: string; prefix: boolean };
}
/** A coordination reply message, JSON object form. */
export interface CoordReply {
  v: 1; id: string; landlord: string;
  body:
    | { op: 'acquired'; cookie: string; duration: string; token: string; resource: string; waited: string }
    | { op: 'watching'; cookie: string; duration: string; event_id: string; sequence: string; current: CoordHolder[] }
    | { op: 'events'; event_id: string; handback: string; last: string; missed?: { from: string; to: string }; current?: CoordHolder[]; events: CoordEvent[] }
    | { op: 'holders'; holders: CoordHolder[] }
    | { op: 'error'; code: number; message: string };
}
export declare function encodeCoordRequest(message: CoordRequest, encoding?: Encoding): Uint8Array | string;
export declare function decodeCoordRequest(bytes: Uint8Array | string, encoding?: Encoding, limits?: Partial<Limits>): CoordRequest;
export declare function encodeCoordReply(message: CoordReply, encoding?: Encoding): Uint8Array | string;
export declare function decodeCoordReply(bytes: Uint8Array | string, encoding?: Encoding, limits?: Partial<Limits>): CoordReply;

/** An exclusive resource held: pass `token` with every operation on the resource. */
export interface Lock extends AsyncDisposable, Disposable {
  readonly token: Token;
  readonly resource: Uint8Array;
  /** The landlord, 16 hex digits. */
  readonly landlord: string;
  readonly lease: Lease;
  /** Until when (the driver's clock) the lease is known held; undefined once lost or released. */
  safeUntil(): number | undefined;
  readonly held: boolean;
  release(): Promise<void>;
}

export interface LockOptions {
  /** How long to wait (ms) if it is held; 0 (the default): fail at once with LeaseDeniedError. */
  wait?: number;
  /** The lease asked for, ms (default 10 000); kept renewed. */
  lease?: number;
  /** A label watchers and observers see. */
  holder?: string | Uint8Array;
  /** The RenewalDriver (over the same transport) that keeps it renewed; default: one of its own. */
  driver?: RenewalDriver<RenewalManager>;
  encoding?: Encoding;
  maxClockDriftPpm?: number;
}

export declare function lock(transport: Transport, name: string | Uint8Array, options?: LockOptions): Promise<Lock>;
export declare function elect(
  transport: Transport, name: string | Uint8Array, value: string | Uint8Array,
  options?: { giveUp?: number; lease?: number; driver?: RenewalDriver<RenewalManager>; encoding?: Encoding },
): Promise<Lock>;

/** A leader as observers see it. */
export interface Leader { token: Token; value: Uint8Array }

/** Follows an election's leader through a watch. */
export interface Observer extends AsyncDisposable {
  readonly leader: Leader | undefined;
  readonly lastEvent: Token;
  /** Resolves true if the leader changed within `timeout` ms. */
  next(timeout: number): Promise<boolean>;
  close(): Promise<void>;
}
export declare function observe(transport: Transport, name: string | Uint8Array, options?: { lease?: number; encoding?: Encoding }): Promise<Observer>;
