//! Lock and leader election on a `leasehold-server` cluster: the recipes of leases people
//! coordinate with, on the [`RenewalDriver`] (the core's renewal manager on tokio) and the
//! [`Cluster`](crate::Cluster) transport.
//!
//! - [`RenewalDriver::lock`] acquires an exclusive resource (optionally waiting for it, first
//!   come first served at its landlord), hands the lease to the driver to keep renewed, and
//!   gives a [`Lock`]: its fencing [`Lock::token`], the time it is safe until, and
//!   [`Lock::release`] (dropping it releases it too, on the current runtime).
//! - [`RenewalDriver::elect`] campaigns for a name (a lock whose holder label is the
//!   candidate's value) until this process leads; [`Leadership::resign`] steps down.
//!   [`RenewalDriver::observe`] follows the leader through a watch that resumes after
//!   disconnects and failovers (long polls from the last event number).
//!
//! A lock is not a promise that no one else acts: a holder paused past its lease can still
//! act after the lock went to someone else. Pass [`Lock::token`] with every operation on the
//! resource and have the resource check it with a [`leasehold::Fence`]
//! (`docs/coordination.md`).
//!
//! ```no_run
//! use std::time::Duration;
//! use leasehold_client::recipes::LockOptions;
//! use leasehold_client::{Cluster, RenewalDriver};
//!
//! # async fn run() -> Result<(), leasehold_client::ClientError> {
//! let cluster = Cluster::from_urls(["http://127.0.0.1:7420"])?;
//! let (driver, _events) = RenewalDriver::start(cluster, Default::default())?;
//! let opts = LockOptions { wait: Some(Duration::from_secs(5)), ..LockOptions::default() };
//! let lock = driver.lock("locks/report", &opts).await?;
//! println!("token {} safe for {:?}", lock.token(), lock.safe_for().await);
//! // ... write to the resource, passing lock.token() for its fence to check ...
//! lock.release().await?;
//! # Ok(()) }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration as StdDuration;

use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use leasehold::coord::wire::{CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{EventKind, Holder};
use leasehold::{
    Cookie, Duration, ErrorCode, LandlordId, Lease, LeaseError, Millis, Request, FOREVER,
};

use crate::driver::RenewalDriver;
use crate::error::ClientError;

/// Coordination request ids (any will do: a reply is matched to its request by the exchange).
static IDS: AtomicU64 = AtomicU64::new(1 << 53);

fn next_id() -> u64 {
    IDS.fetch_add(1, Ordering::Relaxed)
}

/// Longest one request asks the server to hold it, so that a server that disappears while
/// holding it costs at most this much before another is asked.
const MOST_HELD: StdDuration = StdDuration::from_secs(20);

/// How a lock is taken and kept.
#[derive(Debug, Clone)]
pub struct LockOptions {
    /// The lease asked for (and each renewal), in ms. Default 10 s.
    pub lease_ms: Duration,
    /// How long to wait for the lock if it is held; `None` to fail at once with
    /// [`LeaseError::LeaseDenied`]. Default `None`.
    pub wait: Option<StdDuration>,
    /// A label for the holder that watchers (and observers of an election) see.
    pub holder: Vec<u8>,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions { lease_ms: 10_000, wait: None, holder: Vec::new() }
    }
}

/// An exclusive resource held and kept renewed by a [`RenewalDriver`] until released (or
/// dropped).
pub struct Lock<C: Connect + Clone + Send + Sync + 'static = HttpConnector> {
    driver: RenewalDriver<C>,
    lease: Lease,
    token: u64,
    resource: Vec<u8>,
    released: bool,
}

impl<C: Connect + Clone + Send + Sync + 'static> std::fmt::Debug for Lock<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("resource", &leasehold::coord::show(&self.resource))
            .field("token", &self.token)
            .field("lease", &self.lease)
            .finish()
    }
}

