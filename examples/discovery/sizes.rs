//! Bytes the discovery service's durability costs: journal records per registration and per
//! announcement, the binary snapshot against the JSON one, and the time to write and read it.
//! `cargo run --release -p leasehold-discovery-run --bin ld-sizes [REGISTRATIONS]`

use std::time::Instant;

use leasehold::discovery::{Announcement, DiscoveryConfig, DiscoveryService, Groups, RegistrarId};
use leasehold::LandlordId;

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let mut s = DiscoveryService::new(DiscoveryConfig::new(LandlordId(1), [1; 32])).unwrap();
    s.enable_journal();
    let mut log = Vec::new();
    for i in 0..n {
        let groups = Groups::of([format!("g{}", i % 10), "lab".into()]);
        let locator = format!("h{}:4160", i % 50).parse().unwrap();
        let handback = format!("client-{i}").into_bytes();
        let r = s.register(groups, [locator], handback, 600_000, 1000).unwrap();
        let listener = format!("json http://127.0.0.1:{}/events", 30000 + i % 30000);
        s.set_listener(r.id, listener.into_bytes(), 1000).unwrap();
    }
    s.take_journal(&mut log);
    let per_reg = log.len() as u64 / n.max(1);
    let announce = |s: &mut DiscoveryService, seq: u64, t0: i64| {
        for g in 0..100u128 {
            let a = Announcement {
                registrar: RegistrarId(g + 1),
                groups: [format!("g{}", g % 10)].into(),
                locator: format!("10.0.0.{g}:4160").parse().unwrap(),
                sequence: seq,
                ttl: 30_000,
            };
            s.handle_announcement(&a, t0 + g as i64).unwrap();
        }
    };
    announce(&mut s, 1, 2000);
    while let Some(e) = s.poll_event(2100) {
        s.delivered(e.event_id, e.sequence, 2100);
    }
    log.clear();
    s.take_journal(&mut log);
    announce(&mut s, 2, 3000);
    log.clear();
    s.take_journal(&mut log);
    let per_announcement = log.len() / 100;
    let mut snap = Vec::new();
    let t = Instant::now();
    s.snapshot_bytes(&mut snap);
    let write = t.elapsed();
    let json = s.snapshot().to_json();
    let t = Instant::now();
    let back = DiscoveryService::from_snapshot_bytes(&snap).unwrap();
    let read = t.elapsed();
    assert_eq!(back.registrations().len() as u64, n);
    println!("| what ({n} registrations, 100 registrars) | value |");
    println!("|---|---|");
    println!("| journal per registration (register + listener records) | {per_reg} B |");
    println!("| journal per refresh announcement (with its time record) | {per_announcement} B |");
    println!(
        "| binary snapshot | {} B ({} B per registration) |",
        snap.len(),
        snap.len() as u64 / n.max(1)
    );
    println!("| JSON snapshot | {} B |", json.len());
    println!("| write binary snapshot | {:.1} ms |", write.as_secs_f64() * 1e3);
    println!("| read it back (checked restore) | {:.1} ms |", read.as_secs_f64() * 1e3);
}
