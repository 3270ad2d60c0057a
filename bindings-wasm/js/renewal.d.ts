// Types of renewal sets at a remote renewal service (js/renewal.js): the set messages (JSON
// object forms of core/src/service/wire.rs) and RemoteSet over a fetchTransport.
import type { Lease, Limits, Encoding } from './leasehold_wasm.js';
import type { Transport } from './api.js';

/** A client lease as the set messages carry it: hex ids, decimal strings of ms. */
export interface ClientLease {
  landlord: string; cookie: string; remaining: string; urls: string[];
  /** In `leases` answers: how long it is kept, and what each renewal asks for. */
  membership?: string; renew?: string;
}
/** The events of a set. */
export type SetEventType = 'expiration_warning' | 'renewal_failure';
/** A set request message, JSON object form. */
export interface SetRequest {
  v: 1; id: string;
  body:
    | { op: 'create_set'; duration: string }
    | { op: 'add'; set: string; lease: ClientLease; membership: string; renew: string }
    | { op: 'remove'; set: string; landlord: string; cookie: string; urls: string[] }
    | { op: 'leases'; set: string }
    | { op: 'listen'; set: string; event: SetEventType; min_warning: string; url: string; handback: string }
    | { op: 'unlisten'; set: string; event: SetEventType };
}
/** A set reply message, JSON object form. */
export interface SetReply {
  v: 1; id: string; landlord: string;
  body:
    | { op: 'set_created'; set: string; cookie: string; duration: string }
    | { op: 'done' }
    | { op: 'removed'; lease?: ClientLease }
    | { op: 'leases'; leases: ClientLease[] }
    | { op: 'registered'; event_id: string; sequence: string }
    | { op: 'error'; code: number; message: string };
}
/** An event a renewal service POSTs to a listener, JSON object form. */
export interface SetEventMessage {
  v: 1; event_id: string; sequence: string; service: string; set: string; handback: string;
  body:
    | { kind: 'expiration_warning'; remaining: string }
    | { kind: 'renewal_failure'; lease: ClientLease; error?: { code: number; message: string } };
}

export declare function encodeSetRequest(message: SetRequest, encoding?: 'json'): string;
export declare function encodeSetRequest(message: SetRequest, encoding: 'binary'): Uint8Array;
export declare function decodeSetRequest(data: Uint8Array | string, limits?: Partial<Limits>): SetRequest;
export declare function decodeSetRequest(data: Uint8Array | string, encoding: Encoding, limits?: Partial<Limits>): SetRequest;
export declare function encodeSetReply(message: SetReply, encoding?: 'json'): string;
export declare function encodeSetReply(message: SetReply, encoding: 'binary'): Uint8Array;
export declare function decodeSetReply(data: Uint8Array | string, limits?: Partial<Limits>): SetReply;
export declare function decodeSetReply(data: Uint8Array | string, encoding: Encoding, limits?: Partial<Limits>): SetReply;
export declare function encodeSetEvent(message: SetEventMessage, encoding?: 'json'): string;
export declare function encodeSetEvent(message: SetEventMessage, encoding: 'binary'): Uint8Array;
export declare function decodeSetEvent(data: Uint8Array | string, limits?: Partial<Limits>): SetEventMessage;
export declare function decodeSetEvent(data: Uint8Array | string, encoding: Encoding, limits?: Partial<Limits>): SetEventMessage;

/** A renewal set at a remote renewal service (`leasehold-server --renewal-shards N`). */
export declare class RemoteSet {
  /** A handle on a set known by its lease and number. `transport`: a JSON fetchTransport. */
  constructor(transport: Transport, lease: Lease, number: number);
  /** Creates a set leased for at most `duration` ms (Infinity: FOREVER; -1: ANY). */
  static create(transport: Transport, duration: number, options?: { now?: number }): Promise<RemoteSet>;
  /** The set's own lease (landlord: the renewal service). */
  lease: Lease;
  /** The set's number (the `set` of its events). */
  readonly number: number;
  /** The renewal service (16 hex digits). */
  readonly service: string;
  /** Hands `lease` to the set (renewed at `landlordUrls` until `membership` ms from now). */
  add(lease: Lease, landlordUrls: string | string[], options?: { membership?: number; renew?: number; now?: number }): Promise<void>;
  /** Takes `lease` back (not cancelled): as the service last renewed it, or undefined. */
  remove(lease: Lease, landlordUrls: string | string[]): Promise<ClientLease | undefined>;
  /** The set's leases with their memberships. */
  leases(): Promise<ClientLease[]>;
  /** Registers `url` for the set's `event`. */
  listen(event: SetEventType, url: string, options?: { handback?: Uint8Array | string; minWarning?: number }): Promise<{ eventId: number; sequence: number }>;
  /** Ends the set's registration for `event`. */
  unlisten(event: SetEventType): Promise<void>;
  /** Renews the set's own lease: the duration granted. */
  renew(duration: number, options?: { now?: number }): Promise<number>;
  /** Cancels the set's lease: the set is destroyed. */
  cancel(): Promise<void>;
}
