//! The server's clock: wall-clock milliseconds read once at start, then moved on by the
//! monotonic clock, so a step of the system clock never moves a landlord's time.

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leasehold::Millis;

fn origin() -> &'static (Instant, Millis) {
    static ORIGIN: OnceLock<(Instant, Millis)> = OnceLock::new();
    ORIGIN.get_or_init(|| {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
        (Instant::now(), wall as Millis)
    })
}

/// Milliseconds on the server's clock (Unix epoch at start, monotonic after).
pub fn now_ms() -> Millis {
    let (at, ms) = *origin();
    ms + at.elapsed().as_millis() as Millis
}

/// The instant at which the server's clock reads `t` (capped an hour ahead; a time already
/// past gives now).
pub fn instant_of(t: Millis) -> Instant {
    let (at, ms) = *origin();
    let now = Instant::now();
    let ahead = t.saturating_sub(ms).max(0) as u64;
    let target = at + Duration::from_millis(ahead.min(u64::MAX / 4));
    target.clamp(now, now + Duration::from_secs(3600))
}

/// The server's lease clock, in fractional milliseconds since it started (monotonic): what
/// the clock guard compares with the database's clock.
pub fn mono_ms() -> f64 {
    origin().0.elapsed().as_secs_f64() * 1e3
}
