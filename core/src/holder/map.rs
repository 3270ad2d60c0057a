//! `LeaseMap`: leases of one landlord, each with the duration to renew it for (seed 000, 2.2).

use std::collections::BTreeMap;

use crate::error::{LeaseError, LeaseFailure, Result};
use crate::holder::grant::{body_name, capped, checked_granted};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::time::{self, Duration, Millis};
use crate::wire::{Outcome, Reply, ReplyBody, Request, RequestBody};

/// Leases of one landlord, each with its renewal duration, renewed or cancelled in one message.
///
/// The map belongs to the landlord of the first lease inserted (or the one given to
/// [`LeaseMap::for_landlord`]) and stays bound to it. [`LeaseMap::renew_all_request`] makes one
/// batched request; [`LeaseMap::apply_renew_all`] applies the landlord's reply: leases that
/// failed are removed and reported in a [`LeaseError::LeaseMap`], the others take
/// `sent_at` + granted duration. Iteration is in cookie order.
///
/// ```
/// use leasehold::{holder::LeaseMap, Cookie, LandlordId, Lease};
/// let mut map = LeaseMap::new();
/// map.insert(Lease::new(LandlordId(1), Cookie(1), 1_000), 5_000).unwrap();
/// assert!(!map.can_contain_key(&Lease::new(LandlordId(2), Cookie(2), 1_000)));
/// assert!(map.insert(Lease::new(LandlordId(2), Cookie(2), 1_000), 5_000).is_err());
/// ```
#[derive(Debug, Clone, Default)]
pub struct LeaseMap {
    landlord: Option<LandlordId>,
    leases: BTreeMap<Cookie, (Lease, Duration)>,
    pending: Option<Pending>,
}

#[derive(Debug, Clone)]
struct Pending {
    id: u64,
    renew: bool,
    items: Vec<(Cookie, Duration)>,
}

impl LeaseMap {
    /// An empty map, bound to the landlord of the first lease inserted.
    pub fn new() -> LeaseMap {
        LeaseMap::default()
    }

    /// An empty map for the leases of `landlord`.
    pub fn for_landlord(landlord: LandlordId) -> LeaseMap {
        LeaseMap { landlord: Some(landlord), ..LeaseMap::default() }
    }

    /// The landlord whose leases this map holds, once known.
    pub fn landlord(&self) -> Option<LandlordId> {
        self.landlord
    }

    /// Jini `canContainKey`: whether `lease` can batch with the leases of this map.
    pub fn can_contain_key(&self, lease: &Lease) -> bool {
        match self.landlord {
            Some(l) => l == lease.landlord(),
            None => true,
        }
    }

    /// Adds (or replaces) `lease` with the duration to renew it for.
    ///
    /// A lease of another landlord, or a duration that is negative and not [`time::ANY`], is an
    /// [`LeaseError::InvalidArgument`] and leaves the map unchanged.
    pub fn insert(&mut self, lease: Lease, duration: Duration) -> Result<()> {
        if !self.can_contain_key(&lease) {
            return Err(LeaseError::InvalidArgument(format!(
                "lease of landlord {} cannot batch with the leases of landlord {} in this map",
                lease.landlord(),
                self.landlord.map(|l| l.to_string()).unwrap_or_default()
            )));
        }
        time::check_requested(duration)?;
        self.landlord = Some(lease.landlord());
        self.leases.insert(lease.cookie(), (lease, duration));
        Ok(())
    }

    /// Removes `lease`, giving back the stored copy and its renewal duration.
    pub fn remove(&mut self, lease: &Lease) -> Option<(Lease, Duration)> {
        if !self.can_contain_key(lease) {
            return None;
        }
        self.leases.remove(&lease.cookie())
    }

    /// The stored copy of `lease` (with its current expiration) and its renewal duration.
    pub fn get(&self, lease: &Lease) -> Option<(Lease, Duration)> {
        if !self.can_contain_key(lease) {
            return None;
        }
        self.leases.get(&lease.cookie()).copied()
    }

    /// Whether `lease` is in the map.
    pub fn contains(&self, lease: &Lease) -> bool {
        self.get(lease).is_some()
    }

    /// Number of leases.
    pub fn len(&self) -> usize {
        self.leases.len()
    }

    /// No leases.
    pub fn is_empty(&self) -> bool {
        self.leases.is_empty()
    }

