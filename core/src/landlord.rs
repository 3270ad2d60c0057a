//! The grantor side: a landlord issues leases on resources, keyed by unguessable cookies.
//!
//! Sans-I/O: every call takes `now`; expiry is driven by the host with
//! [`Landlord::poll_timeout`], [`Landlord::handle_timeout`] and [`Landlord::poll_expired`].
//!
//! ```
//! use leasehold::{Landlord, LandlordConfig, LandlordId, policy::Bounded};
//! let mut ll: Landlord<&str> = Landlord::new(
//!     LandlordConfig::new(LandlordId(1), [7; 32]),
//!     Bounded::new(60_000, 30_000).unwrap(),
//! );
//! let g = ll.grant("printer", 10_000, 0).unwrap();
//! assert_eq!(g.duration, 10_000);
//! ll.handle_timeout(10_001);
//! assert_eq!(ll.poll_expired().unwrap().resource, "printer");
//! ```

use std::collections::{BTreeSet, HashMap, VecDeque};

use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::policy::{LeasePolicy, PolicyContext};
use crate::time::{self, Duration, Millis, FOREVER};
use crate::wire::{Encoding, Limits, Outcome, Reply, ReplyBody, Request, RequestBody, WireError};

/// How a landlord is set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlordConfig {
    /// This landlord's id, carried by every lease it grants.
    pub id: LandlordId,
    /// Secret seed for cookies; supply real entropy (the core has none of its own).
    pub seed: [u8; 32],
    /// Slack after expiry during which a lease is still honoured (clock skew, seed 001).
    pub grace: Duration,
    /// Most expired leases handled per [`Landlord::handle_timeout`] call.
    pub expiry_budget: usize,
    /// Bounds for decoding requests in [`Landlord::handle_bytes`].
    pub limits: Limits,
}

impl LandlordConfig {
    /// Defaults: no grace, 10 000 expiries per call, default limits.
    pub fn new(id: LandlordId, seed: [u8; 32]) -> LandlordConfig {
        LandlordConfig { id, seed, grace: 0, expiry_budget: 10_000, limits: Limits::default() }
    }
    /// With a grace period after expiry.
    pub fn with_grace(mut self, grace: Duration) -> LandlordConfig {
        self.grace = grace.max(0);
        self
    }
}

/// A granted lease, as the landlord answers a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The new lease's cookie.
    pub cookie: Cookie,
    /// Granted duration.
    pub duration: Duration,
    /// Expiration on the landlord's clock.
    pub expiration: Millis,
}

/// A lease that expired, handed back with its resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired<R> {
    /// The lease.
    pub cookie: Cookie,
    /// When it expired (before grace).
    pub expiration: Millis,
    /// What it was for.
    pub resource: R,
}

struct Entry<R> {
    expiration: Millis,
    resource: R,
}

/// Issues, renews, cancels and expires leases. `R` is what a lease is for.
pub struct Landlord<R = Vec<u8>> {
    config: LandlordConfig,
    policy: Box<dyn LeasePolicy>,
    rng: ChaCha12Rng,
    leases: HashMap<Cookie, Entry<R>>,
    deadlines: BTreeSet<(Millis, Cookie)>,
    expired: VecDeque<Expired<R>>,
    backlog: bool,
}

impl<R> Landlord<R> {
    /// A landlord with `policy`.
    pub fn new(config: LandlordConfig, policy: impl LeasePolicy + 'static) -> Landlord<R> {
        let rng = ChaCha12Rng::from_seed(config.seed);
        Landlord {
            config,
            policy: Box::new(policy),
            rng,
            leases: HashMap::new(),
            deadlines: BTreeSet::new(),
            expired: VecDeque::new(),
            backlog: false,
        }
    }

    /// This landlord's id.
    pub fn id(&self) -> LandlordId {
        self.config.id
    }

    /// The configuration.
    pub fn config(&self) -> &LandlordConfig {
        &self.config
    }

