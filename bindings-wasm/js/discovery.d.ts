/// <reference path="./disposable.d.ts" />
// Types of DiscoveryDriver (discovery.js).
import type {
  DiscoveryService, DiscoveryServiceOptions, DiscoveryEvent, DeliveryFailure, DiscoveryRegistered,
  DiscoveryGroups, Announcement, Recovery, Encoding, StoreConfig,
} from './leasehold_wasm.js';
import type { DriverOptions, StoreHost } from './api.js';

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
