//! A renewal service reached over a network: the set messages of [`super::wire`] answered,
//! client leases of many clusters told apart, renewals routed to their landlords' URLs, events
//! turned into the messages a listener receives.
//!
//! # Landlords of many clusters
//!
//! A client lease names its landlord by id, and ids are unique only within one cluster (every
//! `leasehold-server` has a landlord 1). Inside the service each distinct landlord (its id and
//! its sorted URLs) gets an id of its own, an *alias* from [`ALIAS_BASE`] up, recorded with a
//! locator ([`super::RenewalService::set_locator`]) that names the real id and the URLs: the
//! renewal manager batches and tracks leases by alias, the journal and snapshots keep the
//! aliases and their locators, and [`super::RenewalService::route`] tells the host, for each
//! [`crate::holder::Transmit`], which landlord to name and which URLs to try. What goes out
//! (answers, events) names the real landlord and its URLs again.

use crate::error::{LeaseError, Result};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::time::{Duration, Millis, FOREVER};
use crate::wire::{Reply, ReplyBody};

use super::wire::{
    check_landlord_urls, check_url, ClientLease, SetEventBody, SetEventMessage, SetEventType,
    SetReply, SetReplyBody, SetRequest, SetRequestBody,
};
use super::{RenewalService, SetEvent, SetEventKind, SetId};

/// The first id the service gives a landlord of client leases it was sent over the network
/// (far above the ids of any cluster's landlords, so an alias is never taken for a set lease
/// of the service itself).
pub const ALIAS_BASE: u64 = 1 << 62;

/// Where a renewal request for a client-lease landlord goes: the landlord's own id (what the
/// request names, `?landlord=` on `leasehold-server`) and the URLs to try, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The landlord's id in its cluster.
    pub landlord: LandlordId,
    /// Its cluster's base URLs.
    pub urls: Vec<String>,
}

/// A handback of a registration made over the network: the listener's URL, then the client's
/// handback.
const URL_HANDBACK: &[u8; 4] = b"LHU1";

fn wrap(url: &str, handback: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + url.len() + handback.len());
    out.extend_from_slice(URL_HANDBACK);
    out.extend_from_slice(&(url.len() as u16).to_be_bytes());
    out.extend_from_slice(url.as_bytes());
    out.extend_from_slice(handback);
    out
}

/// The listener URL and the client's handback in a registration's handback (`None` and the
/// bytes as they are for a registration a local host made).
pub fn unwrap_handback(bytes: &[u8]) -> (Option<String>, &[u8]) {
    let plain = (None, bytes);
    let Some(rest) = bytes.strip_prefix(URL_HANDBACK.as_slice()) else { return plain };
    if rest.len() < 2 {
        return plain;
    }
    let n = u16::from_be_bytes([rest[0], rest[1]]) as usize;
    match rest.get(2..2 + n).map(std::str::from_utf8) {
        Some(Ok(url)) => (Some(url.to_string()), &rest[2 + n..]),
        _ => plain,
    }
}

