//! Quarantine: shards whose stored state was refused, and the operator's way back.
//!
//! A server that finds a shard's stored state refused when it opens or takes it over (a
//! damaged frame, a missing journal row, a snapshot that does not load, fewer records than
//! the recorded durable tip) never serves it and never starts it afresh: it marks the shard
//! *quarantined* where every server sees it, logs it at ERROR with the reason, counts it in
//! `/metrics` (`leasehold_quarantined_shards`, `leasehold_shard_state{state="quarantined"}`)
//! and names it in `/readyz`. The mark is
//!
//! - with the file store, a file `QUARANTINE` in the shard's directory (JSON: reason, time,
//!   server), which a restart finds too;
//! - with PostgreSQL, the columns `quarantine`, `quarantined_at` and `quarantined_by` of the
//!   shard's row in `leasehold_shards` (the row also loses its owner, and no server takes a
//!   quarantined shard).
//!
//! Nothing here changes a shard unless asked explicitly. The functions below are what the
//! `leasehold-server quarantine ...` subcommands (and later the `leasehold` CLI) call:
//!
//! - [`list`]: the quarantined shards and why;
//! - [`inspect`]: what is stored (snapshot, segments or rows, the durable tip), where it
//!   stops being readable, and exactly what a repair would drop;
//! - [`repair`]: truncates the shard at the damage: keeps every record before it, drops
//!   everything after (and says what), writes the result as a new snapshot;
//! - [`restore`]: replaces the shard's state with a snapshot (from a backup);
//! - [`release`]: checks that the shard now loads and clears the mark; a server takes it at
//!   its next round (file store: within a second; PostgreSQL: within an ownership round).
//!
//! A repair or restore may drop records that holders were told about: leases granted after
//! the damage are gone (their holders get "unknown lease" and grant again), renewals after it
//! are undone (a lease ends at its earlier expiration), cancels after it are undone. Both
//! give the shard a fresh cookie key (the seed in its snapshot), so no cookie of a dropped
//! grant is ever issued again for another lease. The shard's quarantine stays until
//! [`release`].
//!
//! Every kind of shard is read ([`ShardState`]): landlords, renewal-service shards and the
//! discovery shard. [`inspect`] and [`release`] work for all three; [`repair`] and
//! [`restore`] only for landlords, the one kind whose cookie key they know how to replace (a
//! renewal or discovery shard truncated with its old key could hand a dropped set's or
//! registration's cookie to somebody else): put such a shard's directory or rows back from a
//! backup, then release it.

use std::fmt;
use std::path::{Path, PathBuf};

use leasehold::discovery::DiscoveryService;
use leasehold::journal::{read_snapshot, scan_prefix, write_snapshot, Break, Frame, Journaled};
use leasehold::service::RenewalService;
use leasehold::store::{FileOp, SNAPSHOT_FILE, SNAPSHOT_TMP};
use leasehold::{LandlordId, PolicySpec};
use leasehold_store::Dir;
use serde::{Deserialize, Serialize};

use crate::files::{read_tip, shard_dir, tip_bytes, TIP_FILE};
use crate::shard::LL;

/// A shard's stored state, of whichever kind its snapshot says.
pub enum ShardState {
    /// A landlord shard.
    Landlord(Box<LL>),
    /// A renewal-service shard.
    Renewal(Box<RenewalService>),
    /// The discovery shard.
    Discovery(Box<DiscoveryService>),
}

impl ShardState {
    /// Loads a snapshot of any kind (checked as a server checks it when it opens the shard).
    pub fn from_snapshot(bytes: &[u8]) -> Result<ShardState, String> {
        use leasehold::journal::{KIND_DISCOVERY, KIND_LANDLORD, KIND_RENEWAL_SERVICE};
        let kind = read_snapshot(bytes).map_err(|e| e.to_string())?.kind;
        match kind {
            KIND_LANDLORD => LL::from_snapshot_bytes(bytes, any_policy())
                .map(|l| ShardState::Landlord(Box::new(l))),
            KIND_RENEWAL_SERVICE => {
                RenewalService::from_snapshot_bytes(bytes).map(|s| ShardState::Renewal(Box::new(s)))
            }
            KIND_DISCOVERY => DiscoveryService::from_snapshot_bytes(bytes)
                .map(|s| ShardState::Discovery(Box::new(s))),
            k => return Err(format!("a snapshot of kind {k}, which this build does not know")),
        }
        .map_err(|e| e.to_string())
    }

