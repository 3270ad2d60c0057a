//! The renewal driver: the core's [`RenewalManager`] run by one tokio task on tokio's timers,
//! sending through a [`Cluster`].
//!
//! The task sleeps until the manager's `poll_timeout`, calls `handle_timeout`, sends each
//! `poll_transmit` as its own future (so one slow server never holds up the renewals of
//! another landlord), feeds replies back with `handle_reply` and transport failures with
//! `handle_failure` (as [`leasehold::LeaseError::Indefinite`]: the manager retries them until the
//! lease would expire), and hands every [`RenewalEvent`] to the channel returned by
//! [`RenewalDriver::start`]. Every rule (when to renew, batching, retries, what a reply means)
//! is the manager's; the driver only carries.
//!
//! Times are the driver's clock: milliseconds since the driver started ([`RenewalDriver::now`]),
//! on tokio's monotonic clock. Leases from [`RenewalDriver::grant`] are on that clock.

use std::time::Duration as StdDuration;

use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use leasehold::holder::{grant_request, lease_from_reply_with_drift};
use leasehold::{
    Duration, Lease, LeaseError, Millis, RenewalEvent, RenewalManager, RenewalManagerConfig,
    RenewalStats, Transmit,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::cluster::Cluster;
use crate::error::ClientError;

/// Grant request ids start here, far above the manager's own ids.
const GRANT_IDS: u64 = 1 << 52;

enum Cmd {
    RenewFor(Lease, Duration, Duration, oneshot::Sender<Result<(), LeaseError>>),
    RenewUntil(Lease, Millis, Duration, oneshot::Sender<Result<(), LeaseError>>),
    Cancel(Lease, oneshot::Sender<Result<(), LeaseError>>),
    Remove(Lease, oneshot::Sender<Result<Lease, LeaseError>>),
    Get(Lease, oneshot::Sender<Option<(Lease, Millis)>>),
    Stats(oneshot::Sender<(usize, RenewalStats)>),
    Close(oneshot::Sender<()>),
}

/// A handle to a running renewal driver. Cheap to clone; the driver stops when
/// [`RenewalDriver::close`] is called or when every handle is dropped.
pub struct RenewalDriver<C = HttpConnector> {
    cluster: Cluster<C>,
    cmds: mpsc::UnboundedSender<Cmd>,
    origin: Instant,
    drift_ppm: u32,
    grant_id: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<C> Clone for RenewalDriver<C> {
    fn clone(&self) -> Self {
        RenewalDriver {
            cluster: self.cluster.clone(),
            cmds: self.cmds.clone(),
            origin: self.origin,
            drift_ppm: self.drift_ppm,
            grant_id: self.grant_id.clone(),
        }
    }
}

impl<C: Connect + Clone + Send + Sync + 'static> RenewalDriver<C> {
    /// Starts a driver for a manager made with `config` on the current tokio runtime; the
    /// receiver gets every [`RenewalEvent`] (renewed, desired expiration reached, renewal
    /// failed). The channel is unbounded: read it, or drop it to ignore events.
    pub fn start(
        cluster: Cluster<C>,
        config: RenewalManagerConfig,
    ) -> Result<(RenewalDriver<C>, mpsc::UnboundedReceiver<RenewalEvent>), ClientError> {
        let drift_ppm = config.max_clock_drift_ppm;
        let manager = RenewalManager::try_new(config)?;
        let (cmds, rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        let origin = Instant::now();
        let task =
            Task { manager, cluster: cluster.clone(), events, origin, sends: JoinSet::new() };
        tokio::spawn(task.run(rx));
        let grant_id = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(GRANT_IDS));
        Ok((RenewalDriver { cluster, cmds, origin, drift_ppm, grant_id }, events_rx))
    }

    /// The driver's clock: milliseconds since it started.
    pub fn now(&self) -> Millis {
        now_since(self.origin)
    }

    /// The driver's clock at `at` (an instant already past: when a request went out, as
    /// [`crate::Answered::sent`] says).
    pub fn at(&self, at: Instant) -> Millis {
        now_since(self.origin).saturating_sub(at.elapsed().as_millis() as Millis)
    }

    /// The clock drift its leases allow for, in ppm (the manager's `max_clock_drift_ppm`).
    pub fn max_clock_drift_ppm(&self) -> u32 {
        self.drift_ppm
    }

    /// The cluster it sends through.
    pub fn cluster(&self) -> &Cluster<C> {
        &self.cluster
    }

    /// Asks the cluster for a lease on `resource` for `duration` ms (or `ANY`, `FOREVER`): the
    /// lease, counted from the time the answered request was sent (driver's clock). Not yet renewed:
    /// hand it to [`RenewalDriver::renew_for`] or [`RenewalDriver::renew_until`].
    ///
    /// A landlord's refusal is [`ClientError::Lease`]; no server answering is
    /// [`ClientError::Unavailable`] (a grant is not retried: retrying may leave an extra lease,
    /// which expires on its own).
    pub async fn grant(
        &self,
        resource: impl Into<Vec<u8>>,
        duration: Duration,
    ) -> Result<Lease, ClientError> {
        let id = self.grant_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let request = grant_request(id, resource.into(), duration);
        // Counted from when the answered attempt went out (after a failover, not the first).
        let (reply, answered) = self.cluster.send_traced(None, &request).await?;
        Ok(lease_from_reply_with_drift(&reply, self.at(answered.sent), self.drift_ppm)?)
    }

    async fn ask<T>(&self, cmd: impl FnOnce(oneshot::Sender<T>) -> Cmd) -> Result<T, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.cmds.send(cmd(tx)).map_err(|_| ClientError::Closed)?;
        rx.await.map_err(|_| ClientError::Closed)
    }

    /// Keeps `lease` renewed for `duration` ms from now (`FOREVER`: until cancelled), asking
    /// for `renew_duration` each time.
    pub async fn renew_for(
        &self,
        lease: Lease,
        duration: Duration,
        renew_duration: Duration,
    ) -> Result<(), ClientError> {
        Ok(self.ask(|tx| Cmd::RenewFor(lease, duration, renew_duration, tx)).await??)
    }

    /// Keeps `lease` renewed until `desired_expiration` (driver's clock).
    pub async fn renew_until(
        &self,
        lease: Lease,
        desired_expiration: Millis,
        renew_duration: Duration,
    ) -> Result<(), ClientError> {
        Ok(self.ask(|tx| Cmd::RenewUntil(lease, desired_expiration, renew_duration, tx)).await??)
    }

    /// Stops renewing `lease` and cancels it at its landlord (best effort, as the manager's
    /// `cancel`).
    pub async fn cancel(&self, lease: Lease) -> Result<(), ClientError> {
        Ok(self.ask(|tx| Cmd::Cancel(lease, tx)).await??)
    }

    /// Stops renewing `lease` without cancelling it; the manager's copy (current expiration).
    pub async fn remove(&self, lease: Lease) -> Result<Lease, ClientError> {
        Ok(self.ask(|tx| Cmd::Remove(lease, tx)).await??)
    }

    /// The manager's copy of `lease` (its actual expiration) and its desired expiration, if
    /// it is still managed.
    pub async fn lease(&self, lease: Lease) -> Result<Option<(Lease, Millis)>, ClientError> {
        self.ask(|tx| Cmd::Get(lease, tx)).await
    }

    /// How many leases are managed, and the manager's counters.
    pub async fn stats(&self) -> Result<(usize, RenewalStats), ClientError> {
        self.ask(Cmd::Stats).await
    }

    /// Stops the driver: nothing more is sent (requests in flight are dropped), the leases are
    /// no longer renewed and expire at their landlords. Returns once the task has stopped.
    pub async fn close(&self) {
        let _ = self.ask(Cmd::Close).await;
    }
}

