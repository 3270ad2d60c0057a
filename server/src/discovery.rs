//! The lookup discovery service (seed 003, LD; River's Fiddler) in the server: the core's
//! [`DiscoveryService`] driven by one actor with group commit, kept in the store of the
//! landlord shards (the file store, or PostgreSQL) (`docs/discovery-service.md`).
//!
//! With `--discovery-port P` a server runs one *discovery shard* besides its landlords. Its id
//! (`--discovery-id`, default [`DEFAULT_ID`]) is the landlord id of its registration leases and
//! the event source of its events. On the file store it lives in `<data>/shard-<id>` with the
//! same snapshot, log, durable tip and quarantine marker as a landlord shard, and is reopened
//! the same way after a failed write. On PostgreSQL it is a row of `leasehold_shards` at its
//! id, owned, fenced, taken over and restored by [`crate::pg::Cluster`] like every shard, and
//! served by its owner only (`serve_taken`): every server started with `--discovery-port`
//! binds the UDP port and drops what it hears unless it owns the shard, and forwards
//! `POST /discovery` and the registration leases' `POST /lease` to the owner.
//!
//! What the host does, and nothing more (every rule is the core's):
//!
//! - **Announcements** heard over UDP: on `--discovery-interface` (default 127.0.0.1) at port
//!   P always, and on the multicast group (`--discovery-group`, joined on that interface) when
//!   `--discovery-announce` is `multicast`, or `auto` and a self-test shows multicast works
//!   there. Each datagram is handed to the service ([`DiscoveryService::handle_datagram`]).
//! - **Unicast discovery** of the locators registrations ask for: a TCP connection to
//!   `host:port`, whose registrar writes its announcement datagram and closes.
//! - **Clients** over HTTP on the server's listener, with its identities: `POST /discovery`
//!   (the discovery wire protocol; a registration names its listener's URL in the
//!   `leasehold-listener` header) and `POST /lease?landlord=<the discovery id>` (renewing and
//!   cancelling registration leases, as any lease). `GET /discovery/status` says what the
//!   service holds.
//! - **Events** POSTed to each registration's listener (Jini's remote listener) in the
//!   encoding of its register request; the listener's answer is an event reply, and what came
//!   of it goes back to the service, which retries indefinite failures on its schedule.
//!
//! Nothing leaves before it is durable: replies, events and unicast probes wait in a [`Gate`]
//! until the store write that carries the records behind them has finished; one write (one
//! `fsync`) per batch, however many messages it covers, and the actor goes on answering while
//! a write is under way.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody, EventReply,
    ANNOUNCEMENT_MAX_BYTES,
};
use leasehold::discovery::{
    Announcement, DeliveryFailure, DiscoveryConfig, DiscoveryService, Locator, RegistrationId,
    RemoteDiscoveryEvent, UnicastRequest, UnicastResponse,
};
use leasehold::journal::Gate;
use leasehold::store::StoreConfig;
use leasehold::wire::WireError;
use leasehold::{Duration as Ms, Encoding, LandlordId, LeaseError, PolicySpec, Reply, Request};
use serde::Deserialize;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::clock::{instant_of, now_ms};
use crate::files::{self, FileWriter, OpenError};
use crate::health::ShardState;
use crate::metrics::{stamp_us, ErrorKind, ShardStats};
use crate::shard::{Ended, Job, Planner, WriteError, Writer, WriterTask};
use crate::App;

/// The discovery shard's id when `--discovery-id` is not given: far above any landlord shard
/// (at most 65536) and any other kind of shard numbered after them, so that a change in their
/// numbers never gives its directory to another shard.
pub const DEFAULT_ID: u64 = 1_000_000;

/// The multicast group announcements go to by default (organisation-local; the registrars of
/// `examples/discovery` use it).
pub const DEFAULT_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 76, 72);

/// The header a client names its event listener in when it registers: the URL the service
/// POSTs events to, in the encoding of the register request.
pub const LISTENER_HEADER: &str = "leasehold-listener";

/// Longest one event delivery attempt may take.
const EVENT_ATTEMPT: Duration = Duration::from_secs(5);
/// Longest one unicast discovery may take.
const PROBE_ATTEMPT: Duration = Duration::from_secs(2);

/// The flags of the discovery service (also the `[discovery]` table of the config file, same
/// names with `_` for `-` and without the `discovery_` prefix where the flag has one).
#[derive(Debug, Clone, Default, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryFlags {
    /// Run the lookup discovery service (seed 003, LD): announcements are heard on this UDP
    /// port. With PostgreSQL, every server started with it binds the port and only the
    /// discovery shard's owner acts on what it hears (docs/discovery-service.md).
    #[arg(long = "discovery-port", value_name = "PORT")]
    #[serde(rename = "port")]
    pub discovery_port: Option<u16>,
    /// How announcements arrive: auto (multicast if a self-test shows it works on the
    /// interface, else unicast), multicast, or unicast (to the interface's address at the
    /// port only). Default auto.
    #[arg(long = "discovery-announce", value_name = "MODE")]
    #[serde(rename = "announce")]
    pub discovery_announce: Option<String>,
    /// The multicast group announcements go to (default 239.255.76.72).
    #[arg(long = "discovery-group", value_name = "IP")]
    #[serde(rename = "group")]
    pub discovery_group: Option<Ipv4Addr>,
    /// The interface's address: the UDP socket binds it, the group is joined on it (default
    /// 127.0.0.1).
    #[arg(long = "discovery-interface", value_name = "IP")]
    #[serde(rename = "interface")]
    pub discovery_interface: Option<Ipv4Addr>,
    /// The discovery shard's id: the landlord of its registration leases (default 1000000).
    /// Kept for the life of its data: changing it starts another service.
    #[arg(long = "discovery-id", value_name = "N")]
    #[serde(rename = "id")]
    pub discovery_id: Option<u64>,
    /// Longest registration lease, in ms (default 1800000: Fiddler's 30 minutes, also what
    /// ANY gets).
    #[arg(long, value_name = "MS")]
    pub max_registration_ms: Option<Ms>,
    /// Waits before sending an event again after its n-th failure, ms (the last repeats).
    /// Config file only. Default 1000, 5000, 10000, 60000, 60000, 300000.
    #[arg(skip)]
    pub event_retry_ms: Option<Vec<Ms>>,
    /// Waits before probing a locator again after its n-th failure, ms (the last repeats).
    /// Config file only. Default 1000 doubling to 60000.
    #[arg(skip)]
    pub unicast_retry_ms: Option<Vec<Ms>>,
}

/// How announcements arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announce {
    /// Multicast if the self-test passes, else unicast.
    Auto,
    /// The group, and unicast.
    Multicast,
    /// Unicast to the interface's address only.
    Unicast,
}

/// The discovery service's settings in force.
#[derive(Debug, Clone)]
pub struct DiscoverySettings {
    /// The shard's id (landlord of registration leases).
    pub id: u64,
    /// The UDP port.
    pub port: u16,
    /// How announcements arrive.
    pub announce: Announce,
    /// The multicast group.
    pub group: Ipv4Addr,
    /// The interface.
    pub interface: Ipv4Addr,
    /// Longest registration lease.
    pub max_registration_ms: Ms,
    /// Event retry schedule.
    pub event_retry_ms: Vec<Ms>,
    /// Unicast retry schedule.
    pub unicast_retry_ms: Vec<Ms>,
}