    /// `landlord`, `renewal` or `discovery`.
    pub fn kind(&self) -> &'static str {
        match self {
            ShardState::Landlord(_) => "landlord",
            ShardState::Renewal(_) => "renewal",
            ShardState::Discovery(_) => "discovery",
        }
    }

    /// The landlord id it grants its leases (leases, sets, registrations) as.
    pub fn id(&self) -> LandlordId {
        match self {
            ShardState::Landlord(l) => l.id(),
            ShardState::Renewal(r) => r.id(),
            ShardState::Discovery(d) => d.id(),
        }
    }

    /// The last journal record it includes.
    pub fn journal_seq(&self) -> u64 {
        match self {
            ShardState::Landlord(l) => l.journal_seq(),
            ShardState::Renewal(r) => r.journal_seq(),
            ShardState::Discovery(d) => d.journal_seq(),
        }
    }

    /// Applies one journal frame.
    pub fn replay(&mut self, f: &Frame<'_>) -> leasehold::Result<u64> {
        match self {
            ShardState::Landlord(l) => l.replay(f),
            ShardState::Renewal(r) => r.replay(f),
            ShardState::Discovery(d) => d.replay(f),
        }
    }

    /// What it holds: leases (landlord), client leases (renewal), registrations (discovery).
    pub fn len(&self) -> usize {
        match self {
            ShardState::Landlord(l) => l.len(),
            ShardState::Renewal(r) => r.manager().len(),
            ShardState::Discovery(d) => d.registrations().len(),
        }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its snapshot; returns the last record it includes.
    pub fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64 {
        match self {
            ShardState::Landlord(l) => l.snapshot_bytes(out),
            ShardState::Renewal(r) => Journaled::snapshot_bytes(&mut **r, out),
            ShardState::Discovery(d) => Journaled::snapshot_bytes(&mut **d, out),
        }
    }
}

/// The marker file of a quarantined shard (file store).
pub const MARKER_FILE: &str = "QUARANTINE";

/// Where the shards are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The embedded file store's directory (`--data`).
    Files(PathBuf),
    /// PostgreSQL (`--store`).
    Postgres(String),
}

/// A quarantined shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Its number.
    pub shard: u64,
    /// Why its stored state was refused.
    pub reason: String,
    /// When (RFC 3339 with PostgreSQL; Unix milliseconds with the file store).
    pub at: String,
    /// The server that found it.
    pub by: String,
}

fn now_unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// The quarantine mark of shard `id` under `data`, if it has one.
pub fn files_marker(data: &Path, id: u64) -> Option<Mark> {
    let path = shard_dir(data, id).join(MARKER_FILE);
    let bytes = std::fs::read(&path).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| Mark {
        shard: id,
        reason: format!("{} is unreadable ({e}); was quarantined", path.display()),
        at: String::new(),
        by: String::new(),
    }))
}

/// Marks shard `id` under `data` quarantined (written, synced, renamed into place).
pub fn mark_files(data: &Path, id: u64, reason: &str, by: &str) -> std::io::Result<()> {
    let dir = shard_dir(data, id);
    std::fs::create_dir_all(&dir)?;
    let mark = Mark {
        shard: id,
        reason: reason.to_string(),
        at: now_unix_ms().to_string(),
        by: by.into(),
    };
    let tmp = dir.join(format!("{MARKER_FILE}.tmp"));
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec_pretty(&mark).expect("plain data"))?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(MARKER_FILE))?;
    std::fs::File::open(&dir)?.sync_all()
}

/// One stored piece of a shard's log: a segment file, or a journal row.
#[derive(Debug, Clone, Serialize)]
pub struct Piece {
    /// What it is (`log-....lhj`, or `row first_seq=.. last_seq=.. epoch=..`).
    pub name: String,
    /// Its size.
    pub bytes: usize,
    /// Valid frames in it (up to the first damage).
    pub frames: usize,
    /// Its first and last record, as far as readable.
    pub records: Option<(u64, u64)>,
}

