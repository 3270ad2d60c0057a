//! The embedded store's logic (core/src/store.rs), carried out on an in-memory directory that can
//! crash: nothing committed and synced is lost, a torn tail is dropped, damage is refused, and
//! compaction and rotation keep the directory small.

use leasehold::policy::Bounded;
use leasehold::store::{FileOp, MemDir, Opened, Store, StoreConfig, SNAPSHOT_FILE, SNAPSHOT_TMP};
use leasehold::{Cookie, Landlord, LandlordConfig, LandlordId, LeaseError, FOREVER};
use proptest::prelude::*;

type LL = Landlord<Vec<u8>>;

fn config() -> LandlordConfig {
    LandlordConfig::new(LandlordId(3), [5; 32])
}

fn open(dir: &mut MemDir, sc: StoreConfig) -> leasehold::Result<Opened<LL>> {
    let opened = Store::open(sc, &dir.files(), None, |snap| {
        let policy = Bounded::new(FOREVER, 1_000).unwrap();
        Ok(match snap {
            Some(b) => LL::from_snapshot_bytes(b, policy)?,
            None => {
                let mut ll = LL::new(config(), policy);
                ll.enable_journal();
                ll
            }
        })
    })?;
    dir.apply_all(&opened.ops);
    Ok(opened)
}

/// Every lease with the time it has left at the landlord's time (which is what a restart keeps:
/// opening a store resumes the landlord on the host's clock of the moment).
fn leases(ll: &LL) -> Vec<(Cookie, i64, Vec<u8>)> {
    let now = ll.now();
    ll.iter()
        .map(|(c, e, r)| (c, if e == FOREVER { FOREVER } else { e - now }, r.clone()))
        .collect()
}

#[test]
fn a_new_store_writes_its_first_snapshot_and_reopens_the_same() {
    let mut dir = MemDir::new();
    let Opened { state: mut ll, mut store, created, .. } =
        open(&mut dir, StoreConfig::default()).unwrap();
    assert!(created);
    assert!(dir.get(SNAPSHOT_FILE).is_some());
    for i in 0..50u8 {
        ll.grant(vec![i], 10_000, i as i64).unwrap();
        if i % 7 == 0 {
            let c = store.commit(&mut ll).unwrap();
            assert_eq!(c.durable, ll.journal_seq());
            dir.apply_all(&c.ops);
        }
    }
    ll.grant(vec![99], 10_000, 60).unwrap();
    let c = store.commit(&mut ll).unwrap();
    dir.apply_all(&c.ops);
    assert!(store.commit(&mut ll).is_none(), "nothing new to commit");
    let again = open(&mut dir, StoreConfig::default()).unwrap();
    assert!(!again.created);
    assert_eq!(leases(&again.state), leases(&ll));
    assert_eq!(again.state.journal_seq(), ll.journal_seq());
}

#[test]
fn segments_rotate_and_compaction_removes_them() {
    let mut dir = MemDir::new();
    let sc = StoreConfig { segment_bytes: 300, min_compact_bytes: 2_000 };
    let Opened { state: mut ll, mut store, .. } = open(&mut dir, sc).unwrap();
    let mut compactions = 0;
    for i in 0..400u32 {
        ll.grant(i.to_le_bytes().to_vec(), 60_000, 0).unwrap();
        let c = store.commit(&mut ll).unwrap();
        dir.apply_all(&c.ops);
        if store.wants_compaction() {
            dir.apply_all(&store.compact(&mut ll));
            compactions += 1;
        }
        // The log never outgrows the snapshot (or the minimum) by more than one commit.
        let log: usize =
            dir.files().iter().filter(|(n, _)| n.starts_with("log-")).map(|(_, b)| b.len()).sum();
        let snap = dir.get(SNAPSHOT_FILE).unwrap().len();
        assert!(log <= snap.max(2_000) + 100, "{log} bytes of log, snapshot {snap}");
    }
    assert!(compactions > 0);
    let again = open(&mut dir, sc).unwrap();
    assert_eq!(leases(&again.state), leases(&ll));
}

#[test]
fn a_stray_snapshot_tmp_and_covered_segments_are_removed_at_open() {
    let mut dir = MemDir::new();
    let Opened { state: mut ll, mut store, .. } = open(&mut dir, StoreConfig::default()).unwrap();
    ll.grant(vec![1], 10_000, 0).unwrap();
    let c = store.commit(&mut ll).unwrap();
    dir.apply_all(&c.ops);
    // A compaction that crashed after replacing the snapshot, before removing segments.
    let ops = store.compact(&mut ll);
    dir.apply(&ops[0]);
    dir.set(SNAPSHOT_TMP, vec![1, 2, 3]);
    let again = open(&mut dir, StoreConfig::default()).unwrap();
    assert!(again.ops.contains(&FileOp::Remove { file: SNAPSHOT_TMP.into() }));
    assert!(again
        .ops
        .iter()
        .any(|o| matches!(o, FileOp::Remove { file } if file.starts_with("log-"))));
    assert_eq!(leases(&again.state), leases(&ll));
}

