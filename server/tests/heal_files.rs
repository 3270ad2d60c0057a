//! The file store heals by itself and says the truth about it: readiness and metrics, a full
//! disk (a file size limit on the running process: `EFBIG` on every write that grows a file)
//! then freed, and damaged shards quarantined loudly, repaired and released by the operator
//! commands, all without a restart.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use leasehold::ReplyBody;

fn data_args(dir: &Path, shards: u32) -> Vec<String> {
    vec!["--data".into(), dir.display().to_string(), "--shards".into(), shards.to_string()]
}

fn start(dir: &Path, shards: u32) -> Server {
    let a = data_args(dir, shards);
    Server::start(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Grants until each of `shards` shards holds `per` leases, one commit each (sequential).
fn fill(s: &Server, shards: u64, per: usize) -> Vec<(u64, leasehold::Cookie)> {
    let mut out = Vec::new();
    let mut i = 0;
    while (1..=shards).any(|l| out.iter().filter(|x: &&(u64, _)| x.0 == l).count() < per) {
        let g = grant(s.addr, i, &format!("r{i}"), 60_000).unwrap();
        if out.iter().filter(|x: &&(u64, _)| x.0 == g.0).count() < per {
            out.push(g);
        }
        i += 1;
    }
    out
}

#[test]
fn readiness_liveness_and_metrics_describe_every_shard() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(tmp.path(), 3);
    assert_eq!(s.get("/livez").0, 200);
    let (status, r) = s.ready();
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["ready"], true);
    assert_eq!(r["store"], "files");
    assert!(r.get("database").is_none() && r.get("clock").is_none(), "{r}");
    let shards = r["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 3);
    for (i, sh) in shards.iter().enumerate() {
        assert_eq!(sh["shard"], i as u64 + 1);
        assert_eq!(sh["state"], "served");
        assert_eq!(sh["owner"], s.url());
        assert!(sh["why"].is_null());
    }
    assert_eq!(r["unserved"], serde_json::json!([]));
    assert_eq!(s.get("/healthz"), (200, "ok: 3 shards served\n".to_string()));
    fill(&s, 3, 2);
    let (_, text) = s.get("/metrics");
    for name in [
        "# TYPE leasehold_shard_state gauge",
        "leasehold_shard_state{shard=\"2\",state=\"served\"} 1",
        "leasehold_shard_state{shard=\"2\",state=\"failed\"} 0",
        "leasehold_shard_state{shard=\"2\",state=\"unowned\"} 0",
        "leasehold_store_errors_total{shard=\"1\",kind=\"write\"} 0",
        "# TYPE leasehold_store_write_seconds histogram",
        "leasehold_store_write_seconds_bucket{shard=\"1\",le=\"+Inf\"}",
        "leasehold_store_write_seconds_count{shard=\"3\"}",
        "leasehold_last_durable_write_age_seconds{shard=\"3\"}",
        "leasehold_quarantined_shards 0",
    ] {
        assert!(text.contains(name), "{name} missing from\n{text}");
    }
    assert!(s.metric("leasehold_store_write_seconds_count", &["shard=\"1\""]) >= 2.0);
    assert!(s.metric("leasehold_last_durable_write_age_seconds", &[]) < 60.0);
    // PostgreSQL-only gauges are absent with the file store.
    assert!(!text.contains("leasehold_db_connected"), "{text}");
}

#[test]
fn a_full_disk_fails_shards_loudly_and_they_come_back_when_it_is_freed() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(tmp.path(), 2);
    let held = fill(&s, 2, 3);
    // The disk is full: every write that grows a file fails (EFBIG here, ENOSPC on a real
    // full disk: the same path).
    limit_file_size(s.pid(), Some(1));
    let mut refused = 0;
    for i in 0..6u64 {
        match grant(s.addr, 100 + i, &format!("full-{i}"), 60_000) {
            Ok(g) => panic!("granted {g:?} while the disk is full"),
            Err(e) => {
                assert!(e.starts_with("503"), "{e}");
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 6);
    s.wait_for(Duration::from_secs(5), "both shards failed", |status, r| {
        status == 503
            && r["shards"]
                .as_array()
                .unwrap()
                .iter()
                .all(|sh| sh["state"] == "failed" || sh["state"] == "taking_over")
            && r["unserved"].as_array().unwrap().len() == 2
    });
    let (_, r) = s.ready();
    let why = r["shards"][0]["why"].as_str().unwrap_or("").to_string();
    assert!(why.contains("File too large") || why.contains("reopen"), "{r}");
    assert!(s.metric("leasehold_store_errors_total", &["kind=\"write\""]) >= 2.0);
    assert!(s.metric("leasehold_shard_state", &["state=\"served\""]) == 0.0);
    assert!(s.logged("shard failed"), "{}", s.log_text());
    // Retries keep failing while the disk is full (and are counted), with backoff.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(s.get("/readyz").0, 503);
    let opens = s.metric("leasehold_store_errors_total", &["kind=\"open\""]);
    assert!((2.0..40.0).contains(&opens), "{opens} reopen failures in 1.5 s");
    // Space is freed: the shards come back by themselves, with every acknowledged lease.
    limit_file_size(s.pid(), None);
    let took = s.wait_ready(Duration::from_secs(15));
    eprintln!("served again {took:?} after the disk was freed");
    for (l, c) in &held {
        assert!(matches!(renew(s.addr, *l, *c, 60_000).unwrap(), ReplyBody::Renewed { .. }));
    }
    grant(s.addr, 500, "after", 60_000).unwrap();
    assert!(s.logged("shard opened") && s.logged("rewritten=true"), "{}", s.log_text());
    // A restart finds everything too.
    s.kill();
    let s = start(tmp.path(), 2);
    s.wait_ready(Duration::from_secs(5));
    for (l, c) in &held {
        assert!(matches!(renew(s.addr, *l, *c, 60_000).unwrap(), ReplyBody::Renewed { .. }));
    }
}

fn segment(dir: &Path, shard: u64) -> std::path::PathBuf {
    let d = dir.join(format!("shard-{shard}"));
    let mut segs: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "lhj"))
        .collect();
    segs.sort();
    segs.pop().expect("a log segment")
}