/// What [`inspect`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    /// The shard.
    pub shard: u64,
    /// Its quarantine mark, if it has one.
    pub mark: Option<Mark>,
    /// The last record the snapshot includes, if it loads.
    pub snapshot_seq: Option<u64>,
    /// Bytes of the snapshot, if there is one.
    pub snapshot_bytes: Option<usize>,
    /// The log, in order.
    pub pieces: Vec<Piece>,
    /// The last record recorded as durable (file store: the tip file; PostgreSQL: the row's
    /// `durable_seq`), if known.
    pub durable_tip: Option<u64>,
    /// The last record that loads without a break (snapshot plus the log before any damage).
    pub readable_to: Option<u64>,
    /// The first damage, if any: the shard loads as it is when this is `None`.
    pub damage: Option<String>,
    /// What a repair (truncation at the damage) would drop, one line each.
    pub dropped: Vec<String>,
    /// Records acknowledged as durable that no repair can bring back (first, last), if any.
    pub lost: Option<(u64, u64)>,
    /// Whether [`repair`] can truncate at the damage (it cannot without a snapshot that
    /// loads: then only [`restore`] helps).
    pub repairable: bool,
    /// Leases held in the state a repair would keep (client leases of a renewal shard,
    /// registrations of the discovery shard).
    pub leases_kept: Option<usize>,
    /// The shard's kind (`landlord`, `renewal`, `discovery`), once its snapshot loads.
    pub kind: Option<&'static str>,
}

impl fmt::Display for Inspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "shard {}", self.shard)?;
        match &self.mark {
            Some(m) => writeln!(f, "  quarantined: {} (by {}, at {})", m.reason, m.by, m.at)?,
            None => writeln!(f, "  not quarantined")?,
        }
        match (self.snapshot_bytes, self.snapshot_seq) {
            (Some(b), Some(s)) => writeln!(
                f,
                "  snapshot: {b} bytes, up to record {s} ({} shard)",
                self.kind.unwrap_or("unknown")
            )?,
            (Some(b), None) => writeln!(f, "  snapshot: {b} bytes, refused")?,
            (None, _) => writeln!(f, "  snapshot: none")?,
        }
        for p in &self.pieces {
            let recs = p.records.map(|(a, b)| format!("records {a}..={b}")).unwrap_or_default();
            writeln!(f, "  {}: {} bytes, {} frames {recs}", p.name, p.bytes, p.frames)?;
        }
        if let Some(t) = self.durable_tip {
            writeln!(f, "  durable tip: record {t}")?;
        }
        if let Some(r) = self.readable_to {
            writeln!(f, "  readable up to record {r}")?;
        }
        match &self.damage {
            None => writeln!(f, "  no damage: the shard loads as it is")?,
            Some(d) => {
                writeln!(f, "  damage: {d}")?;
                if self.repairable {
                    writeln!(
                        f,
                        "  a repair keeps records up to {} ({} leases) and drops:",
                        self.readable_to.unwrap_or(0),
                        self.leases_kept.unwrap_or(0)
                    )?;
                    for d in &self.dropped {
                        writeln!(f, "    - {d}")?;
                    }
                } else if matches!(self.kind, Some("renewal" | "discovery")) {
                    writeln!(
                        f,
                        "  a {} shard is not repaired or restored here: put its directory (or rows) back from a backup, then release it",
                        self.kind.unwrap_or_default()
                    )?;
                } else {
                    writeln!(f, "  cannot be repaired by truncation: restore it from a snapshot")?;
                }
                if let Some((a, b)) = self.lost {
                    writeln!(f, "  acknowledged records lost for good: {a}..={b}")?;
                }
            }
        }
        Ok(())
    }
}

/// What [`repair`] or [`restore`] changed.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The shard.
    pub shard: u64,
    /// The last record of its new state (its new snapshot's).
    pub kept_to: u64,
    /// Leases held in the new state.
    pub leases: usize,
    /// What was dropped, one line each.
    pub dropped: Vec<String>,
    /// Records acknowledged as durable that are gone (first, last), if any.
    pub lost: Option<(u64, u64)>,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "shard {}: now a snapshot up to record {} with {} leases (new cookie key)",
            self.shard, self.kept_to, self.leases
        )?;
        if self.dropped.is_empty() {
            writeln!(f, "  nothing dropped")?;
        }
        for d in &self.dropped {
            writeln!(f, "  dropped: {d}")?;
        }
        if let Some((a, b)) = self.lost {
            writeln!(
                f,
                "  records {a}..={b} had been acknowledged: their grants, renewals and cancels are undone"
            )?;
        }
        writeln!(
            f,
            "  still quarantined: `leasehold-server quarantine release --shard {}` to serve it again",
            self.shard
        )
    }
}

/// A piece of a shard's log as stored: its name, its bytes, and the records it says it holds
/// (a journal row's `first_seq` and `last_seq`; `None` for a segment file).
type Stored = (String, Vec<u8>, Option<(u64, u64)>);

/// A landlord loaded as far as the stored state allows.
struct Analysis {
    inspection: Inspection,
    /// The state a repair keeps (when repairable).
    kept: Option<ShardState>,
}

fn any_policy() -> Box<dyn leasehold::LeasePolicy> {
    // Replay never consults the policy (records carry outcomes): any will do.
    PolicySpec::Bounded { max: 60_000, default: 30_000 }.build().expect("a valid policy")
}

