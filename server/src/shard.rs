//! One shard: a landlord driven by one actor task, with group commit.
//!
//! The actor owns the landlord. It takes every request queued for the shard, answers each,
//! and holds the replies in a [`Gate`] until a store write that began after them has
//! finished; that write carries every journal record written meanwhile, as one frame. While
//! a write is under way the actor goes on answering (and holding) requests; when it finishes,
//! the next write takes everything that arrived meanwhile: one sync (or one database
//! transaction) per batch, however many requests it covers. The writes themselves run in a
//! writer task of their own, so the actor never blocks on the disk or the network.
//!
//! Expiry runs on the landlord's `poll_timeout`; records written by expiry (and the clock
//! records that keep a restart's notion of time close to the crash) are written by the same
//! path. When the store says so, the actor writes a snapshot (compaction) as part of a write.
//!
//! With PostgreSQL a reply that depends on no new record still waits for a write: a *fence
//! check* that confirms this server still owns the shard, so that a deposed owner can never
//! answer from stale state (say "unknown lease" about a lease its successor granted).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest};
use leasehold::coord::{CoordStats, Handled, Ticket};
use leasehold::journal::{Gate, Journaled};
use leasehold::store::{FileOp, Store};
use leasehold::{Landlord, Reply, ReplyBody, Request};
use tokio::sync::{mpsc, oneshot};

use crate::coord::CoordMetrics;

use crate::clock::{instant_of, now_ms};
use crate::metrics::{stamp_us, ShardStats};

/// The landlords the server runs: resources are opaque bytes.
pub type LL = Landlord<Vec<u8>>;

/// What a shard answers a call with.
#[derive(Debug)]
pub enum Answer {
    /// The landlord's reply, durable.
    Reply(Reply),
    /// The landlord's answer to a coordination request, durable.
    Coord(CoordReply),
    /// A renewal service's answer to a set operation, durable ([`crate::renewal`]).
    Set(leasehold::service::wire::SetReply),
    /// The shard cannot answer here (not owned any more, or its store failed): try elsewhere.
    Unavailable(String),
}

/// An operator's job on a shard's landlord (the admin endpoints, [`crate::admin`]): it runs in
/// the actor at `now`, and its answer is released like a reply, once every record it wrote is
/// durable (and, with PostgreSQL, once the shard's ownership is confirmed).
pub type AdminJob = Box<dyn FnOnce(&mut LL, leasehold::Millis) -> serde_json::Value + Send>;

/// A message to a shard's actor.
pub enum Msg {
    /// A request to answer.
    Call(Request, oneshot::Sender<Answer>),
    /// A coordination request to answer (now, or when what it waits for happens).
    Coord(CoordRequest, oneshot::Sender<Answer>),
    /// An admin job; `None` comes back if the shard could not make its answer durable.
    Admin(AdminJob, oneshot::Sender<Option<serde_json::Value>>),
    /// Finish what is under way, write what is left, and stop; the landlord is handed back.
    Stop(oneshot::Sender<()>),
}

/// A write for the writer task.
#[derive(Debug)]
pub enum Job {
    /// File operations of the embedded store, in order (append + sync, maybe a snapshot).
    Files {
        /// The operations.
        ops: Vec<FileOp>,
        /// The last record durable once they are done.
        durable: u64,
    },
    /// A journal frame (records `first..=last`) and/or a snapshot (bytes, last record it
    /// includes), for PostgreSQL; with neither, a fence check.
    Rows {
        /// The frame and its record range.
        frame: Option<(Vec<u8>, u64, u64)>,
        /// A new snapshot and the last record it includes.
        snapshot: Option<(Vec<u8>, u64)>,
    },
}

/// Why a write failed.
#[derive(Debug, Clone)]
pub enum WriteError {
    /// The store refused it: another server owns the shard now.
    Fenced,
    /// It failed (I/O, connection); whether it took effect is unknown.
    Failed(String),
}

