//! `leasehold-server quarantine` on a renewal-service shard (docs/renewal-service.md): a damaged
//! one is inspected (its kind, its damage, what it holds), a repair by truncation is refused
//! with the reason (its cookie key cannot be replaced), and once its directory is put back from
//! a backup `release` serves it again, with its sets.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use leasehold::service::wire::{SetReplyBody, SetRequestBody};
use leasehold::{Cookie, LandlordId};

fn create(addr: SocketAddr) -> Cookie {
    let (_, r) = set_op(addr, None, SetRequestBody::CreateSet { duration: 600_000 });
    let SetReplyBody::SetCreated { cookie, .. } = r.body else { panic!("{r:?}") };
    cookie
}

fn segment(dir: &Path) -> PathBuf {
    let mut segs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "lhj"))
        .collect();
    segs.sort();
    segs.pop().expect("a log segment")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_file() && e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_damaged_renewal_shard_is_inspected_refused_a_repair_and_released_after_a_restore() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = data.to_str().unwrap().to_string();
    let args = ["--data", &d, "--renewal-shards", "1"];
    let s = Server::start(&args);
    s.wait_ready(Duration::from_secs(20));
    let sets: Vec<Cookie> = (0..4).map(|_| create(s.addr)).collect();
    s.stop();
    let shard = data.join("shard-2");
    let backup = tmp.path().join("backup");
    copy_dir(&shard, &backup);

    // Flip a byte inside the first frame of the log: valid frames follow, so it is damage.
    let seg = segment(&shard);
    let mut bytes = std::fs::read(&seg).unwrap();
    let scan = leasehold::journal::scan(&bytes, None).unwrap();
    assert!(scan.frames.len() >= 2, "{} frames", scan.frames.len());
    let f = &scan.frames[0];
    let end = f.offset + leasehold::journal::FRAME_HEADER + f.payload.len();
    bytes[end - 2] ^= 0x40;
    std::fs::write(&seg, &bytes).unwrap();

    let s = Server::start(&args);
    s.wait_for(Duration::from_secs(10), "shard 2 quarantined", |status, r| {
        status == 503
            && r["shards"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["shard"] == 2 && x["state"] == "quarantined")
    });

    let (code, out, err) = run(&["quarantine", "inspect", "--data", &d, "--shard", "2"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(renewal shard)") && out.contains("damage:"), "{out}");
    assert!(out.contains("put its directory (or rows) back from a backup"), "{out}");
    let (code, js, _) = run(&["quarantine", "inspect", "--data", &d, "--shard", "2", "--json"]);
    assert_eq!(code, 0);
    let ins: serde_json::Value = serde_json::from_str(&js).unwrap();
    assert_eq!((ins["kind"].as_str(), ins["repairable"].as_bool()), (Some("renewal"), Some(false)));
    let (code, _, err) =
        run(&["quarantine", "repair", "--data", &d, "--shard", "2", "--truncate-at-damage"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is a renewal shard"), "{err}");
    let (code, _, err) = run(&["quarantine", "release", "--data", &d, "--shard", "2"]);
    assert_eq!(code, 1);
    assert!(err.contains("still does not load"), "{err}");

    // The operator puts the backup back (the marker stays) and releases the shard.
    for e in std::fs::read_dir(&backup).unwrap().flatten() {
        std::fs::copy(e.path(), shard.join(e.file_name())).unwrap();
    }
    let (code, out, err) = run(&["quarantine", "inspect", "--data", &d, "--shard", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no damage: the shard loads as it is"), "{out}");
    let (code, out, err) = run(&["quarantine", "release", "--data", &d, "--shard", "2"]);
    assert_eq!(code, 0, "{out}{err}");
    s.wait_ready(Duration::from_secs(10));
    for set in sets {
        let (status, r) = set_op(s.addr, Some(LandlordId(2)), SetRequestBody::Leases { set });
        assert_eq!(status, 200, "{r:?}");
    }
}
