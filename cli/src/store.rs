//! Offline: what a server's store holds, read without the server (`leasehold store ...`).
//!
//! A data directory (`--data DIR`, one `shard-N` directory per shard) is read file by file,
//! without taking the directories' locks, so `inspect`, `verify` and `dump` work beside a
//! running server (they may then see a tail the server is still writing, which reads as torn).
//! `compact` writes, so it takes each directory's lock and is refused while a server holds it.
//! A PostgreSQL URL (`--store postgres://...`) is read from the server's tables
//! (`leasehold_snapshots`, `leasehold_journal`, `leasehold_shards`); `compact` there writes a
//! new snapshot row and drops the journal rows it covers, in one transaction, and only for a
//! shard no server owns at that moment (its ownership row locked meanwhile).
//!
//! Every check is the core's: the same recovery a server runs when it opens or takes over a
//! shard (snapshot, then every journal frame, with checksums and sequence numbers). Every
//! kind of shard is read: landlords, renewal-service shards and the discovery shard (the
//! snapshot says which); `leases` counts a landlord's leases, a renewal shard's client leases
//! and the discovery shard's registrations; `dump` lists landlords' leases only.

use std::path::{Path, PathBuf};

use leasehold::discovery::DiscoveryService;
use leasehold::journal::{read_snapshot, Journaled, KIND_DISCOVERY, KIND_RENEWAL_SERVICE};
use leasehold::service::RenewalService;
use leasehold::store::{Opened, Store, StoreConfig};
use leasehold::{LandlordId, Millis, PolicySpec};
use leasehold_server::shard::LL;
use serde_json::{json, Value};

/// What one shard's store holds.
pub struct Report {
    pub landlord: u64,
    /// Where: a directory or `postgres shard N`.
    pub source: String,
    pub snapshot_bytes: u64,
    pub log_bytes: u64,
    /// Log segments (files) or journal rows.
    pub log_parts: u64,
    pub replayed: u64,
    pub last_seq: u64,
    pub leases: usize,
    pub torn: Option<String>,
    /// Why the store was refused (the shard would not open).
    pub error: Option<String>,
    /// Owner and epoch (PostgreSQL).
    pub owner: Option<(Option<String>, i64)>,
    pub landlord_state: Option<LL>,
    /// landlord, renewal or discovery (as its snapshot says; landlord when unreadable).
    pub kind: &'static str,
}

impl Report {
    /// A landlord shard's report from `source`, nothing read yet.
    fn new(landlord: u64, source: String, owner: Option<(Option<String>, i64)>) -> Report {
        Report {
            landlord,
            source,
            snapshot_bytes: 0,
            log_bytes: 0,
            log_parts: 0,
            replayed: 0,
            last_seq: 0,
            leases: 0,
            torn: None,
            error: None,
            owner,
            landlord_state: None,
            kind: "landlord",
        }
    }

    pub fn json(&self) -> Value {
        let mut v = json!({
            "landlord": LandlordId(self.landlord).to_string(),
            "source": self.source,
            "ok": self.error.is_none(),
            "snapshot_bytes": self.snapshot_bytes,
            "log_bytes": self.log_bytes,
            "log_parts": self.log_parts,
            "records_replayed": self.replayed,
            "last_seq": self.last_seq,
            "leases": self.leases,
            "torn_tail": self.torn,
            "error": self.error,
            "kind": self.kind,
        });
        if let Some((owner, epoch)) = &self.owner {
            v["owner"] = json!(owner);
            v["epoch"] = json!(epoch);
        }
        v
    }
}

fn policy() -> PolicySpec {
    // Code, not data: recovery needs a policy but grants nothing.
    PolicySpec::Bounded { max: 60_000, default: 30_000 }
}

/// Milliseconds on this machine's clock.
pub fn now_ms() -> Millis {
    leasehold_server::clock::now_ms()
}