fn seq_range(frames: &[leasehold::journal::Frame<'_>]) -> Option<(u64, u64)> {
    Some((frames.first()?.seq, frames.last().map(|f| f.seq + u64::from(f.count) - 1)?))
}

fn describe_later(bytes: &[u8], brk: &Break) -> String {
    let later: Vec<String> = brk
        .later_frames
        .iter()
        .filter_map(|&at| leasehold::journal::frame_at(bytes, at))
        .map(|f| format!("{}..={}", f.seq, f.seq + u64::from(f.count) - 1))
        .collect();
    if later.is_empty() {
        String::new()
    } else {
        format!(" (readable frames after it hold records {})", later.join(", "))
    }
}

/// Loads `snapshot` plus `pieces` (in order: name, bytes, the record range a row declares)
/// as far as possible. `torn_tail_ok`: a cut-short last frame of the last piece is a torn
/// write (never acknowledged), not damage.
fn analyze(
    shard: u64,
    snapshot: Option<&[u8]>,
    pieces: &[Stored],
    tip: Option<u64>,
    torn_tail_ok: bool,
) -> Analysis {
    let mut ins = Inspection {
        shard,
        mark: None,
        snapshot_seq: None,
        snapshot_bytes: snapshot.map(<[u8]>::len),
        pieces: Vec::new(),
        durable_tip: tip,
        readable_to: None,
        damage: None,
        dropped: Vec::new(),
        lost: None,
        repairable: false,
        leases_kept: None,
        kind: None,
    };
    for (name, bytes, _) in pieces {
        let (frames, _) = scan_prefix(bytes);
        ins.pieces.push(Piece {
            name: name.clone(),
            bytes: bytes.len(),
            frames: frames.len(),
            records: seq_range(&frames),
        });
    }
    let mut ll: ShardState = match snapshot {
        None if pieces.is_empty() => {
            // A shard never written: nothing stored, nothing to refuse (unless a tip says
            // records were durable).
            if let Some(t) = tip.filter(|&t| t > 0) {
                ins.damage = Some(format!("nothing is stored, but record {t} was durable"));
                ins.lost = Some((1, t));
            }
            return Analysis { inspection: ins, kept: None };
        }
        None => {
            ins.damage = Some(
                "the snapshot is missing (it holds the cookie seed): the log cannot be replayed"
                    .into(),
            );
            return Analysis { inspection: ins, kept: None };
        }
        Some(bytes) => match ShardState::from_snapshot(bytes) {
            Ok(ll) if ll.id() == LandlordId(shard) => ll,
            Ok(ll) => {
                ins.damage =
                    Some(format!("the snapshot holds {} {}, not {shard}", ll.kind(), ll.id().0));
                return Analysis { inspection: ins, kept: None };
            }
            Err(e) => {
                ins.damage = Some(format!("the snapshot is refused: {e}"));
                return Analysis { inspection: ins, kept: None };
            }
        },
    };
    ins.snapshot_seq = Some(ll.journal_seq());
    ins.kind = Some(ll.kind());
    // Truncation needs a fresh cookie key, which only a landlord's snapshot is given here.
    ins.repairable = matches!(ll, ShardState::Landlord(_));
    let n = pieces.len();
    'pieces: for (i, (name, bytes, declared)) in pieces.iter().enumerate() {
        if declared.is_some_and(|(_, b)| b <= ll.journal_seq()) {
            // A row the snapshot covers: never read again.
            continue;
        }
        let (frames, brk) = scan_prefix(bytes);
        if let (Some((a, b)), Some(r)) = (declared, seq_range(&frames)) {
            if (*a, *b) != r || brk.is_some() {
                ins.damage = Some(format!(
                    "{name}: its frame holds records {}..={} (or is damaged)",
                    r.0, r.1
                ));
                ins.dropped.push(format!("{name} and everything after it"));
                for (later, _, _) in &pieces[i + 1..] {
                    ins.dropped.push(later.clone());
                }
                break 'pieces;
            }
        }
        for (j, f) in frames.iter().enumerate() {
            let last = f.seq + u64::from(f.count) - 1;
            if last <= ll.journal_seq() {
                continue;
            }
            let next = ll.journal_seq() + 1;
            let problem = if f.seq > next {
                Some(format!(
                    "records {next}..={} are missing before {name} (it starts at record {})",
                    f.seq - 1,
                    f.seq
                ))
            } else {
                ll.replay(f).err().map(|e| format!("{name}: record {} does not apply: {e}", f.seq))
            };
            if let Some(p) = problem {
                ins.damage = Some(p);
                let rest: Vec<String> = frames[j..]
                    .iter()
                    .map(|f| format!("{}..={}", f.seq, f.seq + u64::from(f.count) - 1))
                    .collect();
                ins.dropped.push(format!(
                    "{name} from byte {}: frames with records {}",
                    f.offset,
                    rest.join(", ")
                ));
                for (later, _, _) in &pieces[i + 1..] {
                    ins.dropped.push(later.clone());
                }
                break 'pieces;
            }
        }
        if let Some(brk) = brk {
            let torn = torn_tail_ok && i + 1 == n && brk.later_frames.is_empty();
            if torn {
                ins.dropped.push(format!(
                    "{name} from byte {}: a torn last write ({}), never acknowledged",
                    brk.offset, brk.why
                ));
                continue;
            }
            ins.damage = Some(format!("{name} is damaged at byte {}: {}", brk.offset, brk.why));
            ins.dropped.push(format!(
                "{name} from byte {} ({} bytes){}",
                brk.offset,
                bytes.len() - brk.offset,
                describe_later(bytes, &brk)
            ));
            for (later, _, _) in &pieces[i + 1..] {
                ins.dropped.push(later.clone());
            }
            break;
        }
    }
    let kept = ll.journal_seq();
    ins.readable_to = Some(kept);
    ins.leases_kept = Some(ll.len());
    if let Some(t) = tip.filter(|&t| t > kept) {
        ins.lost = Some((kept + 1, t));
        if ins.damage.is_none() {
            ins.damage = Some(format!(
                "records {}..={t} are missing: the stored log ends at record {kept}, but record {t} was durable",
                kept + 1
            ));
        }
    }
    Analysis { inspection: ins, kept: Some(ll) }
}

