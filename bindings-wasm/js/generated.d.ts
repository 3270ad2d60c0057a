// Generated from the Rust types by bindings-wasm/tests/ts_types.rs: do not edit. The
// core's data forms as this package gives and takes them (camelCase keys; 64-bit
// integers as numbers when safe, else BigInts; durations in ms, Infinity for FOREVER).
import type { PolicyDescription as PolicySpec } from './leasehold_wasm.js';

/**
 * Identifies a landlord (grantor). Chosen by the host; leases of one landlord can batch.
 *
 * Written as 16 lower-case hex digits in text forms.
 */
export type LandlordId = string;

/**
 * Identifies a lookup service (a *registrar*, Jini's `ServiceID`): 128 bits, chosen by the
 * registrar and kept across its restarts.
 *
 * Written as 32 lower-case hex digits in text forms (either case is read).
 */
export type RegistrarId = string;

/**
 * Where a lookup service listens for unicast discovery (Jini's `LookupLocator`): a host and a
 * port.
 *
 * The host is kept in lower case, so two locators are equal exactly when their hosts are equal
 * ignoring ASCII case and their ports are equal (`LookupLocator.equals`). No name resolution
 * is done: `localhost:4160` and `127.0.0.1:4160` are different locators.
 *
 * Text form: `host:port`, or `[v6-address]:port` for a host containing `:` (an IPv6 literal).
 * A host is 1 to 255 bytes of ASCII letters, digits, `.`, `-`, `_`, `:` and `%`; the port is
 * 1 to 65535.
 *
 */
export type Locator = string;

/**
 * A lookup service as the discovery service knows it: its id, the groups it is a member of,
 * and the locators it was found at (announced, or reached by unicast discovery).
 */
export type Registrar = { 
/**
 * Its id.
 */
id: RegistrarId, 
/**
 * The groups it is a member of, as last heard.
 */
groups: Array<string>, 
/**
 * Where it was found.
 */
locators: Array<Locator>, };

/**
 * A multicast announcement of a lookup service, as the host received it (the datagram format
 * is [`Announcement::encode`]).
 *
 * A registrar announces itself every so often. `ttl` says how long after this announcement it
 * should still count as present without another one (typically a few announcement intervals);
 * once that passes in silence, the service treats it as unreachable. `sequence` grows with
 * every announcement of the registrar, across its restarts (for example epoch milliseconds at
 * start plus a counter): an announcement with a number at or below the last one accepted from
 * that registrar is stale (duplicated or reordered) and ignored.
 *
 * Data form (serde): `{registrar, groups, locator, sequence, ttl}`.
 */
export type Announcement = { 
/**
 * Who announces.
 */
registrar: RegistrarId, 
/**
 * Its groups.
 */
groups: Array<string>, 
/**
 * Where it takes unicast discovery.
 */
locator: Locator, 
/**
 * Grows with every announcement of this registrar.
 */
sequence: number | bigint, 
/**
 * How long it counts as present after this announcement, in ms (1 to 2^32 - 1).
 */
ttl: number, };

/**
 * What sends the events of a registration: a service and an object inside it.
 *
 * For a renewal service, `service` is the id of the landlord that grants its set leases and
 * `object` is the set's number ([`crate::service::SetId`]).
 */
export type EventSource = { 
/**
 * The service that generates the events.
 */
service: LandlordId, 
/**
 * The object inside the service the events are about.
 */
object: number | bigint, };

/**
 * An event to deliver (data form): the event and the listener of its registration.
 */
export type Delivery = { 
/**
 * The registration's event id.
 */
eventId: number | bigint, 
/**
 * Who sent it: the service and the registration's number.
 */
source: EventSource, 
/**
 * Its sequence number.
 */
sequence: number | bigint, 
/**
 * The registration's handback, exactly as registered.
 */
handback: Uint8Array, 
/**
 * A discarded event (else a discovered one).
 */
discarded: boolean, 
/**
 * The registrars discovered or discarded, in id order.
 */
registrars: Array<Registrar>, 
/**
 * Where the host delivers it (empty when none was set).
 */
listener: Uint8Array, };

/**
 * Why an event could not be delivered to a registration's listener (LD.3.1).
 *
 * Data form (serde): `{kind: "indefinite", message}`, `{kind: "unknown_event"}`,
 * `{kind: "bad_object", message}`, `{kind: "bad_invocation", message}`.
 */
export type DeliveryFailure = { "kind": "indefinite", "message": string } | { "kind": "unknown_event" } | { "kind": "bad_object", "message": string } | { "kind": "bad_invocation", "message": string };

/**
 * Limits in settings: each one given replaces the default.
 */
