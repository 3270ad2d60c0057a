//! Renewal sets at a remote lease renewal service (`leasehold-server --renewal-shards N`,
//! `POST /renewal`; seed 003, LR): hand leases to a set before going away, take them back,
//! register a listener for the set's events, keep the set itself alive.
//!
//! ```no_run
//! use leasehold::service::wire::SetEventType;
//! use leasehold_client::{Cluster, RemoteSet, RenewalDriver};
//! # async fn run() -> Result<(), leasehold_client::ClientError> {
//! let landlords = Cluster::from_urls(["http://127.0.0.1:7421"])?;
//! let service = Cluster::from_urls(["http://127.0.0.1:7422"])?;
//! let (driver, _events) = RenewalDriver::start(landlords.clone(), Default::default())?;
//! let lease = driver.grant("job/42", 30_000).await?;
//! // A set for an hour; its failures to our listener; the lease kept for a day.
//! let set = RemoteSet::create(&service, 3_600_000, driver.now()).await?;
//! set.listen(SetEventType::RenewalFailure, 0, "http://10.0.0.5:8080/events", b"job 42").await?;
//! set.add(&lease, driver.now(), &landlords.origins(), 86_400_000, 30_000).await?;
//! // ... the process may exit now ...
//! # Ok(()) }
//! ```
//!
//! Times follow the core's rule: every call whose answer depends on time takes `now`, on the
//! clock the caller's leases are on (a [`crate::RenewalDriver`]'s, say): the service is told
//! how long a lease has left, never an absolute time, so the two clocks need not agree.

use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use leasehold::event::EventId;
use leasehold::service::wire::{
    ClientLease, SetEventType, SetReply, SetReplyBody, SetRequest, SetRequestBody,
};
use leasehold::wire::{ReplyBody, Request, RequestBody};
use leasehold::{Cookie, Duration, Lease, LeaseError, Millis, FOREVER};

use crate::cluster::Cluster;
use crate::error::ClientError;

/// A renewal set at a remote renewal service, reached through a [`Cluster`] of its servers.
#[derive(Debug, Clone)]
pub struct RemoteSet<C = HttpConnector> {
    service: Cluster<C>,
    lease: Lease,
    number: u64,
}

fn ids() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// `now + d`, FOREVER staying FOREVER.
fn after(now: Millis, d: Duration) -> Millis {
    if d == FOREVER {
        FOREVER
    } else {
        now.saturating_add(d).min(FOREVER - 1)
    }
}

/// The body of `reply`, or its error.
fn answer(reply: SetReply) -> Result<SetReplyBody, ClientError> {
    match reply.body {
        SetReplyBody::Error(e) => Err(ClientError::Lease(e.to_error())),
        b => Ok(b),
    }
}

fn unexpected(b: &SetReplyBody) -> ClientError {
    ClientError::Lease(LeaseError::Decode(format!("unexpected answer {b:?}")))
}