fn shard_dirs(data: &Path, shard: Option<u64>) -> Result<Vec<(u64, PathBuf)>, String> {
    if let Some(id) = shard {
        return Ok(vec![(id, leasehold_server::files::shard_dir(data, id))]);
    }
    let mut out = Vec::new();
    let entries = std::fs::read_dir(data).map_err(|e| format!("{}: {e}", data.display()))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(id) = name.strip_prefix("shard-").and_then(|n| n.parse::<u64>().ok()) {
            if e.path().is_dir() {
                out.push((id, e.path()));
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(format!(
            "{}: no shard-N directories (not a server's data directory)",
            data.display()
        ));
    }
    Ok(out)
}

fn read_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries.flatten() {
        if e.path().is_file() {
            let bytes =
                std::fs::read(e.path()).map_err(|x| format!("{}: {x}", e.path().display()))?;
            files.push((e.file_name().to_string_lossy().to_string(), bytes));
        }
    }
    files.sort();
    Ok(files)
}

/// Reads every shard of a data directory (or one).
pub fn files(data: &Path, shard: Option<u64>) -> Result<Vec<Report>, String> {
    let mut out = Vec::new();
    for (id, dir) in shard_dirs(data, shard)? {
        let mut r = Report::new(id, dir.display().to_string(), None);
        let files = match read_files(&dir) {
            Ok(f) => f,
            Err(e) => {
                r.error = Some(e);
                out.push(r);
                continue;
            }
        };
        for (name, bytes) in &files {
            if name == leasehold::store::SNAPSHOT_FILE {
                r.snapshot_bytes = bytes.len() as u64;
            } else if name.ends_with(".lhj") {
                r.log_bytes += bytes.len() as u64;
                r.log_parts += 1;
            }
        }
        let kind = files
            .iter()
            .find(|(n, _)| n == leasehold::store::SNAPSHOT_FILE)
            .and_then(|(_, b)| read_snapshot(b).ok())
            .map(|s| s.kind);
        if kind == Some(KIND_RENEWAL_SERVICE) {
            r.kind = "renewal";
            let o = open_service(&files, RenewalService::from_snapshot_bytes);
            fill(&mut r, id, o, |s| (s.id(), s.manager().len()));
            out.push(r);
            continue;
        }
        if kind == Some(KIND_DISCOVERY) {
            r.kind = "discovery";
            let o = open_service(&files, DiscoveryService::from_snapshot_bytes);
            fill(&mut r, id, o, |s| (s.id(), s.registrations().len()));
            out.push(r);
            continue;
        }
        let p = policy();
        let opened =
            Store::open(StoreConfig::default(), &files, Some(now_ms()), |snap| match snap {
                Some(bytes) => LL::from_snapshot_bytes(bytes, p.build()?),
                None => {
                    Err(leasehold::LeaseError::Decode("no snapshot: not a shard's store".into()))
                }
            });
        match opened {
            Ok(o) => {
                if o.state.id() != LandlordId(id) {
                    r.error =
                        Some(format!("holds landlord {}, not {}", o.state.id(), LandlordId(id)));
                }
                r.replayed = o.recovered.replayed;
                r.last_seq = o.store.committed();
                r.torn = o.recovered.torn.map(|(_, _, why)| why);
                r.leases = o.state.len();
                r.landlord_state = Some(o.state);
            }
            Err(e) => r.error = Some(e.to_string()),
        }
        out.push(r);
    }
    Ok(out)
}

/// Opens a service shard's files (renewal or discovery) as a server would.
fn open_service<S: Journaled>(
    files: &[(String, Vec<u8>)],
    load: fn(&[u8]) -> leasehold::Result<S>,
) -> leasehold::Result<Opened<S>> {
    Store::open(StoreConfig::default(), files, Some(now_ms()), |snap| match snap {
        Some(bytes) => load(bytes),
        None => Err(leasehold::LeaseError::Decode("no snapshot: not a shard's store".into())),
    })
}

