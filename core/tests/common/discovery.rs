//! Shared by the discovery tests: the announcements a registrar multicasts.

use leasehold::discovery::{Announcement, RegistrarId};
use leasehold::Duration;

/// Registrar `id`'s `sequence`-th announcement of `groups` at `host`, live for `ttl` ms.
pub fn announcement(
    id: u128,
    groups: &[&str],
    host: &str,
    sequence: u64,
    ttl: Duration,
) -> Announcement {
    Announcement {
        registrar: RegistrarId(id),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        locator: host.parse().unwrap(),
        sequence,
        ttl,
    }
}