export type LimitsOptions = { 
/**
 * [`Limits::max_message_bytes`].
 */
maxMessageBytes?: number, 
/**
 * [`Limits::max_batch`].
 */
maxBatch?: number, 
/**
 * [`Limits::max_resource_bytes`].
 */
maxResourceBytes?: number, };

/**
 * A discovery service's settings (data form); each one not given keeps the default of
 * [`DiscoveryConfig::new`]. Unknown names are refused.
 */
export type DiscoveryOptions = { 
/**
 * The landlord id of registration leases and event sources.
 */
id: string | number | bigint, 
/**
 * 32 bytes of entropy for the cookies (the host's own when not given).
 */
seed?: Uint8Array, 
/**
 * How registration leases are granted.
 */
leasePolicy?: PolicySpec, 
/**
 * Grace after a registration lease expires.
 */
grace?: number | bigint, 
/**
 * Message and set limits.
 */
limits?: LimitsOptions, 
/**
 * [`DiscoveryConfig::event_retry`].
 */
eventRetry?: Array<number | bigint>, 
/**
 * [`DiscoveryConfig::delivery_timeout`].
 */
deliveryTimeout?: number | bigint, 
/**
 * [`DiscoveryConfig::unicast_retry`].
 */
unicastRetry?: Array<number | bigint>, 
/**
 * [`DiscoveryConfig::unicast_timeout`].
 */
unicastTimeout?: number | bigint, 
/**
 * [`DiscoveryConfig::max_registrars`].
 */
maxRegistrars?: number, 
/**
 * [`DiscoveryConfig::max_announcement_ttl`].
 */
maxAnnouncementTtl?: number | bigint, 
/**
 * [`DiscoveryConfig::restore_jump`].
 */
restoreJump?: number | bigint, };

/**
 * A renewal manager's settings (data form); each one not given keeps the default of
 * [`RenewalManagerConfig::default`]. Unknown names are refused.
 */
export type ManagerOptions = { 
/**
 * [`RenewalManagerConfig::batch_window`].
 */
batchWindow?: number | bigint, 
/**
 * [`RenewalManagerConfig::batch_join_after`].
 */
batchJoinAfter?: number, 
/**
 * [`RenewalManagerConfig::max_batch`].
 */
maxBatch?: number, 
/**
 * [`RenewalManagerConfig::initial_rtt`].
 */
initialRtt?: number | bigint, 
/**
 * [`RenewalManagerConfig::min_rto`].
 */
minRto?: number | bigint, 
/**
 * [`RenewalManagerConfig::max_rto`].
 */
maxRto?: number | bigint, 
/**
 * [`RenewalManagerConfig::attempts`].
 */
attempts?: number, 
/**
 * [`RenewalManagerConfig::renew_divisor`].
 */
renewDivisor?: number, 
/**
 * [`RenewalManagerConfig::max_retry_interval`].
 */
maxRetryInterval?: number | bigint, 
/**
 * [`RenewalManagerConfig::max_clock_drift_ppm`].
 */
maxClockDriftPpm?: number, 
/**
 * [`RenewalManagerConfig::first_request_id`].
 */
firstRequestId?: number | bigint, 
/**
 * [`RenewalManagerConfig::report_renewals`].
 */
reportRenewals?: boolean, };

/**
 * A renewal service's settings (data form); each one not given keeps the default of
 * [`RenewalServiceConfig::new`]. Unknown names are refused.
 */
export type ServiceOptions = { 
/**
 * The landlord id of set leases and event sources.
 */
id: string | number | bigint, 
/**
 * 32 bytes of entropy for the set lease cookies (the host's own when not given).
 */
seed?: Uint8Array, 
/**
 * Grace after a set lease expires.
 */
grace?: number | bigint, 
/**
 * Message limits of the set-lease landlord.
 */
limits?: LimitsOptions, 
/**
 * How long set leases are granted.
 */
setPolicy?: PolicySpec, 
/**
 * The renewal manager that renews the client leases.
 */
manager?: ManagerOptions, 
/**
 * [`RenewalServiceConfig::restore_jump`].
 */
restoreJump?: number | bigint, };

/**
 * How a store rotates and compacts (data form: both optional, unknown names refused).
 */
export type StoreConfig = { 
/**
 * A segment that reaches this size is closed and a new one started. Default 64 MiB.
 */
segmentBytes?: number, 
/**
 * The log is compacted once it is larger than both this and the snapshot. Default 4 MiB.
 */
minCompactBytes?: number, };

/**
 * How a [`RenewalManager`] schedules, batches and retries. Its data form (serde, written only:
 * settings are read through [`super::ManagerOptions`]) has the field names.
 */