/// Fills `r` from a service shard's recovery (`who`: its id and what it holds).
fn fill<S: Journaled>(
    r: &mut Report,
    id: u64,
    opened: leasehold::Result<Opened<S>>,
    who: impl Fn(&S) -> (LandlordId, usize),
) {
    match opened {
        Ok(o) => {
            let (holds, n) = who(&o.state);
            if holds != LandlordId(id) {
                r.error = Some(format!("holds {} service {holds}, not {}", r.kind, LandlordId(id)));
            }
            r.replayed = o.recovered.replayed;
            r.last_seq = o.store.committed();
            r.torn = o.recovered.torn.map(|(_, _, why)| why);
            r.leases = n;
        }
        Err(e) => r.error = Some(e.to_string()),
    }
}

/// Compacts shards of a data directory: a new snapshot, the log it covers removed. Refused
/// for a shard whose directory a server holds.
pub fn compact_files(data: &Path, shard: Option<u64>) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (id, path) in shard_dirs(data, shard)? {
        let mut dir = leasehold_store::Dir::open(&path).map_err(|e| {
            format!("{}: {e} (is a server running on it? stop it first)", path.display())
        })?;
        let files = dir.read().map_err(|e| format!("{}: {e}", path.display()))?;
        let before: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
        let kind = files
            .iter()
            .find(|(n, _)| n == leasehold::store::SNAPSHOT_FILE)
            .and_then(|(_, b)| read_snapshot(b).ok())
            .map(|s| s.kind);
        let service = match kind {
            Some(KIND_RENEWAL_SERVICE) => {
                Some(compact_service(&mut dir, &files, RenewalService::from_snapshot_bytes, |s| {
                    s.manager().len()
                }))
            }
            Some(KIND_DISCOVERY) => Some(compact_service(
                &mut dir,
                &files,
                DiscoveryService::from_snapshot_bytes,
                |s| s.registrations().len(),
            )),
            _ => None,
        };
        if let Some(done) = service {
            let n = done.map_err(|e| format!("{}: {e}", path.display()))?;
            let after: u64 =
                dir.read().map_err(|e| e.to_string())?.iter().map(|(_, b)| b.len() as u64).sum();
            out.push(json!({
                "landlord": LandlordId(id).to_string(), "source": path.display().to_string(),
                "leases": n, "bytes_before": before, "bytes_after": after,
            }));
            continue;
        }
        let p = policy();
        let o = Store::open(StoreConfig::default(), &files, Some(now_ms()), |snap| match snap {
            Some(bytes) => LL::from_snapshot_bytes(bytes, p.build()?),
            None => Err(leasehold::LeaseError::Decode("no snapshot: not a shard's store".into())),
        })
        .map_err(|e| format!("{}: refused: {e}", path.display()))?;
        let (mut ll, mut store) = (o.state, o.store);
        dir.apply_all(&o.ops).map_err(|e| format!("{}: {e}", path.display()))?;
        let ops = store.compact(&mut ll);
        dir.apply_all(&ops).map_err(|e| format!("{}: {e}", path.display()))?;
        let after: u64 =
            dir.read().map_err(|e| e.to_string())?.iter().map(|(_, b)| b.len() as u64).sum();
        out.push(json!({
            "landlord": LandlordId(id).to_string(), "source": path.display().to_string(),
            "leases": ll.len(), "bytes_before": before, "bytes_after": after,
        }));
    }
    Ok(out)
}

/// Compacts a service shard's directory; returns what it holds.
fn compact_service<S: Journaled>(
    dir: &mut leasehold_store::Dir,
    files: &[(String, Vec<u8>)],
    load: fn(&[u8]) -> leasehold::Result<S>,
    holds: impl Fn(&S) -> usize,
) -> Result<usize, String> {
    let o = open_service(files, load).map_err(|e| format!("refused: {e}"))?;
    let (mut state, mut store) = (o.state, o.store);
    dir.apply_all(&o.ops).map_err(|e| e.to_string())?;
    let ops = store.compact(&mut state);
    dir.apply_all(&ops).map_err(|e| e.to_string())?;
    Ok(holds(&state))
}

async fn connect(url: &str) -> Result<tokio_postgres::Client, String> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