/// Carries out jobs, one at a time, in order.
pub trait Writer: Send + 'static {
    /// Carries out one job.
    fn write(
        &mut self,
        job: Job,
    ) -> Pin<Box<dyn Future<Output = Result<(), WriteError>> + Send + '_>>;

    /// Whether its writes only block (file I/O) and never wait on the runtime: it then runs
    /// on a thread of its own, which polls each write's future once, to completion. That
    /// spares two hand-offs per write (a task of its own, and a blocking-pool thread).
    fn blocking(&self) -> bool {
        false
    }
}

type Results<T> = mpsc::UnboundedReceiver<(T, Result<(), WriteError>)>;

/// Where an actor's jobs go: a task (an asynchronous writer), or a thread (a blocking one).
enum Jobs<T> {
    Task(mpsc::Sender<(T, Job)>),
    Thread(std::sync::mpsc::Sender<(T, Job)>),
}

/// An actor's writer, running in a task or a thread of its own: jobs go to it one at a time,
/// each with a tag (a job number, or nothing), and each one's result comes back with its tag.
pub struct WriterTask<T> {
    jobs: Jobs<T>,
    results: Results<T>,
}

impl<T: Send + 'static> WriterTask<T> {
    /// Starts `writer`'s task (or thread, if [`Writer::blocking`]).
    pub fn spawn(mut writer: impl Writer) -> Self {
        let (result_tx, results) = mpsc::unbounded_channel();
        if writer.blocking() {
            let (jobs, job_rx) = std::sync::mpsc::channel::<(T, Job)>();
            let run = move || {
                while let Ok((tag, job)) = job_rx.recv() {
                    let mut cx = Context::from_waker(Waker::noop());
                    let r = match writer.write(job).as_mut().poll(&mut cx) {
                        Poll::Ready(r) => r,
                        Poll::Pending => Err(WriteError::Failed("a blocking write waited".into())),
                    };
                    if result_tx.send((tag, r)).is_err() {
                        break;
                    }
                }
            };
            // If no thread can be made, the first job finds the writer gone: the shard fails
            // and is retried later.
            if let Err(e) = std::thread::Builder::new().name("leasehold-writer".into()).spawn(run) {
                tracing::error!(error = %e, "could not start a writer thread");
            }
            return WriterTask { jobs: Jobs::Thread(jobs), results };
        }
        let (jobs, mut job_rx) = mpsc::channel::<(T, Job)>(1);
        tokio::spawn(async move {
            while let Some((tag, job)) = job_rx.recv().await {
                let r = writer.write(job).await;
                if result_tx.send((tag, r)).is_err() {
                    break;
                }
            }
        });
        WriterTask { jobs: Jobs::Task(jobs), results }
    }

    /// Hands the writer a job.
    pub async fn send(&self, tag: T, job: Job) -> Result<(), WriteError> {
        let gone = |_| WriteError::Failed("writer gone".into());
        match &self.jobs {
            Jobs::Task(jobs) => jobs.send((tag, job)).await.map_err(|_| gone(())),
            Jobs::Thread(jobs) => jobs.send((tag, job)).map_err(|_| gone(())),
        }
    }

    /// The next job's result; `None` once the writer is gone.
    pub async fn recv(&mut self) -> Option<(T, Result<(), WriteError>)> {
        self.results.recv().await
    }
}

/// Decides, in the actor, what the next write holds.
pub enum Planner {
    /// The embedded file store's bookkeeping (the core's [`Store`]).
    Files(Store),
    /// PostgreSQL: journal bytes since the last snapshot, and that snapshot's size.
    Rows {
        /// Bytes of frames written since the last snapshot.
        log_bytes: u64,
        /// Bytes of the last snapshot.
        snapshot_bytes: u64,
        /// Compact once the log is larger than this and the snapshot.
        min_compact_bytes: u64,
    },
}