impl DiscoverySettings {
    /// The settings from the flags over the file's `[discovery]` table; `None` without a
    /// port (no discovery service). `shards`: the landlord shards the server runs.
    pub fn load(
        f: DiscoveryFlags,
        c: DiscoveryFlags,
        shards: u64,
    ) -> Result<Option<DiscoverySettings>, String> {
        let Some(port) = f.discovery_port.or(c.discovery_port) else {
            return Ok(None);
        };
        if port == 0 {
            return Err("--discovery-port must be 1 to 65535".into());
        }
        let announce = match f.discovery_announce.or(c.discovery_announce).as_deref() {
            None | Some("auto") => Announce::Auto,
            Some("multicast") => Announce::Multicast,
            Some("unicast") => Announce::Unicast,
            Some(o) => {
                return Err(format!(
                    "--discovery-announce is auto, multicast or unicast, got {o:?}"
                ))
            }
        };
        let group = f.discovery_group.or(c.discovery_group).unwrap_or(DEFAULT_GROUP);
        if !group.is_multicast() {
            return Err(format!("--discovery-group must be a multicast address, got {group}"));
        }
        let id = f.discovery_id.or(c.discovery_id).unwrap_or(DEFAULT_ID);
        if id <= shards || id == 0 {
            return Err(format!(
                "--discovery-id must be above the landlord shards (1 to {shards}), got {id}"
            ));
        }
        let max_registration_ms = f
            .max_registration_ms
            .or(c.max_registration_ms)
            .unwrap_or(leasehold::discovery::DEFAULT_MAX_REGISTRATION_LEASE);
        if max_registration_ms <= 0 {
            return Err(format!(
                "--max-registration-ms must be positive, got {max_registration_ms}"
            ));
        }
        let defaults = DiscoveryConfig::new(LandlordId(id), [0; 32]);
        let s = DiscoverySettings {
            id,
            port,
            announce,
            group,
            interface: f
                .discovery_interface
                .or(c.discovery_interface)
                .unwrap_or(Ipv4Addr::LOCALHOST),
            max_registration_ms,
            event_retry_ms: c.event_retry_ms.unwrap_or(defaults.event_retry),
            unicast_retry_ms: c.unicast_retry_ms.unwrap_or(defaults.unicast_retry),
        };
        s.core(LandlordId(id), [0; 32]).map_err(|e| format!("[discovery]: {e}"))?;
        Ok(Some(s))
    }

    /// The core's configuration for service `id` with cookie seed `seed`, checked.
    fn core(&self, id: LandlordId, seed: [u8; 32]) -> Result<DiscoveryConfig, LeaseError> {
        let mut c = DiscoveryConfig::new(id, seed);
        c.lease_policy = PolicySpec::Bounded {
            max: self.max_registration_ms,
            default: self.max_registration_ms,
        };
        c.event_retry = self.event_retry_ms.clone();
        c.unicast_retry = self.unicast_retry_ms.clone();
        // The host reports every delivery and probe within its own time-outs; these only
        // catch a report that never comes.
        c.delivery_timeout = 2 * EVENT_ATTEMPT.as_millis() as Ms;
        c.unicast_timeout = 2 * PROBE_ATTEMPT.as_millis() as Ms;
        DiscoveryService::new(c.clone())?;
        Ok(c)
    }
}

// ---------------------------------------------------------------------------------------------
// UDP

/// A UDP socket that receives the group's datagrams at `port`, joined on `interface`.
fn multicast_receiver(
    group: Ipv4Addr,
    interface: Ipv4Addr,
    port: u16,
) -> std::io::Result<UdpSocket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.bind(&SocketAddrV4::new(group, port).into())?;
    s.join_multicast_v4(&group, &interface)?;
    Ok(s.into())
}

/// Whether multicast to `group` works on `interface`: a datagram sent to the group (TTL 0,
/// loop on) comes back within 300 ms. `Err` says why not.
pub fn multicast_self_test(group: Ipv4Addr, interface: Ipv4Addr) -> Result<(), String> {
    let rx = multicast_receiver(group, interface, 0)
        .map_err(|e| format!("cannot join {group} on {interface}: {e}"))?;
    let port = rx.local_addr().map_err(|e| e.to_string())?.port();
    let tx = (|| {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_multicast_if_v4(&interface)?;
        s.set_multicast_ttl_v4(0)?;
        s.set_multicast_loop_v4(true)?;
        s.bind(&SocketAddrV4::new(interface, 0).into())?;
        Ok::<UdpSocket, std::io::Error>(s.into())
    })()
    .map_err(|e| format!("cannot send multicast on {interface}: {e}"))?;
    let probe = b"leasehold multicast self-test";
    tx.send_to(probe, SocketAddrV4::new(group, port))
        .map_err(|e| format!("sending to {group} on {interface}: {e}"))?;
    rx.set_read_timeout(Some(Duration::from_millis(300))).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    match rx.recv_from(&mut buf) {
        Ok((n, _)) if &buf[..n] == probe => Ok(()),
        Ok(_) => Err("another datagram came back".into()),
        Err(e) => Err(format!("nothing came back in 300 ms ({e})")),
    }
}

/// The sockets announcements arrive on, and what they are.
struct Udp {
    sockets: Vec<UdpSocket>,
    describe: String,
    multicast_unavailable: Option<String>,
}

fn bind_udp(s: &DiscoverySettings) -> Result<Udp, String> {
    let unicast = UdpSocket::bind(SocketAddrV4::new(s.interface, s.port)).map_err(|e| {
        format!("cannot bind UDP {}:{} (--discovery-port): {e}", s.interface, s.port)
    })?;
    let (multicast, why) = match s.announce {
        Announce::Unicast => (false, None),
        Announce::Multicast => (true, None),
        Announce::Auto => match multicast_self_test(s.group, s.interface) {
            Ok(()) => (true, None),
            Err(why) => (false, Some(why)),
        },
    };
    let mut sockets = vec![unicast];
    let describe = if multicast {
        let m = multicast_receiver(s.group, s.interface, s.port).map_err(|e| {
            format!("cannot join the group {}:{} on {}: {e}", s.group, s.port, s.interface)
        })?;
        sockets.push(m);
        format!(
            "multicast {}:{} on {} and unicast to {}:{}",
            s.group, s.port, s.interface, s.interface, s.port
        )
    } else {
        format!("unicast to {}:{}", s.interface, s.port)
    };
    Ok(Udp { sockets, describe, multicast_unavailable: why })
}

// ---------------------------------------------------------------------------------------------
// The component: what the server keeps of its discovery service.

/// Counters of the discovery service (beside its [`ShardStats`]).
#[derive(Debug, Default)]
pub struct DiscoveryStats {
    /// Datagrams heard.
    pub datagrams: AtomicU64,
    /// Datagrams the service refused (not an announcement, too many registrars).
    pub refused_datagrams: AtomicU64,
    /// Events delivered (the listener answered received).
    pub delivered: AtomicU64,
    /// Event deliveries that failed indefinitely (each attempt; the service retries).
    pub delivery_failures: AtomicU64,
    /// Event deliveries that failed definitely (the listener said unknown event or broke, or
    /// its URL is outside `--event-allow`): the registration ended.
    pub delivery_ended: AtomicU64,
    /// Registrations held now (as of the last batch).
    pub registrations: AtomicU64,
    /// Unicast discoveries that answered.
    pub probes_ok: AtomicU64,
    /// Unicast discoveries that failed.
    pub probes_failed: AtomicU64,
    /// Registrars discovered now (as of the last batch).
    pub registrars: AtomicU64,
}