async fn pg_shards(
    db: &tokio_postgres::Client,
    shard: Option<u64>,
) -> Result<Vec<(u64, Option<String>, i64)>, String> {
    let rows = db
        .query("SELECT shard, owner_url, epoch, lease_until > now() FROM leasehold_shards ORDER BY shard", &[])
        .await
        .map_err(|e| format!("reading leasehold_shards (is this a leasehold-server database?): {e}"))?;
    let mut out: Vec<(u64, Option<String>, i64)> = rows
        .iter()
        .map(|r| {
            let live: bool = r.get(3);
            (r.get::<_, i64>(0) as u64, if live { r.get(1) } else { None }, r.get(2))
        })
        .collect();
    if let Some(id) = shard {
        out.retain(|s| s.0 == id);
        if out.is_empty() {
            return Err(format!("no shard {id} in leasehold_shards"));
        }
    }
    Ok(out)
}

async fn pg_one(
    db: &tokio_postgres::Client,
    id: u64,
    owner: Option<String>,
    epoch: i64,
) -> Result<Report, String> {
    let e = |e: tokio_postgres::Error| e.to_string();
    let mut r = Report::new(id, format!("postgres shard {id}"), Some((owner, epoch)));
    let snap = db
        .query_opt("SELECT seq, bytes FROM leasehold_snapshots WHERE shard = $1", &[&(id as i64)])
        .await
        .map_err(e)?;
    let frames = db
        .query(
            "SELECT frame, first_seq, last_seq FROM leasehold_journal WHERE shard = $1 AND last_seq > $2 ORDER BY first_seq",
            &[&(id as i64), &snap.as_ref().map_or(0i64, |s| s.get::<_, i64>(0))],
        )
        .await
        .map_err(e)?;
    let mut log = Vec::new();
    for f in &frames {
        log.extend_from_slice(f.get::<_, &[u8]>(0));
    }
    r.log_bytes = log.len() as u64;
    r.log_parts = frames.len() as u64;
    let Some(snap) = snap else {
        r.error = Some(if frames.is_empty() {
            "no snapshot yet (never taken)".into()
        } else {
            "journal rows without a snapshot".into()
        });
        return Ok(r);
    };
    let bytes: Vec<u8> = snap.get(1);
    r.snapshot_bytes = bytes.len() as u64;
    let snap_seq = snap.get::<_, i64>(0) as u64;
    let service =
        |r: &mut Report,
         rec: leasehold::Result<(LandlordId, usize, leasehold::journal::Recovered)>| {
            match rec {
                Ok((holds, n, rec)) => {
                    if holds != LandlordId(id) {
                        r.error = Some(format!(
                            "holds {} service {holds}, not {}",
                            r.kind,
                            LandlordId(id)
                        ));
                    }
                    r.replayed = rec.replayed;
                    r.last_seq = rec.last_seq.max(snap_seq);
                    if let Some((_, _, why)) = rec.torn {
                        r.error = Some(format!("journal rows are damaged: {why}"));
                    }
                    r.leases = n;
                }
                Err(x) => r.error = Some(format!("refused: {x}")),
            }
        };
    match read_snapshot(&bytes).map(|s| s.kind) {
        Ok(KIND_RENEWAL_SERVICE) => {
            r.kind = "renewal";
            let rec = RenewalService::recover(&bytes, &[&log], now_ms())
                .map(|(s, rec)| (s.id(), s.manager().len(), rec));
            service(&mut r, rec);
            return Ok(r);
        }
        Ok(KIND_DISCOVERY) => {
            r.kind = "discovery";
            let rec = DiscoveryService::recover(&bytes, &[&log], now_ms())
                .map(|(s, rec)| (s.id(), s.registrations().len(), rec));
            service(&mut r, rec);
            return Ok(r);
        }
        _ => {}
    }
    let p = policy().build().map_err(|e| e.to_string())?;
    match LL::recover(&bytes, &[&log], p, now_ms()) {
        Ok((ll, rec)) => {
            r.replayed = rec.replayed;
            r.last_seq = rec.last_seq.max(snap.get::<_, i64>(0) as u64);
            if let Some((_, _, why)) = rec.torn {
                // A server refuses damaged rows at takeover: so does verify.
                r.error = Some(format!("journal rows are damaged: {why}"));
            }
            r.leases = ll.len();
            r.landlord_state = Some(ll);
        }
        Err(x) => r.error = Some(format!("refused: {x}")),
    }
    Ok(r)
}