    /// Leases held, including any past expiration that no [`Landlord::handle_timeout`] has swept yet.
    pub fn len(&self) -> usize {
        self.leases.len()
    }

    /// No leases held.
    pub fn is_empty(&self) -> bool {
        self.leases.is_empty()
    }

    fn deadline(&self, expiration: Millis) -> Millis {
        time::expiration_after(expiration, self.config.grace)
    }

    fn honoured(&self, expiration: Millis, now: Millis) -> bool {
        expiration == FOREVER || now <= self.deadline(expiration)
    }

    fn new_cookie(&mut self) -> Cookie {
        loop {
            let hi = self.rng.next_u64() as u128;
            let lo = self.rng.next_u64() as u128;
            let c = Cookie(hi << 64 | lo);
            if c.0 != 0 && !self.leases.contains_key(&c) {
                return c;
            }
        }
    }

    /// Grants a lease on `resource` for (at most) `requested` ms.
    pub fn grant(&mut self, resource: R, requested: Duration, now: Millis) -> Result<Grant> {
        time::check_requested(requested)?;
        let ctx = PolicyContext { now, live: self.leases.len() };
        let duration = self.policy.grant(requested, &ctx)?;
        let expiration = time::expiration_after(now, duration);
        let cookie = self.new_cookie();
        self.leases.insert(cookie, Entry { expiration, resource });
        if expiration != FOREVER {
            self.deadlines.insert((self.deadline(expiration), cookie));
        }
        Ok(Grant { cookie, duration, expiration })
    }

    fn live_expiration(&self, cookie: Cookie, now: Millis) -> Result<Millis> {
        match self.leases.get(&cookie) {
            Some(e) if self.honoured(e.expiration, now) => Ok(e.expiration),
            _ => Err(LeaseError::UnknownLease),
        }
    }

    /// Renews a lease for (at most) `requested` ms from `now`; returns the granted duration.
    /// A denied renewal leaves the lease as it was.
    pub fn renew(&mut self, cookie: Cookie, requested: Duration, now: Millis) -> Result<Duration> {
        time::check_requested(requested)?;
        let old = self.live_expiration(cookie, now)?;
        let ctx = PolicyContext { now, live: self.leases.len() };
        let duration = self.policy.renew(requested, old, &ctx)?;
        let expiration = time::expiration_after(now, duration);
        if old != FOREVER {
            self.deadlines.remove(&(self.deadline(old), cookie));
        }
        if expiration != FOREVER {
            self.deadlines.insert((self.deadline(expiration), cookie));
        }
        self.leases.get_mut(&cookie).expect("checked").expiration = expiration;
        Ok(duration)
    }

    /// Cancels a lease and hands back its resource.
    pub fn cancel(&mut self, cookie: Cookie, now: Millis) -> Result<R> {
        let old = self.live_expiration(cookie, now)?;
        if old != FOREVER {
            self.deadlines.remove(&(self.deadline(old), cookie));
        }
        Ok(self.leases.remove(&cookie).expect("checked").resource)
    }

    /// Renews many leases; one result per lease, in order. One failure never aborts the batch.
    pub fn renew_all(
        &mut self,
        items: &[(Cookie, Duration)],
        now: Millis,
    ) -> Vec<Result<Duration>> {
        items.iter().map(|&(c, d)| self.renew(c, d, now)).collect()
    }

    /// Cancels many leases; one result per lease, in order.
    pub fn cancel_all(&mut self, cookies: &[Cookie], now: Millis) -> Vec<Result<R>> {
        cookies.iter().map(|&c| self.cancel(c, now)).collect()
    }

    /// The expiration and resource of a lease still honoured at `now`.
    pub fn get(&self, cookie: Cookie, now: Millis) -> Option<(Millis, &R)> {
        self.leases
            .get(&cookie)
            .filter(|e| self.honoured(e.expiration, now))
            .map(|e| (e.expiration, &e.resource))
    }