export type RenewalManagerConfig = { 
/**
 * When a lease falls due, other leases of the same landlord due within this window join
 * its request, if they are past `batch_join_after` of their current grant. Default 5
 * minutes, as River.
 */
batchWindow: number, 
/**
 * The fraction of its current grant a lease must have used before it may join a batch
 * early (0 to 1). It bounds over-eager renewals: a lease is never renewed more than
 * `1 / batch_join_after` times per grant length. Default 0.25.
 */
batchJoinAfter: number, 
/**
 * Most leases in one request. `1` turns batching off. Default: the wire's default
 * [`Limits::max_batch`] (10 000).
 */
maxBatch: number, 
/**
 * Round-trip estimate before anything is measured, per landlord. Default 1 s.
 */
initialRtt: number, 
/**
 * Smallest request time-out, and the smallest gap between two attempts for one lease.
 * Default 200 ms.
 */
minRto: number, 
/**
 * Largest request time-out. Default 60 s.
 */
maxRto: number, 
/**
 * Attempts that must fit between a renewal and the actual expiration, each waiting out a
 * time-out that doubles (`rto`, `2 rto`, `4 rto`, ..., with `rto = srtt + max(G, 4 rttvar)`
 * measured per landlord): the manager renews at least `(2^attempts - 1) rto` before the
 * actual expiration. Default 3 (`7 rto`).
 */
attempts: number, 
/**
 * A lease is renewed when `1 / renew_divisor` of its grant is left (or the round-trip
 * margin, if that is more; never before the middle of the grant). Default 8.
 */
renewDivisor: number, 
/**
 * Longest wait between retries after indefinite failures. Default 60 s.
 */
maxRetryInterval: number, 
/**
 * Largest difference of clock rates (holder vs landlord) the manager allows for, in parts
 * per million: a renewed lease counts `ceil(granted * ppm / 1e6) + 1` ms less than granted,
 * so the holder never believes in a lease its landlord has dropped. `0` counts exactly
 * `sent + granted`. Default 100 ppm.
 */
maxClockDriftPpm: number, 
/**
 * Id of the first request; ids then count up (so several senders can share a transport).
 * Default 1.
 */
firstRequestId: number | bigint, 
/**
 * Whether every successful renewal is reported as [`RenewalEvent::Renewed`]. Default true.
 */
reportRenewals: boolean, };

/**
 * A round-trip estimate (data form).
 */
export type RttData = { 
/**
 * Smoothed round-trip time.
 */
srtt: number, 
/**
 * Its variation.
 */
rttvar: number, 
/**
 * Retransmission timeout.
 */
rto: number, 
/**
 * How long a request waits for its reply.
 */
requestTimeout: number, 
/**
 * Samples taken.
 */
samples: number, };

/**
 * Counters, so that traffic can be measured.
 */
export type RenewalStats = { 
/**
 * Requests handed out by [`RenewalManager::poll_transmit`] (renewals and cancels).
 */
requestsSent: number, 
/**
 * Of those, renewal requests (`renew` or `renew_all`).
 */
renewRequests: number, 
/**
 * Of those, cancel requests (`cancel` or `cancel_all`).
 */
cancelRequests: number, 
/**
 * Successful renewals of single leases.
 */
leasesRenewed: number, 
/**
 * [`RenewalEvent::RenewalFailed`] events.
 */
failures: number, 
/**
 * [`RenewalEvent::DesiredExpirationReached`] events.
 */
desiredReached: number, 
/**
 * Indefinite per-lease failures that were retried (or awaited the actual expiration).
 */
indefiniteFailures: number, 
/**
 * Requests that got no reply within their time-out.
 */
timeouts: number, 
/**
 * Cancels the landlord confirmed.
 */
leasesCancelled: number, 
/**
 * Leases whose cancel was not confirmed: an error for the lease (or the whole request),
 * a malformed reply, no reply within the time-out, or a transport failure the host
 * reported. Cancels are not retried (see [`RenewalManager::cancel`]).
 */
cancelFailures: number, 
/**
 * Replies ignored: unknown or stale id, or from another landlord.
 */
repliesIgnored: number, };

/**
 * One file operation for the host to carry out. Carry them out in order, each completely,
 * before reporting a commit durable. Its data form is tagged `op` (`{"op": "append", "file",
 * "bytes"}`), as the JavaScript hosts take it.
 */
export type FileOp = { "op": "append", 
/**
 * File name inside the store's directory.
 */
file: string, 
/**
 * What to append.
 */
bytes: Uint8Array, } | { "op": "sync", 
/**
 * File name.
 */
file: string, } | { "op": "replace", 
/**
 * File name.
 */
file: string, 
/**
 * Its new contents.
 */
bytes: Uint8Array, } | { "op": "truncate", 
/**
 * File name.
 */
file: string, 
/**
 * Length to keep.
 */
len: number, } | { "op": "remove", 
/**
 * File name.
 */
file: string, };