/// Why a repair cannot truncate `shard`.
fn not_repairable(shard: u64, ins: &Inspection) -> String {
    match ins.kind {
        Some(k @ ("renewal" | "discovery")) => format!(
            "shard {shard} is a {k} shard: it is not repaired by truncation here (its cookie key \
             cannot be replaced, and a dropped set or registration's cookie could be handed out \
             again); put its directory (or rows) back from a backup, then release it"
        ),
        _ => format!(
            "shard {shard} cannot be repaired by truncation ({}): restore it from a snapshot",
            ins.damage.clone().unwrap_or_default()
        ),
    }
}

/// A snapshot of `ll` with a fresh cookie key (the seed, bytes 8..40 of a landlord
/// snapshot's body), checked by loading it back.
fn rekeyed_snapshot(ll: &mut LL, shard: u64) -> Result<(Vec<u8>, u64, usize), String> {
    let mut bytes = Vec::new();
    ll.snapshot_bytes(&mut bytes);
    rekey(&bytes, shard)
}

/// `snapshot` with a fresh cookie key; returns it with its last record and lease count.
fn rekey(snapshot: &[u8], shard: u64) -> Result<(Vec<u8>, u64, usize), String> {
    let snap = read_snapshot(snapshot).map_err(|e| format!("snapshot refused: {e}"))?;
    if snap.kind != leasehold::journal::KIND_LANDLORD {
        return Err(format!(
            "a snapshot of kind {} is not a landlord's: renewal and discovery shards are not \
             restored here; put the shard's directory (or rows) back from a backup, then release it",
            snap.kind
        ));
    }
    let mut body = snap.body.to_vec();
    if body.len() < 40 {
        return Err("snapshot refused: too short for a landlord's".into());
    }
    let seed = crate::files::fresh_seed();
    body[8..40].copy_from_slice(&seed);
    let mut out = Vec::with_capacity(snapshot.len());
    write_snapshot(&mut out, snap.kind, snap.version, snap.seq, &body);
    let ll = LL::from_snapshot_bytes(&out, any_policy())
        .map_err(|e| format!("snapshot refused: {e}"))?;
    if ll.id() != LandlordId(shard) {
        return Err(format!("the snapshot holds landlord {}, not shard {shard}", ll.id().0));
    }
    Ok((out, snap.seq, ll.len()))
}

/// The quarantined shards.
pub async fn list(target: &Target) -> Result<Vec<Mark>, String> {
    match target {
        Target::Files(data) => {
            let mut out = Vec::new();
            let entries =
                std::fs::read_dir(data).map_err(|e| format!("{}: {e}", data.display()))?;
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let Some(id) = name.strip_prefix("shard-").and_then(|n| n.parse::<u64>().ok())
                else {
                    continue;
                };
                if let Some(m) = files_marker(data, id) {
                    out.push(m);
                }
            }
            out.sort_by_key(|m| m.shard);
            Ok(out)
        }
        Target::Postgres(url) => pg::list(url).await,
    }
}