/// What opening the store found, for `/discovery/status`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Recovered {
    /// Journal records replayed on top of the snapshot.
    pub records: u64,
    /// Registrations found.
    pub registrations: u64,
    /// A torn tail that was cut, if any.
    pub torn_tail: Option<String>,
    /// Whether the directory was new.
    pub created: bool,
}

/// The discovery service of a server.
pub struct Discovery {
    /// Its settings.
    pub settings: DiscoverySettings,
    handle: RwLock<Option<DiscoveryHandle>>,
    /// Its counters.
    pub stats: Arc<DiscoveryStats>,
    announcements: Mutex<(String, Option<String>)>,
    recovered: Mutex<Recovered>,
    http: HttpClient<crate::outbound::Guarded, Full<Bytes>>,
    /// Which listener URLs registrations may name (`--event-allow`).
    event_allow: crate::outbound::AllowList,
}

impl Discovery {
    /// A discovery service with these settings (not started); its events leave as `outbound`
    /// says (`http://` and `https://` listeners within `--event-allow`).
    pub fn new(settings: DiscoverySettings, outbound: &crate::outbound::Outbound) -> Discovery {
        Discovery {
            settings,
            handle: RwLock::new(None),
            stats: Arc::new(DiscoveryStats::default()),
            announcements: Mutex::new((String::new(), None)),
            recovered: Mutex::new(Recovered::default()),
            http: HttpClient::builder(TokioExecutor::new())
                .build(outbound.connector(&outbound.event_allow, EVENT_ATTEMPT)),
            event_allow: outbound.event_allow.clone(),
        }
    }

