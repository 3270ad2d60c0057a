/// <reference path="./disposable.d.ts" />
// Types of `leasehold/tabs`: leader election and named leases among the tabs of one origin.
import type { RenewalManagerOptions } from './leasehold_wasm.js';
import type { LeaseError } from './errors.js';

/** The longest lease a tab may ask for (10 minutes). */
export declare const MAX_LEASE_MS: number;
/** The default `leaseMs` (5 s). */
export declare const DEFAULT_LEASE_MS: number;
export { ANY, FOREVER } from './api.js';

/**
 * The clock of `leaderUntil`, `until` and every time this module hands out: integer ms from
 * `performance.timeOrigin + performance.now()` (monotonic; roughly epoch ms).
 */
export declare function now(): number;

/** How tabs reach their landlord. */
export type TabsMode = 'sharedworker' | 'fallback';

/** Settings, before the first election or lease of the page. */
export interface TabsSettings {
  /** 'auto' (default): SharedWorker where there is one, else the fallback. */
  mode?: 'auto' | TabsMode;
  /** Where tabs-worker.js is served (default: beside tabs.js, for bundlers that copy it elsewhere). */
  workerUrl?: string | URL;
  /** How long a request to the landlord may go unanswered (default 10 000 ms). */
  requestTimeoutMs?: number;
}
/** Sets how tabs reach their landlord; throws once an election or lease exists. */
export declare function configure(settings?: TabsSettings): void;
/** The transport this page uses. Throws NotSupportedError where neither works. */
export declare function tabsMode(): TabsMode;
/** This tab's id, as other tabs see it in `leader.tab`. */
export declare function tabId(): string;

/** Why a tab stopped leading or holding a lease. */
export type LostReason =
  /** This tab cancelled it: `resign()`, `close()`, `release()`, the page was hidden for good (pagehide) or frozen (freeze event). */
  | 'cancelled'
  /** Its time ran out with no renewal answered (the tab was frozen, blocked or throttled). */
  | 'expired'
  /** The landlord refused a renewal (it no longer knows the lease). */
  | 'renewalFailed'
  /** The SharedWorker went away (crash, or closed by devtools). */
  | 'workerGone';

/** Who leads, as the landlord last reported. */
export interface LeaderInfo {
  /** The leader's tab id. */
  tab: string;
  /** The label it gave (`options.label`), if any. */
  label?: string;
  /** The lease's number in the landlord's log. */
  lease: number;
  /** Until when its lease runs at the landlord, converted to this tab's clock (approximate). */
  until?: number;
  /** Whether the leader is this tab. */
  self: boolean;
}

/** One entry of the landlord's log. */
export interface LeaseRecord {
  seq: number;
  name: string;
  type: 'granted' | 'renewed' | 'cancelled' | 'expired';
  /** When it happened (landlord's clock in `history()`; this tab's clock in 'record' events). */
  at: number;
  /** The lease's expiration after a grant or renewal, or the expiration that passed. */
  until?: number;
  tab?: string;
  label?: string;
  lease?: number;
  /** For 'cancelled': 'holder' (the tab cancelled) or 'tabGone' (its tab closed or crashed). */
  cause?: 'holder' | 'tabGone';
  /** Only in 'record' events: whether this tab held it. */
  self?: boolean;
}

/** The landlord's log, with its clock. */
export interface LandlordLog {
  now: number;
  instance: string;
  stats: { requests: number; denied: number };
  entries: LeaseRecord[];
}

/** Events of a LeaderElection or a TabLease (fields per type). */
export declare class TabsEvent extends Event {
  constructor(type: string, fields?: object);
  readonly name?: string;
  /** 'leader', 'renewed', 'lost': until when this tab may act (this tab's clock). */
  readonly until?: number;
  /** 'lost': why. */
  readonly reason?: LostReason;
  /** 'lost': what happened, in words ('resigned', 'pagehide', 'freeze', the landlord's message, ...). */
  readonly cause?: string;
  /** 'lost': the error behind it, if any. */
  readonly error?: LeaseError | Error;
  /** 'change': who leads now. */
  readonly leader?: LeaderInfo | null;
  /** 'record': one entry of the landlord's log (times on this tab's clock). */
  readonly record?: LeaseRecord;
}

