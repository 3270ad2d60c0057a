//! Grant policies: how long a landlord grants, and whom it denies.
//!
//! A policy sees the requested duration (already checked by the landlord with
//! [`time::check_requested`]: zero or more, [`FOREVER`] or [`ANY`]) and the landlord's state,
//! and answers a granted duration or a denial. The built-in policies keep the rules every
//! policy shares ([`cap_to_request`]): a grant never exceeds the request (unless ANY was
//! asked), is never negative (even if called directly with an unchecked request), and all
//! arithmetic saturates.
//!
//! | policy | new lease | renewal |
//! |---|---|---|
//! | [`Fixed`] | min(request, duration); ANY gets duration | never shortens unless asked ([`never_shorten`]) |
//! | [`Bounded`] | min(request, max); ANY gets default; 0 allowed | never shortens unless asked |
//! | [`Capacity`] | denied at `max_leases` live, else the inner policy | the inner policy, never denied for capacity |
//! | [`ResourceAware`] | offer falls from max to min with occupancy; denied when full | offer at the others' occupancy, never shortens unless asked |
//! | [`Adaptive`] | L_G = N / G (N counts the new lease), raised to L_MIN, denied above L_MAX | L_G recomputed (may shorten), L_MAX above N_MAX, never denied |

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::time::{self, Duration, Millis, ANY, FOREVER};

/// What a policy may look at when it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyContext {
    /// The landlord's `now`.
    pub now: Millis,
    /// Leases currently held by the landlord. In [`LeasePolicy::grant`] this does not count the
    /// lease being granted; in [`LeasePolicy::renew`] it does count the lease being renewed
    /// (it is held), so a renewal at full capacity sees `live == capacity`.
    ///
    /// Leases past their expiration that no `handle_timeout` has swept yet still count: a host
    /// that calls `handle_timeout` when `poll_timeout` says keeps that lag to one wheel slot.
    pub live: usize,
}

/// Decides granted durations. Implement it for custom policies.
pub trait LeasePolicy: Send {
    /// The duration granted for a new lease, or a denial ([`LeaseError::LeaseDenied`]).
    fn grant(&mut self, requested: Duration, ctx: &PolicyContext) -> Result<Duration>;

    /// The duration granted for renewing a lease that currently expires at
    /// `current_expiration`. The default asks [`LeasePolicy::grant`] for a duration as if the
    /// renewed lease were a new one (with `live - 1` others held, so a policy that denies at
    /// capacity does not deny a lease that already counts) and then keeps the lease as long as
    /// it was unless the holder asked for a shorter one ([`never_shorten`]).
    #[inline]
    fn renew(
        &mut self,
        requested: Duration,
        current_expiration: Millis,
        ctx: &PolicyContext,
    ) -> Result<Duration> {
        let ctx = PolicyContext { live: ctx.live.saturating_sub(1), ..*ctx };
        let granted = self.grant(requested, &ctx)?;
        Ok(never_shorten(requested, granted, current_expiration, ctx.now))
    }
}

/// The reference rule for renewals (River's `FixedLeasePeriodPolicy`): a renewal never shortens
/// a lease unless the holder explicitly asked for a shorter one.
///
/// If the policy's `granted` duration would end the lease before `current_expiration`, the
/// lease keeps its current expiration, unless `requested` (not ANY) itself ends before it, in
/// which case the holder gets what it asked for.
#[inline]
pub fn never_shorten(
    requested: Duration,
    granted: Duration,
    current_expiration: Millis,
    now: Millis,
) -> Duration {
    let new_exp = time::expiration_after(now, granted);
    if new_exp >= current_expiration {
        return granted;
    }
    let keep = time::remaining(current_expiration, now).max(0);
    if requested == ANY {
        return keep;
    }
    let asked_exp = time::expiration_after(now, requested);
    if asked_exp > current_expiration {
        keep
    } else {
        // Never negative, even for a request no landlord would pass on (checked ones are >= 0).
        requested.max(0)
    }
}

/// The granted duration for a request and a policy's offer: never more than asked (ANY takes
/// the offer), never negative (a negative offer, from a policy built with bad settings, is 0).
#[inline]
pub fn cap_to_request(requested: Duration, offer: Duration) -> Duration {
    let offer = offer.max(0);
    if requested == ANY {
        offer
    } else {
        requested.min(offer).max(0)
    }
}