/// Offsets of the frames of a segment.
fn frames(seg: &Path) -> Vec<(usize, u64, usize)> {
    let bytes = std::fs::read(seg).unwrap();
    let s = leasehold::journal::scan(&bytes, None).unwrap();
    s.frames
        .iter()
        .map(|f| (f.offset, f.seq, leasehold::journal::FRAME_HEADER + f.payload.len()))
        .collect()
}

#[test]
fn a_damaged_shard_is_quarantined_loudly_and_repaired_only_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().display().to_string();
    let s = start(tmp.path(), 2);
    let held = fill(&s, 2, 6);
    s.stop();
    // Flip a byte inside shard 1's third frame: valid frames follow, so this is damage.
    let seg = segment(tmp.path(), 1);
    let fr = frames(&seg);
    assert!(fr.len() >= 6, "{fr:?}");
    let (at, seq, len) = fr[2];
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[at + len - 2] ^= 0x40;
    std::fs::write(&seg, &bytes).unwrap();

    let s = start(tmp.path(), 2);
    s.wait_for(Duration::from_secs(5), "shard 1 quarantined", |status, r| {
        status == 503
            && r["shards"][0]["state"] == "quarantined"
            && r["shards"][1]["state"] == "served"
    });
    let (_, r) = s.ready();
    assert_eq!(r["unserved"], serde_json::json!([1]));
    assert!(r["shards"][0]["why"].as_str().unwrap().contains("damaged"), "{r}");
    assert!(s.logged("ERROR") && s.logged("shard quarantined"), "{}", s.log_text());
    assert_eq!(s.metric("leasehold_quarantined_shards", &[]), 1.0);
    assert_eq!(s.metric("leasehold_shard_state", &["shard=\"1\"", "state=\"quarantined\""]), 1.0);
    assert!(s.metric("leasehold_store_errors_total", &["shard=\"1\"", "kind=\"damaged\""]) >= 1.0);
    assert!(s.get("/healthz").1.contains("shard 1 quarantined"));
    // Shard 2 is served meanwhile; shard 1 answers 503.
    let on2: Vec<_> = held.iter().filter(|h| h.0 == 2).collect();
    assert!(matches!(renew(s.addr, 2, on2[0].1, 60_000).unwrap(), ReplyBody::Renewed { .. }));
    let on1: Vec<_> = held.iter().filter(|h| h.0 == 1).copied().collect();
    assert!(renew(s.addr, 1, on1[0].1, 60_000).unwrap_err().starts_with("503"));

    // The operator: list, inspect (changes nothing), repair only with the explicit flag.
    let (code, out, _) = run(&["quarantine", "list", "--data", &data]);
    assert_eq!(code, 0);
    assert!(out.contains("shard 1:") && !out.contains("shard 2:"), "{out}");
    let (code, out, _) = run(&["quarantine", "inspect", "--data", &data, "--shard", "1"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("damage:") && out.contains("a repair keeps records up to"), "{out}");
    let (code, js, _) = run(&["quarantine", "inspect", "--data", &data, "--shard", "1", "--json"]);
    assert_eq!(code, 0);
    let ins: serde_json::Value = serde_json::from_str(&js).unwrap();
    assert_eq!(ins["readable_to"], seq - 1, "{ins}");
    assert_eq!(ins["repairable"], true);
    let (code, _, err) = run(&["quarantine", "repair", "--data", &data, "--shard", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--truncate-at-damage"), "{err}");
    let (code, _, err) = run(&["quarantine", "release", "--data", &data, "--shard", "1"]);
    assert_eq!(code, 1);
    assert!(err.contains("still does not load"), "{err}");
    let (code, out, err) =
        run(&["quarantine", "repair", "--data", &data, "--shard", "1", "--truncate-at-damage"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("up to record {}", seq - 1)) && out.contains("dropped:"),
        "{out}"
    );
    let (code, out, err) = run(&["quarantine", "release", "--data", &data, "--shard", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    // The running server takes it back by itself.
    s.wait_ready(Duration::from_secs(5));
    assert!(s.logged("quarantine released"), "{}", s.log_text());
    assert_eq!(s.metric("leasehold_quarantined_shards", &[]), 0.0);
    // Leases granted before the damage are kept; those after it were dropped.
    let mut kept = 0;
    let mut dropped = Vec::new();
    for (l, c) in &on1 {
        match renew(s.addr, *l, *c, 60_000).unwrap() {
            ReplyBody::Renewed { .. } => kept += 1,
            b if is_unknown(&b) => dropped.push(*c),
            b => panic!("{b:?}"),
        }
    }
    assert!(kept >= 1 && !dropped.is_empty(), "kept {kept}, dropped {dropped:?}");
    // A new grant never reuses a dropped lease's cookie (the repair gave a new cookie key).
    for i in 0..20 {
        if let Ok((1, c)) = grant(s.addr, 900 + i, &format!("new-{i}"), 60_000) {
            assert!(!dropped.contains(&c), "cookie {c:?} reused");
        }
    }
}

#[test]
fn a_deleted_last_frame_is_caught_by_the_durable_tip() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().display().to_string();
    let s = start(tmp.path(), 1);
    let held = fill(&s, 1, 4);
    s.kill();
    // Cut the last frame off at its boundary: a log that looks whole, one record short.
    let seg = segment(tmp.path(), 1);
    let fr = frames(&seg);
    let (at, seq, _) = *fr.last().unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(at as u64).unwrap();
    drop(f);
    let s = start(tmp.path(), 1);
    s.wait_for(Duration::from_secs(5), "quarantined", |st, r| {
        st == 503 && r["shards"][0]["state"] == "quarantined"
    });
    let (_, r) = s.ready();
    let why = r["shards"][0]["why"].as_str().unwrap();
    assert!(why.contains(&format!("records {seq}..=")) && why.contains("missing"), "{why}");
    let (code, out, _) = run(&["quarantine", "inspect", "--data", &data, "--shard", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("acknowledged records lost for good"), "{out}");
    let (code, out, err) =
        run(&["quarantine", "repair", "--data", &data, "--shard", "1", "--truncate-at-damage"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("had been acknowledged"), "{out}");
    assert_eq!(run(&["quarantine", "release", "--data", &data, "--shard", "1"]).0, 0);
    s.wait_ready(Duration::from_secs(5));
    // The leases granted before the deleted frame are kept (the last grant may have been in
    // it, or a clock record may have followed it).
    for (l, c) in &held[..held.len() - 1] {
        assert!(matches!(renew(s.addr, *l, *c, 60_000).unwrap(), ReplyBody::Renewed { .. }));
    }
}

#[test]
fn a_missing_snapshot_is_quarantined_and_restored_from_a_backup() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().display().to_string();
    let s = start(tmp.path(), 1);
    let held = fill(&s, 1, 3);
    s.stop();
    // A backup of the snapshot (compaction has not run: it holds no lease yet).
    let snap = tmp.path().join("shard-1/snapshot");
    let backup = tmp.path().join("backup-snapshot");
    std::fs::copy(&snap, &backup).unwrap();
    std::fs::remove_file(&snap).unwrap();
    let s = start(tmp.path(), 1);
    s.wait_for(Duration::from_secs(5), "quarantined", |st, r| {
        st == 503 && r["shards"][0]["state"] == "quarantined"
    });
    let (code, out, _) = run(&["quarantine", "inspect", "--data", &data, "--shard", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("cannot be repaired by truncation"), "{out}");
    assert_eq!(
        run(&["quarantine", "repair", "--data", &data, "--shard", "1", "--truncate-at-damage"]).0,
        1
    );
    let (code, out, err) = run(&[
        "quarantine",
        "restore",
        "--data",
        &data,
        "--shard",
        "1",
        "--snapshot",
        backup.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("dropped:") && out.contains("had been acknowledged"), "{out}");
    assert_eq!(run(&["quarantine", "release", "--data", &data, "--shard", "1"]).0, 0);
    s.wait_ready(Duration::from_secs(5));
    // The backup predates every grant: they are gone, and the shard serves again.
    for (l, c) in &held {
        assert!(is_unknown(&renew(s.addr, *l, *c, 60_000).unwrap()));
    }
    grant(s.addr, 77, "fresh", 60_000).unwrap();
}