impl<C: Connect + Clone + Send + Sync + 'static> RenewalDriver<C> {
    /// Acquires `name` (an exclusive resource, or a pool: [`Lock::resource`] then says which
    /// member), waiting up to `opts.wait` if it is held, and keeps it renewed. While no server
    /// answers it retries until the wait is over.
    ///
    /// Held by someone else (no wait, or the wait ran out): [`ClientError::Lease`] with
    /// [`LeaseError::LeaseDenied`] (its message says who holds it until when, if known). The
    /// server refusing the caller (no or a wrong token, a prefix its identity lacks):
    /// [`ClientError::Refused`], at once, whatever the wait.
    pub async fn lock(
        &self,
        name: impl AsRef<[u8]>,
        opts: &LockOptions,
    ) -> Result<Lock<C>, ClientError> {
        let deadline = tokio::time::Instant::now() + opts.wait.unwrap_or_default();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let request = CoordRequest {
                id: next_id(),
                body: CoordRequestBody::Acquire {
                    resource: name.as_ref().to_vec(),
                    duration: opts.lease_ms,
                    wait: left.min(MOST_HELD).as_millis() as i64,
                    holder: opts.holder.clone(),
                },
            };
            let asked = tokio::time::Instant::now();
            let (reply, answered) = match self.cluster().send_coord_traced(None, &request).await {
                Ok(r) => r,
                Err(ClientError::Unavailable(why)) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(ClientError::Unavailable(why));
                    }
                    tokio::time::sleep(StdDuration::from_millis(100)).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            match reply.acquired() {
                Ok(a) => {
                    // Counted from when the answered attempt went out: after a failover
                    // (an attempt that timed out, perhaps held while waiting) the first
                    // attempt's time would leave the lock already over when returned.
                    let sent = self.at(answered.sent);
                    let lease = a.lease(reply.landlord, sent, self.max_clock_drift_ppm());
                    let lock = Lock {
                        driver: self.clone(),
                        lease,
                        token: a.token,
                        resource: a.resource,
                        released: false,
                    };
                    // From here on the lock cancels its lease if it is dropped.
                    self.renew_for(lease, FOREVER, opts.lease_ms).await?;
                    return Ok(lock);
                }
                // Landlord 0: the server refused the caller (no or unknown credential, an
                // operation or prefix its identity lacks) before any landlord saw the request.
                // Asking again cannot change that: say so at once instead of asking until the
                // wait is over.
                Err(LeaseError::LeaseDenied(why)) if reply.landlord == LandlordId(0) => {
                    return Err(ClientError::Refused(why))
                }
                // The server's wait ran out before ours (it holds at most its own longest
                // wait, and we ask for at most MOST_HELD): ask again. A denial that came back
                // well before the wait asked for (too many waiters, a quota) is asked again
                // after a pause, not in a tight loop.
                Err(LeaseError::LeaseDenied(_)) if tokio::time::Instant::now() < deadline => {
                    if asked.elapsed() < left.min(MOST_HELD) / 2 {
                        let pause = deadline.saturating_duration_since(tokio::time::Instant::now());
                        tokio::time::sleep(pause.min(StdDuration::from_millis(100))).await;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Campaigns for `name` with `value` (what observers see): waits, first come first served
    /// among the candidates, until this process leads or `give_up` has passed (`None`:
    /// campaigns for ever). The leader's lease is `lease_ms` long, kept renewed. The server
    /// refusing the caller ends the campaign at once ([`ClientError::Refused`]).
    pub async fn elect(
        &self,
        name: impl AsRef<[u8]>,
        value: impl Into<Vec<u8>>,
        lease_ms: Duration,
        give_up: Option<StdDuration>,
    ) -> Result<Leadership<C>, ClientError> {
        let start = tokio::time::Instant::now();
        let value = value.into();
        loop {
            let left = match give_up {
                Some(g) => g.saturating_sub(start.elapsed()),
                None => StdDuration::from_secs(3600),
            };
            let opts = LockOptions { lease_ms, wait: Some(left), holder: value.clone() };
            match self.lock(name.as_ref(), &opts).await {
                Ok(lock) => return Ok(Leadership { lock }),
                Err(
                    ClientError::Lease(LeaseError::LeaseDenied(_)) | ClientError::Unavailable(_),
                ) if give_up.map_or(true, |g| start.elapsed() < g) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Follows the leader of election `name` (or the holder of any exclusive resource) through
    /// a watch on it, whose lease this driver keeps renewed (`lease_ms` at a time).
    pub async fn observe(
        &self,
        name: impl AsRef<[u8]>,
        lease_ms: Duration,
    ) -> Result<Observer<C>, ClientError> {
        let mut o = Observer {
            driver: self.clone(),
            name: name.as_ref().to_vec(),
            lease: None,
            last: 0,
            leader: None,
            lease_ms,
        };
        o.register().await?;
        Ok(o)
    }
}

impl<C: Connect + Clone + Send + Sync + 'static> Lock<C> {
    /// The fencing token: pass it with every operation on the protected resource.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// What is held (a pool's member, if a pool was acquired).
    pub fn resource(&self) -> &[u8] {
        &self.resource
    }

    /// The landlord (shard) that holds the lease.
    pub fn landlord(&self) -> LandlordId {
        self.lease.landlord()
    }

    /// The lease as granted (its expiration is the first grant's; see [`Lock::safe_until`]).
    pub fn lease(&self) -> Lease {
        self.lease
    }

    /// Until when (the driver's clock, [`RenewalDriver::now`]) the lease is known held: its
    /// expiration as last granted, counted from when the answered request was sent, less the clock
    /// drift allowed. `None` once it is lost (a renewal refused, or none got through in time)
    /// or released. Act on the resource only before it, and still fence every operation.
    pub async fn safe_until(&self) -> Option<Millis> {
        if self.released {
            return None;
        }
        self.driver.lease(self.lease).await.ok().flatten().map(|(l, _)| l.expiration())
    }

    /// How long from now the lease is known held (zero if not).
    pub async fn safe_for(&self) -> StdDuration {
        let left = self.safe_until().await.map_or(0, |t| t.saturating_sub(self.driver.now()));
        StdDuration::from_millis(left.max(0) as u64)
    }

    /// Whether the lease is known held now.
    pub async fn is_held(&self) -> bool {
        self.safe_until().await.is_some_and(|t| self.driver.now() < t)
    }

    /// Releases the lock: stops renewing and cancels the lease (so the next waiter gets it at
    /// once). A lease already lost or gone is not an error.
    ///
    /// The driver stops renewing it first; then the cancel is sent (with failover) and its
    /// answer awaited, so that when this returns `Ok` the landlord has ended the lease (and
    /// handed the resource to the next in line). A process may exit right after.
    pub async fn release(mut self) -> Result<(), ClientError> {
        self.released = true;
        // Not managed any more (lost, or removed before): nothing to stop renewing.
        let _ = self.driver.remove(self.lease).await;
        let request = Request {
            id: next_id(),
            body: leasehold::RequestBody::Cancel { cookie: self.lease.cookie() },
        };
        let reply = self.driver.cluster().send(Some(self.lease.landlord()), &request).await?;
        match reply.body {
            leasehold::ReplyBody::Cancelled => Ok(()),
            leasehold::ReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => {
                Ok(())
            }
            leasehold::ReplyBody::Error(e) => Err(ClientError::Lease(e.to_error())),
            other => Err(ClientError::Lease(LeaseError::Decode(format!(
                "expected cancelled, got {other:?}"
            )))),
        }
    }
}

impl<C: Connect + Clone + Send + Sync + 'static> Drop for Lock<C> {
    /// Releases the lock in the background (on the current tokio runtime, if there is one,
    /// through its driver). If there is no runtime, or the driver is closed (or every handle
    /// of it dropped) before the cancel leaves, the lease runs out by itself: call
    /// [`Lock::release`] to know it was released.
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (driver, lease) = (self.driver.clone(), self.lease);
            rt.spawn(async move {
                let _ = driver.cancel(lease).await;
            });
        }
    }
}

/// Being the leader: a lock on the election's name. Resign, or drop it, to step down.
#[derive(Debug)]
pub struct Leadership<C: Connect + Clone + Send + Sync + 'static = HttpConnector> {
    lock: Lock<C>,
}

impl<C: Connect + Clone + Send + Sync + 'static> Leadership<C> {
    /// The leader's fencing token (greater for every later leader).
    pub fn token(&self) -> u64 {
        self.lock.token()
    }

    /// Whether this process is still known to lead.
    pub async fn is_leader(&self) -> bool {
        self.lock.is_held().await
    }

    /// Until when (the driver's clock) it is known to lead.
    pub async fn safe_until(&self) -> Option<Millis> {
        self.lock.safe_until().await
    }

    /// The lock behind it.
    pub fn lock(&self) -> &Lock<C> {
        &self.lock
    }

    /// Steps down (the next candidate in line leads at once).
    pub async fn resign(self) -> Result<(), ClientError> {
        self.lock.release().await
    }
}