/// Reads every shard (or one) from PostgreSQL.
pub async fn postgres(url: &str, shard: Option<u64>) -> Result<Vec<Report>, String> {
    let db = connect(url).await?;
    let mut out = Vec::new();
    for (id, owner, epoch) in pg_shards(&db, shard).await? {
        out.push(pg_one(&db, id, owner, epoch).await?);
    }
    Ok(out)
}

/// Compacts shards in PostgreSQL that no server owns.
pub async fn compact_postgres(url: &str, shard: Option<u64>) -> Result<Vec<Value>, String> {
    let mut db = connect(url).await?;
    let mut out = Vec::new();
    let ids: Vec<u64> = pg_shards(&db, shard).await?.into_iter().map(|s| s.0).collect();
    for id in ids {
        let tx = db.transaction().await.map_err(|e| e.to_string())?;
        let row = tx
            .query_one(
                "SELECT epoch, owner_url, lease_until > now() FROM leasehold_shards WHERE shard = $1 FOR UPDATE",
                &[&(id as i64)],
            )
            .await
            .map_err(|e| e.to_string())?;
        let (epoch, owner, owned): (i64, Option<String>, bool) =
            (row.get(0), row.get(1), row.get(2));
        if owned {
            return Err(format!(
                "shard {id} is owned by {} (epoch {epoch}): its owner compacts it; compact offline only when no server runs",
                owner.unwrap_or_default()
            ));
        }
        let before: i64 = tx
            .query_one(
                "SELECT coalesce((SELECT sum(length(frame)) FROM leasehold_journal WHERE shard = $1), 0)::bigint
                      + coalesce((SELECT length(bytes) FROM leasehold_snapshots WHERE shard = $1), 0)::bigint",
                &[&(id as i64)],
            )
            .await
            .map_err(|e| e.to_string())?
            .get(0);
        let client: &tokio_postgres::Client = tx.client();
        let r = pg_one(client, id, None, epoch).await?;
        if let Some(e) = r.error {
            return Err(format!("shard {id}: {e}"));
        }
        if r.kind != "landlord" {
            // Its owner compacts it as it runs; offline, only landlords' rows are rewritten.
            tx.rollback().await.map_err(|e| e.to_string())?;
            out.push(json!({
                "landlord": LandlordId(id).to_string(), "source": format!("postgres shard {id}"),
                "leases": r.leases, "skipped": format!("a {} shard: compacted by its owner", r.kind),
            }));
            continue;
        }
        let mut ll = r.landlord_state.expect("recovered");
        let mut bytes = Vec::new();
        let seq = ll.snapshot_bytes(&mut bytes);
        tx.execute(
            "INSERT INTO leasehold_snapshots (shard, seq, epoch, bytes) VALUES ($1, $2, $3, $4)
             ON CONFLICT (shard) DO UPDATE SET seq = EXCLUDED.seq, epoch = EXCLUDED.epoch, bytes = EXCLUDED.bytes",
            &[&(id as i64), &(seq as i64), &epoch, &bytes],
        )
        .await
        .map_err(|e| e.to_string())?;
        let dropped = tx
            .execute(
                "DELETE FROM leasehold_journal WHERE shard = $1 AND last_seq <= $2",
                &[&(id as i64), &(seq as i64)],
            )
            .await
            .map_err(|e| e.to_string())?;
        tx.commit().await.map_err(|e| e.to_string())?;
        out.push(json!({
            "landlord": LandlordId(id).to_string(), "source": format!("postgres shard {id}"),
            "leases": ll.len(), "bytes_before": before, "bytes_after": bytes.len(),
            "journal_rows_dropped": dropped,
        }));
    }
    Ok(out)
}