fn denied(msg: String) -> LeaseError {
    LeaseError::LeaseDenied(msg)
}

fn invalid(msg: String) -> LeaseError {
    LeaseError::InvalidArgument(msg)
}

/// Grants every request the same duration (or less, if less was asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fixed {
    /// The duration offered.
    pub duration: Duration,
}

impl Fixed {
    /// A fixed policy; `duration` must be positive or FOREVER.
    pub fn new(duration: Duration) -> Result<Fixed> {
        if duration <= 0 {
            return Err(invalid(format!("fixed duration must be positive, got {duration}")));
        }
        Ok(Fixed { duration })
    }
}

impl LeasePolicy for Fixed {
    #[inline]
    fn grant(&mut self, requested: Duration, _ctx: &PolicyContext) -> Result<Duration> {
        Ok(cap_to_request(requested, self.duration))
    }
}

/// `LeaseDurationPolicy` of the reference: ANY gets `default`, anything else min(request, max).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bounded {
    /// Longest grant.
    pub max: Duration,
    /// Grant for ANY.
    pub default: Duration,
}

impl Bounded {
    /// A bounded policy; both values positive (or FOREVER), and `default <= max`.
    pub fn new(max: Duration, default: Duration) -> Result<Bounded> {
        if max <= 0 || default <= 0 {
            return Err(invalid(format!(
                "bounded policy needs positive max and default, got max {max}, default {default}"
            )));
        }
        if default > max {
            return Err(invalid(format!("default {default} is more than max {max}")));
        }
        Ok(Bounded { max, default })
    }
}

impl LeasePolicy for Bounded {
    #[inline]
    fn grant(&mut self, requested: Duration, _ctx: &PolicyContext) -> Result<Duration> {
        Ok(if requested == ANY { self.default.max(0) } else { cap_to_request(requested, self.max) })
    }
}

/// Denies new leases once `max_leases` are live; durations come from the inner policy.
pub struct Capacity<P> {
    /// N_MAX: most live leases.
    pub max_leases: usize,
    /// Decides the durations.
    pub inner: P,
}

impl<P: LeasePolicy> Capacity<P> {
    /// A capacity bound around `inner`.
    pub fn new(max_leases: usize, inner: P) -> Capacity<P> {
        Capacity { max_leases, inner }
    }
}

impl<P: LeasePolicy> LeasePolicy for Capacity<P> {
    fn grant(&mut self, requested: Duration, ctx: &PolicyContext) -> Result<Duration> {
        if ctx.live >= self.max_leases {
            return Err(denied(format!(
                "capacity reached: {} of {} leases live",
                ctx.live, self.max_leases
            )));
        }
        self.inner.grant(requested, ctx)
    }
    fn renew(&mut self, requested: Duration, cur: Millis, ctx: &PolicyContext) -> Result<Duration> {
        self.inner.renew(requested, cur, ctx)
    }
}

/// Shortens grants as the landlord fills up (seed 001: "shorten leases when short of resources").
///
/// The offer falls linearly from `max` when empty to `min` when `capacity` leases are live;
/// new leases beyond `capacity` are denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResourceAware {
    /// Leases the resource can hold.
    pub capacity: usize,
    /// Offer when empty.
    pub max: Duration,
    /// Offer when full.
    pub min: Duration,
}

impl ResourceAware {
    /// A resource-aware policy; `0 < min <= max`, `capacity > 0`.
    pub fn new(capacity: usize, max: Duration, min: Duration) -> Result<ResourceAware> {
        if capacity == 0 || min <= 0 || min > max {
            return Err(invalid(format!(
                "resource-aware policy needs capacity > 0 and 0 < min <= max, got capacity {capacity}, min {min}, max {max}"
            )));
        }
        Ok(ResourceAware { capacity, max, min })
    }

    /// The offer at `live` leases.
    pub fn offer(&self, live: usize) -> Duration {
        let frac = (live.min(self.capacity) as f64) / (self.capacity as f64);
        let span = (self.max as f64) - (self.min as f64);
        let d = (self.max as f64) - span * frac;
        // Not `clamp`: that panics if a hand-built value has min > max.
        (d as i64).min(self.max).max(self.min)
    }
}

