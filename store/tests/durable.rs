//! The file store on real files: reopen, the directory lock, group commit across threads, and
//! recovery from a torn tail and from damage.

use std::sync::Arc;

use leasehold::policy::Bounded;
use leasehold::store::StoreConfig;
use leasehold::{Landlord, LandlordConfig, LandlordId, FOREVER};
use leasehold_store::{Dir, Durable, Shared};

type LL = Landlord<Vec<u8>>;

fn open(path: &std::path::Path) -> std::io::Result<Durable<LL>> {
    Durable::open(path, StoreConfig::default(), 0, |snap| {
        let policy = Bounded::new(FOREVER, 1_000).unwrap();
        match snap {
            Some(b) => LL::from_snapshot_bytes(b, policy),
            None => {
                let mut ll = LL::new(LandlordConfig::new(LandlordId(4), [4; 32]), policy);
                ll.enable_journal();
                Ok(ll)
            }
        }
    })
}

#[test]
fn reopening_finds_every_committed_lease() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = open(tmp.path()).unwrap();
    assert!(d.created());
    let cookies: Vec<_> =
        (0..100u8).map(|i| d.state_mut().grant(vec![i], 60_000, 0).unwrap().cookie).collect();
    d.commit().unwrap();
    d.state_mut().grant(vec![200], 60_000, 0).unwrap(); // never committed
    drop(d);
    let d = open(tmp.path()).unwrap();
    assert!(!d.created());
    assert_eq!(d.state().len(), 100, "only what was committed");
    for c in cookies {
        assert!(d.state().get(c, 0).is_some());
    }
}

#[test]
fn a_second_opener_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let _d = open(tmp.path()).unwrap();
    let e = Dir::open(tmp.path()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
}

#[test]
fn threads_share_one_sync_per_group() {
    let tmp = tempfile::tempdir().unwrap();
    let shared = Arc::new(Shared::new(open(tmp.path()).unwrap()));
    let threads: Vec<_> = (0..8u8)
        .map(|t| {
            let s = shared.clone();
            std::thread::spawn(move || {
                for i in 0..50u8 {
                    let (g, seq) = s.with(|ll| ll.grant(vec![t, i], 60_000, 0).unwrap());
                    s.wait_durable(seq).unwrap();
                    let _ = g;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let writes = shared.writes();
    assert!(writes < 400, "{writes} syncs for 400 grants: no group commit");
    drop(shared);
    assert_eq!(open(tmp.path()).unwrap().state().len(), 400);
}

#[test]
fn a_torn_tail_on_disk_is_truncated_and_damage_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = open(tmp.path()).unwrap();
    for i in 0..10u8 {
        d.state_mut().grant(vec![i], 60_000, 0).unwrap();
        d.commit().unwrap();
    }
    drop(d);
    let seg = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("log-"))
        .unwrap();
    let bytes = std::fs::read(&seg).unwrap();
    std::fs::write(&seg, &bytes[..bytes.len() - 5]).unwrap();
    let d = open(tmp.path()).unwrap();
    assert_eq!(d.state().len(), 9);
    assert!(d.recovered().torn.is_some());
    drop(d);
    assert!(std::fs::read(&seg).unwrap().len() < bytes.len() - 5, "truncated to the last frame");
    let mut bad = std::fs::read(&seg).unwrap();
    bad[40] ^= 0xff;
    std::fs::write(&seg, &bad).unwrap();
    let e = open(tmp.path()).err().expect("damage accepted");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
}

/// The shared store vector (`core/tests/vectors/store.json`), on real files: a directory written
/// by the core opens to exactly the leases it lists, and its torn tail is truncated on disk.
#[test]
fn the_shared_store_vector_opens_on_real_files() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../core/tests/vectors/store.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let unhex = |h: &str| -> Vec<u8> {
        (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect()
    };
    let tmp = tempfile::tempdir().unwrap();
    for f in v["files"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        std::fs::write(tmp.path().join(name), unhex(f["hex"].as_str().unwrap())).unwrap();
    }
    let open = || {
        Durable::open(tmp.path(), StoreConfig::default(), 0, |snap| {
            LL::from_snapshot_bytes(snap.unwrap(), Bounded::new(60_000, 1_000).unwrap())
        })
        .unwrap()
    };
    let mut d = open();
    assert!(d.recovered().torn.is_some());
    let e = &v["expect"];
    let seq = d.state().journal_seq();
    assert_eq!(seq.to_string(), e["journal_seq"].as_str().unwrap());
    let now: i64 = v["read_now"].as_str().unwrap().parse().unwrap();
    d.state_mut().resume(now);
    let got: Vec<String> = d.state().iter().map(|(c, x, _)| format!("{c}/{x}")).collect();
    let want: Vec<String> = e["leases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("{}/{}", l["cookie"].as_str().unwrap(), l["expiration"].as_str().unwrap()))
        .collect();
    assert_eq!(got, want);
    drop(d);
    // Opened again: the tail was truncated on disk, so nothing is torn any more.
    let d = open();
    assert!(d.recovered().torn.is_none());
    assert_eq!(d.state().journal_seq(), seq);
}