impl Planner {
    /// The next write, if anything needs writing: the job, the last record durable once it is
    /// done, and whether it writes a snapshot. `ll` is the shard's state machine (a landlord,
    /// a renewal service: anything journaled).
    pub fn plan<S: Journaled>(&mut self, ll: &mut S) -> Option<(Job, u64, bool)> {
        match self {
            Planner::Files(store) => {
                let mut ops = Vec::new();
                if let Some(c) = store.commit(ll) {
                    ops = c.ops;
                }
                let mut snap = false;
                if store.wants_compaction() {
                    ops.extend(store.compact(ll));
                    snap = true;
                }
                let durable = store.committed();
                (!ops.is_empty()).then_some((Job::Files { ops, durable }, durable, snap))
            }
            Planner::Rows { log_bytes, snapshot_bytes, min_compact_bytes } => {
                let mut bytes = Vec::new();
                let frame = ll.take_journal(&mut bytes).map(|r| (bytes, r.start, r.end - 1));
                if let Some((b, _, _)) = &frame {
                    *log_bytes += b.len() as u64;
                }
                let mut snapshot = None;
                if *log_bytes > *min_compact_bytes && *log_bytes > *snapshot_bytes {
                    let mut s = Vec::new();
                    let seq = ll.snapshot_bytes(&mut s);
                    *snapshot_bytes = s.len() as u64;
                    *log_bytes = 0;
                    snapshot = Some((s, seq));
                }
                if frame.is_none() && snapshot.is_none() {
                    return None;
                }
                let durable = ll.journal_seq();
                let snap = snapshot.is_some();
                Some((Job::Rows { frame, snapshot }, durable, snap))
            }
        }
    }

    /// Whether a reply that depends on no new record must still wait for a write (a fence
    /// check), because another server may own the shard by now.
    pub fn needs_fence(&self) -> bool {
        matches!(self, Planner::Rows { .. })
    }
}

/// A handle to a running shard.
#[derive(Clone)]
pub struct ShardHandle {
    /// The shard's number (its landlord's id).
    pub id: u64,
    tx: mpsc::Sender<Msg>,
    /// Its counters.
    pub stats: Arc<ShardStats>,
    /// Its coordination gauges (as of its last batch).
    pub coord_stats: Arc<Mutex<CoordStats>>,
}

impl ShardHandle {
    /// Asks the shard to answer `req`; the answer comes once it is durable.
    pub async fn call(&self, req: Request) -> Answer {
        let (done, rx) = oneshot::channel();
        if self.tx.send(Msg::Call(req, done)).await.is_err() {
            return Answer::Unavailable(format!("shard {} stopped", self.id));
        }
        rx.await.unwrap_or_else(|_| Answer::Unavailable(format!("shard {} stopped", self.id)))
    }

    /// Asks the shard to answer a coordination request; the answer comes once it is durable
    /// (after the request's wait, if it waits).
    pub async fn coord(&self, req: CoordRequest) -> Answer {
        let (done, rx) = oneshot::channel();
        if self.tx.send(Msg::Coord(req, done)).await.is_err() {
            return Answer::Unavailable(format!("shard {} stopped", self.id));
        }
        rx.await.unwrap_or_else(|_| Answer::Unavailable(format!("shard {} stopped", self.id)))
    }

    /// Runs an admin job in the actor; its answer once durable, `None` if the shard cannot
    /// answer (stopped, its store failed, fenced).
    pub async fn admin(&self, job: AdminJob) -> Option<serde_json::Value> {
        let (done, rx) = oneshot::channel();
        self.tx.send(Msg::Admin(job, done)).await.ok()?;
        rx.await.ok().flatten()
    }