/// What shard `shard` holds and what a repair would do (changes nothing).
pub async fn inspect(target: &Target, shard: u64) -> Result<Inspection, String> {
    match target {
        Target::Files(data) => {
            let (_dir, a) = files_analysis(data, shard)?;
            Ok(a.inspection)
        }
        Target::Postgres(url) => Ok(pg::analysis(url, shard).await?.inspection),
    }
}

/// Truncates quarantined shard `shard` at its damage: keeps every record before it, drops
/// the rest, and writes the result as a new snapshot with a fresh cookie key. Refuses a
/// shard that is not quarantined, and one that has no damage (nothing to repair).
pub async fn repair(target: &Target, shard: u64) -> Result<Change, String> {
    match target {
        Target::Files(data) => {
            let (mut dir, a) = files_analysis(data, shard)?;
            let ins = a.inspection;
            if ins.mark.is_none() {
                return Err(format!("shard {shard} is not quarantined: nothing is repaired"));
            }
            let Some(ShardState::Landlord(mut ll)) = a.kept.filter(|_| ins.repairable) else {
                return Err(not_repairable(shard, &ins));
            };
            if ins.damage.is_none() {
                return Err(format!("shard {shard} has no damage: release it instead"));
            }
            let (bytes, seq, leases) = rekeyed_snapshot(&mut ll, shard)?;
            files_replace(&mut dir, bytes, seq)?;
            Ok(Change { shard, kept_to: seq, leases, dropped: ins.dropped, lost: ins.lost })
        }
        Target::Postgres(url) => pg::repair(url, shard).await,
    }
}

/// Replaces quarantined shard `shard`'s state with `snapshot` (a landlord snapshot of this
/// shard, e.g. the `snapshot` file of a backup of its directory), with a fresh cookie key;
/// drops its log.
pub async fn restore(target: &Target, shard: u64, snapshot: &[u8]) -> Result<Change, String> {
    let (bytes, seq, leases) = rekey(snapshot, shard)?;
    match target {
        Target::Files(data) => {
            let (mut dir, a) = files_analysis(data, shard)?;
            if a.inspection.mark.is_none() {
                return Err(format!("shard {shard} is not quarantined: nothing is restored"));
            }
            let dropped = restore_dropped(&a.inspection, seq);
            let lost = a.inspection.durable_tip.filter(|&t| t > seq).map(|t| (seq + 1, t));
            files_replace(&mut dir, bytes, seq)?;
            Ok(Change { shard, kept_to: seq, leases, dropped, lost })
        }
        Target::Postgres(url) => pg::restore(url, shard, bytes, seq, leases).await,
    }
}

fn restore_dropped(ins: &Inspection, seq: u64) -> Vec<String> {
    let mut dropped: Vec<String> = ins
        .snapshot_seq
        .map(|s| format!("the old snapshot (up to record {s})"))
        .into_iter()
        .collect();
    dropped.extend(ins.pieces.iter().map(|p| {
        let recs = p.records.map(|(a, b)| format!(" (records {a}..={b})")).unwrap_or_default();
        format!("{}{recs}", p.name)
    }));
    if let Some(r) = ins.readable_to.filter(|&r| r > seq) {
        dropped.push(format!("records {}..={r} that were readable", seq + 1));
    }
    dropped
}

/// Clears shard `shard`'s quarantine once its stored state loads (after a repair or a
/// restore, or if the damage was mended by hand); a server takes it back at its next round.
pub async fn release(target: &Target, shard: u64) -> Result<(), String> {
    match target {
        Target::Files(data) => {
            let (dir, a) = files_analysis(data, shard)?;
            if a.inspection.mark.is_none() {
                return Err(format!("shard {shard} is not quarantined"));
            }
            if let Some(d) = a.inspection.damage {
                return Err(format!(
                    "shard {shard} still does not load ({d}): repair or restore it first"
                ));
            }
            let path = dir.path().to_path_buf();
            drop(dir);
            std::fs::remove_file(path.join(MARKER_FILE))
                .and_then(|_| std::fs::File::open(&path)?.sync_all())
                .map_err(|e| format!("{}: {e}", path.display()))
        }
        Target::Postgres(url) => pg::release(url, shard).await,
    }
}

