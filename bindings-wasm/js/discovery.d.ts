/// <reference path="./disposable.d.ts" />
// Types of the discovery service (its calls, named by discovery.js on the wasm class), its
// values, its messages and its driver. Values are the core's data form with camelCase keys;
// messages are their JSON object form (snake_case, as on the wire).
import type {
  DiscoveryService, Encoding, Lease, EventRegistration, Limits,
} from './leasehold_wasm.js';
import type { DriverOptions, StoreHost, Recovery } from './api.js';
import type * as Data from './generated.js';
import type { Registrar, Announcement, Delivery, StoreConfig } from './generated.js';

/** Groups of interest: `null` for all groups, else an array of names (`[]`: no group). */
export type DiscoveryGroups = string[] | null;
export type { Registrar, Announcement } from './generated.js';
/** A discovered or discarded event for a registration's listener (Jini `RemoteDiscoveryEvent`); `listener` where the host delivers it (what `setListener` stored; empty if nothing), absent in an event read back from its message. */
export type DiscoveryEvent = Omit<Delivery, 'listener'> & { listener?: Uint8Array };
/** What `register` gives: the registration's number, its lease and its event registration. */
export interface DiscoveryRegistered { registration: number; lease: Lease; eventRegistration: EventRegistration; }
/** A unicast discovery the host should make: connect to `locator`, answer `unicastFound`/`unicastFailed` with `id`. */
export interface UnicastRequest { id: number | bigint; locator: string; host: string; port: number; }
/** Why an event could not be delivered: `indefinite` is retried until the registration's lease ends; the others cancel it. `deliveryFailed` also takes the kinds in camelCase and no `message`. */
export type DeliveryFailure =
  | Data.DeliveryFailure
  | { kind: "indefinite" | "bad_object" | "badObject" | "bad_invocation" | "badInvocation"; message?: string }
  | { kind: "unknownEvent" };
/** Options of `new DiscoveryService(...)` (durations in ms). */
export type DiscoveryServiceOptions = Data.DiscoveryOptions;
/** A discovery request in its JSON object form: `{v: 1, id: "7", body: {op: "register", groups, locators, handback, duration}}` etc. */
export type DiscoveryRequestMessage = { v: 1; id: string | number; body: { op: string; [k: string]: unknown } };
/** A discovery reply in its JSON object form: `{v: 1, id, landlord, body: {op: "registered", ...}}`. */
export type DiscoveryReplyMessage = { v: 1; id: string; landlord: string; body: { op: string; [k: string]: unknown } };
/** A discovery event in its JSON object form (`event_id`, `source`, `sequence`, `handback` hex, `discarded`, `registrars`). */
export type DiscoveryEventMessage = { v: 1; event_id: string; source: { service: string; object: string }; sequence: string; handback: string; discarded: boolean; registrars: Registrar[] };
/** A listener's answer to an event: `{v: 1, event_id, sequence, body: {op: "received"} | {op: "unknown_event"} | {op: "error", code, message}}`. */
export type EventReplyMessage = { v: 1; event_id: string | number; sequence: string | number; body: { op: "received" } | { op: "unknown_event" } | { op: "error"; code: number; message: string } };

export declare function encodeDiscoveryRequest(message: DiscoveryRequestMessage, encoding?: Encoding): Uint8Array | string;
export declare function decodeDiscoveryRequest(bytes: Uint8Array | string, encoding?: Encoding, limits?: Partial<Limits>): DiscoveryRequestMessage;
export declare function encodeDiscoveryReply(message: DiscoveryReplyMessage, encoding?: Encoding): Uint8Array | string;
export declare function decodeDiscoveryReply(bytes: Uint8Array | string, encoding?: Encoding, limits?: Partial<Limits>): DiscoveryReplyMessage;
export declare function encodeDiscoveryEvent(message: DiscoveryEventMessage, encoding?: Encoding): Uint8Array | string;
export declare function decodeDiscoveryEvent(bytes: Uint8Array | string, encoding?: Encoding, limits?: Partial<Limits>): DiscoveryEventMessage;
export declare function encodeEventReply(message: EventReplyMessage, encoding?: Encoding): Uint8Array | string;
export declare function decodeEventReply(bytes: Uint8Array | string, encoding?: Encoding, limits?: Partial<Limits>): EventReplyMessage;
export declare function discoveryEventFromBytes(bytes: Uint8Array | string, encoding?: Encoding, limits?: Partial<Limits>): DiscoveryEvent;