impl LeasePolicy for ResourceAware {
    fn grant(&mut self, requested: Duration, ctx: &PolicyContext) -> Result<Duration> {
        if ctx.live >= self.capacity {
            return Err(denied(format!("resource full: {} of {} leases", ctx.live, self.capacity)));
        }
        Ok(cap_to_request(requested, self.offer(ctx.live)))
    }
    fn renew(&mut self, requested: Duration, cur: Millis, ctx: &PolicyContext) -> Result<Duration> {
        let granted = cap_to_request(requested, self.offer(ctx.live.saturating_sub(1)));
        Ok(never_shorten(requested, granted, cur, ctx.now))
    }
}

/// Settings of the paper's adaptive policy (seed 004, section 3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveConfig {
    /// G: renewals per second the landlord can afford (domain-wide, before sharing).
    pub renewals_per_second: f64,
    /// L_MIN in ms: shortest grant.
    pub min: Duration,
    /// L_MAX in ms: longest grant; a computed L_G above it is denied. FOREVER for unbounded.
    pub max: Duration,
    /// N_D: grantors sharing the domain-wide budget (1 for a lone landlord).
    pub grantors: u32,
}

impl AdaptiveConfig {
    /// G from a bandwidth budget: G = B / (S_R + S_G), with B in bytes per second and the
    /// request and grant sizes in bytes.
    pub fn from_bandwidth(
        bytes_per_second: f64,
        request_size: f64,
        grant_size: f64,
        min: Duration,
        max: Duration,
    ) -> Result<AdaptiveConfig> {
        if bytes_per_second.is_nan()
            || bytes_per_second <= 0.0
            || (request_size + grant_size).is_nan()
            || request_size + grant_size <= 0.0
        {
            return Err(invalid(format!(
                "bandwidth {bytes_per_second} B/s and sizes {request_size}+{grant_size} B must be positive"
            )));
        }
        Ok(AdaptiveConfig {
            renewals_per_second: bytes_per_second / (request_size + grant_size),
            min,
            max,
            grantors: 1,
        })
    }
}

/// The adaptive policy of Bowers, Mills and Rose: L_G = N / G, denied above L_MAX, clamped to L_MIN.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Adaptive {
    config: AdaptiveConfig,
}

impl Adaptive {
    /// An adaptive policy; needs G > 0, 0 < L_MIN <= L_MAX, N_D >= 1.
    pub fn new(config: AdaptiveConfig) -> Result<Adaptive> {
        let c = &config;
        if c.renewals_per_second.is_nan()
            || c.renewals_per_second <= 0.0
            || !c.renewals_per_second.is_finite()
        {
            return Err(invalid(format!("G must be positive, got {}", c.renewals_per_second)));
        }
        if c.min <= 0 || c.min > c.max {
            return Err(invalid(format!(
                "need 0 < L_MIN <= L_MAX, got L_MIN {} ms, L_MAX {} ms",
                c.min, c.max
            )));
        }
        if c.grantors == 0 {
            return Err(invalid("N_D (grantors) must be at least 1".into()));
        }
        Ok(Adaptive { config })
    }

    /// The settings.
    pub fn config(&self) -> &AdaptiveConfig {
        &self.config
    }

    /// This grantor's share of G: G / N_D.
    pub fn local_rate(&self) -> f64 {
        self.config.renewals_per_second / self.config.grantors as f64
    }

    /// The lease period for `n` leaseholders: `Ok(L_G)` in ms, or `Err` if above L_MAX
    /// (never, if L_MAX is FOREVER).
    ///
    /// L_G = N / G_local is rounded up to a whole millisecond (so the renewal rate stays within
    /// the budget), then raised to L_MIN.
    pub fn period(&self, n: usize) -> Result<Duration> {
        let lg = (n as f64) * 1000.0 / self.local_rate();
        if self.config.max != FOREVER && lg > self.config.max as f64 {
            return Err(denied(format!(
                "{n} leaseholders need a {lg:.0} ms lease period, above L_MAX {} ms",
                self.config.max
            )));
        }
        // Round up, but do not let a floating-point residue (10000.000000000002) add a ms.
        let near = lg.round();
        let ms = if (lg - near).abs() < 1e-6 { near } else { lg.ceil() };
        // With L_MAX = FOREVER a huge N gets the longest finite period, never FOREVER.
        Ok((ms as i64).min(FOREVER - 1).max(self.config.min))
    }