/// Opens shard `shard`'s directory (taking its lock: a server that serves it holds it) and
/// analyses it.
fn files_analysis(data: &Path, shard: u64) -> Result<(Dir, Analysis), String> {
    let path = shard_dir(data, shard);
    if !path.is_dir() {
        return Err(format!("{}: no such shard directory", path.display()));
    }
    let dir = Dir::open(&path).map_err(|e| {
        format!(
            "{}: {e} (a server that serves the shard holds it: it is not quarantined)",
            path.display()
        )
    })?;
    let mut files = dir.read().map_err(|e| format!("{}: {e}", path.display()))?;
    files.sort();
    let snapshot = files.iter().find(|(n, _)| n == SNAPSHOT_FILE).map(|(_, b)| b.as_slice());
    let tip = files.iter().find(|(n, _)| n == TIP_FILE).and_then(|(_, b)| read_tip(b));
    let pieces: Vec<Stored> = files
        .iter()
        .filter(|(n, _)| n.starts_with("log-") && n.ends_with(".lhj"))
        .map(|(n, b)| (n.clone(), b.clone(), None))
        .collect();
    let mut a = analyze(shard, snapshot, &pieces, tip, true);
    a.inspection.mark = files_marker(data, shard);
    Ok((dir, a))
}

/// Makes `snapshot` (last record `seq`) the shard's whole state: replaces the snapshot,
/// removes every log segment, records `seq` as the durable tip (synced).
fn files_replace(dir: &mut Dir, snapshot: Vec<u8>, seq: u64) -> Result<(), String> {
    let path = dir.path().to_path_buf();
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let files = dir.read().map_err(err)?;
    let mut ops = vec![FileOp::Replace { file: SNAPSHOT_FILE.into(), bytes: snapshot }];
    for (name, _) in &files {
        if (name.starts_with("log-") && name.ends_with(".lhj")) || name == SNAPSHOT_TMP {
            ops.push(FileOp::Remove { file: name.clone() });
        }
    }
    ops.push(FileOp::Replace { file: TIP_FILE.into(), bytes: tip_bytes(seq).to_vec() });
    dir.apply_all(&ops).map_err(err)
}

/// The PostgreSQL side (tables in [`crate::pg`]).
mod pg {
    use super::{
        analyze, rekeyed_snapshot, restore_dropped, Analysis, Change, Mark, ShardState, Stored,
    };
    use tokio_postgres::Client;

    async fn client(url: &str) -> Result<Client, String> {
        crate::pg::connect(url).await
    }

    fn e(e: tokio_postgres::Error) -> String {
        crate::pg::ErrorText::text(&e)
    }

    pub(super) async fn list(url: &str) -> Result<Vec<Mark>, String> {
        let c = client(url).await?;
        let rows = c
            .query(
                "SELECT shard, quarantine, coalesce(quarantined_at::text, ''), coalesce(quarantined_by, '')
                 FROM leasehold_shards WHERE quarantine IS NOT NULL ORDER BY shard",
                &[],
            )
            .await
            .map_err(e)?;
        Ok(rows
            .iter()
            .map(|r| Mark {
                shard: r.get::<_, i64>(0) as u64,
                reason: r.get(1),
                at: r.get(2),
                by: r.get(3),
            })
            .collect())
    }

    /// Reads the shard (in `tx`'s snapshot when given) and analyses it.
    async fn load(c: &impl tokio_postgres::GenericClient, shard: u64) -> Result<Analysis, String> {
        let id = shard as i64;
        let row = c
            .query_opt(
                "SELECT durable_seq, quarantine, coalesce(quarantined_at::text, ''), coalesce(quarantined_by, '')
                 FROM leasehold_shards WHERE shard = $1",
                &[&id],
            )
            .await
            .map_err(e)?
            .ok_or_else(|| format!("shard {shard} does not exist in this cluster"))?;
        let tip: i64 = row.get(0);
        let mark = row.get::<_, Option<String>>(1).map(|reason| Mark {
            shard,
            reason,
            at: row.get(2),
            by: row.get(3),
        });
        let snap = c
            .query_opt("SELECT bytes FROM leasehold_snapshots WHERE shard = $1", &[&id])
            .await
            .map_err(e)?
            .map(|r| r.get::<_, Vec<u8>>(0));
        let rows = c
            .query(
                "SELECT first_seq, last_seq, epoch, frame FROM leasehold_journal WHERE shard = $1 ORDER BY first_seq",
                &[&id],
            )
            .await
            .map_err(e)?;
        let pieces: Vec<Stored> = rows
            .iter()
            .map(|r| {
                let (a, b, ep): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
                (
                    format!("journal row first_seq={a} last_seq={b} epoch={ep}"),
                    r.get::<_, Vec<u8>>(3),
                    Some((a as u64, b as u64)),
                )
            })
            .collect();
        let mut a = analyze(shard, snap.as_deref(), &pieces, Some(tip as u64), false);
        a.inspection.mark = mark;
        Ok(a)
    }

