//! Renewal-service shards: the core's [`RenewalService`] (seed 003, LR) driven by one actor,
//! with group commit, in the same store as the landlord shards (`docs/renewal-service.md`).
//!
//! A server with `--renewal-shards R` beside `--shards S` runs landlord shards `1..=S` and
//! renewal-service shards `S+1..=S+R`. A renewal shard's id is the landlord id of the leases it
//! grants on its sets, so a set's lease is renewed and cancelled like any lease
//! (`POST /lease?landlord=<id>`), and set operations name the same id (`POST
//! /renewal?landlord=<id>`, [`crate::http`]).
//!
//! The actor owns the service. Everything the service hands out waits in a [`Gate`] until
//! the journal records behind it are durable, then leaves:
//!
//! - answers to clients (set operations, set-lease renewals and cancels);
//! - renewal requests to client leases' landlords, each sent by a task of its own through a
//!   [`Cluster`] over the landlord's URLs (failover between them, the line between definite
//!   answers and indefinite failures is the client crate's); what comes back is fed to the
//!   service ([`RenewalService::handle_routed_reply`], [`RenewalService::handle_failure`]);
//! - events, POSTed to their registration's listener URL by one delivery task per registration
//!   (in sequence order), retried with a growing back-off ([`EVENT_RETRY_FOR`] at most); a
//!   listener that answers 404 or 410 ends its registration
//!   ([`RenewalService::unknown_event`]). At most `--max-event-deliveries` POSTs of a shard are
//!   under way at once (a semaphore: events wait, none is dropped). A delivered event (or one
//!   given up on) is reported back to the actor, which records it in the service
//!   ([`RenewalService::delivered`], journaled and group-committed like every change): an event
//!   handed out and not delivered when the owner dies is delivered again by the next owner
//!   (at least once; listeners drop repeats by event id and sequence number).
//!
//! Writes go through the same [`Planner`] and [`Writer`] as the landlord shards': one frame
//! per batch, a snapshot when the log has grown, the file store's durable tip.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use leasehold::event::EventId;
use leasehold::holder::Transmit;
use leasehold::journal::Gate;
use leasehold::service::wire::{SetReplyBody, SetRequest, SetRequestBody};
use leasehold::service::{RenewalService, SetEvent};
use leasehold::wire::WireError;
use leasehold::{Encoding, LandlordId, LeaseError, Reply, Request};
use leasehold_client::Cluster;
use tokio::sync::{mpsc, oneshot};

use crate::clock::{instant_of, now_ms};
use crate::metrics::{stamp_us, ShardStats};
use crate::outbound::{Guarded, Outbound};
use crate::shard::{Answer, Ended, Job, Planner, WriteError, Writer, WriterTask};

/// How long an event is retried before it is dropped (and logged).
pub const EVENT_RETRY_FOR: Duration = Duration::from_secs(600);
/// Longest wait between two attempts to deliver an event.
const EVENT_RETRY_MAX: Duration = Duration::from_secs(30);
/// Longest one delivery attempt may take.
const EVENT_ATTEMPT: Duration = Duration::from_secs(5);
/// Longest one attempt to reach a client lease's landlord may take (per URL).
const RENEW_ATTEMPT: Duration = Duration::from_secs(1);

/// A message to a renewal shard's actor.
pub enum Msg {
    /// A set operation to answer.
    Set(SetRequest, oneshot::Sender<Answer>),
    /// A renewal or cancel of a set's lease.
    Lease(Request, oneshot::Sender<Answer>),
    /// What came of a renewal request sent to the client-lease landlord aliased `to`.
    Replied {
        /// The alias the request was for.
        to: LandlordId,
        /// The request's id.
        id: u64,
        /// The landlord's reply, or why there was none.
        result: Result<Reply, LeaseError>,
    },
    /// A listener answered "no such registration".
    UnknownEvent(EventId),
    /// A listener took an event (or its delivery was given up): the service need not hand it
    /// out again after a restart.
    Delivered {
        /// The event's registration.
        event_id: EventId,
        /// The event's sequence number.
        sequence: u64,
    },
    /// Finish what is under way, write what is left, and stop.
    Stop(oneshot::Sender<()>),
}