    /// The running shard, if served.
    pub fn handle(&self) -> Option<DiscoveryHandle> {
        self.handle.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_handle(&self, h: Option<DiscoveryHandle>) {
        *self.handle.write().unwrap_or_else(|p| p.into_inner()) = h;
    }

    /// The `/metrics` lines of the discovery service.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write;
        let s = &self.stats;
        let id = self.settings.id;
        let _ = writeln!(
            out,
            "# HELP leasehold_discovery_datagrams_total Announcement datagrams heard by the discovery service, by outcome.\n\
             # TYPE leasehold_discovery_datagrams_total counter\n\
             leasehold_discovery_datagrams_total{{shard=\"{id}\",outcome=\"taken\"}} {}\n\
             leasehold_discovery_datagrams_total{{shard=\"{id}\",outcome=\"refused\"}} {}",
            s.datagrams.load(Relaxed).saturating_sub(s.refused_datagrams.load(Relaxed)),
            s.refused_datagrams.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP leasehold_discovery_events_total Event deliveries to registrations' listeners, by outcome: delivered, failed (indefinitely: retried), ended (definitely: the registration ended).\n\
             # TYPE leasehold_discovery_events_total counter\n\
             leasehold_discovery_events_total{{shard=\"{id}\",outcome=\"delivered\"}} {}\n\
             leasehold_discovery_events_total{{shard=\"{id}\",outcome=\"failed\"}} {}\n\
             leasehold_discovery_events_total{{shard=\"{id}\",outcome=\"ended\"}} {}",
            s.delivered.load(Relaxed),
            s.delivery_failures.load(Relaxed),
            s.delivery_ended.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP leasehold_discovery_registrations Registrations the discovery service holds.\n\
             # TYPE leasehold_discovery_registrations gauge\n\
             leasehold_discovery_registrations{{shard=\"{id}\"}} {}",
            s.registrations.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP leasehold_discovery_probes_total Unicast discoveries of locators, by outcome.\n\
             # TYPE leasehold_discovery_probes_total counter\n\
             leasehold_discovery_probes_total{{shard=\"{id}\",outcome=\"ok\"}} {}\n\
             leasehold_discovery_probes_total{{shard=\"{id}\",outcome=\"failed\"}} {}",
            s.probes_ok.load(Relaxed),
            s.probes_failed.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP leasehold_discovery_registrars Registrars (lookup services) the discovery service holds.\n\
             # TYPE leasehold_discovery_registrars gauge\n\
             leasehold_discovery_registrars{{shard=\"{id}\"}} {}",
            s.registrars.load(Relaxed)
        );
    }
}

/// Starts the discovery service of `app`: binds its UDP sockets (an error stops the server:
/// its port is taken). With the file store (`data`), opens its shard and keeps it served
/// (reopened after a failed write, taken back after an operator's release); with PostgreSQL
/// (`None`), the cluster's ownership loop takes the shard like any other
/// ([`crate::pg::Cluster`]) and serves it through [`serve_taken`]: until then (and on every
/// server but its owner) what the sockets hear is dropped.
pub(crate) async fn start(app: &Arc<App>, data: Option<&Path>) -> Result<(), String> {
    let Some(d) = app.discovery.clone() else { return Ok(()) };
    let udp = bind_udp(&d.settings)?;
    *d.announcements.lock().unwrap_or_else(|p| p.into_inner()) =
        (udp.describe.clone(), udp.multicast_unavailable.clone());
    tracing::info!(
        shard = d.settings.id,
        announcements = %udp.describe,
        multicast_unavailable = udp.multicast_unavailable.as_deref().unwrap_or("-"),
        "discovery service listening"
    );
    for s in udp.sockets {
        s.set_nonblocking(true).map_err(|e| e.to_string())?;
        let s = tokio::net::UdpSocket::from_std(s).map_err(|e| e.to_string())?;
        tokio::spawn(listen_udp(s, Arc::downgrade(&d)));
    }
    let Some(data) = data else { return Ok(()) };
    let id = d.settings.id;
    if let Some(q) = crate::quarantine::files_marker(data, id) {
        tracing::error!(shard = id, reason = %q.reason, "discovery shard is quarantined (marker found); not served");
        app.set_quarantined(id, q.reason);
    } else {
        match open_and_serve(app, &d, data, false).await {
            Ok(()) => {}
            Err(OpenError::Busy(m)) => return Err(m),
            Err(e) => {
                app.set_failed(id, ErrorKind::Open, e.to_string());
            }
        }
    }
    tokio::spawn(supervise(Arc::downgrade(app), data.to_path_buf()));
    Ok(())
}

async fn listen_udp(socket: tokio::net::UdpSocket, d: Weak<Discovery>) {
    let mut buf = vec![0u8; 65_536];
    while let Ok((n, _)) = socket.recv_from(&mut buf).await {
        let Some(d) = d.upgrade() else { return };
        d.stats.datagrams.fetch_add(1, Relaxed);
        // Not served now (reopening): the announcement is dropped; registrars repeat them.
        if let Some(h) = d.handle() {
            let _ = h.tx.try_send(Msg::Datagram(buf[..n].to_vec()));
        }
    }
}

/// The shard's report for `/readyz` (the discovery shard must be served for readiness).
pub(crate) fn report(app: &App, d: &Discovery) -> crate::health::ShardReport {
    let id = d.settings.id;
    if d.handle().is_some_and(|h| !h.is_closed()) {
        return crate::health::ShardReport {
            shard: id,
            state: ShardState::Served,
            owner: Some(app.config.advertise.clone()),
            epoch: None,
            why: None,
            ok: true,
        };
    }
    let (state, why) = match app.local(id) {
        Some(l) => (l.state, l.why),
        None => (ShardState::Failed, "not opened yet".to_string()),
    };
    crate::health::ShardReport {
        shard: id,
        state,
        owner: None,
        epoch: None,
        why: Some(why),
        ok: false,
    }
}

/// Opens (or creates) the discovery shard in `data`, as [`files::open_shard`] opens a
/// landlord's: the lock, the snapshot and the log, the durable tip, a torn tail cut, the
/// service resumed at the server's clock and given the settings in force. With `rewrite`, a
/// new snapshot replaces the log (after a failed write).
fn open_discovery(
    data: &Path,
    settings: &DiscoverySettings,
    config: StoreConfig,
    rewrite: bool,
) -> Result<(DiscoveryService, Planner, FileWriter, Recovered), OpenError> {
    let id = settings.id;
    let build = |snapshot: Option<&[u8]>| match snapshot {
        Some(bytes) => DiscoveryService::from_snapshot_bytes(bytes),
        None => {
            let mut svc =
                DiscoveryService::new(settings.core(LandlordId(id), files::fresh_seed())?)?;
            svc.enable_journal();
            Ok(svc)
        }
    };
    let foreign = |svc: &DiscoveryService| {
        let held = svc.id().0;
        (held != id).then(|| format!("holds discovery service {held}, not {id}"))
    };
    let (seed, afresh) = ("the registration cookies' seed", "afresh");
    let files::OpenedDir { path, mut dir, state: mut svc, mut store, recovered, created, last } =
        files::open_dir(data, id, config, seed, afresh, build, foreign)?;
    let io = |e: std::io::Error| OpenError::Io(format!("{}: {e}", path.display()));
    let damaged = |m: String| OpenError::Damaged(format!("{}: {m}", path.display()));
    // The settings in force now (policy, schedules), journaled if they changed.
    svc.reconfigure(settings.core(LandlordId(id), [0; 32]).map_err(|e| damaged(e.to_string()))?)
        .map_err(|e| damaged(e.to_string()))?;
    let ops = if rewrite {
        store.compact(&mut svc)
    } else {
        store.commit(&mut svc).map(|c| c.ops).unwrap_or_default()
    };
    dir.apply_all(&ops).map_err(io)?;
    let tip = files::open_tip(&path).map_err(io)?;
    files::write_tip(&tip, svc.journal_seq().max(last)).map_err(io)?;
    let rec = Recovered {
        records: recovered.replayed,
        registrations: svc.registrations().len() as u64,
        torn_tail: recovered.torn.map(|(_, _, why)| why),
        created,
    };
    Ok((svc, Planner::Files(store), FileWriter::new(dir, tip), rec))
}

async fn open_and_serve(
    app: &Arc<App>,
    d: &Arc<Discovery>,
    data: &Path,
    rewrite: bool,
) -> Result<(), OpenError> {
    let id = d.settings.id;
    let (dir, settings, store_config) =
        (data.to_path_buf(), d.settings.clone(), app.config.store_config);
    let opened =
        tokio::task::spawn_blocking(move || open_discovery(&dir, &settings, store_config, rewrite))
            .await
            .map_err(|e| OpenError::Io(format!("opening thread: {e}")))?;
    match opened {
        Ok((svc, planner, writer, rec)) => {
            tracing::info!(
                shard = id,
                registrations = rec.registrations,
                replayed = rec.records,
                created = rec.created,
                rewritten = rewrite,
                torn = rec.torn_tail.as_deref().unwrap_or("none"),
                "discovery shard opened"
            );
            *d.recovered.lock().unwrap_or_else(|p| p.into_inner()) = rec;
            let h = spawn(id, svc, planner, writer, app.shard_stats(id), d.clone(), {
                let app = Arc::downgrade(app);
                move |id, ended| on_end(app, id, ended)
            });
            app.clear_local(id);
            app.stats.acquired.fetch_add(1, Relaxed);
            d.set_handle(Some(h));
            Ok(())
        }
        Err(OpenError::Damaged(why)) => {
            files::quarantine_shard(app, data, id, why);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn on_end(app: Weak<App>, id: u64, ended: Ended) {
    let Some(app) = app.upgrade() else { return };
    let Some(d) = app.discovery.clone() else { return };
    match &ended {
        Ended::Stopped => tracing::info!(shard = id, "discovery shard stopped"),
        Ended::Fenced => {
            app.stats.fenced.fetch_add(1, Relaxed);
            app.shard_stats(id).error(ErrorKind::Fenced);
            tracing::warn!(shard = id, "discovery shard lost: the store refused a write")
        }
        Ended::Failed(_) => {}
    }
    if d.handle().is_some_and(|h| h.is_closed()) {
        d.set_handle(None);
        app.stats.released.fetch_add(1, Relaxed);
    }
    if let Ended::Failed(e) = &ended {
        app.set_failed(id, ErrorKind::Write, format!("store write failed: {e}"));
    }
    // PostgreSQL: the ownership loop forgets it (a failed one is taken back with a new epoch).
    if let Some(c) = app.cluster() {
        c.shard_ended(id, &ended);
    }
}

/// Serves the discovery shard that the PostgreSQL cluster took and restored (`svc`, resumed,
/// with the settings in force), writing through `writer` (fenced by the takeover's epoch).
pub(crate) fn serve_taken(
    app: &Arc<App>,
    svc: DiscoveryService,
    planner: Planner,
    writer: impl Writer,
    rec: Recovered,
) -> Result<(), String> {
    let Some(d) = app.discovery.clone() else {
        return Err("this server runs no discovery service".into());
    };
    let id = d.settings.id;
    *d.recovered.lock().unwrap_or_else(|p| p.into_inner()) = rec;
    let h = spawn(id, svc, planner, writer, app.shard_stats(id), d.clone(), {
        let app = Arc::downgrade(app);
        move |id, ended| on_end(app, id, ended)
    });
    app.clear_local(id);
    app.stats.acquired.fetch_add(1, Relaxed);
    d.set_handle(Some(h));
    Ok(())
}

/// A new discovery service for the settings in force (a fresh cookie seed), with a journal.
pub(crate) fn new_service(settings: &DiscoverySettings) -> leasehold::Result<DiscoveryService> {
    let mut svc =
        DiscoveryService::new(settings.core(LandlordId(settings.id), files::fresh_seed())?)?;
    svc.enable_journal();
    Ok(svc)
}

/// Gives a restored service the settings in force (journaled if they changed).
pub(crate) fn reconfigure(
    svc: &mut DiscoveryService,
    settings: &DiscoverySettings,
) -> leasehold::Result<()> {
    svc.reconfigure(settings.core(LandlordId(settings.id), [0; 32])?)
}

/// Stops the discovery shard if this server serves it (after writing what it answered).
/// Whether it did.
pub(crate) async fn stop(app: &App) -> bool {
    let Some(h) = app.discovery.as_ref().and_then(|d| d.handle()) else { return false };
    h.stop().await;
    true
}

/// Whether this server serves the discovery shard `id` now.
pub(crate) fn serves(app: &App, id: u64) -> bool {
    app.discovery
        .as_ref()
        .is_some_and(|d| d.settings.id == id && d.handle().is_some_and(|h| !h.is_closed()))
}

/// Reopens the discovery shard from disk when it failed (after its backoff), takes it back
/// once an operator has released it from quarantine. Runs until the app is dropped.
async fn supervise(app: Weak<App>, data: std::path::PathBuf) {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Some(app) = app.upgrade() else { return };
        let Some(d) = app.discovery.clone() else { return };
        let id = d.settings.id;
        let Some(l) = app.local(id) else { continue };
        match l.state {
            ShardState::Failed if l.retry_at <= Instant::now() => {
                if let Some(q) = crate::quarantine::files_marker(&data, id) {
                    app.set_quarantined(id, q.reason);
                    continue;
                }
                app.set_taking_over(id, format!("reopening after: {}", l.why));
                match open_and_serve(&app, &d, &data, true).await {
                    Ok(()) => {
                        if d.handle().is_some() {
                            tracing::info!(
                                shard = id,
                                failures = l.failures,
                                "discovery shard served again"
                            );
                        }
                    }
                    Err(e) => {
                        let why = format!(
                            "{} (reopen: {e})",
                            l.why.split(" (reopen: ").next().unwrap_or("")
                        );
                        app.set_failed(id, ErrorKind::Open, why);
                    }
                }
            }
            ShardState::Quarantined if crate::quarantine::files_marker(&data, id).is_none() => {
                tracing::warn!(
                    shard = id,
                    "quarantine released by an operator: opening the discovery shard"
                );
                app.set_taking_over(id, "released from quarantine".to_string());
                if let Err(e) = open_and_serve(&app, &d, &data, false).await {
                    app.set_failed(id, ErrorKind::Open, e.to_string());
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The actor

/// What the discovery shard answers.
#[derive(Debug)]
pub enum Answer {
    /// A discovery reply, durable.
    Discovery(DiscoveryReply),
    /// A lease reply (registration leases), durable.
    Lease(Reply),
    /// What the service holds.
    Status(serde_json::Value),
    /// Not served here now.
    Unavailable(String),
}

/// A message to the discovery shard's actor.
pub enum Msg {
    /// A discovery request; a registration's listener (its encoding tag and URL).
    Discovery(DiscoveryRequest, Option<Vec<u8>>, oneshot::Sender<Answer>),
    /// A discovery request that did not decode: the service answers it with an error.
    Undecoded(Bytes, Encoding, oneshot::Sender<Answer>),
    /// A renewal or cancel of registration leases.
    Lease(Request, oneshot::Sender<Answer>),
    /// What the service holds.
    Status(oneshot::Sender<Answer>),
    /// A datagram heard.
    Datagram(Vec<u8>),
    /// What a unicast discovery found.
    Unicast(u64, Result<UnicastResponse, LeaseError>),
    /// What came of delivering an event.
    Delivered(u64, u64, Option<DeliveryFailure>),
    /// Finish what is under way, write what is left, and stop.
    Stop(oneshot::Sender<()>),
}

/// A handle to the running discovery shard.
#[derive(Clone)]
pub struct DiscoveryHandle {
    /// Its id.
    pub id: u64,
    tx: mpsc::Sender<Msg>,
}

impl DiscoveryHandle {
    async fn ask(&self, make: impl FnOnce(oneshot::Sender<Answer>) -> Msg) -> Answer {
        let (done, rx) = oneshot::channel();
        if self.tx.send(make(done)).await.is_err() {
            return Answer::Unavailable(format!("discovery shard {} stopped", self.id));
        }
        rx.await
            .unwrap_or_else(|_| Answer::Unavailable(format!("discovery shard {} stopped", self.id)))
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

enum Held {
    Answer(oneshot::Sender<Answer>, Answer),
    Probe(UnicastRequest),
    Event(RemoteDiscoveryEvent, Vec<u8>),
}

struct Actor {
    id: u64,
    svc: DiscoveryService,
    planner: Planner,
    gate: Gate<Held>,
    writer: WriterTask<u64>,
    next_job: u64,
    in_flight: Option<(u64, Instant, u64, bool)>,
    stats: Arc<ShardStats>,
    d: Arc<Discovery>,
    me: mpsc::WeakSender<Msg>,
}

fn spawn(
    id: u64,
    svc: DiscoveryService,
    planner: Planner,
    writer: impl Writer,
    stats: Arc<ShardStats>,
    d: Arc<Discovery>,
    on_end: impl FnOnce(u64, Ended) + Send + 'static,
) -> DiscoveryHandle {
    stats.restart(svc.registrations().len() as u64, svc.journal_seq());
    d.stats.registrars.store(svc.discovered().len() as u64, Relaxed);
    let (tx, rx) = mpsc::channel(8192);
    let actor = Actor {
        id,
        svc,
        planner,
        gate: Gate::new(),
        writer: WriterTask::spawn(writer),
        next_job: 1,
        in_flight: None,
        stats,
        d,
        me: tx.downgrade(),
    };
    tokio::spawn(async move {
        let ended = actor.run(rx).await;
        on_end(id, ended);
    });
    DiscoveryHandle { id, tx }
}

impl Actor {
    async fn run(mut self, mut rx: mpsc::Receiver<Msg>) -> Ended {
        let mut stopping: Option<oneshot::Sender<()>> = None;
        // What the service handed out at open (events to resend after a restart, probes).
        self.collect();
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
                    let Some((n, r)) = r else {
                        return self.fail(WriteError::Failed("writer gone".into()), &mut rx);
                    };
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
                        if let Msg::Stop(ack) = m {
                            stopping = Some(ack);
                            break;
                        }
                        self.handle(m);
                        n += 1;
                        if n < 4096 {
                            next = rx.try_recv().ok();
                        }
                    }
                    self.collect();
                }
                _ = sleep_until(deadline) => {
                    self.svc.handle_timeout(now_ms());
                    self.collect();
                }
            }
        }
    }

    fn hold(&mut self, h: Held) {
        if self.gate.is_empty() {
            self.stats.waiting_since_us.store(stamp_us(), Relaxed);
        }
        self.gate.push(self.next_job, h);
    }

    fn answer(&mut self, done: oneshot::Sender<Answer>, a: Answer) {
        self.hold(Held::Answer(done, a));
    }

    fn handle(&mut self, m: Msg) {
        let now = now_ms();
        match m {
            Msg::Discovery(req, listener, done) => {
                let reply = self.svc.handle_discovery(&req, now);
                if let (Some(l), DiscoveryReplyBody::Registered { registration, .. }) =
                    (listener, &reply.body)
                {
                    // The listener lives and dies with the registration, durably.
                    if let Err(e) = self.svc.set_listener(RegistrationId(*registration), l, now) {
                        tracing::warn!(shard = self.id, error = %e, "listener not kept");
                    }
                }
                if matches!(reply.body, DiscoveryReplyBody::Registered { .. }) {
                    self.stats.grants.fetch_add(1, Relaxed);
                }
                self.answer(done, Answer::Discovery(reply));
            }
            Msg::Undecoded(body, enc, done) => {
                let bytes = self.svc.handle_discovery_bytes(&body, enc, now);
                let reply = DiscoveryReply::decode(&bytes, enc, &self.svc.config().landlord.limits)
                    .unwrap_or(DiscoveryReply {
                        id: 0,
                        landlord: self.svc.id(),
                        body: DiscoveryReplyBody::Error(WireError::from(&LeaseError::Decode(
                            "undecodable request".into(),
                        ))),
                    });
                self.answer(done, Answer::Discovery(reply));
            }
            Msg::Lease(req, done) => {
                let reply = self.svc.handle_request(&req, now);
                match &reply.body {
                    leasehold::ReplyBody::Renewed { .. } => {
                        self.stats.renewals.fetch_add(1, Relaxed);
                    }
                    leasehold::ReplyBody::Cancelled => {
                        self.stats.cancels.fetch_add(1, Relaxed);
                    }
                    _ => {}
                }
                self.answer(done, Answer::Lease(reply));
            }
            Msg::Status(done) => {
                self.svc.handle_timeout(now);
                let regs: Vec<_> = self.svc.registrations().iter().map(|r| r.0).collect();
                let registrars: Vec<_> =
                    self.svc.discovered().iter().map(|r| r.id.to_string()).collect();
                let (announcements, why) =
                    self.d.announcements.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let recovered = self.d.recovered.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let v = serde_json::json!({
                    "shard": self.id,
                    "landlord": LandlordId(self.id).to_string(),
                    "announcements": announcements,
                    "multicast_unavailable": why,
                    "registrations": regs,
                    "discovered": registrars,
                    "journal_seq": self.svc.journal_seq(),
                    "recovered": recovered,
                });
                self.answer(done, Answer::Status(v));
            }
            Msg::Datagram(bytes) => {
                if let Err(e) = self.svc.handle_datagram(&bytes, now) {
                    self.d.stats.refused_datagrams.fetch_add(1, Relaxed);
                    tracing::debug!(shard = self.id, error = %e, "announcement refused");
                }
            }
            Msg::Unicast(id, result) => {
                match &result {
                    Ok(_) => self.d.stats.probes_ok.fetch_add(1, Relaxed),
                    Err(_) => self.d.stats.probes_failed.fetch_add(1, Relaxed),
                };
                self.svc.handle_unicast(id, result, now);
            }
            Msg::Delivered(event_id, sequence, failure) => match failure {
                None => {
                    self.d.stats.delivered.fetch_add(1, Relaxed);
                    self.svc.delivered(event_id, sequence, now);
                }
                Some(f) => {
                    match f.is_definite() {
                        true => self.d.stats.delivery_ended.fetch_add(1, Relaxed),
                        false => self.d.stats.delivery_failures.fetch_add(1, Relaxed),
                    };
                    self.svc.delivery_failed(event_id, sequence, f, now);
                }
            },
            Msg::Stop(_) => {}
        }
    }

    /// Probes and events the service hands out join what waits for the next write.
    fn collect(&mut self) {
        let now = now_ms();
        while let Some(p) = self.svc.poll_transmit(now) {
            self.hold(Held::Probe(p));
        }
        while let Some(e) = self.svc.poll_event(now) {
            let listener =
                self.svc.listener(RegistrationId(e.source.object)).unwrap_or(&[]).to_vec();
            self.hold(Held::Event(e, listener));
        }
        self.stats.live.store(self.svc.registrations().len() as u64, Relaxed);
        self.d.stats.registrations.store(self.svc.registrations().len() as u64, Relaxed);
        self.stats.journal_seq.store(self.svc.journal_seq(), Relaxed);
        self.d.stats.registrars.store(self.svc.discovered().len() as u64, Relaxed);
    }

    async fn dispatch(&mut self) -> Result<(), WriteError> {
        let n = self.next_job;
        let job = match self.planner.plan(&mut self.svc) {
            Some(j) => Some(j),
            None if self.gate.is_empty() => return Ok(()),
            // Nothing new to write, but another server may own the shard by now
            // (PostgreSQL): what waits leaves after a fence check, as a landlord's does.
            None if self.planner.needs_fence() => {
                let job = Job::Rows { frame: None, snapshot: None };
                Some((job, self.svc.journal_seq(), false))
            }
            None => None,
        };
        self.next_job += 1;
        match job {
            Some((job, durable, snap)) => {
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
        if snap {
            self.stats.snapshots.fetch_add(1, Relaxed);
        }
        self.release(n);
    }

    fn release(&mut self, n: u64) {
        let held: Vec<Held> = self.gate.release(n).collect();
        for h in held {
            match h {
                Held::Answer(done, a) => {
                    self.stats.requests.fetch_add(1, Relaxed);
                    let _ = done.send(a);
                }
                Held::Probe(p) => {
                    let me = self.me.clone();
                    tokio::spawn(async move {
                        let result = match unicast_probe(&p.locator, PROBE_ATTEMPT).await {
                            Ok(a) => Ok(UnicastResponse::from(&a)),
                            Err(e) => Err(LeaseError::Indefinite(format!("{}: {e}", p.locator))),
                        };
                        if let Some(tx) = me.upgrade() {
                            let _ = tx.send(Msg::Unicast(p.id, result)).await;
                        }
                    });
                }
                Held::Event(e, listener) => {
                    let (me, http) = (self.me.clone(), self.d.http.clone());
                    let allow = self.d.event_allow.clone();
                    tokio::spawn(async move {
                        let (event_id, sequence) = (e.event_id, e.sequence);
                        let failure = deliver(&http, &allow, e, &listener).await;
                        if let Some(tx) = me.upgrade() {
                            let _ = tx.send(Msg::Delivered(event_id, sequence, failure)).await;
                        }
                    });
                }
            }
        }
        self.stats
            .waiting_since_us
            .store(if self.gate.is_empty() { 0 } else { stamp_us() }, Relaxed);
    }

    /// A write failed: nothing waiting is acknowledged (no reply, event or probe leaves), and
    /// the actor ends.
    fn fail(mut self, e: WriteError, rx: &mut mpsc::Receiver<Msg>) -> Ended {
        let why = match &e {
            WriteError::Fenced => {
                format!("discovery shard {} is owned by another server now", self.id)
            }
            WriteError::Failed(m) => {
                format!("discovery shard {}: store write failed: {m}", self.id)
            }
        };
        for h in self.gate.release(u64::MAX) {
            if let Held::Answer(done, _) = h {
                let _ = done.send(Answer::Unavailable(why.clone()));
            }
        }
        rx.close();
        while let Ok(m) = rx.try_recv() {
            match m {
                Msg::Discovery(_, _, done)
                | Msg::Undecoded(_, _, done)
                | Msg::Lease(_, done)
                | Msg::Status(done) => {
                    let _ = done.send(Answer::Unavailable(why.clone()));
                }
                Msg::Stop(ack) => {
                    let _ = ack.send(());
                }
                _ => {}
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

/// Unicast discovery of `locator`: connects, reads the registrar's announcement datagram.
pub async fn unicast_probe(locator: &Locator, timeout: Duration) -> std::io::Result<Announcement> {
    let work = async {
        let mut s = tokio::net::TcpStream::connect((locator.host(), locator.port())).await?;
        let mut buf = Vec::with_capacity(256);
        (&mut s).take(ANNOUNCEMENT_MAX_BYTES as u64 + 1).read_to_end(&mut buf).await?;
        let _ = s.shutdown().await;
        Announcement::decode(&buf)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"))?
}

/// A registration's listener as the service keeps it: the encoding's tag and the URL.
fn listener_value(enc: Encoding, url: &str) -> Vec<u8> {
    let tag = if enc == Encoding::Json { "json" } else { "binary" };
    format!("{tag} {url}").into_bytes()
}

/// Pushes one event to its listener; `None` when the listener answered received. A listener
/// outside `allow` (kept before the list was narrowed) is a broken one: the registration ends.
async fn deliver(
    http: &HttpClient<crate::outbound::Guarded, Full<Bytes>>,
    allow: &crate::outbound::AllowList,
    e: RemoteDiscoveryEvent,
    listener: &[u8],
) -> Option<DeliveryFailure> {
    let listener = String::from_utf8_lossy(listener);
    let Some((tag, url)) = listener.split_once(' ').filter(|(_, u)| !u.is_empty()) else {
        return Some(DeliveryFailure::Indefinite("no listener".into()));
    };
    if let Err(why) = allow.check(url) {
        return Some(DeliveryFailure::BadObject(why));
    }
    let enc = if tag == "json" { Encoding::Json } else { Encoding::Binary };
    let req = match hyper::Request::post(url)
        .header(header::CONTENT_TYPE, crate::http::content_type(enc))
        .body(Full::new(Bytes::from(e.encode(enc))))
    {
        Ok(r) => r,
        Err(err) => return Some(DeliveryFailure::BadObject(format!("listener {url}: {err}"))),
    };
    let work = async {
        let resp = http.request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok::<_, String>((status, body))
    };
    match tokio::time::timeout(EVENT_ATTEMPT, work).await {
        Err(_) => Some(DeliveryFailure::Indefinite(format!("{url}: no answer in time"))),
        Ok(Err(err)) => Some(DeliveryFailure::Indefinite(format!("{url}: {err}"))),
        Ok(Ok((200, body))) => match EventReply::decode(&body, enc, &Default::default()) {
            Ok(r) if r.event_id == e.event_id && r.sequence == e.sequence => r.body.failure(),
            Ok(r) => Some(DeliveryFailure::Indefinite(format!(
                "{url} answered for event {} #{}",
                r.event_id, r.sequence
            ))),
            Err(err) => Some(DeliveryFailure::Indefinite(format!("{url}: bad answer: {err}"))),
        },
        Ok(Ok((status, _))) => Some(DeliveryFailure::Indefinite(format!("{url}: HTTP {status}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

fn wire_response(status: StatusCode, enc: Encoding, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, crate::http::content_type(enc))], body).into_response()
}

fn discovery_error(enc: Encoding, landlord: u64, id: u64, e: &LeaseError) -> Response {
    let reply = DiscoveryReply {
        id,
        landlord: LandlordId(landlord),
        body: DiscoveryReplyBody::Error(WireError::from(e)),
    };
    let w = WireError::from(e);
    wire_response(crate::reply::status_of_error(&w), enc, reply.encode(enc))
}

fn unavailable(app: &App, why: String) -> Response {
    app.stats.unavailable.fetch_add(1, Relaxed);
    crate::reply::unavailable(why)
}

/// `POST /discovery[?landlord=<16 hex digits>]`: one discovery request, answered once
/// durable. A register request names its listener in the `leasehold-listener` header (an
/// `http://` or `https://` URL within `--event-allow`), and needs the `grant` operation when
/// identities are on (its lease is cut to the identity's longest lease).
pub async fn endpoint(
    State(app): State<Arc<App>>,
    Query(q): Query<Vec<(String, String)>>,
    req: axum::extract::Request,
) -> Response {
    let enc = crate::http::encoding_of(req.headers());
    let Some(d) = app.discovery.clone() else {
        let e = LeaseError::InvalidArgument(
            "this server runs no discovery service (start it with --discovery-port)".into(),
        );
        return discovery_error(enc, 0, 0, &e);
    };
    let id = d.settings.id;
    match crate::reply::one_param(&q, "landlord") {
        Err(e) => return discovery_error(enc, id, 0, &e),
        Ok(Some(l)) => match crate::reply::parse_landlord(&l) {
            Err(e) => return discovery_error(enc, id, 0, &e),
            // 404, as for a landlord the cluster does not have.
            Ok(named) if named.0 != id => {
                return discovery_error(enc, named.0, 0, &LeaseError::UnknownLease)
            }
            Ok(_) => {}
        },
        Ok(None) => {}
    }
    let mut listener = listener_of(req.headers());
    let crate::access::Intake { body, caller, forwarded } =
        match crate::access::intake(&app, req).await {
            Ok(i) => i,
            Err(crate::access::Unread::TooLarge(max)) => {
                let e = LeaseError::Decode(format!("a message is at most {max} bytes"));
                return with_status(discovery_error(enc, id, 0, &e), StatusCode::PAYLOAD_TOO_LARGE);
            }
            Err(crate::access::Unread::Slow(e)) => return discovery_error(enc, id, 0, &e),
            Err(crate::access::Unread::Refused(r)) => {
                return (r.status(), r.message() + "\n").into_response()
            }
        };
    if forwarded {
        // A server forwarded it to this owner: the listener is in the query, which the
        // forwarding proof covers (a header is not).
        listener = match crate::reply::one_param(&q, FORWARDED_LISTENER) {
            Ok(l) => l,
            Err(e) => return discovery_error(enc, id, 0, &e),
        };
    }
    let handle = d.handle().filter(|h| !h.is_closed());
    let answer = match DiscoveryRequest::decode(&body, enc, &app.config.limits) {
        Err(_) => match &handle {
            Some(h) => h.ask(|done| Msg::Undecoded(body, enc, done)).await,
            // The owner answers it with its error.
            None => {
                return forward_or_unavailable(&app, id, forwarded, enc, body, &caller, None).await
            }
        },
        Ok(mut req) => {
            let mut keep = None;
            if let DiscoveryRequestBody::Register { duration, .. } = &mut req.body {
                if let Some(who) = &caller {
                    if !who.may(crate::auth::Op::Grant) {
                        let msg = format!("identity {:?} may not grant (register)", who.name);
                        let r = discovery_error(enc, id, req.id, &LeaseError::LeaseDenied(msg));
                        return with_status(r, StatusCode::FORBIDDEN);
                    }
                    if let Some(max) = who.max_lease_ms {
                        if *duration == leasehold::ANY
                            || *duration == leasehold::FOREVER
                            || *duration > max
                        {
                            *duration = max;
                        }
                    }
                }
                match check_listener(listener.as_deref()) {
                    Ok(url) => keep = Some(listener_value(enc, url)),
                    Err(e) => return discovery_error(enc, id, req.id, &e),
                }
                if let Err(why) = d.event_allow.check(listener.as_deref().unwrap_or_default()) {
                    let r = discovery_error(enc, id, req.id, &LeaseError::LeaseDenied(why));
                    return with_status(r, StatusCode::FORBIDDEN);
                }
            }
            match &handle {
                Some(h) => h.ask(|done| Msg::Discovery(req, keep, done)).await,
                None => {
                    // PostgreSQL: the shard's owner answers (what is forwarded is what was
                    // decided here: a duration cut to the identity's longest lease).
                    let body = Bytes::from(req.encode(enc));
                    let l = keep.as_ref().and(listener.as_deref());
                    return forward_or_unavailable(&app, id, forwarded, enc, body, &caller, l)
                        .await;
                }
            }
        }
    };
    match answer {
        Answer::Discovery(reply) => {
            let status = match &reply.body {
                DiscoveryReplyBody::Error(e) => crate::reply::status_of_error(e),
                _ => StatusCode::OK,
            };
            wire_response(status, enc, reply.encode(enc))
        }
        Answer::Unavailable(why) => unavailable(&app, why),
        _ => unavailable(&app, "a lease answer to a discovery request".into()),
    }
}

/// The query parameter a forwarded register carries its listener in.
const FORWARDED_LISTENER: &str = "listener";

/// A discovery request for the discovery shard `id`, which this server does not serve:
/// forwarded to its owner (PostgreSQL, unless it was forwarded here already), else 503.
async fn forward_or_unavailable(
    app: &App,
    id: u64,
    forwarded: bool,
    enc: Encoding,
    body: Bytes,
    caller: &Option<Arc<crate::auth::Identity>>,
    listener: Option<&str>,
) -> Response {
    if !forwarded {
        let who = caller.as_ref().map(|c| c.name.as_str());
        let extra = listener.map(|l| format!("{FORWARDED_LISTENER}={}", percent_encode(l)));
        if let Some(r) = app.forward_query("/discovery", id, enc, body, who, extra).await {
            return r;
        }
    }
    unavailable(app, app.unserved_why(id))
}

/// `s` with every byte but the unreserved ones (RFC 3986) percent-encoded.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `r` under status `s` (a refusal by identity, a body over the limit: the reply's code alone
/// would say 409 or 400).
fn with_status(mut r: Response, s: StatusCode) -> Response {
    *r.status_mut() = s;
    r
}

fn listener_of(headers: &HeaderMap) -> Option<String> {
    headers.get(LISTENER_HEADER).and_then(|v| v.to_str().ok()).map(|s| s.trim().to_string())
}

/// A register request's listener: an `http://` or `https://` URL (events are POSTed to it).
fn check_listener(url: Option<&str>) -> Result<&str, LeaseError> {
    let Some(url) = url.filter(|u| !u.is_empty()) else {
        return Err(LeaseError::InvalidArgument(format!(
            "a registration needs its listener: the URL events are POSTed to, in the \
             {LISTENER_HEADER} header"
        )));
    };
    if !(url.starts_with("http://") || url.starts_with("https://"))
        || url.parse::<hyper::Uri>().is_err()
    {
        return Err(LeaseError::InvalidArgument(format!(
            "the listener {:?} is not an http:// or https:// URL",
            url.chars().take(200).collect::<String>()
        )));
    }
    Ok(url)
}

/// `POST /lease?landlord=<the discovery id>`: a renewal or cancel of registration leases
/// (called by [`crate::http`] once it has read and authorized the request; `body` is what it
/// decided, forwarded to the shard's owner when this server does not serve it, unless it was
/// `forwarded` here already).
pub(crate) async fn lease(
    app: &App,
    request: Request,
    enc: Encoding,
    body: Bytes,
    forwarded: bool,
    who: Option<&str>,
) -> Response {
    let cookie = match &request.body {
        leasehold::RequestBody::Renew { cookie, .. }
        | leasehold::RequestBody::Cancel { cookie } => Some(*cookie),
        _ => None,
    };
    let Some(d) = app.discovery.clone() else {
        return unavailable(app, "no discovery service".into());
    };
    let id = d.settings.id;
    let why = match d.handle().filter(|h| !h.is_closed()) {
        Some(h) => match h.ask(|done| Msg::Lease(request, done)).await {
            Answer::Lease(reply) => {
                let reply = crate::reply::explain(reply, cookie);
                return crate::reply::wire(&reply, enc, Some(&app.config.advertise));
            }
            Answer::Unavailable(why) => why,
            _ => "a discovery answer to a lease request".into(),
        },
        None => app.unserved_why(id),
    };
    if !forwarded {
        if let Some(r) = app.forward(id, Some(id), enc, body, who).await {
            return r;
        }
    }
    unavailable(app, why)
}

/// `GET /discovery/status`: what the discovery service holds (JSON): its id, how
/// announcements arrive, its registrations, the registrars it has discovered, its journal
/// position and what opening its store found.
pub async fn status(State(app): State<Arc<App>>) -> Response {
    let Some(d) = app.discovery.clone() else {
        return (StatusCode::NOT_FOUND, "this server runs no discovery service\n").into_response();
    };
    let Some(h) = d.handle() else { return unavailable(&app, app.unserved_why(d.settings.id)) };
    match h.ask(Msg::Status).await {
        Answer::Status(v) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_vec(&v).unwrap_or_default(),
        )
            .into_response(),
        Answer::Unavailable(why) => unavailable(&app, why),
        _ => unavailable(&app, "an unexpected answer".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `[discovery]` table as docs/discovery-service.md and deploy/server.example.toml
    /// write it, under the flags.
    #[test]
    fn settings_from_the_file_and_the_flags() {
        let file: DiscoveryFlags = toml::from_str(
            "port = 4160\nannounce = \"multicast\"\ninterface = \"10.0.0.5\"\n\
             max_registration_ms = 600000\nevent_retry_ms = [500, 2000]\n",
        )
        .unwrap();
        let flags = DiscoveryFlags { discovery_port: Some(4161), ..Default::default() };
        let s = DiscoverySettings::load(flags, file, 16).unwrap().unwrap();
        assert_eq!((s.port, s.announce, s.id), (4161, Announce::Multicast, DEFAULT_ID));
        assert_eq!(s.interface, Ipv4Addr::new(10, 0, 0, 5));
        assert_eq!(s.group, DEFAULT_GROUP);
        assert_eq!(
            (s.max_registration_ms, s.event_retry_ms.as_slice()),
            (600_000, &[500, 2000][..])
        );
        let none = DiscoverySettings::load(Default::default(), Default::default(), 1);
        assert!(none.unwrap().is_none());
        let bad =
            |f: DiscoveryFlags| DiscoverySettings::load(f, Default::default(), 4).unwrap_err();
        let port = Some(1);
        assert!(bad(DiscoveryFlags {
            discovery_port: port,
            discovery_announce: Some("x".into()),
            ..Default::default()
        })
        .contains("auto, multicast or unicast"));
        assert!(bad(DiscoveryFlags {
            discovery_port: port,
            discovery_group: Some(Ipv4Addr::LOCALHOST),
            ..Default::default()
        })
        .contains("multicast address"));
        assert!(bad(DiscoveryFlags {
            discovery_port: port,
            discovery_id: Some(4),
            ..Default::default()
        })
        .contains("above the landlord shards"));
        assert!(toml::from_str::<DiscoveryFlags>("prot = 1").is_err());
    }
}