    pub(super) async fn analysis(url: &str, shard: u64) -> Result<Analysis, String> {
        let c = client(url).await?;
        load(&c, shard).await
    }

    /// Locks the shard's row, checks it is quarantined, and analyses it in the transaction.
    async fn locked(
        tx: &tokio_postgres::Transaction<'_>,
        shard: u64,
    ) -> Result<(Analysis, i64), String> {
        let row = tx
            .query_opt(
                "SELECT epoch, quarantine IS NOT NULL FROM leasehold_shards WHERE shard = $1 FOR UPDATE",
                &[&(shard as i64)],
            )
            .await
            .map_err(e)?
            .ok_or_else(|| format!("shard {shard} does not exist in this cluster"))?;
        if !row.get::<_, bool>(1) {
            return Err(format!("shard {shard} is not quarantined: nothing is changed"));
        }
        Ok((load(tx, shard).await?, row.get(0)))
    }

    /// Makes `bytes` (last record `seq`) the shard's whole state.
    async fn replace(
        tx: &tokio_postgres::Transaction<'_>,
        shard: u64,
        epoch: i64,
        bytes: &[u8],
        seq: u64,
    ) -> Result<(), String> {
        let (id, seq) = (shard as i64, seq as i64);
        tx.execute(
            "INSERT INTO leasehold_snapshots (shard, seq, epoch, bytes) VALUES ($1, $2, $3, $4)
             ON CONFLICT (shard) DO UPDATE SET seq = EXCLUDED.seq, epoch = EXCLUDED.epoch, bytes = EXCLUDED.bytes",
            &[&id, &seq, &epoch, &bytes],
        )
        .await
        .map_err(e)?;
        tx.execute("DELETE FROM leasehold_journal WHERE shard = $1", &[&id]).await.map_err(e)?;
        tx.execute("UPDATE leasehold_shards SET durable_seq = $2 WHERE shard = $1", &[&id, &seq])
            .await
            .map_err(e)?;
        Ok(())
    }

    pub(super) async fn repair(url: &str, shard: u64) -> Result<Change, String> {
        let mut c = client(url).await?;
        let tx = c.transaction().await.map_err(e)?;
        let (a, epoch) = locked(&tx, shard).await?;
        let ins = a.inspection;
        let Some(ShardState::Landlord(mut ll)) = a.kept.filter(|_| ins.repairable) else {
            return Err(super::not_repairable(shard, &ins));
        };
        if ins.damage.is_none() {
            return Err(format!("shard {shard} has no damage: release it instead"));
        }
        let (bytes, seq, leases) = rekeyed_snapshot(&mut ll, shard)?;
        replace(&tx, shard, epoch, &bytes, seq).await?;
        tx.commit().await.map_err(e)?;
        Ok(Change { shard, kept_to: seq, leases, dropped: ins.dropped, lost: ins.lost })
    }

    pub(super) async fn restore(
        url: &str,
        shard: u64,
        bytes: Vec<u8>,
        seq: u64,
        leases: usize,
    ) -> Result<Change, String> {
        let mut c = client(url).await?;
        let tx = c.transaction().await.map_err(e)?;
        let (a, epoch) = locked(&tx, shard).await?;
        let dropped = restore_dropped(&a.inspection, seq);
        let lost = a.inspection.durable_tip.filter(|&t| t > seq).map(|t| (seq + 1, t));
        replace(&tx, shard, epoch, &bytes, seq).await?;
        tx.commit().await.map_err(e)?;
        Ok(Change { shard, kept_to: seq, leases, dropped, lost })
    }

    pub(super) async fn release(url: &str, shard: u64) -> Result<(), String> {
        let mut c = client(url).await?;
        let tx = c.transaction().await.map_err(e)?;
        let (a, _) = locked(&tx, shard).await?;
        if let Some(d) = a.inspection.damage {
            return Err(format!(
                "shard {shard} still does not load ({d}): repair or restore it first"
            ));
        }
        tx.execute(
            "UPDATE leasehold_shards SET quarantine = NULL, quarantined_at = NULL, quarantined_by = NULL,
                 owner = NULL, owner_url = NULL, status = NULL, lease_until = '-infinity'
             WHERE shard = $1",
            &[&(shard as i64)],
        )
        .await
        .map_err(e)?;
        tx.commit().await.map_err(e)
    }
}