/// A handle to a running renewal shard.
#[derive(Clone)]
pub struct RenewalHandle {
    /// The shard's number (the landlord id of its set leases).
    pub id: u64,
    tx: mpsc::Sender<Msg>,
    /// Its counters.
    pub stats: Arc<ShardStats>,
}

impl RenewalHandle {
    async fn ask(&self, make: impl FnOnce(oneshot::Sender<Answer>) -> Msg) -> Answer {
        let (done, rx) = oneshot::channel();
        if self.tx.send(make(done)).await.is_err() {
            return Answer::Unavailable(format!("shard {} stopped", self.id));
        }
        rx.await.unwrap_or_else(|_| Answer::Unavailable(format!("shard {} stopped", self.id)))
    }

    /// Answers a set operation (an [`Answer::Set`]), once durable.
    pub async fn set(&self, req: SetRequest) -> Answer {
        self.ask(|d| Msg::Set(req, d)).await
    }

    /// Answers a renewal or cancel of a set's lease (an [`Answer::Reply`]), once durable.
    pub async fn lease(&self, req: Request) -> Answer {
        self.ask(|d| Msg::Lease(req, d)).await
    }

    /// Stops the shard after writing everything it answered.
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

/// What waits for the store.
enum Held {
    Answer(oneshot::Sender<Answer>, Answer),
    Send(Transmit),
    Event(SetEvent),
}

/// Event POSTs: `http://` and `https://` listeners, within `--event-allow`.
type Events = HttpClient<Guarded, Full<Bytes>>;

struct Actor {
    id: u64,
    svc: RenewalService,
    planner: Planner,
    gate: Gate<Held>,
    writer: WriterTask<()>,
    /// The write under way: when it began, the last record it makes durable, whether it
    /// writes a snapshot.
    in_flight: Option<(Instant, u64, bool)>,
    stats: Arc<ShardStats>,
    me: mpsc::WeakSender<Msg>,
    /// A cluster client per client-lease landlord (alias), over its URLs.
    landlords: HashMap<LandlordId, Cluster<Guarded>>,
    /// A delivery queue per event registration: sequence number, URL, body.
    deliveries: HashMap<EventId, mpsc::UnboundedSender<(u64, String, Bytes)>>,
    http: Events,
    /// Event POSTs under way at once, at most `--max-event-deliveries`.
    posts: Arc<tokio::sync::Semaphore>,
    /// The service's count of events dropped from a full outbox, as last logged.
    outbox_dropped: u64,
    /// TLS, token and allow-lists of renewals and events.
    outbound: Outbound,
    /// The connector of landlords' clusters (within `--renewal-allow`).
    to_landlords: Guarded,
}

/// Starts a renewal shard's actor and its writer. `on_end` is told why the actor ended. From
/// `config`: how renewals and events leave (`outbound`) and how many event POSTs may be under
/// way at once (`--max-event-deliveries`).
pub fn spawn(
    id: u64,
    svc: RenewalService,
    planner: Planner,
    writer: impl Writer,
    stats: Arc<ShardStats>,
    config: &crate::Config,
    on_end: impl FnOnce(u64, Ended) + Send + 'static,
) -> RenewalHandle {
    let (outbound, max_deliveries) = (&config.outbound, config.max_event_deliveries);
    stats.restart(svc.manager().len() as u64, svc.journal_seq());
    let (tx, rx) = mpsc::channel(8192);
    let connector = outbound.connector(&outbound.event_allow, EVENT_ATTEMPT);
    let actor = Actor {
        id,
        svc,
        planner,
        gate: Gate::new(),
        writer: WriterTask::spawn(writer),
        in_flight: None,
        stats: stats.clone(),
        me: tx.downgrade(),
        landlords: HashMap::new(),
        deliveries: HashMap::new(),
        http: HttpClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector),
        posts: Arc::new(tokio::sync::Semaphore::new(max_deliveries.max(1))),
        outbox_dropped: 0,
        outbound: outbound.clone(),
        to_landlords: outbound.connector(&outbound.renewal_allow, RENEW_ATTEMPT),
    };
    tokio::spawn(async move {
        let ended = actor.run(rx).await;
        on_end(id, ended);
    });
    RenewalHandle { id, tx, stats }
}