/// The URLs as the service keeps them: no trailing `/`, sorted, each once.
fn normal_urls(urls: &[String]) -> Vec<String> {
    let mut v: Vec<String> = urls.iter().map(|u| u.trim_end_matches('/').to_string()).collect();
    v.sort();
    v.dedup();
    v
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Locator {
    landlord: LandlordId,
    urls: Vec<String>,
}

fn locator_bytes(landlord: LandlordId, urls: Vec<String>) -> Vec<u8> {
    serde_json::to_vec(&Locator { landlord, urls }).expect("locator JSON cannot fail")
}

/// Time left until `expiration` at `now` (FOREVER stays FOREVER).
fn left(expiration: Millis, now: Millis) -> Duration {
    if expiration == FOREVER {
        FOREVER
    } else {
        expiration.saturating_sub(now)
    }
}

/// The expiration of something with `remaining` left at `now` (FOREVER stays FOREVER, any other
/// time stays finite).
fn after(now: Millis, remaining: Duration) -> Millis {
    if remaining == FOREVER {
        FOREVER
    } else {
        now.saturating_add(remaining).min(FOREVER - 1)
    }
}

impl RenewalService {
    /// Answers a set request from a client over the network, at `now` (see [`super::wire`]).
    /// A client lease is kept under an alias of its landlord (module docs); its landlord's
    /// URLs must be `http://` or `https://` URLs, one to [`super::wire::MAX_URLS`] of them, as
    /// must a listener's.
    ///
    /// With a journal, the reply may leave only once [`RenewalService::journal_seq`] (read
    /// right after this call) is durable.
    pub fn handle_set_request(&mut self, request: &SetRequest, now: Millis) -> SetReply {
        let body = match self.answer_set(&request.body, now) {
            Ok(b) => b,
            Err(e) => SetReplyBody::Error((&e).into()),
        };
        SetReply { id: request.id, landlord: self.id(), body }
    }

    fn answer_set(&mut self, body: &SetRequestBody, now: Millis) -> Result<SetReplyBody> {
        match body {
            SetRequestBody::CreateSet { duration } => {
                let (set, lease) = self.create_set(*duration, now)?;
                Ok(SetReplyBody::SetCreated {
                    set: set.0,
                    cookie: lease.cookie(),
                    duration: left(lease.expiration(), self.now()),
                })
            }
            SetRequestBody::Add { set, lease, membership, renew } => {
                let set = self.set_by_cookie(*set, now)?;
                check_landlord_urls(&lease.urls)?;
                let alias = self.alias_for(lease.landlord, &lease.urls, true)?.expect("made");
                let expiration = after(self.at(now), lease.remaining);
                let l = Lease::new(alias, lease.cookie, self.to_host(expiration));
                self.add(set, l, *membership, *renew, now)?;
                Ok(SetReplyBody::Done)
            }
            SetRequestBody::Remove { set, landlord, cookie, urls } => {
                let set = self.set_by_cookie(*set, now)?;
                let Some(alias) = self.alias_for(*landlord, urls, false)? else {
                    return Ok(SetReplyBody::Removed { lease: None });
                };
                let removed = self.remove(set, &Lease::new(alias, *cookie, 0), now)?;
                let host_now = self.now();
                Ok(SetReplyBody::Removed {
                    lease: removed.map(|l| self.to_client_lease(&l, host_now)),
                })
            }
            SetRequestBody::Leases { set } => {
                let set = self.set_by_cookie(*set, now)?;
                let host_now = self.now().max(now);
                let mut out = Vec::new();
                for l in self.leases(set, now)? {
                    let mut c = self.to_client_lease(&l, host_now);
                    if let Some(m) = self.membership(set, &l, now)? {
                        c.membership = Some(left(m.expiration, host_now));
                        c.renew = Some(m.renew_duration);
                    }
                    out.push(c);
                }
                out.sort_by_key(|c| (c.landlord, c.cookie));
                Ok(SetReplyBody::Leases { leases: out })
            }
            SetRequestBody::Listen { set, event, min_warning, url, handback } => {
                let set = self.set_by_cookie(*set, now)?;
                check_url(url)?;
                let wrapped = wrap(url, handback);
                let reg = match event {
                    SetEventType::ExpirationWarning => {
                        self.set_expiration_warning_listener(set, *min_warning, wrapped, now)?
                    }
                    SetEventType::RenewalFailure => {
                        if *min_warning != 0 {
                            return Err(LeaseError::InvalidArgument(
                                "min_warning is for expiration warnings: give 0 for renewal \
                                 failures"
                                    .into(),
                            ));
                        }
                        self.set_renewal_failure_listener(set, wrapped, now)?
                    }
                };
                Ok(SetReplyBody::Registered { event_id: reg.event_id, sequence: reg.sequence })
            }
            SetRequestBody::Unlisten { set, event } => {
                let set = self.set_by_cookie(*set, now)?;
                match event {
                    SetEventType::ExpirationWarning => {
                        self.clear_expiration_warning_listener(set, now)?
                    }
                    SetEventType::RenewalFailure => {
                        self.clear_renewal_failure_listener(set, now)?
                    }
                }
                Ok(SetReplyBody::Done)
            }
        }
    }

    /// The set whose lease has `cookie`, if it is alive at `now`.
    fn set_by_cookie(&self, cookie: Cookie, now: Millis) -> Result<SetId> {
        self.set_of(&Lease::new(self.id(), cookie, 0), now).ok_or(LeaseError::UnknownLease)
    }

    /// The alias of the landlord `landlord` reached at `urls`; with `make`, a new one if it has
    /// none yet (journaled as its locator).
    fn alias_for(
        &mut self,
        landlord: LandlordId,
        urls: &[String],
        make: bool,
    ) -> Result<Option<LandlordId>> {
        let key = locator_bytes(landlord, normal_urls(urls));
        if let Some(a) = self.by_locator.get(&key) {
            return Ok(Some(*a));
        }
        if !make {
            return Ok(None);
        }
        let next = self
            .locators
            .range(LandlordId(ALIAS_BASE)..)
            .next_back()
            .map_or(ALIAS_BASE, |(a, _)| a.0.saturating_add(1));
        if next == u64::MAX {
            return Err(LeaseError::InvalidArgument("no landlord aliases left".into()));
        }
        self.set_locator(LandlordId(next), key)?;
        Ok(Some(LandlordId(next)))
    }

    /// Where a renewal request for the client-lease landlord `landlord` (a
    /// [`crate::holder::Transmit`]'s) goes: its own id and its URLs; `None` for a landlord the
    /// service has no URLs for (a client lease a local host added directly).
    pub fn route(&self, landlord: LandlordId) -> Option<Route> {
        let l: Locator = serde_json::from_slice(self.locator(landlord)?).ok()?;
        Some(Route { landlord: l.landlord, urls: l.urls })
    }

    /// A landlord's reply to a request sent to the alias `to` ([`RenewalService::route`]),
    /// received at `now`: it names the landlord's own id, which is put back to the alias
    /// before the reply is handled ([`RenewalService::handle_reply`]). An error reply is taken
    /// whatever landlord it names (it answers the request sent there).
    pub fn handle_routed_reply(&mut self, to: LandlordId, mut reply: Reply, now: Millis) {
        if let Some(r) = self.route(to) {
            if reply.landlord == r.landlord || matches!(reply.body, ReplyBody::Error(_)) {
                reply.landlord = to;
            }
        }
        self.handle_reply(&reply, now)
    }

    /// A client lease as it travels, at the host's `now`: its landlord's own id and URLs
    /// (aliases put back), the time it has left.
    pub fn to_client_lease(&self, lease: &Lease, now: Millis) -> ClientLease {
        let (landlord, urls) = match self.route(lease.landlord()) {
            Some(r) => (r.landlord, r.urls),
            None => (lease.landlord(), Vec::new()),
        };
        ClientLease {
            landlord,
            cookie: lease.cookie(),
            remaining: left(lease.expiration(), now),
            urls,
            membership: None,
            renew: None,
        }
    }

    /// An event as a listener receives it, at the host's `now`, and the listener's URL (`None`
    /// for a registration a local host made with a handback of its own).
    pub fn event_message(
        &self,
        event: &SetEvent,
        now: Millis,
    ) -> (Option<String>, SetEventMessage) {
        let (url, handback) = unwrap_handback(&event.handback);
        let (set, body) = match &event.kind {
            SetEventKind::ExpirationWarning { set, expiration } => {
                (*set, SetEventBody::ExpirationWarning { remaining: left(*expiration, now) })
            }
            SetEventKind::RenewalFailure { set, lease, error } => {
                let lease = self.to_client_lease(lease, now);
                let error = error.as_ref().map(|e| {
                    let mut w: crate::wire::WireError = e.into();
                    if w.message.is_empty() {
                        // The core's "unknown lease" carries no words: say which and where.
                        w.message = format!(
                            "landlord {} at {} answered: {} for lease {}",
                            lease.landlord,
                            lease.urls.join(", "),
                            e.code().name(),
                            lease.cookie
                        );
                    }
                    w
                });
                (*set, SetEventBody::RenewalFailure { lease, error })
            }
        };
        let msg = SetEventMessage {
            event_id: event.event_id,
            sequence: event.sequence,
            service: event.source.service,
            set: set.0,
            handback: handback.to_vec(),
            body,
        };
        (url, msg)
    }
}
