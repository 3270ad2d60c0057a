//! Lock and leader election on a `leasehold-server` cluster, over the blocking [`Cluster`]
//! client: the Rust recipes of leases people coordinate with.
//!
//! - [`Lock::acquire`] acquires an exclusive resource (optionally waiting for it, first come
//!   first served), keeps its lease renewed on a thread of its own with the core's
//!   [`RenewalManager`], exposes its fencing [`Lock::token`] and the time it is safe until,
//!   and releases it on [`Lock::release`] or when dropped.
//! - [`Election::campaign`] waits to become the leader (a lock on the election's name, its
//!   label the candidate's value); [`Leadership::resign`] steps down; [`Election::observe`]
//!   follows the leader through a watch that resumes after disconnects and failovers.
//!
//! A lock is not a promise that no one else acts: a holder that is paused past its lease can
//! still act after it was given to someone else. Pass [`Lock::token`] with every operation on
//! the resource and have the resource check it with a [`leasehold::Fence`] (see
//! `docs/coordination.md` and the `fenced_register` example).
//!
//! These recipes live in the examples crate because `leasehold-client` (the tokio client) is
//! not there yet; they use only the wire protocol and the core, so they move there unchanged.
//!
//! ```no_run
//! use std::time::Duration;
//! use leasehold_examples::recipes::{Lock, LockOptions};
//!
//! let servers = ["http://127.0.0.1:7420"];
//! let opts = LockOptions { wait: Some(Duration::from_secs(5)), ..LockOptions::default() };
//! let lock = Lock::acquire(&servers, "locks/report", &opts)?;
//! println!("token {} safe for {:?}", lock.token(), lock.safe_for());
//! // ... write to the resource, passing lock.token() for its fence to check ...
//! lock.release()?;
//! # Ok::<(), leasehold_examples::recipes::RecipeError>(())
//! ```

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::EventKind;
use leasehold::{
    Cookie, Encoding, ErrorCode, LandlordId, Lease, LeaseError, Limits, RenewalEvent,
    RenewalManager, RenewalManagerConfig, Reply, ReplyBody, Request, RequestBody, FOREVER,
};

use crate::http::Cluster;

/// Why a recipe failed.
#[derive(Debug)]
pub enum RecipeError {
    /// The resource is held by someone else (and no wait was asked, or it ran out).
    Held(String),
    /// No server answered in time.
    Unavailable(io::Error),
    /// The landlord refused for another reason (a bad argument, a full landlord, ...).
    Lease(LeaseError),
}

impl std::fmt::Display for RecipeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecipeError::Held(m) => write!(f, "held: {m}"),
            RecipeError::Unavailable(e) => write!(f, "no server answered: {e}"),
            RecipeError::Lease(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RecipeError {}

impl From<LeaseError> for RecipeError {
    fn from(e: LeaseError) -> Self {
        match e {
            LeaseError::LeaseDenied(m) => RecipeError::Held(m),
            e => RecipeError::Lease(e),
        }
    }
}

/// How a lock is taken and kept.
#[derive(Debug, Clone)]
pub struct LockOptions {
    /// The lease asked for (and each renewal), in ms. Default 10 s.
    pub lease_ms: i64,
    /// How long to wait for the lock if it is held; `None` to fail at once. Default `None`.
    pub wait: Option<Duration>,
    /// A label for the holder that watchers (and [`Election::observe`]) see.
    pub holder: Vec<u8>,
    /// Longest wait for one server's answer (a wait adds to it). Default 1 s.
    pub timeout: Duration,
    /// Clock-rate difference allowed for, in ppm: the lock counts itself safe that much less
    /// long. Default 100.
    pub drift_ppm: u32,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            lease_ms: 10_000,
            wait: None,
            holder: Vec::new(),
            timeout: Duration::from_secs(1),
            drift_ppm: 100,
        }
    }
}

/// A cluster client of these servers.
fn cluster(servers: &[&str], timeout: Duration) -> Result<Cluster, RecipeError> {
    Cluster::from_urls(servers, timeout).map_err(RecipeError::Unavailable)
}

/// Sends a coordination request (to `landlord`, or routed by the server), waiting up to `wait`
/// beyond the client's time-out.
fn coord_call(
    c: &mut Cluster,
    landlord: Option<LandlordId>,
    body: CoordRequestBody,
    wait: Duration,
) -> Result<CoordReply, RecipeError> {
    static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let req = CoordRequest { id: IDS.fetch_add(1, Ordering::Relaxed), body };
    let bytes = c
        .post_waiting("/coord", landlord, &req.encode(Encoding::Binary), Encoding::Binary, wait)
        .map_err(RecipeError::Unavailable)?;
    CoordReply::decode(&bytes, Encoding::Binary, &Limits::default()).map_err(RecipeError::Lease)
}