/// Most messages handled before the actor looks at its writer and timers again.
const DRAIN: usize = 4096;

impl Actor {
    async fn run(mut self, mut rx: mpsc::Receiver<Msg>) -> Ended {
        let mut stopping: Option<oneshot::Sender<()>> = None;
        // Whatever the restored service has to send or deliver (requests whose time came
        // while it was down, events not yet handed out).
        self.svc.handle_timeout(now_ms());
        self.pump();
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
            let deadline = self.svc.poll_timeout().map(instant_of);
            tokio::select! {
                biased;
                r = self.writer.recv(), if self.in_flight.is_some() => {
                    match r {
                        Some(((), Ok(()))) => self.finished(),
                        Some(((), Err(e))) => return self.fail(e, &mut rx),
                        None => return self.fail(WriteError::Failed("writer gone".into()), &mut rx),
                    }
                }
                msg = rx.recv(), if stopping.is_none() => {
                    let Some(msg) = msg else { return Ended::Stopped };
                    let mut next = Some(msg);
                    let mut n = 0;
                    while let Some(m) = next.take() {
                        match m {
                            Msg::Stop(ack) => { stopping = Some(ack); break; }
                            m => self.handle(m),
                        }
                        n += 1;
                        if n < DRAIN {
                            next = rx.try_recv().ok();
                        }
                    }
                    self.pump();
                }
                _ = sleep_until(deadline) => {
                    self.svc.handle_timeout(now_ms());
                    self.pump();
                }
            }
        }
    }

    fn handle(&mut self, m: Msg) {
        let now = now_ms();
        match m {
            Msg::Set(req, done) => {
                let reply = self.svc.handle_set_request(&req, now);
                self.hold(done, Answer::Set(reply));
            }
            Msg::Lease(req, done) => {
                let reply = self.svc.handle_request(&req, now);
                self.hold(done, Answer::Reply(reply));
            }
            Msg::Replied { to, id, result } => match result {
                Ok(reply) => self.svc.handle_routed_reply(to, reply, now),
                Err(e) => self.svc.handle_failure(id, e, now),
            },
            Msg::UnknownEvent(event_id) => {
                if self.svc.unknown_event(event_id) {
                    tracing::info!(
                        shard = self.id,
                        event_id,
                        "a listener knows no such registration: it ends"
                    );
                }
                self.deliveries.remove(&event_id);
            }
            Msg::Delivered { event_id, sequence } => {
                self.svc.delivered(event_id, sequence, now);
            }
            Msg::Stop(_) => unreachable!("handled by the loop"),
        }
    }

    /// Holds an answer until the records behind it are durable.
    fn hold(&mut self, done: oneshot::Sender<Answer>, answer: Answer) {
        if self.gate.is_empty() {
            self.stats.waiting_since_us.store(stamp_us(), Relaxed);
        }
        self.gate.push(self.svc.journal_seq(), Held::Answer(done, answer));
    }

    /// Takes what the service has to send and to deliver; it leaves once durable.
    fn pump(&mut self) {
        let now = now_ms();
        // Asked first: a poll with nothing to send would record the time, and make a write.
        while self.svc.wants_transmit() {
            let Some(tx) = self.svc.poll_transmit(now) else { break };
            self.gate.push(self.svc.journal_seq(), Held::Send(tx));
        }
        while let Some(e) = self.svc.poll_event() {
            self.gate.push(self.svc.journal_seq(), Held::Event(e));
        }
        let dropped = self.svc.unacked_dropped();
        if dropped > self.outbox_dropped {
            tracing::warn!(
                shard = self.id,
                dropped = dropped - self.outbox_dropped,
                total = dropped,
                max = leasehold::service::MAX_UNACKED_EVENTS,
                "events undelivered beyond the outbox bound of a registration: the oldest would \
                 not be delivered again after a crash"
            );
            self.outbox_dropped = dropped;
        }
        // For a renewal shard, `live` counts the client leases it renews and `renewals` the
        // renewals its landlords granted (the renewal manager's count, kept in its state).
        self.stats.live.store(self.svc.manager().len() as u64, Relaxed);
        self.stats.renewals.store(self.svc.manager().stats().leases_renewed, Relaxed);
        self.stats.service.observe(self.svc.sets().len(), &self.svc.manager().stats());
        self.stats.journal_seq.store(self.svc.journal_seq(), Relaxed);
    }

    /// Starts the next write, or releases what waits if nothing needs writing.
    async fn dispatch(&mut self) -> Result<(), WriteError> {
        loop {
            match self.planner.plan(&mut self.svc) {
                Some((job, durable, snap)) => {
                    self.writer.send((), job).await?;
                    self.in_flight = Some((Instant::now(), durable, snap));
                    return Ok(());
                }
                // Nothing new to write, but another server may own the shard by now
                // (PostgreSQL): what waits leaves after a fence check, as a landlord's does.
                None if !self.gate.is_empty() && self.planner.needs_fence() => {
                    let job = Job::Rows { frame: None, snapshot: None };
                    self.writer.send((), job).await?;
                    self.in_flight = Some((Instant::now(), self.svc.journal_seq(), false));
                    return Ok(());
                }
                // Nothing new to write: everything waiting is durable already. Releasing it
                // may make new records (a request that could not leave is reported to the
                // service at once): look again.
                None if !self.gate.is_empty() => self.release(self.svc.journal_seq()),
                None => return Ok(()),
            }
        }
    }

    fn finished(&mut self) {
        let Some((started, durable, snap)) = self.in_flight.take() else { return };
        self.stats.wrote(started.elapsed().as_micros() as u64);
        self.stats.durable_seq.store(durable, Relaxed);
        if snap {
            self.stats.snapshots.fetch_add(1, Relaxed);
        }
        self.release(durable);
    }

    fn release(&mut self, durable: u64) {
        let held: Vec<Held> = self.gate.release(durable).collect();
        for h in held {
            match h {
                Held::Answer(done, answer) => {
                    self.stats.requests.fetch_add(1, Relaxed);
                    let _ = done.send(answer);
                }
                Held::Send(tx) => self.send(tx),
                Held::Event(e) => self.deliver(e),
            }
        }
        if self.gate.is_empty() {
            self.stats.waiting_since_us.store(0, Relaxed);
        }
        // A renewal that could not even leave was reported to the service: its answer (a
        // retry, an event) is taken now.
        self.pump();
    }

    /// Sends a renewal request to its landlord, in a task of its own.
    fn send(&mut self, tx: Transmit) {
        let now = now_ms();
        let alias = tx.landlord;
        let Some(route) = self.svc.route(alias) else {
            let e = LeaseError::InvalidArgument(format!(
                "renewal service {}: no URLs for landlord {alias}",
                self.id
            ));
            self.svc.handle_failure(tx.request.id, e, now);
            return;
        };
        let cluster = match self.landlords.get(&alias) {
            Some(c) => c.clone(),
            None => {
                // URLs stored before --renewal-allow changed are not reached: a definite
                // failure (the set operation that named them would be refused now).
                let refused =
                    route.urls.iter().find_map(|u| self.outbound.renewal_allow.check(u).err());
                let made = match refused {
                    Some(why) => Err(leasehold_client::ClientError::Config(why)),
                    None => self.outbound.landlord(
                        route.urls.clone(),
                        RENEW_ATTEMPT,
                        self.to_landlords.clone(),
                    ),
                };
                match made {
                    Ok(c) => {
                        self.landlords.insert(alias, c.clone());
                        c
                    }
                    Err(e) => {
                        // A definite failure: these URLs will never work.
                        self.svc.handle_failure(tx.request.id, e.to_lease_error(), now);
                        return;
                    }
                }
            }
        };
        let me = self.me.clone();
        tokio::spawn(async move {
            let id = tx.request.id;
            let result = cluster
                .send(Some(route.landlord), &tx.request)
                .await
                .map_err(|e| e.to_lease_error());
            if let Some(me) = me.upgrade() {
                let _ = me.send(Msg::Replied { to: alias, id, result }).await;
            }
        });
    }

    /// Queues an event for its listener.
    fn deliver(&mut self, e: SetEvent) {
        let (url, msg) = self.svc.event_message(&e, now_ms());
        self.stats.service.events_queued.fetch_add(1, Relaxed);
        let Some(url) = url else {
            self.stats.service.events_dropped.fetch_add(1, Relaxed);
            tracing::warn!(
                shard = self.id,
                event_id = e.event_id,
                "an event without a listener URL was dropped"
            );
            self.svc.delivered(e.event_id, e.sequence, now_ms());
            return;
        };
        if let Err(why) = self.outbound.event_allow.check(&url) {
            // Stored before --event-allow changed: not reached (a listen naming it would be
            // refused now).
            self.stats.service.events_dropped.fetch_add(1, Relaxed);
            tracing::warn!(shard = self.id, event_id = e.event_id, error = %why, "event dropped");
            // given up on, as after EVENT_RETRY_FOR: it leaves the outbox
            self.svc.delivered(e.event_id, e.sequence, now_ms());
            return;
        }
        let body = Bytes::from(msg.to_json());
        let item = (e.sequence, url, body);
        let item = match self.deliveries.get(&e.event_id) {
            Some(q) => match q.send(item) {
                Ok(()) => return,
                Err(mpsc::error::SendError(item)) => item,
            },
            None => item,
        };
        let (q, rx) = mpsc::unbounded_channel();
        let _ = q.send(item);
        self.deliveries.insert(e.event_id, q);
        let (posts, stats) = (self.posts.clone(), self.stats.clone());
        let (http, me) = (self.http.clone(), self.me.clone());
        tokio::spawn(delivery(self.id, e.event_id, rx, http, me, posts, stats));
    }

    /// A write failed: nothing waiting is acknowledged, and the actor ends.
    fn fail(mut self, e: WriteError, rx: &mut mpsc::Receiver<Msg>) -> Ended {
        let why = match &e {
            WriteError::Fenced => format!("shard {} is owned by another server now", self.id),
            WriteError::Failed(m) => format!("shard {}: store write failed: {m}", self.id),
        };
        for held in self.gate.release(u64::MAX) {
            if let Held::Answer(done, _) = held {
                let _ = done.send(Answer::Unavailable(why.clone()));
            }
        }
        rx.close();
        while let Ok(m) = rx.try_recv() {
            match m {
                Msg::Set(_, done) | Msg::Lease(_, done) => {
                    let _ = done.send(Answer::Unavailable(why.clone()));
                }
                Msg::Stop(ack) => {
                    let _ = ack.send(());
                }
                Msg::Replied { .. } | Msg::UnknownEvent(_) | Msg::Delivered { .. } => {}
            }
        }
        match e {
            WriteError::Fenced => Ended::Fenced,
            WriteError::Failed(m) => Ended::Failed(m),
        }
    }
}