impl<C: Connect + Clone + Send + Sync + 'static> RemoteSet<C> {
    /// Creates a set at `service` leased for at most `duration` (positive, FOREVER or ANY), at
    /// `now` on the caller's clock (the set's lease counts from the time the request was sent).
    pub async fn create(
        service: &Cluster<C>,
        duration: Duration,
        now: Millis,
    ) -> Result<RemoteSet<C>, ClientError> {
        let req = SetRequest { id: ids(), body: SetRequestBody::CreateSet { duration } };
        let reply = service.send_set(None, &req).await?;
        let landlord = reply.landlord;
        match answer(reply)? {
            SetReplyBody::SetCreated { set, cookie, duration } => Ok(RemoteSet {
                service: service.clone(),
                lease: Lease::new(landlord, cookie, after(now, duration)),
                number: set,
            }),
            b => Err(unexpected(&b)),
        }
    }

    /// A handle on a set known by its lease (from [`RemoteSet::lease`], kept by a process that
    /// went away and came back) and its number.
    pub fn from_lease(service: &Cluster<C>, lease: Lease, number: u64) -> RemoteSet<C> {
        RemoteSet { service: service.clone(), lease, number }
    }

    /// The set's own lease (landlord: the renewal service; expiration on the caller's clock).
    pub fn lease(&self) -> Lease {
        self.lease
    }

    /// The set's number (the `set` of its events).
    pub fn number(&self) -> u64 {
        self.number
    }

    fn cookie(&self) -> Cookie {
        self.lease.cookie()
    }

    async fn ask(&self, body: SetRequestBody) -> Result<SetReplyBody, ClientError> {
        let req = SetRequest { id: ids(), body };
        answer(self.service.send_set(Some(self.lease.landlord()), &req).await?)
    }

    /// Hands `lease` to the set: renewed with its landlord (reached at `landlord_urls`, the
    /// servers of its cluster) until `membership` ms from now (FOREVER: until removed), asking
    /// for `renew` each time. `now` is on the clock of the lease's expiration. Adding a lease
    /// the set holds updates its membership.
    pub async fn add(
        &self,
        lease: &Lease,
        now: Millis,
        landlord_urls: &[String],
        membership: Duration,
        renew: Duration,
    ) -> Result<(), ClientError> {
        let remaining = if lease.expiration() == FOREVER { FOREVER } else { lease.remaining(now) };
        let lease = ClientLease {
            landlord: lease.landlord(),
            cookie: lease.cookie(),
            remaining,
            urls: landlord_urls.to_vec(),
            membership: None,
            renew: None,
        };
        match self.ask(SetRequestBody::Add { set: self.cookie(), lease, membership, renew }).await?
        {
            SetReplyBody::Done => Ok(()),
            b => Err(unexpected(&b)),
        }
    }

    /// Takes `lease` back (it is not cancelled): the lease with the time it has left as the
    /// service last renewed it, or `None` if the set did not hold it.
    pub async fn remove(
        &self,
        lease: &Lease,
        landlord_urls: &[String],
    ) -> Result<Option<ClientLease>, ClientError> {
        let body = SetRequestBody::Remove {
            set: self.cookie(),
            landlord: lease.landlord(),
            cookie: lease.cookie(),
            urls: landlord_urls.to_vec(),
        };
        match self.ask(body).await? {
            SetReplyBody::Removed { lease } => Ok(lease),
            b => Err(unexpected(&b)),
        }
    }

    /// The set's leases, with their memberships.
    pub async fn leases(&self) -> Result<Vec<ClientLease>, ClientError> {
        match self.ask(SetRequestBody::Leases { set: self.cookie() }).await? {
            SetReplyBody::Leases { leases } => Ok(leases),
            b => Err(unexpected(&b)),
        }
    }

    /// Registers `url` for the set's `event`s (`min_warning` before the set's lease expires
    /// for warnings, 0 for failures): the registration's event id and the sequence number its
    /// next event follows.
    pub async fn listen(
        &self,
        event: SetEventType,
        min_warning: Duration,
        url: &str,
        handback: &[u8],
    ) -> Result<(EventId, u64), ClientError> {
        let body = SetRequestBody::Listen {
            set: self.cookie(),
            event,
            min_warning,
            url: url.to_string(),
            handback: handback.to_vec(),
        };
        match self.ask(body).await? {
            SetReplyBody::Registered { event_id, sequence } => Ok((event_id, sequence)),
            b => Err(unexpected(&b)),
        }
    }

    /// Ends the set's registration for `event`.
    pub async fn unlisten(&self, event: SetEventType) -> Result<(), ClientError> {
        match self.ask(SetRequestBody::Unlisten { set: self.cookie(), event }).await? {
            SetReplyBody::Done => Ok(()),
            b => Err(unexpected(&b)),
        }
    }

    /// Renews the set's own lease for `duration` (a lease like any other), at `now`.
    pub async fn renew(&mut self, duration: Duration, now: Millis) -> Result<(), ClientError> {
        let req =
            Request { id: ids(), body: RequestBody::Renew { cookie: self.cookie(), duration } };
        let reply = self.service.send(Some(self.lease.landlord()), &req).await?;
        match reply.body {
            ReplyBody::Renewed { duration } => {
                self.lease.set_expiration(after(now, duration));
                Ok(())
            }
            ReplyBody::Error(e) => Err(ClientError::Lease(e.to_error())),
            b => Err(ClientError::Lease(LeaseError::Decode(format!("unexpected reply {b:?}")))),
        }
    }

    /// Cancels the set's lease: the set is destroyed, its leases are no longer renewed (not
    /// cancelled).
    pub async fn cancel(self) -> Result<(), ClientError> {
        let req = Request { id: ids(), body: RequestBody::Cancel { cookie: self.cookie() } };
        let reply = self.service.send(Some(self.lease.landlord()), &req).await?;
        match reply.body {
            ReplyBody::Cancelled => Ok(()),
            ReplyBody::Error(e) => Err(ClientError::Lease(e.to_error())),
            b => Err(ClientError::Lease(LeaseError::Decode(format!("unexpected reply {b:?}")))),
        }
    }
}
