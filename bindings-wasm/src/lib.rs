//! JavaScript/WebAssembly binding of leasehold: the npm package `leasehold`.
//!
//! Thin by design: every rule of leasing is in the core crate; this crate converts values,
//! errors and clocks. `build.sh` turns it into the package (see `README.md` beside it).
//! Times and durations are numbers of milliseconds; `FOREVER` is `Infinity`, `ANY` is `-1`.

use js_sys::Object;
use leasehold::policy::PolicySpec;
use wasm_bindgen::prelude::*;

pub mod alloc;
pub mod convert;
pub mod coord;
pub mod data;
pub mod discovery;
pub mod holder;
pub mod landlord;
pub mod lease;
pub mod machine;
pub mod service;
pub mod store;
pub mod wire;

pub use leasehold::{ANY, FOREVER};

/// Large blocks (the lease table) grow in place instead of leaving copies behind (see `alloc`).
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOC: alloc::Alloc = alloc::Alloc::new();

use convert::{ms_out, obj, set};

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Wire encodings: canonical JSON text or compact binary. */
export type Encoding = "json" | "binary";
/** Decoding bounds (defaults: 1 MiB messages, 10 000 leases a batch, 64 KiB resources). */
export interface Limits { maxMessageBytes: number; maxBatch: number; maxResourceBytes: number; }
/** A built-in grant policy, as data. Durations in ms; `Infinity` is FOREVER. */
export type PolicyDescription =
  | { kind: "fixed"; duration: number }
  | { kind: "bounded"; max: number; default: number }
  | { kind: "capacity"; maxLeases: number; inner: PolicyDescription }
  | { kind: "resourceAware"; capacity: number; max: number; min: number }
  | { kind: "adaptive"; renewalsPerSecond: number; min: number; max: number; grantors?: number }
  | { kind: "adaptive"; bytesPerSecond: number; requestSize: number; grantSize: number; min: number; max: number; grantors?: number };
/** Options of `new Landlord(...)`. */
export interface LandlordOptions {
  /** 16 hex digits, or an integer. */
  id: string | number | bigint;
  policy: PolicyDescription;
  /** 32 secret bytes for unguessable cookies; default from crypto.getRandomValues. */
  seed?: Uint8Array;
  /** ms during which an expired lease is still honoured (clock skew). */
  grace?: number;
  /** Most expired leases found per handleTimeout call. */
  expiryBudget?: number;
  limits?: Partial<Limits>;
}
/** A landlord's answer to a grant. `expiration` is on the landlord's clock. */
export interface Grant { cookie: string; duration: number; expiration: number; }
/** A lease held by a landlord. */
export interface LeaseEntry { cookie: string; expiration: number; resource: unknown; }
/** One lease's result inside a batch. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: any };
/** An error as carried on the wire. */
export interface WireError { code: number; message: string; }
/** A request message, object form. */
export interface Request {
  id: number | bigint;
  body:
    | { op: "grant"; resource: Uint8Array | string; duration: number }
    | { op: "renew"; cookie: string; duration: number }
    | { op: "cancel"; cookie: string }
    | { op: "renew_all"; items: Array<{ cookie: string; duration: number }> }
    | { op: "cancel_all"; cookies: string[] };
}
/** A reply message, object form. */
export interface Reply {
  id: number | bigint;
  landlord: string;
  body:
    | { op: "granted"; cookie: string; duration: number }
    | { op: "renewed"; duration: number }
    | { op: "cancelled" }
    | { op: "renewed_all"; results: Array<{ duration: number } | { error: WireError }> }
    | { op: "cancelled_all"; results: Array<{} | { error: WireError }> }
    | { op: "error"; code: number; message: string };
}
/** Options of `new RenewalManager(...)` (all optional; durations in ms). */
export type RenewalManagerOptions = import('./generated.js').ManagerOptions;
/** The settings of a RenewalManager in force. */
export type RenewalManagerConfig = import('./generated.js').RenewalManagerConfig;
/** A landlord's round-trip estimate, ms. */
export type RttEstimate = import('./generated.js').RttData;
/** Counters of a RenewalManager. */
export type RenewalStats = import('./generated.js').RenewalStats;
/** A request the host must send to `landlord`. */
export interface Transmit { landlord: string; request: Request; }
/** What a RenewalManager reports. */
export type RenewalEvent =
  | { type: "renewed"; lease: Lease }
  | { type: "desiredExpirationReached"; lease: Lease; desiredExpiration: number }
  | { type: "renewalFailed"; lease: Lease; desiredExpiration: number; error?: Error & { code: number } };
/** Options of `new RenewalService(...)` (default set policy: bounded, at most 2 h, 1 h for ANY). */
export type RenewalServiceOptions = import('./generated.js').ServiceOptions;
/** What registering for events returns (Jini EventRegistration). */
export interface EventRegistration {
  eventId: number; source: { service: string; object: number }; lease: Lease; sequence: number;
}
/** An event of a renewal set, for its registered listener. */
export interface SetEvent {
  eventId: number; source: { service: string; object: number }; sequence: number; handback: Uint8Array;
  kind:
    | { type: "expirationWarning"; set: number; expiration: number }
    | { type: "renewalFailure"; set: number; lease: Lease; error?: Error & { code: number } };
}
"#;

/// Describes a policy the way `new Landlord({policy})` takes it.
pub fn policy_out(p: &PolicySpec) -> JsValue {
    let o: Object = obj();
    let s = |k: &str, v: JsValue| set(&o, &k.into(), &v);
    match p {
        PolicySpec::Fixed { duration } => {
            s("kind", "fixed".into());
            s("duration", ms_out(*duration));
        }
        PolicySpec::Bounded { max, default } => {
            s("kind", "bounded".into());
            s("max", ms_out(*max));
            s("default", ms_out(*default));
        }
        PolicySpec::Capacity { max_leases, inner } => {
            s("kind", "capacity".into());
            s("maxLeases", (*max_leases as f64).into());
            s("inner", policy_out(inner));
        }
        PolicySpec::ResourceAware { capacity, max, min } => {
            s("kind", "resourceAware".into());
            s("capacity", (*capacity as f64).into());
            s("max", ms_out(*max));
            s("min", ms_out(*min));
        }
        PolicySpec::Adaptive(c) => {
            s("kind", "adaptive".into());
            s("renewalsPerSecond", c.renewals_per_second.into());
            s("min", ms_out(c.min));
            s("max", ms_out(c.max));
            s("grantors", c.grantors.into());
        }
    }
    o.into()
}

/// Bytes of WebAssembly memory in use by the package (grows, never shrinks).
#[wasm_bindgen(js_name = wasmMemoryBytes)]
pub fn wasm_memory_bytes() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        (core::arch::wasm32::memory_size(0) as f64) * 65536.0
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0.0
    }
}

/// The version of the Rust core this package was built from.
#[wasm_bindgen(js_name = coreVersion)]
pub fn core_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