/// Delivers one registration's events in order: each POSTed until the listener takes it (2xx),
/// says it knows no such registration (404, 410: the registration ends), or
/// [`EVENT_RETRY_FOR`] has passed. Each POST holds a permit of `posts` (the shard's bound on
/// deliveries under way); a delivered event, or one given up on, is reported to the actor.
async fn delivery(
    shard: u64,
    event_id: EventId,
    mut rx: mpsc::UnboundedReceiver<(u64, String, Bytes)>,
    http: Events,
    me: mpsc::WeakSender<Msg>,
    posts: Arc<tokio::sync::Semaphore>,
    stats: Arc<ShardStats>,
) {
    while let Some((sequence, url, body)) = rx.recv().await {
        let give_up = Instant::now() + EVENT_RETRY_FOR;
        let mut failures = 0u32;
        loop {
            let answer = {
                let Ok(_permit) = posts.acquire().await else { return };
                post(&http, &url, body.clone()).await
            };
            let why = match answer {
                Ok(s) if (200..300).contains(&s) => {
                    stats.service.events_delivered.fetch_add(1, Relaxed);
                    break;
                }
                Ok(404 | 410) => {
                    stats.service.listeners_gone.fetch_add(1, Relaxed);
                    if let Some(me) = me.upgrade() {
                        let _ = me.send(Msg::UnknownEvent(event_id)).await;
                    }
                    return;
                }
                Ok(s) => format!("HTTP {s}"),
                Err(e) => e,
            };
            failures += 1;
            if Instant::now() >= give_up {
                stats.service.events_dropped.fetch_add(1, Relaxed);
                tracing::warn!(shard, event_id, sequence, url = %url, error = %why, "event dropped: its listener did not take it in time");
                break;
            }
            let wait = crate::backoff(failures).min(EVENT_RETRY_MAX);
            if failures == 1 || failures.is_multiple_of(10) {
                tracing::info!(shard, event_id, url = %url, error = %why, retry_in_ms = wait.as_millis() as u64, "event not delivered yet");
            }
            tokio::time::sleep(wait).await;
        }
        if let Some(me) = me.upgrade() {
            let _ = me.send(Msg::Delivered { event_id, sequence }).await;
        }
    }
}