interface TabsEventMap {
  leader: TabsEvent & { until: number };
  lost: TabsEvent & { reason: LostReason; cause: string };
  renewed: TabsEvent & { until: number };
  change: TabsEvent & { leader: LeaderInfo | null };
  record: TabsEvent & { record: LeaseRecord };
  error: TabsEvent & { error: unknown };
}

/** Options of `electLeader`. */
export interface ElectionOptions {
  /** Lease length asked of the landlord, ms (1 to MAX_LEASE_MS; default 5000). See the README on choosing it. */
  leaseMs?: number;
  /** Shown to other tabs as `leader.label`. */
  label?: string;
  /** Cancel the lease on the page's `freeze` event, so another tab leads at once (default true). */
  resignOnFreeze?: boolean;
  /** RenewalManager settings (default `{renewDivisor: 2, initialRtt: 50, minRto: 50, maxRetryInterval: 1000}`: renew at half the lease). */
  renewal?: RenewalManagerOptions;
  /** Aborting it closes the election. */
  signal?: AbortSignal;
}

/** One tab's part in electing a leader for a name. */
export declare class LeaderElection extends EventTarget implements Disposable {
  constructor(name: string, options?: ElectionOptions);
  readonly name: string;
  readonly leaseMs: number;
  readonly tabId: string;
  readonly mode: TabsMode;
  /** Whether this tab leads now; the renewal manager is first brought to `now()` (so 'lost' may fire first). */
  readonly isLeader: boolean;
  /** Until when this tab may act as leader (`now()`'s clock): the send time of its last answered renewal plus the granted time, less the clock-drift margin. */
  readonly leaderUntil: number | undefined;
  /** Who leads, as the landlord last reported. */
  readonly leader: LeaderInfo | null;
  readonly campaigning: boolean;
  /** Starts or resumes campaigning. */
  campaign(): void;
  /** Resolves when this tab leads. */
  whenLeader(signal?: AbortSignal): Promise<{ until: number }>;
  /** Cancels the lease (another tab takes over at once) and stops campaigning. */
  resign(): void;
  /** Resigns and stops watching; the election is done. */
  close(): void;
  /** The landlord's log for this name. */
  history(): Promise<LandlordLog>;
  addEventListener<K extends keyof TabsEventMap>(type: K, listener: (this: LeaderElection, ev: TabsEventMap[K]) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof TabsEventMap>(type: K, listener: (this: LeaderElection, ev: TabsEventMap[K]) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
  [Symbol.dispose](): void;
}

/** Starts a LeaderElection: this tab campaigns for `name` and leads while it holds its lease. */
export declare function electLeader(name: string, options?: ElectionOptions): LeaderElection;

/** Options of `acquireLease`. */
export interface AcquireOptions {
  /** Lease length, ms (default 5000). */
  leaseMs?: number;
  /** Wait until the lease is free (default true); false rejects with LeaseDeniedError if another tab holds it. */
  wait?: boolean;
  signal?: AbortSignal;
  label?: string;
  renewal?: RenewalManagerOptions;
}

/** A named lease held by this tab, renewed until released or lost. */
export declare class TabLease extends EventTarget implements Disposable {
  private constructor();
  readonly name: string;
  readonly leaseMs: number;
  readonly state: 'new' | 'held' | 'lost';
  /** Whether this tab still holds it (brought to `now()` first). */
  readonly held: boolean;
  /** Until when this tab may act on it (`now()`'s clock), or undefined once lost. */
  readonly until: number | undefined;
  readonly lostBecause: { reason: LostReason; cause: string; error?: unknown; until?: number } | null;
  /** Cancels the lease at the landlord and stops renewing. */
  release(cause?: string): void;
  addEventListener<K extends 'renewed' | 'lost'>(type: K, listener: (this: TabLease, ev: TabsEventMap[K]) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  [Symbol.dispose](): void;
}

/** Obtains the lease on `name` for this tab (at most one tab holds a name at a time). */
export declare function acquireLease(name: string, options?: AcquireOptions): Promise<TabLease>;

/** The landlord's log for every name (or one). */
export declare function landlordLog(name?: string): Promise<LandlordLog>;

/** The page's connection to its landlord, for diagnostics: events 'workergone', 'reconnect', 'landlord' (this tab now runs the fallback landlord), 'error'. */
export declare function connectionEvents(): EventTarget & { readonly tab: string; readonly mode: TabsMode; readonly isLandlord: boolean };