/// A leader as observers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// Its fencing token.
    pub token: u64,
    /// The value it campaigned with.
    pub value: Vec<u8>,
}

fn leader_of(holders: Vec<Holder>) -> Option<Leader> {
    holders.into_iter().next().map(|h| Leader { token: h.token, value: h.holder })
}

/// Follows an election's leader through a watch on its name: long polls that resume from the
/// last event number after a disconnect or a failover; the watch's lease is kept renewed by
/// the driver, and the watch made again if it ran out.
pub struct Observer<C: Connect + Clone + Send + Sync + 'static = HttpConnector> {
    driver: RenewalDriver<C>,
    name: Vec<u8>,
    lease: Option<Lease>,
    last: u64,
    leader: Option<Leader>,
    lease_ms: Duration,
}

impl<C: Connect + Clone + Send + Sync + 'static> Observer<C> {
    async fn register(&mut self) -> Result<(), ClientError> {
        if let Some(old) = self.lease.take() {
            let _ = self.driver.remove(old).await;
        }
        let request = CoordRequest {
            id: next_id(),
            body: CoordRequestBody::Watch {
                resource: self.name.clone(),
                prefix: false,
                renewals: false,
                duration: self.lease_ms,
                handback: Vec::new(),
            },
        };
        let (r, answered) = self.driver.cluster().send_coord_traced(None, &request).await?;
        let sent = self.driver.at(answered.sent);
        match r.body {
            CoordReplyBody::Watching { cookie, duration, sequence, current, .. } => {
                let expiration = leasehold::holder::local_expiration(
                    sent,
                    duration,
                    self.driver.max_clock_drift_ppm(),
                );
                let lease = Lease::new(r.landlord, cookie, expiration);
                self.lease = Some(lease);
                self.last = sequence;
                self.leader = leader_of(current);
                self.driver.renew_for(lease, FOREVER, self.lease_ms).await?;
                Ok(())
            }
            CoordReplyBody::Error(e) => Err(e.to_error().into()),
            other => Err(LeaseError::Decode(format!("expected watching, got {other:?}")).into()),
        }
    }

    /// The leader as last seen.
    pub fn leader(&self) -> Option<&Leader> {
        self.leader.as_ref()
    }

    /// The number of the last event applied.
    pub fn last_event(&self) -> u64 {
        self.last
    }

    /// Waits up to `timeout` for the leader to change; returns the new leader (`Some(None)`:
    /// no leader now), or `None` if nothing changed in that time. Every event is applied in
    /// order; if the watch missed some, the leader is read again from what the landlord holds.
    pub async fn next(
        &mut self,
        timeout: StdDuration,
    ) -> Result<Option<Option<Leader>>, ClientError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let before = self.leader.clone();
        loop {
            let lease = match self.lease {
                Some(l) => l,
                None => {
                    self.register().await?;
                    self.lease.expect("registered")
                }
            };
            // A watch whose lease the driver lost (it ran out while no server answered) is
            // made again; the new one starts from what the landlord holds now.
            if self.driver.lease(lease).await?.is_none() {
                self.register().await?;
                continue;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let request = CoordRequest {
                id: next_id(),
                body: CoordRequestBody::Poll {
                    cookie: lease.cookie(),
                    since: self.last,
                    wait: left.min(MOST_HELD).as_millis() as i64,
                    max: 0,
                },
            };
            match self.driver.cluster().send_coord(Some(lease.landlord()), &request).await {
                Ok(r) => match r.body {
                    CoordReplyBody::Events(e) => {
                        if let Some(m) = e.missed {
                            self.last = m.to;
                            self.leader = leader_of(e.current.unwrap_or_default());
                        }
                        for ev in e.events {
                            self.last = ev.sequence;
                            match ev.kind {
                                EventKind::Granted => {
                                    self.leader = Some(Leader { token: ev.token, value: ev.holder })
                                }
                                EventKind::Cancelled | EventKind::Expired => {
                                    if self.leader.as_ref().is_some_and(|l| l.token == ev.token) {
                                        self.leader = None;
                                    }
                                }
                                EventKind::Renewed => {}
                            }
                        }
                    }
                    // The watch ran out (this observer was away too long): watch again.
                    CoordReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => {
                        self.register().await?;
                    }
                    CoordReplyBody::Error(e) => return Err(e.to_error().into()),
                    other => {
                        return Err(
                            LeaseError::Decode(format!("expected events, got {other:?}")).into()
                        )
                    }
                },
                Err(ClientError::Unavailable(_)) => {
                    tokio::time::sleep(StdDuration::from_millis(100)).await
                }
                Err(e) => return Err(e),
            }
            if self.leader != before {
                return Ok(Some(self.leader.clone()));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// The watch's lease cookie (for `GET /watch`), if it has one.
    pub fn watch_cookie(&self) -> Option<Cookie> {
        self.lease.map(|l| l.cookie())
    }

    /// Ends the watch (stops renewing it and cancels it).
    pub async fn close(mut self) {
        if let Some(l) = self.lease.take() {
            let _ = self.driver.cancel(l).await;
        }
    }
}