async fn post(http: &Events, url: &str, body: Bytes) -> Result<u16, String> {
    let req = hyper::Request::post(url)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(EVENT_ATTEMPT, http.request(req)).await {
        Ok(Ok(r)) => Ok(r.status().as_u16()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} ms", EVENT_ATTEMPT.as_millis())),
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

// ---------- POST /renewal ----------

/// Round robin over the renewal shards for new sets.
static NEXT_SET_SHARD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn set_answer(
    reply: &leasehold::service::wire::SetReply,
    owner: Option<&str>,
    enc: Encoding,
) -> Response {
    let status = match &reply.body {
        SetReplyBody::Error(e) => crate::reply::status_of_error(e),
        _ => StatusCode::OK,
    };
    let ct = crate::http::content_type(enc);
    let mut r = (status, [(header::CONTENT_TYPE, ct)], reply.encode(enc)).into_response();
    if let Some(o) = owner.and_then(|o| HeaderValue::from_str(o).ok()) {
        r.headers_mut().insert(crate::http::OWNER, o);
    }
    r
}

fn set_error(id: u64, landlord: u64, e: impl Into<WireError>, enc: Encoding) -> Response {
    let reply = leasehold::service::wire::SetReply {
        id,
        landlord: LandlordId(landlord),
        body: SetReplyBody::Error(e.into()),
    };
    set_answer(&reply, None, enc)
}

/// A refusal (no identity, a bad token or forwarding proof) as a set error reply, `lease_denied`
/// under 401 or 403, so that clients read it as a definite answer and do not fail over.
pub fn refused(r: &crate::auth::Refused, id: u64, enc: Encoding) -> Response {
    let mut resp = set_error(id, 0, &LeaseError::LeaseDenied(r.message()), enc);
    *resp.status_mut() = r.status();
    if r.status() == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    resp
}

fn unknown(message: String) -> WireError {
    WireError { code: leasehold::ErrorCode::UnknownLease as i32, message }
}

/// `POST /renewal[?landlord=<16 hex digits>]`: one set message of
/// [`leasehold::service::wire`], JSON or binary by `Content-Type` (answered in the same). `create_set` goes to the renewal shard named, or to the
/// next one in turn; every other operation names its set's landlord (the renewal shard's id,
/// the `landlord` of the set's lease). The answer is a set reply with the status `POST /lease`
/// would give it ([`crate::reply`]), or a 503 with `Retry-After` when the shard cannot answer
/// here.
///
/// With a tokens file, `create_set` needs the `grant` permission (and a set's lease is cut
/// to the identity's longest lease); the other operations need `renew` (the set's cookie is the
/// capability, as a lease's is).
pub async fn endpoint(
    State(app): State<Arc<crate::App>>,
    Query(q): Query<Vec<(String, String)>>,
    req: axum::extract::Request,
) -> Response {
    let enc = crate::http::encoding_of(req.headers());
    let named = match crate::reply::one_param(&q, "landlord") {
        Ok(None) => None,
        Ok(Some(l)) => match crate::reply::parse_landlord(&l) {
            Ok(id) => Some(id.0),
            Err(e) => return set_error(0, 0, &e, enc),
        },
        Err(e) => return set_error(0, 0, &e, enc),
    };
    // Read as /lease and /coord read: bounded in size and time, the identity the guard found
    // or the one a forwarding server vouches for.
    let crate::access::Intake { body, caller, forwarded } =
        match crate::access::intake(&app, req).await {
            Ok(i) => i,
            Err(crate::access::Unread::TooLarge(max)) => {
                let e = LeaseError::Decode(format!("the message is over {max} bytes"));
                let mut r = set_error(0, 0, &e, enc);
                *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
                return r;
            }
            Err(crate::access::Unread::Slow(e)) => return set_error(0, 0, &e, enc),
            Err(crate::access::Unread::Refused(r)) => return refused(&r, 0, enc),
        };
    let mut request = match SetRequest::decode(&body, enc, &app.config.limits) {
        Ok(r) => r,
        Err(e) => return set_error(0, named.unwrap_or(0), &e, enc),
    };
    // Landlord and listener URLs outside the allow-lists are refused here, with the reason,
    // rather than taken and failing at every renewal (docs/security.md, "Outgoing traffic").
    if let Err(e) = app.config.outbound.check_set_request(&request.body) {
        let mut r = set_error(request.id, named.unwrap_or(0), &e, enc);
        *r.status_mut() = StatusCode::FORBIDDEN;
        return r;
    }
    let mut body = body;
    if let Some(who) = &caller {
        let op = match request.body {
            SetRequestBody::CreateSet { .. } => crate::auth::Op::Grant,
            _ => crate::auth::Op::Renew,
        };
        if !who.may(op) {
            let e = LeaseError::LeaseDenied(format!(
                "identity {:?} may not {} (renewal sets)",
                who.name,
                op.name()
            ));
            let mut r = set_error(request.id, 0, &e, enc);
            *r.status_mut() = StatusCode::FORBIDDEN;
            return r;
        }
        if let (SetRequestBody::CreateSet { duration }, Some(max)) =
            (&mut request.body, who.max_lease_ms)
        {
            if *duration == leasehold::ANY || *duration > max {
                *duration = max;
                // Forward what is answered.
                body = Bytes::from(request.encode(enc));
            }
        }
    }
    let ids = app.renewal_ids();
    if ids.is_empty() {
        let e = unknown(
            "this cluster runs no renewal service (start the server with --renewal-shards N)"
                .into(),
        );
        return set_error(request.id, 0, e, enc);
    }
    let shard = match (named, &request.body) {
        (Some(id), _) => id,
        (None, SetRequestBody::CreateSet { .. }) => {
            let n = ids.end() - ids.start() + 1;
            ids.start() + NEXT_SET_SHARD.fetch_add(1, Relaxed) % n
        }
        (None, _) => {
            let e = LeaseError::InvalidArgument(
                "name the set's landlord: POST /renewal?landlord=<16 hex digits> (the landlord \
                 of the set's lease)"
                    .into(),
            );
            return set_error(request.id, 0, &e, enc);
        }
    };
    if !app.is_renewal(shard) {
        let e = unknown(format!(
            "landlord {} is not a renewal service of this cluster ({} to {})",
            LandlordId(shard),
            LandlordId(*ids.start()),
            LandlordId(*ids.end())
        ));
        return set_error(request.id, shard, e, enc);
    }
    let why = match app.renewal(shard) {
        Some(h) => match h.set(request).await {
            Answer::Set(reply) => return set_answer(&reply, Some(&app.config.advertise), enc),
            Answer::Unavailable(why) => why,
            _ => "a landlord answer to a set operation".to_string(),
        },
        None => app.unserved_why(shard),
    };
    if !forwarded {
        // PostgreSQL mode: the shard's owner answers (as /lease and /coord are forwarded).
        let who = caller.as_ref().map(|c| c.name.as_str());
        if let Some(r) =
            app.forward_to("/renewal", shard, Some(shard), enc, body, who, Duration::ZERO).await
        {
            return r;
        }
    }
    app.stats.unavailable.fetch_add(1, Relaxed);
    crate::reply::unavailable(why)
}