    /// Stops the shard after writing everything it answered; returns once it has stopped.
    pub async fn stop(&self) {
        let (done, rx) = oneshot::channel();
        if self.tx.send(Msg::Stop(done)).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// Whether the actor has stopped.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Why a shard's actor ended.
#[derive(Debug, Clone)]
pub enum Ended {
    /// Asked to stop; everything it answered is durable.
    Stopped,
    /// The store refused a write: another server owns the shard.
    Fenced,
    /// A write failed.
    Failed(String),
}

enum Held {
    Reply { done: oneshot::Sender<Answer>, reply: Out },
    Admin { done: oneshot::Sender<Option<serde_json::Value>>, out: serde_json::Value },
}

/// A reply waiting for the store.
enum Out {
    Lease(Reply),
    Coord(CoordReply),
}

struct Actor {
    id: u64,
    ll: LL,
    planner: Planner,
    gate: Gate<Held>,
    writer: WriterTask<u64>,
    next_job: u64,
    in_flight: Option<(u64, Instant, u64, bool)>,
    stats: Arc<ShardStats>,
    /// Requesters of coordination requests held waiting, by ticket.
    waiting: HashMap<Ticket, oneshot::Sender<Answer>>,
    coord_stats: Arc<Mutex<CoordStats>>,
    coord_metrics: Arc<CoordMetrics>,
}

/// Starts a shard's actor and its writer, counting into `stats` (the shard's counters, which
/// outlive one actor). `on_end` is told why the actor ended.
pub fn spawn(
    id: u64,
    ll: LL,
    planner: Planner,
    writer: impl Writer,
    stats: Arc<ShardStats>,
    coord_metrics: Arc<CoordMetrics>,
    on_end: impl FnOnce(u64, Ended) + Send + 'static,
) -> ShardHandle {
    let coord_stats = Arc::new(Mutex::new(ll.coord_stats()));
    stats.restart(ll.len() as u64, ll.journal_seq());
    let (tx, rx) = mpsc::channel(8192);
    let actor = Actor {
        id,
        ll,
        planner,
        gate: Gate::new(),
        writer: WriterTask::spawn(writer),
        next_job: 1,
        in_flight: None,
        stats: stats.clone(),
        waiting: HashMap::new(),
        coord_stats: coord_stats.clone(),
        coord_metrics,
    };
    tokio::spawn(async move {
        let ended = actor.run(rx).await;
        on_end(id, ended);
    });
    ShardHandle { id, tx, stats, coord_stats }
}

/// How often the actor looks for waiting requesters that went away.
const ABANDON_SCAN: Duration = Duration::from_millis(200);

/// Most requests answered before the actor looks at its writer and timers again.
const DRAIN: usize = 4096;

impl Actor {
    async fn run(mut self, mut rx: mpsc::Receiver<Msg>) -> Ended {
        let mut stopping: Option<oneshot::Sender<()>> = None;
        loop {
            if self.in_flight.is_none() {
                if let Err(e) = self.dispatch().await {
                    return self.fail(e, &mut rx);
                }
                if let Some(ack) = stopping.take() {
                    if self.in_flight.is_none() && self.gate.is_empty() {
                        let _ = ack.send(());
                        return Ended::Stopped;
                    }
                    stopping = Some(ack);
                }
            }
            let mut deadline = self.ll.poll_timeout().map(instant_of);
            if !self.waiting.is_empty() {
                let scan = Instant::now() + ABANDON_SCAN;
                deadline = Some(deadline.map_or(scan, |d| d.min(scan)));
            }
            tokio::select! {
                biased;
                r = self.writer.recv(), if self.in_flight.is_some() => {
                    let Some((n, r)) = r else { return self.fail(WriteError::Failed("writer gone".into()), &mut rx) };
                    if let Err(e) = r {
                        return self.fail(e, &mut rx);
                    }
                    self.finished(n);
                }
                msg = rx.recv(), if stopping.is_none() => {
                    let Some(msg) = msg else { return Ended::Stopped };
                    let mut next = Some(msg);
                    let mut n = 0;
                    while let Some(m) = next.take() {
                        match m {
                            Msg::Call(req, done) => self.answer(req, done),
                            Msg::Coord(req, done) => self.answer_coord(req, done),
                            Msg::Admin(job, done) => self.admin(job, done),
                            Msg::Stop(ack) => { stopping = Some(ack); break; }
                        }
                        n += 1;
                        if n < DRAIN {
                            next = rx.try_recv().ok();
                        }
                    }
                    self.deferred();
                    self.stats.live.store(self.ll.len() as u64, Relaxed);
                    self.stats.journal_seq.store(self.ll.journal_seq(), Relaxed);
                }
                _ = sleep_until(deadline) => {
                    self.abandoned();
                    self.ll.handle_timeout(now_ms());
                    let mut n = 0;
                    while self.ll.poll_expired().is_some() {
                        n += 1;
                    }
                    if n > 0 {
                        self.stats.expiries.fetch_add(n, Relaxed);
                        tracing::debug!(shard = self.id, expired = n, "leases expired");
                    }
                    self.deferred();
                    self.stats.live.store(self.ll.len() as u64, Relaxed);
                    self.stats.journal_seq.store(self.ll.journal_seq(), Relaxed);
                }
            }
        }
    }

    fn answer(&mut self, req: Request, done: oneshot::Sender<Answer>) {
        // With relaxed renewals on, the landlord says which renewals may be answered before
        // their records are durable (its rule: `Landlord::set_relaxed_renewals`).
        let (reply, early) = self.ll.handle_request_relaxed(&req, now_ms());
        if early {
            count(&self.stats, &reply);
            self.stats.early.fetch_add(1, Relaxed);
            let _ = done.send(Answer::Reply(reply));
        } else {
            self.hold(done, Out::Lease(reply));
        }
    }

    /// Holds a reply until the next write has finished.
    fn hold(&mut self, done: oneshot::Sender<Answer>, reply: Out) {
        if self.gate.is_empty() {
            self.stats.waiting_since_us.store(stamp_us(), Relaxed);
        }
        self.gate.push(self.next_job, Held::Reply { done, reply });
    }

    fn admin(&mut self, job: AdminJob, done: oneshot::Sender<Option<serde_json::Value>>) {
        let out = job(&mut self.ll, now_ms());
        if self.gate.is_empty() {
            self.stats.waiting_since_us.store(stamp_us(), Relaxed);
        }
        self.gate.push(self.next_job, Held::Admin { done, out });
    }

    fn answer_coord(&mut self, req: CoordRequest, done: oneshot::Sender<Answer>) {
        match self.ll.handle_coord(&req, now_ms()) {
            Handled::Now(reply) => self.hold(done, Out::Coord(reply)),
            Handled::Later(t) => {
                if matches!(req.body, leasehold::coord::CoordRequestBody::Acquire { .. }) {
                    self.coord_metrics.waited.fetch_add(1, Relaxed);
                }
                self.waiting.insert(t, done);
            }
        }
    }

    /// Answers given later by the landlord (a resource let go, a wait that ran out, an event
    /// for a long poll) join the replies waiting for the next write.
    fn deferred(&mut self) {
        while let Some((t, reply)) = self.ll.poll_deferred() {
            match self.waiting.remove(&t) {
                Some(done) => self.hold(done, Out::Coord(reply)),
                None => self.undeliverable(&reply),
            }
        }
        if let Ok(mut s) = self.coord_stats.lock() {
            *s = self.ll.coord_stats();
        }
    }

    /// Requesters that went away stop waiting (a lease must not be granted to no one).
    fn abandoned(&mut self) {
        let gone: Vec<Ticket> =
            self.waiting.iter().filter(|(_, d)| d.is_closed()).map(|(t, _)| *t).collect();
        for t in gone {
            self.waiting.remove(&t);
            self.ll.abandon(t);
            self.coord_metrics.abandoned.fetch_add(1, Relaxed);
        }
    }

    /// A lease acquired for a requester that is gone is cancelled at once, so that the
    /// resource does not sit idle until the lease runs out.
    fn undeliverable(&mut self, reply: &CoordReply) {
        if let CoordReplyBody::Acquired { cookie, .. } = reply.body {
            let _ = self.ll.cancel(cookie, now_ms());
            self.coord_metrics.undelivered.fetch_add(1, Relaxed);
            tracing::debug!(
                shard = self.id,
                "a lease acquired for a requester that went away was cancelled"
            );
        }
    }

    /// Starts the next write, or releases what waits if nothing needs writing.
    async fn dispatch(&mut self) -> Result<(), WriteError> {
        let n = self.next_job;
        let job = match self.planner.plan(&mut self.ll) {
            Some((job, durable, snap)) => Some((job, durable, snap)),
            None if self.gate.is_empty() => return Ok(()),
            None if self.planner.needs_fence() => {
                Some((Job::Rows { frame: None, snapshot: None }, self.ll.journal_seq(), false))
            }
            None => None,
        };
        self.next_job += 1;
        match job {
            Some((job, durable, snap)) => {
                self.stats.journal_seq.store(self.ll.journal_seq(), Relaxed);
                self.writer.send(n, job).await?;
                self.in_flight = Some((n, Instant::now(), durable, snap));
            }
            None => self.release(n),
        }
        Ok(())
    }

    fn finished(&mut self, n: u64) {
        let Some((m, started, durable, snap)) = self.in_flight.take() else { return };
        debug_assert_eq!(m, n);
        self.stats.wrote(started.elapsed().as_micros() as u64);
        self.stats.durable_seq.store(durable, Relaxed);
        self.ll.set_durable(durable);
        if snap {
            self.stats.snapshots.fetch_add(1, Relaxed);
        }
        self.release(n);
        if !self.gate.is_empty() {
            // Everything still waiting arrived after this write began.
            let since = stamp_us().saturating_sub(started.elapsed().as_micros() as u64);
            self.stats.waiting_since_us.store(since.max(1), Relaxed);
        }
    }

    fn release(&mut self, n: u64) {
        let mut lost = Vec::new();
        for held in self.gate.release(n) {
            match held {
                Held::Reply { done, reply: Out::Lease(reply) } => {
                    count(&self.stats, &reply);
                    let _ = done.send(Answer::Reply(reply));
                }
                Held::Reply { done, reply: Out::Coord(reply) } => {
                    self.stats.requests.fetch_add(1, Relaxed);
                    self.coord_metrics.count(&reply);
                    if let Err(Answer::Coord(reply)) = done.send(Answer::Coord(reply)) {
                        lost.push(reply);
                    }
                }
                Held::Admin { done, out } => {
                    let _ = done.send(Some(out));
                }
            }
        }
        for reply in lost {
            self.undeliverable(&reply);
        }
        if self.gate.is_empty() {
            self.stats.waiting_since_us.store(0, Relaxed);
        }
    }

    /// A write failed: nothing waiting is acknowledged, and the actor ends.
    fn fail(mut self, e: WriteError, rx: &mut mpsc::Receiver<Msg>) -> Ended {
        let why = match &e {
            WriteError::Fenced => format!("shard {} is owned by another server now", self.id),
            WriteError::Failed(m) => format!("shard {}: store write failed: {m}", self.id),
        };
        for held in self.gate.release(u64::MAX) {
            match held {
                Held::Reply { done, .. } => {
                    let _ = done.send(Answer::Unavailable(why.clone()));
                }
                Held::Admin { done, .. } => {
                    let _ = done.send(None);
                }
            }
        }
        for (_, done) in self.waiting.drain() {
            let _ = done.send(Answer::Unavailable(why.clone()));
        }
        rx.close();
        while let Ok(m) = rx.try_recv() {
            match m {
                Msg::Call(_, done) | Msg::Coord(_, done) => {
                    let _ = done.send(Answer::Unavailable(why.clone()));
                }
                Msg::Admin(_, done) => {
                    let _ = done.send(None);
                }
                Msg::Stop(ack) => {
                    let _ = ack.send(());
                }
            }
        }
        match e {
            WriteError::Fenced => Ended::Fenced,
            WriteError::Failed(m) => Ended::Failed(m),
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

/// Counts an acknowledged reply.
fn count(stats: &ShardStats, reply: &Reply) {
    stats.requests.fetch_add(1, Relaxed);
    let ok = |n: usize| n as u64;
    match &reply.body {
        ReplyBody::Granted { .. } => {
            stats.grants.fetch_add(1, Relaxed);
        }
        ReplyBody::Renewed { .. } => {
            stats.renewals.fetch_add(1, Relaxed);
        }
        ReplyBody::Cancelled => {
            stats.cancels.fetch_add(1, Relaxed);
        }
        ReplyBody::RenewedAll { results } => {
            let n = results.iter().filter(|o| matches!(o, leasehold::wire::Outcome::Ok(_))).count();
            stats.renewals.fetch_add(ok(n), Relaxed);
        }
        ReplyBody::CancelledAll { results } => {
            let n = results.iter().filter(|o| matches!(o, leasehold::wire::Outcome::Ok(_))).count();
            stats.cancels.fetch_add(ok(n), Relaxed);
        }
        ReplyBody::Error(_) => {}
    }
}