#[test]
fn damage_and_lost_files_are_refused_or_survived_as_documented() {
    let mut dir = MemDir::new();
    let Opened { state: mut ll, mut store, .. } = open(&mut dir, StoreConfig::default()).unwrap();
    for i in 0..20u8 {
        ll.grant(vec![i; 10], 10_000, 0).unwrap();
        let c = store.commit(&mut ll).unwrap();
        dir.apply_all(&c.ops);
    }
    let seg = dir.files().into_iter().find(|(n, _)| n.starts_with("log-")).unwrap();
    // A flipped byte in the middle of the log: refused, loudly.
    let mut bad = dir.clone();
    let mut bytes = seg.1.clone();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    bad.set(&seg.0, bytes);
    let e = open(&mut bad, StoreConfig::default()).err().expect("damage accepted");
    assert!(matches!(e, LeaseError::Decode(_)), "{e:?}");
    // A damaged snapshot: refused.
    let mut bad = dir.clone();
    let mut snap = bad.get(SNAPSHOT_FILE).unwrap().to_vec();
    snap[40] ^= 1;
    bad.set(SNAPSHOT_FILE, snap);
    assert!(open(&mut bad, StoreConfig::default()).is_err());
    // A truncated last record: dropped, and the log truncated so appends continue cleanly.
    let mut cut = dir.clone();
    cut.set(&seg.0, seg.1[..seg.1.len() - 3].to_vec());
    let o = open(&mut cut, StoreConfig::default()).unwrap();
    assert!(o.recovered.torn.is_some());
    assert_eq!(o.state.len(), 19);
    // A missing snapshot while the log starts at record 1: rebuilt from the log.
    let mut lost = dir.clone();
    lost.remove(SNAPSHOT_FILE);
    let o = open(&mut lost, StoreConfig::default()).unwrap();
    assert_eq!(leases(&o.state), leases(&ll));
    // A missing snapshot after compaction: the log no longer starts at 1, refused.
    let mut compacted = dir.clone();
    compacted.apply_all(&store.compact(&mut ll));
    ll.grant(vec![99], 10_000, 0).unwrap();
    compacted.apply_all(&store.commit(&mut ll).unwrap().ops);
    compacted.remove(SNAPSHOT_FILE);
    let e = open(&mut compacted, StoreConfig::default()).err().expect("lost records accepted");
    assert!(e.to_string().contains("snapshot is missing"), "{e}");
}

/// A journal sequence number and every lease then held.
type Held = (u64, Vec<(Cookie, i64, Vec<u8>)>);

/// The same leases (cookies, resources), each with at least the time it had left: time the
/// landlord spent without writing a record is not counted after a restart, so a recovered lease
/// may have more left, never less.
fn same(got: &Held, want: &Held) -> bool {
    got.0 == want.0
        && got.1.len() == want.1.len()
        && got.1.iter().zip(&want.1).all(|(g, w)| g.0 == w.0 && g.2 == w.2 && g.1 >= w.1)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Random runs with crashes at random moments: whatever was committed and synced before a
    /// crash is there after it (same leases, same next cookie), and the log keeps going.
    #[test]
    fn crashes_lose_nothing_committed(
        ops in prop::collection::vec((0u8..10, 0u16..2_000, 0u8..255), 1..200),
        seg in prop_oneof![Just(200u64), Just(64u64 << 20)],
    ) {
        let sc = StoreConfig { segment_bytes: seg, min_compact_bytes: 1_500 };
        let mut dir = MemDir::new();
        let Opened { state: mut ll, mut store, .. } = open(&mut dir, sc).unwrap();
        let mut now = 0i64;
        let mut cookies: Vec<Cookie> = Vec::new();
        // The state as of the last commit the host completed.
        let mut durable = (ll.journal_seq(), leases(&ll));
        for (i, &(kind, x, tear)) in ops.iter().enumerate() {
            now += x as i64 % 50;
            match kind {
                0..=3 => {
                    if let Ok(g) = ll.grant(vec![kind; x as usize % 7], x as i64, now) {
                        cookies.push(g.cookie);
                    }
                }
                4 | 5 if !cookies.is_empty() => {
                    let _ = ll.renew(cookies[x as usize % cookies.len()], x as i64, now);
                }
                6 if !cookies.is_empty() => {
                    let _ = ll.cancel(cookies[x as usize % cookies.len()], now);
                }
                7 => {
                    ll.handle_timeout(now);
                    while ll.poll_expired().is_some() {}
                }
                8 => {
                    // Commit: append, sync; or a crash in the middle of it (the append may
                    // be partly written, never synced).
                    if let Some(c) = store.commit(&mut ll) {
                        if tear % 4 == 0 {
                            dir.apply(&c.ops[0]);
                            dir.crash(|_, n| n * tear as usize / 255);
                            let o = open(&mut dir, sc).unwrap();
                            // A frame survives whole or not at all.
                            let got = (o.state.journal_seq(), leases(&o.state));
                            let all = (ll.journal_seq(), leases(&ll));
                            prop_assert!(same(&got, &durable) || same(&got, &all), "step {}", i);
                            ll = o.state;
                            store = o.store;
                            durable = got;
                        } else {
                            dir.apply_all(&c.ops);
                            durable = (ll.journal_seq(), leases(&ll));
                        }
                        if store.wants_compaction() {
                            dir.apply_all(&store.compact(&mut ll));
                        }
                    }
                }
                _ => {
                    // A crash between commits: only the uncommitted records are lost.
                    dir.crash(|_, n| n * tear as usize / 255);
                    let o = open(&mut dir, sc).unwrap();
                    prop_assert_eq!(o.state.journal_seq(), durable.0, "step {}", i);
                    prop_assert!(same(&(durable.0, leases(&o.state)), &durable), "step {}", i);
                    ll = o.state;
                    store = o.store;
                }
            }
        }
    }
}