    /// The holder's view of a lease still honoured at `now` (expiration on the landlord's clock).
    pub fn lease(&self, cookie: Cookie, now: Millis) -> Option<Lease> {
        self.get(cookie, now).map(|(exp, _)| Lease::new(self.config.id, cookie, exp))
    }

    /// Every lease held: cookie, expiration, resource (in no particular order).
    pub fn iter(&self) -> impl Iterator<Item = (Cookie, Millis, &R)> + '_ {
        self.leases.iter().map(|(c, e)| (*c, e.expiration, &e.resource))
    }

    /// When the host should next call [`Landlord::handle_timeout`]; `None` if nothing will expire.
    pub fn poll_timeout(&self) -> Option<Millis> {
        if self.backlog {
            // More expired leases are waiting than one call's budget allowed.
            return self.deadlines.first().map(|&(d, _)| d);
        }
        self.deadlines.first().map(|&(d, _)| d.saturating_add(1))
    }

    /// Advances expiry to `now`: leases whose expiration plus grace is before `now` are removed
    /// and queued for [`Landlord::poll_expired`], at most `expiry_budget` per call.
    pub fn handle_timeout(&mut self, now: Millis) {
        let mut n = 0;
        self.backlog = false;
        while let Some(&(d, cookie)) = self.deadlines.first() {
            if d >= now {
                break;
            }
            if n == self.config.expiry_budget {
                self.backlog = true;
                break;
            }
            self.deadlines.pop_first();
            let e = self.leases.remove(&cookie).expect("deadline of a held lease");
            self.expired.push_back(Expired {
                cookie,
                expiration: e.expiration,
                resource: e.resource,
            });
            n += 1;
        }
    }

    /// The next expired lease found by [`Landlord::handle_timeout`].
    pub fn poll_expired(&mut self) -> Option<Expired<R>> {
        self.expired.pop_front()
    }
}

impl<R: From<Vec<u8>>> Landlord<R> {
    /// Answers one request message.
    pub fn handle_request(&mut self, request: &Request, now: Millis) -> Reply {
        let body = match &request.body {
            RequestBody::Grant { resource, duration } => {
                match self.grant(R::from(resource.clone()), *duration, now) {
                    Ok(g) => ReplyBody::Granted { cookie: g.cookie, duration: g.duration },
                    Err(e) => ReplyBody::Error(WireError::from(&e)),
                }
            }
            RequestBody::Renew { cookie, duration } => match self.renew(*cookie, *duration, now) {
                Ok(d) => ReplyBody::Renewed { duration: d },
                Err(e) => ReplyBody::Error(WireError::from(&e)),
            },
            RequestBody::Cancel { cookie } => match self.cancel(*cookie, now) {
                Ok(_) => ReplyBody::Cancelled,
                Err(e) => ReplyBody::Error(WireError::from(&e)),
            },
            RequestBody::RenewAll { items } => ReplyBody::RenewedAll {
                results: self.renew_all(items, now).into_iter().map(Outcome::from).collect(),
            },
            RequestBody::CancelAll { cookies } => ReplyBody::CancelledAll {
                results: self
                    .cancel_all(cookies, now)
                    .into_iter()
                    .map(|r| Outcome::from(r.map(|_| ())))
                    .collect(),
            },
        };
        Reply { id: request.id, landlord: self.config.id, body }
    }

    /// Decodes a request, answers it, and encodes the reply in the same encoding. An undecodable
    /// request gets an error reply with id 0.
    pub fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8> {
        let reply = match Request::decode(bytes, encoding, &self.config.limits) {
            Ok(req) => self.handle_request(&req, now),
            Err(e) => Reply {
                id: 0,
                landlord: self.config.id,
                body: ReplyBody::Error(WireError::from(&e)),
            },
        };
        reply.encode(encoding)
    }
}