declare module './leasehold_wasm.js' {
  interface DiscoveryService {
    /** The landlord id of the registration leases (16 hex digits). */
    readonly id: string;
    register(groups: DiscoveryGroups, locators: string[], handback: Uint8Array | string, leaseDuration: number, now: number): DiscoveryRegistered;
    registrations(): number[];
    discovered(): Registrar[];
    registrationOf(cookie: string, now: number): number | undefined;
    lease(registration: number, now: number): Lease;
    eventRegistration(registration: number, now: number): EventRegistration;
    registrars(registration: number, now: number): Registrar[];
    groups(registration: number, now: number): DiscoveryGroups;
    locators(registration: number, now: number): string[];
    addGroups(registration: number, groups: string[], now: number): void;
    setGroups(registration: number, groups: DiscoveryGroups, now: number): void;
    removeGroups(registration: number, groups: string[], now: number): void;
    addLocators(registration: number, locators: string[], now: number): void;
    setLocators(registration: number, locators: string[], now: number): void;
    removeLocators(registration: number, locators: string[], now: number): void;
    discard(registration: number, registrar: string, now: number): void;
    setListener(registration: number, listener: Uint8Array | string, now: number): void;
    listener(registration: number): Uint8Array | undefined;
    handleAnnouncement(announcement: Announcement, now: number): void;
    handleDatagram(datagram: Uint8Array, now: number): void;
    unicastFound(requestId: number | bigint, found: Uint8Array | { registrar: string; groups: string[] }, now: number): boolean;
    unicastFailed(requestId: number | bigint, now: number, reason?: string): boolean;
    registrarUnreachable(registrar: string, now: number): boolean;
    delivered(eventId: number | bigint, sequence: number | bigint, now: number): boolean;
    deliveryFailed(eventId: number | bigint, sequence: number | bigint, failure: DeliveryFailure, now: number): boolean;
    handleEventReply(bytes: Uint8Array | string, now: number, encoding?: Encoding): boolean;
    handleRequest(request: import('./leasehold_wasm.js').Request, now: number): import('./leasehold_wasm.js').Reply;
    handleBytes(bytes: Uint8Array | string, now: number, encoding?: Encoding): Uint8Array;
    handleDiscoveryBytes(bytes: Uint8Array | string, now: number, encoding?: Encoding, listener?: Uint8Array | string): Uint8Array;
    pollTransmit(now: number): UnicastRequest | undefined;
    pollEvent(now: number): DiscoveryEvent | undefined;
  }
}

/** `null`: every group (Jini's ALL_GROUPS). */
export declare const ALL_GROUPS: null;
/** `[]`: no group (Jini's NO_GROUPS). */
export declare const NO_GROUPS: readonly string[];

export interface DiscoveryDriverOptions extends DriverOptions {
  /** Sends one event to `listener` (the text given to `setListener`); resolve (received) or resolve with a failure; a rejection is an indefinite failure. */
  deliver: (event: DiscoveryEvent, listener: string | undefined) => Promise<void | DeliveryFailure>;
  /** Unicast discovery of `"host:port"`: resolve with the datagram read or `{registrar, groups}`; reject if it failed. */
  probe?: (locator: string) => Promise<Uint8Array | { registrar: string; groups: string[] }>;
}

export interface DurableDiscoveryOptions extends DiscoveryDriverOptions, StoreConfig {
  /** A directory (Node), an IndexedDB name (browsers), or a store object. */
  store: string | URL | StoreHost;
  /** The service's settings (a new store takes them all; an existing one keeps id and seed). */
  service: DiscoveryServiceOptions;
}

/** Runs a DiscoveryService on timers; every answer is a Promise (resolved once durable for `open`'s driver). */
export declare class DiscoveryDriver implements AsyncDisposable {
  constructor(service: DiscoveryService, options: DiscoveryDriverOptions);
  static open(options: DurableDiscoveryOptions): Promise<DiscoveryDriver>;
  readonly service: DiscoveryService;
  readonly recovery: Recovery | undefined;
  readonly inFlight: number;
  readonly closed: boolean;
  now(): number;
  run<T>(f: (service: DiscoveryService, now: number) => T): Promise<T>;
  register(groups: DiscoveryGroups, locators: string[], handback: Uint8Array | string, leaseDuration: number, listener?: Uint8Array | string): Promise<DiscoveryRegistered>;
  serveDiscovery(bytes: Uint8Array | string, encoding?: Encoding): Promise<Uint8Array>;
  serve(bytes: Uint8Array | string, encoding?: Encoding): Promise<Uint8Array>;
  announce(announcement: Uint8Array | Announcement): Promise<void>;
  unreachable(registrar: string): Promise<boolean>;
  update(): void;
  sync(): Promise<void>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