/// Sends a landlord request to `landlord`.
fn lease_call(c: &mut Cluster, landlord: LandlordId, req: &Request) -> io::Result<Reply> {
    let bytes = c.post(Some(landlord), &req.encode(Encoding::Binary), Encoding::Binary)?;
    Reply::decode(&bytes, Encoding::Binary, &Limits::default())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

/// What the renewal thread and the lock share.
struct Shared {
    /// Milliseconds (on the lock's clock) until which the lease is known held.
    safe_until: Mutex<i64>,
    /// Why the lease was lost, if it was.
    lost: Mutex<Option<String>>,
    stop: AtomicBool,
}

/// An exclusive resource held, kept renewed until released (or dropped).
pub struct Lock {
    resource: Vec<u8>,
    token: u64,
    landlord: LandlordId,
    cookie: Cookie,
    epoch: Instant,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Cluster>>,
    released: bool,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("resource", &leasehold::coord::show(&self.resource))
            .field("token", &self.token)
            .field("landlord", &self.landlord)
            .field("safe_for", &self.safe_for())
            .finish()
    }
}

impl Lock {
    /// Acquires `name` (an exclusive resource, or a pool: [`Lock::resource`] then says which
    /// member) from the servers at `servers` (`http://host:port`), waiting for it up to
    /// `opts.wait` if it is held. Servers that do not answer are skipped; while none answers,
    /// it retries until the wait is over.
    pub fn acquire(
        servers: &[&str],
        name: impl AsRef<[u8]>,
        opts: &LockOptions,
    ) -> Result<Lock, RecipeError> {
        let mut c = cluster(servers, opts.timeout)?;
        let epoch = Instant::now();
        let ms = |t: Instant| t.duration_since(epoch).as_millis() as i64;
        let deadline = epoch + opts.wait.unwrap_or_default();
        loop {
            let sent = Instant::now();
            // Ask the server to hold the request at most 20 s at a time (and at most what is
            // left of our wait), so that a server that disappears costs no more than that.
            let left = deadline.saturating_duration_since(sent).min(Duration::from_secs(20));
            let body = CoordRequestBody::Acquire {
                resource: name.as_ref().to_vec(),
                duration: opts.lease_ms,
                wait: left.as_millis() as i64,
                holder: opts.holder.clone(),
            };
            let reply = match coord_call(&mut c, None, body, left) {
                Ok(r) => r,
                Err(RecipeError::Unavailable(e)) => {
                    if Instant::now() >= deadline {
                        return Err(RecipeError::Unavailable(e));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                Err(e) => return Err(e),
            };
            match reply.acquired() {
                Ok(a) => {
                    let margin = a.duration.saturating_mul(opts.drift_ppm as i64) / 1_000_000 + 1;
                    let expiration = ms(sent) + a.waited + a.duration - margin;
                    return Ok(Lock::keep(
                        a.resource,
                        a.token,
                        reply.landlord,
                        a.cookie,
                        expiration,
                        epoch,
                        c,
                        opts,
                    ));
                }
                Err(LeaseError::LeaseDenied(m)) if Instant::now() < deadline => {
                    // The server's wait ran out before ours (it holds at most its own
                    // longest wait): ask again.
                    let _ = m;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn keep(
        resource: Vec<u8>,
        token: u64,
        landlord: LandlordId,
        cookie: Cookie,
        expiration: i64,
        epoch: Instant,
        mut c: Cluster,
        opts: &LockOptions,
    ) -> Lock {
        let shared = Arc::new(Shared {
            safe_until: Mutex::new(expiration),
            lost: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let lease_ms = opts.lease_ms;
        let drift = opts.drift_ppm;
        let thread = std::thread::spawn(move || {
            let now = || epoch.elapsed().as_millis() as i64;
            let config = RenewalManagerConfig {
                renew_divisor: 3,
                min_rto: 100,
                initial_rtt: 200,
                max_clock_drift_ppm: drift,
                ..RenewalManagerConfig::default()
            };
            let mut m = RenewalManager::new(config);
            let lease = Lease::new(landlord, cookie, expiration);
            if let Err(e) = m.renew_until(lease, FOREVER, lease_ms, now()) {
                *s.lost.lock().unwrap() = Some(e.to_string());
                return c;
            }
            while !s.stop.load(Ordering::Relaxed) {
                let t = now();
                m.handle_timeout(t);
                while let Some(tx) = m.poll_transmit(t) {
                    match lease_call(&mut c, tx.landlord, &tx.request) {
                        Ok(reply) => m.handle_reply(&reply, now()),
                        Err(e) => m.handle_failure(
                            tx.request.id,
                            LeaseError::Indefinite(e.to_string()),
                            now(),
                        ),
                    }
                }
                while let Some(ev) = m.poll_event() {
                    match ev {
                        RenewalEvent::Renewed { lease } => {
                            *s.safe_until.lock().unwrap() = lease.expiration();
                        }
                        RenewalEvent::RenewalFailed { error, .. } => {
                            let why = error.map_or("its lease ran out".into(), |e| e.to_string());
                            *s.lost.lock().unwrap() = Some(why);
                            return c;
                        }
                        RenewalEvent::DesiredExpirationReached { .. } => {}
                    }
                }
                let next = m.poll_timeout().unwrap_or(t + 50);
                let nap = (next - now()).clamp(1, 50);
                std::thread::sleep(Duration::from_millis(nap as u64));
            }
            c
        });
        Lock {
            resource,
            token,
            landlord,
            cookie,
            epoch,
            shared,
            thread: Some(thread),
            released: false,
        }
    }

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
        self.landlord
    }

    /// Until when (on this process's monotonic clock) the lease is known to be held: its
    /// expiration as last granted, counted from when the request was sent, less the clock
    /// drift allowed. Act on the resource only before it, and still fence every operation.
    pub fn safe_until(&self) -> Instant {
        let ms = *self.shared.safe_until.lock().unwrap();
        self.epoch + Duration::from_millis(ms.max(0) as u64)
    }

    /// How long from now the lease is known held (zero if not).
    pub fn safe_for(&self) -> Duration {
        self.safe_until().saturating_duration_since(Instant::now())
    }

    /// Whether the lease is known held now (renewals have not failed for good and its time
    /// has not run out).
    pub fn is_held(&self) -> bool {
        self.lost().is_none() && Instant::now() < self.safe_until()
    }

    /// Why the lease was lost (a renewal refused, or no renewal got through in time).
    pub fn lost(&self) -> Option<String> {
        self.shared.lost.lock().unwrap().clone()
    }

    /// Releases the lock: stops renewing and cancels the lease (so the next waiter gets it at
    /// once). A lease already lost or gone is not an error.
    pub fn release(mut self) -> Result<(), RecipeError> {
        self.release_inner()
    }

    fn release_inner(&mut self) -> Result<(), RecipeError> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        self.shared.stop.store(true, Ordering::Relaxed);
        let Some(t) = self.thread.take() else { return Ok(()) };
        let Ok(mut c) = t.join() else { return Ok(()) };
        let req = Request { id: u64::MAX / 2, body: RequestBody::Cancel { cookie: self.cookie } };
        match lease_call(&mut c, self.landlord, &req) {
            Ok(r) => match r.body {
                ReplyBody::Cancelled => Ok(()),
                ReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => Ok(()),
                ReplyBody::Error(e) => Err(RecipeError::Lease(e.to_error())),
                _ => Ok(()),
            },
            Err(e) => Err(RecipeError::Unavailable(e)),
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.release_inner();
    }
}

/// How candidates campaign and observers watch.
#[derive(Debug, Clone)]
pub struct ElectionOptions {
    /// The leader's lease, in ms. Default 10 s.
    pub lease_ms: i64,
    /// Longest wait for one server's answer. Default 1 s.
    pub timeout: Duration,
}

impl Default for ElectionOptions {
    fn default() -> Self {
        ElectionOptions { lease_ms: 10_000, timeout: Duration::from_secs(1) }
    }
}

/// A leader as observers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// Its fencing token (greater for every later leader).
    pub token: u64,
    /// The value it campaigned with.
    pub value: Vec<u8>,
}

/// An election: one leader at a time for a name (an exclusive resource on the servers).
pub struct Election;

/// Being the leader: a lock on the election's name. Resign, or drop it, to step down.
#[derive(Debug)]
pub struct Leadership {
    lock: Lock,
}

impl Leadership {
    /// The leader's fencing token.
    pub fn token(&self) -> u64 {
        self.lock.token()
    }
    /// Whether this process is still known to be the leader.
    pub fn is_leader(&self) -> bool {
        self.lock.is_held()
    }
    /// Until when it is known to be the leader.
    pub fn safe_until(&self) -> Instant {
        self.lock.safe_until()
    }
    /// Steps down (the next candidate in line becomes the leader at once).
    pub fn resign(self) -> Result<(), RecipeError> {
        self.lock.release()
    }
}

impl Election {
    /// Campaigns for `name` with `value` (what observers see): waits, first come first served
    /// among candidates, until this process is the leader or `give_up` has passed (`None`:
    /// campaign for ever).
    pub fn campaign(
        servers: &[&str],
        name: impl AsRef<[u8]>,
        value: &[u8],
        give_up: Option<Duration>,
        opts: &ElectionOptions,
    ) -> Result<Leadership, RecipeError> {
        let start = Instant::now();
        loop {
            let left = match give_up {
                Some(g) => g.saturating_sub(start.elapsed()),
                None => Duration::from_secs(3600),
            };
            let lock_opts = LockOptions {
                lease_ms: opts.lease_ms,
                wait: Some(left),
                holder: value.to_vec(),
                timeout: opts.timeout,
                ..LockOptions::default()
            };
            match Lock::acquire(servers, name.as_ref(), &lock_opts) {
                Ok(lock) => return Ok(Leadership { lock }),
                Err(RecipeError::Held(_) | RecipeError::Unavailable(_))
                    if give_up.is_none_or(|g| start.elapsed() < g) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Follows the leader of `name`.
    pub fn observe(
        servers: &[&str],
        name: impl AsRef<[u8]>,
        opts: &ElectionOptions,
    ) -> Result<Observer, RecipeError> {
        let mut o = Observer {
            cluster: cluster(servers, opts.timeout)?,
            name: name.as_ref().to_vec(),
            landlord: LandlordId(0),
            cookie: Cookie(0),
            last: 0,
            leader: None,
            renewed: Instant::now(),
            watch_ms: 30_000,
        };
        o.register()?;
        Ok(o)
    }
}

/// Follows an election's leader through a watch on its name (long polls that resume from the
/// last event number after a disconnect or a failover; the watch's own lease is renewed as it
/// goes, and made again if it ran out).
pub struct Observer {
    cluster: Cluster,
    name: Vec<u8>,
    landlord: LandlordId,
    cookie: Cookie,
    last: u64,
    leader: Option<Leader>,
    renewed: Instant,
    watch_ms: i64,
}

impl Observer {
    fn register(&mut self) -> Result<(), RecipeError> {
        let body = CoordRequestBody::Watch {
            resource: self.name.clone(),
            prefix: false,
            renewals: false,
            duration: self.watch_ms,
            handback: Vec::new(),
        };
        let r = coord_call(&mut self.cluster, None, body, Duration::ZERO)?;
        match r.body {
            CoordReplyBody::Watching { cookie, current, .. } => {
                self.landlord = r.landlord;
                self.cookie = cookie;
                self.last = 0;
                self.renewed = Instant::now();
                self.leader =
                    current.into_iter().next().map(|h| Leader { token: h.token, value: h.holder });
                Ok(())
            }
            CoordReplyBody::Error(e) => Err(e.to_error().into()),
            other => Err(RecipeError::Lease(LeaseError::Decode(format!("{other:?}")))),
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
    pub fn next(&mut self, timeout: Duration) -> Result<Option<Option<Leader>>, RecipeError> {
        let deadline = Instant::now() + timeout;
        let before = self.leader.clone();
        loop {
            if self.renewed.elapsed() > Duration::from_millis(self.watch_ms as u64 / 3) {
                self.renew()?;
            }
            let left =
                deadline.saturating_duration_since(Instant::now()).min(Duration::from_secs(10));
            let body = CoordRequestBody::Poll {
                cookie: self.cookie,
                since: self.last,
                wait: left.as_millis() as i64,
                max: 0,
            };
            match coord_call(&mut self.cluster, Some(self.landlord), body, left) {
                Ok(r) => match r.body {
                    CoordReplyBody::Events(e) => {
                        if let Some(m) = e.missed {
                            self.last = m.to;
                            self.leader = e
                                .current
                                .unwrap_or_default()
                                .into_iter()
                                .next()
                                .map(|h| Leader { token: h.token, value: h.holder });
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
                    CoordReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => {
                        // The watch ran out (this observer was away too long): watch again.
                        self.register()?;
                    }
                    CoordReplyBody::Error(e) => return Err(e.to_error().into()),
                    _ => {}
                },
                Err(RecipeError::Unavailable(_)) => std::thread::sleep(Duration::from_millis(100)),
                Err(e) => return Err(e),
            }
            if self.leader != before {
                return Ok(Some(self.leader.clone()));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    fn renew(&mut self) -> Result<(), RecipeError> {
        let req = Request {
            id: u64::MAX / 2 + 1,
            body: RequestBody::Renew { cookie: self.cookie, duration: self.watch_ms },
        };
        match lease_call(&mut self.cluster, self.landlord, &req) {
            Ok(r) => match r.body {
                ReplyBody::Renewed { .. } => {
                    self.renewed = Instant::now();
                    Ok(())
                }
                // The watch ran out: a new one starts from the holders now (`next` reports a
                // change against what was seen before).
                ReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => {
                    self.register()
                }
                ReplyBody::Error(e) => Err(e.to_error().into()),
                _ => Ok(()),
            },
            // No server now: try again on the next round.
            Err(_) => Ok(()),
        }
    }

    /// Ends the watch.
    pub fn close(mut self) {
        let req =
            Request { id: u64::MAX / 2 + 2, body: RequestBody::Cancel { cookie: self.cookie } };
        let _ = lease_call(&mut self.cluster, self.landlord, &req);
    }
}