    /// The leases and their renewal durations, in cookie order.
    pub fn iter(&self) -> impl Iterator<Item = (&Lease, Duration)> + '_ {
        self.leases.values().map(|(l, d)| (l, *d))
    }

    /// One request renewing every lease for its duration (Jini `renewAll`).
    ///
    /// The map remembers which leases the request names, so [`LeaseMap::apply_renew_all`]
    /// applies the reply to exactly those, even if the map changed in between.
    pub fn renew_all_request(&mut self, id: u64) -> Request {
        let items: Vec<(Cookie, Duration)> =
            self.leases.iter().map(|(c, (_, d))| (*c, *d)).collect();
        self.pending = Some(Pending { id, renew: true, items: items.clone() });
        Request { id, body: RequestBody::RenewAll { items } }
    }

    /// One request cancelling every lease (Jini `cancelAll`).
    pub fn cancel_all_request(&mut self, id: u64) -> Request {
        let cookies: Vec<Cookie> = self.leases.keys().copied().collect();
        self.pending =
            Some(Pending { id, renew: false, items: cookies.iter().map(|c| (*c, 0)).collect() });
        Request { id, body: RequestBody::CancelAll { cookies } }
    }

    fn take_pending(&mut self, reply: &Reply, renew: bool) -> Result<Pending> {
        let what = if renew { "renew_all" } else { "cancel_all" };
        match &self.pending {
            Some(p) if p.id == reply.id && p.renew == renew => {}
            Some(p) => {
                return Err(LeaseError::InvalidArgument(format!(
                    "reply {} does not answer this map's pending {} request {}",
                    reply.id,
                    if p.renew { "renew_all" } else { "cancel_all" },
                    p.id
                )))
            }
            None => {
                return Err(LeaseError::InvalidArgument(format!(
                    "reply {} arrived but this map has no pending {what} request",
                    reply.id
                )))
            }
        }
        if let Some(l) = self.landlord {
            if l != reply.landlord {
                return Err(LeaseError::InvalidArgument(format!(
                    "reply from landlord {} for a map of landlord {l}",
                    reply.landlord
                )));
            }
        }
        Ok(self.pending.take().expect("checked"))
    }

    /// Matches a batch reply to the pending request (renew or cancel): `results`, the reply's
    /// if it is of the kind expected (`what`). A whole-request error answers the request and is
    /// returned; a reply of another kind or count is an error that changes nothing. Returns the
    /// pending request, taken, and the results.
    fn batch_results<'r, T>(
        &mut self,
        reply: &Reply,
        renew: bool,
        results: Option<&'r [Outcome<T>]>,
        what: &str,
    ) -> Result<(Pending, &'r [Outcome<T>])> {
        let Some(results) = results else {
            if let ReplyBody::Error(e) = &reply.body {
                self.take_pending(reply, renew)?;
                return Err(e.to_error());
            }
            let got = body_name(&reply.body);
            return Err(LeaseError::Decode(format!("expected a {what} reply, got {got}")));
        };
        let expected = self.pending.as_ref().map_or(0, |p| p.items.len());
        if results.len() != expected {
            return Err(LeaseError::Decode(format!(
                "{what} reply has {} results for {expected} leases",
                results.len()
            )));
        }
        Ok((self.take_pending(reply, renew)?, results))
    }

    /// Applies the reply to [`LeaseMap::renew_all_request`], sent at `sent_at` (holder's clock).
    ///
    /// Each renewed lease takes `sent_at` + granted duration (never more than it asked for).
    /// Leases that failed are removed and reported together as [`LeaseError::LeaseMap`]. A reply
    /// that fails as a whole ([`ReplyBody::Error`]) is returned as that error and changes nothing
    /// (like a `RemoteException`); a reply that does not match the request (other id, other
    /// landlord, wrong kind or count) is an error and changes nothing.
    pub fn apply_renew_all(&mut self, reply: &Reply, sent_at: Millis) -> Result<(), LeaseError> {
        let results = match &reply.body {
            ReplyBody::RenewedAll { results } => Some(&results[..]),
            _ => None,
        };
        let (pending, results) = self.batch_results(reply, true, results, "renewed_all")?;
        let mut failures = Vec::new();
        for ((cookie, requested), outcome) in pending.items.iter().zip(results) {
            let Some((lease, _)) = self.leases.get_mut(cookie) else { continue };
            match outcome.to_result().and_then(checked_granted) {
                Ok(granted) => {
                    let exp = time::expiration_after(sent_at, capped(*requested, granted));
                    lease.set_expiration(exp);
                }
                Err(error) => {
                    self.leases.remove(cookie);
                    failures.push(LeaseFailure { cookie: *cookie, error });
                }
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(LeaseError::LeaseMap(failures))
        }
    }

    /// Applies the reply to [`LeaseMap::cancel_all_request`].
    ///
    /// As in Jini, leases cancelled successfully stay in the map; leases whose cancel failed
    /// are removed and reported together as [`LeaseError::LeaseMap`]. Mismatched replies are
    /// errors that change nothing, and a whole-request error is returned as is.
    pub fn apply_cancel_all(&mut self, reply: &Reply) -> Result<(), LeaseError> {
        let results = match &reply.body {
            ReplyBody::CancelledAll { results } => Some(&results[..]),
            _ => None,
        };
        let (pending, results) = self.batch_results(reply, false, results, "cancelled_all")?;
        let mut failures = Vec::new();
        for ((cookie, _), outcome) in pending.items.iter().zip(results) {
            if let Err(error) = outcome.to_result() {
                if self.leases.remove(cookie).is_some() {
                    failures.push(LeaseFailure { cookie: *cookie, error });
                }
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(LeaseError::LeaseMap(failures))
        }
    }
}