    /// N_MAX = L_MAX * G: most leaseholders this grantor accepts.
    pub fn max_holders(&self) -> f64 {
        if self.config.max == FOREVER {
            f64::INFINITY
        } else {
            self.config.max as f64 / 1000.0 * self.local_rate()
        }
    }

    /// Bandwidth ceiling B = G (S_R + S_G) in bytes per second.
    pub fn bandwidth_ceiling(&self, request_size: f64, grant_size: f64) -> f64 {
        self.local_rate() * (request_size + grant_size)
    }
}

impl LeasePolicy for Adaptive {
    fn grant(&mut self, requested: Duration, ctx: &PolicyContext) -> Result<Duration> {
        // The new lease counts: N is the holders after this grant.
        let lg = self.period(ctx.live.saturating_add(1))?;
        Ok(cap_to_request(requested, lg))
    }
    fn renew(
        &mut self,
        requested: Duration,
        _cur: Millis,
        ctx: &PolicyContext,
    ) -> Result<Duration> {
        // The paper's policy re-computes L_G at every renewal and may shorten: that is how it
        // gives back responsiveness when N falls. A renewal is never denied for L_MAX.
        let lg = match self.period(ctx.live) {
            Ok(d) => d,
            Err(_) => self.config.max,
        };
        Ok(cap_to_request(requested, lg))
    }
}

/// Any of the built-in policies, as data: what the bindings and configuration files choose from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PolicySpec {
    /// [`Fixed`].
    Fixed {
        /// Offered duration.
        duration: Duration,
    },
    /// [`Bounded`].
    Bounded {
        /// Longest grant.
        max: Duration,
        /// Grant for ANY.
        default: Duration,
    },
    /// [`Capacity`] around another policy.
    Capacity {
        /// N_MAX.
        max_leases: usize,
        /// Decides the durations.
        inner: Box<PolicySpec>,
    },
    /// [`ResourceAware`].
    ResourceAware {
        /// Leases the resource can hold.
        capacity: usize,
        /// Offer when empty.
        max: Duration,
        /// Offer when full.
        min: Duration,
    },
    /// [`Adaptive`].
    Adaptive(AdaptiveConfig),
}

impl PolicySpec {
    /// Builds the policy, checking its settings.
    pub fn build(&self) -> Result<Box<dyn LeasePolicy>> {
        Ok(match self {
            PolicySpec::Fixed { duration } => Box::new(Fixed::new(*duration)?),
            PolicySpec::Bounded { max, default } => Box::new(Bounded::new(*max, *default)?),
            PolicySpec::Capacity { max_leases, inner } => {
                Box::new(Capacity::new(*max_leases, inner.build()?))
            }
            PolicySpec::ResourceAware { capacity, max, min } => {
                Box::new(ResourceAware::new(*capacity, *max, *min)?)
            }
            PolicySpec::Adaptive(c) => Box::new(Adaptive::new(*c)?),
        })
    }
}

impl LeasePolicy for Box<dyn LeasePolicy> {
    fn grant(&mut self, requested: Duration, ctx: &PolicyContext) -> Result<Duration> {
        (**self).grant(requested, ctx)
    }
    fn renew(&mut self, requested: Duration, cur: Millis, ctx: &PolicyContext) -> Result<Duration> {
        (**self).renew(requested, cur, ctx)
    }
}

/// Deserializing a policy checks its settings exactly as its constructor does.
macro_rules! validated_deserialize {
    ($t:ident { $($f:ident: $ft:ty),* } => $build:expr) => {
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(
                d: D,
            ) -> std::result::Result<Self, D::Error> {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Raw {
                    $($f: $ft),*
                }
                let Raw { $($f),* } = Raw::deserialize(d)?;
                let build: fn($($ft),*) -> Result<$t> = $build;
                build($($f),*).map_err(serde::de::Error::custom)
            }
        }
    };
}
validated_deserialize!(Fixed { duration: Duration } => Fixed::new);
validated_deserialize!(Bounded { max: Duration, default: Duration } => Bounded::new);
validated_deserialize!(ResourceAware { capacity: usize, max: Duration, min: Duration } => ResourceAware::new);
validated_deserialize!(Adaptive { config: AdaptiveConfig } => Adaptive::new);