fn now_since(origin: Instant) -> Millis {
    origin.elapsed().as_millis() as Millis
}

struct Task<C> {
    manager: RenewalManager,
    cluster: Cluster<C>,
    events: mpsc::UnboundedSender<RenewalEvent>,
    origin: Instant,
    sends: JoinSet<(u64, Result<leasehold::Reply, ClientError>)>,
}

impl<C: Connect + Clone + Send + Sync + 'static> Task<C> {
    fn now(&self) -> Millis {
        now_since(self.origin)
    }

    /// Sends what is due and hands out the events.
    fn pump(&mut self) {
        let now = self.now();
        self.manager.handle_timeout(now);
        while let Some(Transmit { landlord, request }) = self.manager.poll_transmit(now) {
            let cluster = self.cluster.clone();
            self.sends.spawn(async move {
                let id = request.id;
                (id, cluster.send(Some(landlord), &request).await)
            });
        }
        while let Some(e) = self.manager.poll_event() {
            let _ = self.events.send(e);
        }
    }

    async fn run(mut self, mut cmds: mpsc::UnboundedReceiver<Cmd>) {
        loop {
            self.pump();
            let deadline = self.manager.poll_timeout().map(|t| {
                let wait = (t - self.now()).max(0) as u64;
                Instant::now() + StdDuration::from_millis(wait)
            });
            tokio::select! {
                cmd = cmds.recv() => {
                    let Some(cmd) = cmd else { return };
                    let now = self.now();
                    let m = &mut self.manager;
                    match cmd {
                        Cmd::RenewFor(l, d, r, tx) => { let _ = tx.send(m.renew_for(l, d, r, now)); }
                        Cmd::RenewUntil(l, t, r, tx) => { let _ = tx.send(m.renew_until(l, t, r, now)); }
                        Cmd::Cancel(l, tx) => { let _ = tx.send(m.cancel(&l, now)); }
                        Cmd::Remove(l, tx) => { let _ = tx.send(m.remove(&l)); }
                        Cmd::Get(l, tx) => {
                            let _ = tx.send(m.lease(&l).and_then(|x| m.expiration(&x).ok().map(|d| (x, d))));
                        }
                        Cmd::Stats(tx) => { let _ = tx.send((m.len(), m.stats())); }
                        Cmd::Close(tx) => {
                            self.sends.abort_all();
                            let _ = tx.send(());
                            return;
                        }
                    }
                }
                Some(done) = self.sends.join_next(), if !self.sends.is_empty() => {
                    let Ok((id, result)) = done else { continue };
                    let now = self.now();
                    match result {
                        Ok(reply) => self.manager.handle_reply(&reply, now),
                        Err(e) => self.manager.handle_failure(id, e.to_lease_error(), now),
                    }
                }
                _ = sleep_until(deadline) => {}
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}
