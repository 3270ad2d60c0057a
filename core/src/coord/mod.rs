//! Leases people can coordinate with: exclusive resources, fencing tokens and watches.
//!
//! A lease alone is not a lock. A holder that is paused (a garbage collection, a stopped VM) or
//! cut off can still believe in its lease after the landlord has let it go and granted the
//! resource to someone else: both then act on the resource. Jepsen showed it of etcd 3.4.3's
//! locks; the answer (Chubby's sequencers, Kleppmann's fencing tokens) is on the resource's
//! side. This module has three parts, all kept by the [`crate::Landlord`] once the host turns
//! them on with [`crate::Landlord::enable_coordination`]:
//!
//! - **Exclusive resources** ([`CoordConfig::exclusive`]): while a live lease holds one,
//!   another grant of it is denied, with how long the holder's lease has left; or, with
//!   [`crate::Landlord::acquire`] and a wait, the request is held (first come, first served) and
//!   answered when the resource is free or the wait is over. DHCP-style pools
//!   ([`CoordConfig::pools`]) hand out any free member under the same rule.
//! - **Fencing tokens**: every grant carries a token greater than every token the landlord
//!   granted before ([`Acquired::token`]); a renewal keeps it. Tokens are journaled state, so
//!   they keep growing across crashes, restores and failover. The protected resource keeps a
//!   [`Fence`] and accepts an operation only with a token at least the highest it has seen.
//! - **Watches**: leased event registrations in the Jini model (seeds 000 and 003): an event
//!   id, strictly increasing sequence numbers, a handback; on one resource or on every
//!   resource under a prefix, delivering granted, cancelled and expired (and, on request,
//!   renewed). Events are derived from the journal's records, so a landlord rebuilt from its
//!   snapshot and journal (after a crash, or by a new owner after failover) holds the same
//!   events under the same numbers: a watcher resumes from the last number it saw and misses
//!   nothing, or is told exactly which numbers it missed ([`Events::missed`]) with the state to
//!   start again from ([`Events::current`]).
//!
//! # Tokens are per landlord
//!
//! A landlord has one token counter for all its resources (like etcd's revision): a token is
//! greater than every token earlier granted by that landlord, so in particular every token
//! earlier granted for the same resource. A resource always lives in one landlord (the server
//! routes it by a hash to one shard). The counter is in the landlord's snapshot and every grant
//! record replays it, so it never goes back. If the number of shards changed, a resource could
//! move to a landlord whose counter is lower: `leasehold-server` therefore refuses to change
//! the shard count of an existing store.
//!
//! # Waiting is not journaled, and why
//!
//! A waiting acquire (or a long poll of a watch) is a request that has not been answered. Its
//! requester learns nothing until it is answered, and an answer leaves only after the records
//! behind it are durable. So nothing acknowledged depends on the queue: after a crash the queue
//! is gone, the requester's connection with it, and the requester retries (losing only its
//! place in line). Journaling the queue would be worse: a new owner after failover would grant
//! leases to waiters whose connections died with the old owner, and the resource would sit
//! idle until those leases ran out. A grant made to a waiter *is* journaled like any other.
//!
//! # The deferred-reply API
//!
//! [`crate::Landlord::handle_coord`] answers a [`wire::CoordRequest`] now
//! ([`Handled::Now`]) or later ([`Handled::Later`] with a [`Ticket`]). Later answers come out
//! of [`crate::Landlord::poll_deferred`] after any call that may have produced one (a cancel,
//! [`crate::Landlord::handle_timeout`], another request); [`crate::Landlord::poll_timeout`]
//! covers the waits' deadlines; [`crate::Landlord::abandon`] drops a waiter whose requester is
//! gone. Every answer, now or later, leaves only once [`crate::Landlord::journal_seq`] (read
//! right after the call that produced it) is durable.
//!
//! ```
//! use leasehold::coord::{Acquire, CoordConfig, Fence, Selector};
//! use leasehold::{Landlord, LandlordConfig, LandlordId, policy::Bounded};
//!
//! let mut ll: Landlord<Vec<u8>> =
//!     Landlord::new(LandlordConfig::new(LandlordId(1), [7; 32]), Bounded::new(60_000, 30_000).unwrap());
//! ll.enable_coordination(CoordConfig::new().exclusive(Selector::prefix(b"locks/"))).unwrap();
//!
//! let Acquire::Granted(a) = ll.acquire(b"locks/db".to_vec(), 10_000, 0, vec![], 0).unwrap() else {
//!     panic!("free")
//! };
//! // A second holder is told how long the first one's lease has left.
//! let e = ll.acquire(b"locks/db".to_vec(), 10_000, 0, vec![], 1_000).unwrap_err();
//! assert!(e.to_string().contains("free in at most 9000 ms"));
//! // Or it waits, first come first served, and gets the lock when the first lets go.
//! let Acquire::Waiting(t) = ll.acquire(b"locks/db".to_vec(), 10_000, 5_000, vec![], 1_000).unwrap() else {
//!     panic!("held")
//! };
//! ll.cancel(a.cookie, 2_000).unwrap();
//! let (ticket, reply) = ll.poll_deferred().unwrap();
//! assert_eq!(ticket, t);
//! let b = reply.acquired().unwrap();
//! assert!(b.token > a.token);
//!
//! // The protected resource refuses the old holder from now on.
//! let mut fence = Fence::new();
//! fence.check(b.token).unwrap();
//! assert!(fence.check(a.token).is_err());
//! ```

pub mod fence;
pub mod machine;
pub mod wire;

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::event::EventId;
use crate::lease::Cookie;
use crate::time::Duration;

pub use fence::{Fence, Fenced};
pub use machine::{FenceCheck, FenceInput, FenceOptions, FenceOutput};
pub use wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};

/// Events kept per watch by default ([`CoordConfig::history`]).
pub const DEFAULT_HISTORY: usize = 1024;
/// Watches a landlord holds at most by default ([`CoordConfig::max_watches`]).
pub const DEFAULT_MAX_WATCHES: usize = 10_000;
/// Requests a landlord holds waiting at most by default ([`CoordConfig::max_waiters`]).
pub const DEFAULT_MAX_WAITERS: usize = 100_000;

fn default_history() -> usize {
    DEFAULT_HISTORY
}
fn default_max_watches() -> usize {
    DEFAULT_MAX_WATCHES
}
fn default_max_waiters() -> usize {
    DEFAULT_MAX_WAITERS
}

/// One resource, or every resource whose bytes start with a prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// The resource, or the prefix (hex in JSON).
    #[serde(with = "crate::wire::hex_bytes")]
    pub resource: Vec<u8>,
    /// Whether `resource` is a prefix.
    #[serde(default)]
    pub prefix: bool,
}

impl Selector {
    /// Exactly this resource.
    pub fn exact(resource: impl Into<Vec<u8>>) -> Selector {
        Selector { resource: resource.into(), prefix: false }
    }
    /// Every resource that starts with `prefix` (the empty prefix selects everything).
    pub fn prefix(prefix: impl AsRef<[u8]>) -> Selector {
        Selector { resource: prefix.as_ref().to_vec(), prefix: true }
    }
    /// Whether the resource `key` is selected.
    pub fn matches(&self, key: &[u8]) -> bool {
        if self.prefix {
            key.starts_with(&self.resource)
        } else {
            key == self.resource.as_slice()
        }
    }
}

/// A DHCP-style pool: acquiring `name` grants a lease on its first free member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// What a holder acquires (hex in JSON); never granted itself.
    #[serde(with = "crate::wire::hex_bytes")]
    pub name: Vec<u8>,
    /// The members, in the order they are handed out; each is an exclusive resource.
    #[serde(with = "hex_list")]
    pub members: Vec<Vec<u8>>,
}

impl Pool {
    /// A pool of `members` acquired as `name`.
    pub fn new(
        name: impl Into<Vec<u8>>,
        members: impl IntoIterator<Item = impl Into<Vec<u8>>>,
    ) -> Pool {
        Pool { name: name.into(), members: members.into_iter().map(Into::into).collect() }
    }
}

/// How a landlord coordinates: which resources are exclusive, its pools, and what it keeps.
///
/// Configuration, not state: the host supplies it at every start (like the policy), and may
/// change it between starts. Turning a resource exclusive while several leases hold it keeps
/// them; it counts as held until the last of them ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordConfig {
    /// Exclusive resources and prefixes.
    #[serde(default)]
    pub exclusive: Vec<Selector>,
    /// Pools (their members are exclusive).
    #[serde(default)]
    pub pools: Vec<Pool>,
    /// Events kept per watch for watchers that resume; older ones are reported as missed.
    #[serde(default = "default_history")]
    pub history: usize,
    /// Most watches held at once; more are denied.
    #[serde(default = "default_max_watches")]
    pub max_watches: usize,
    /// Most requests held waiting at once; more are denied.
    #[serde(default = "default_max_waiters")]
    pub max_waiters: usize,
}

impl Default for CoordConfig {
    fn default() -> Self {
        CoordConfig::new()
    }
}

impl CoordConfig {
    /// No exclusive resources, no pools, default limits (tokens and watches still work).
    pub fn new() -> CoordConfig {
        CoordConfig {
            exclusive: Vec::new(),
            pools: Vec::new(),
            history: DEFAULT_HISTORY,
            max_watches: DEFAULT_MAX_WATCHES,
            max_waiters: DEFAULT_MAX_WAITERS,
        }
    }
    /// With another exclusive resource or prefix.
    pub fn exclusive(mut self, s: Selector) -> CoordConfig {
        self.exclusive.push(s);
        self
    }
    /// With another pool.
    pub fn pool(mut self, p: Pool) -> CoordConfig {
        self.pools.push(p);
        self
    }
    /// With another history length per watch.
    pub fn with_history(mut self, events: usize) -> CoordConfig {
        self.history = events;
        self
    }

    /// Checks the configuration: pools have a name and members, a member belongs to one pool
    /// and is not a pool's name, a pool's name is not exclusive; history is at least 1.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(LeaseError::InvalidArgument(format!("coordination: {m}")));
        if self.history == 0 {
            return bad("history must keep at least one event".into());
        }
        let mut members = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for p in &self.pools {
            if p.name.is_empty() {
                return bad("a pool needs a name".into());
            }
            if p.members.is_empty() {
                return bad(format!("pool {} has no members", show(&p.name)));
            }
            if !names.insert(p.name.clone()) {
                return bad(format!("pool {} is named twice", show(&p.name)));
            }
            for m in &p.members {
                if !members.insert(m.clone()) {
                    return bad(format!("{} is a member of two pools, or twice", show(m)));
                }
            }
        }
        for p in &self.pools {
            if members.contains(&p.name) {
                return bad(format!("pool name {} is also a pool member", show(&p.name)));
            }
            if self.exclusive.iter().any(|s| s.matches(&p.name)) {
                return bad(format!(
                    "pool name {} is an exclusive resource: a pool's name is only acquired",
                    show(&p.name)
                ));
            }
        }
        Ok(())
    }
}

/// A resource for people: its text if it is printable UTF-8 (cut at 64 characters), else hex.
pub fn show(resource: &[u8]) -> String {
    match std::str::from_utf8(resource) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => {
            let mut out: String = s.chars().take(64).collect();
            if s.chars().count() > 64 {
                out.push('…');
            }
            format!("{out:?}")
        }
        _ => {
            let mut out = String::from("0x");
            for b in resource.iter().take(32) {
                out.push_str(&format!("{b:02x}"));
            }
            if resource.len() > 32 {
                out.push('…');
            }
            out
        }
    }
}

/// Identifies a request a landlord holds to answer later (a waiting acquire, a long poll).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// A lease granted by [`crate::Landlord::acquire`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquired {
    /// The lease's cookie: renew and cancel it like any lease.
    pub cookie: Cookie,
    /// Granted duration, counted from when the request was *sent* plus [`Acquired::waited`].
    pub duration: Duration,
    /// The fencing token: greater than every token this landlord granted before.
    pub token: u64,
    /// What was granted (a pool's member when a pool was acquired).
    pub resource: Vec<u8>,
    /// How long the request waited at the landlord before the grant (on its clock). The holder
    /// may count its lease from its send time plus this (never from when the answer came).
    pub waited: Duration,
}

impl Acquired {
    /// The holder's lease: landlord `landlord`'s lease counted from `sent_at` (the holder's
    /// clock when the request left) plus [`Acquired::waited`], less the clock drift allowed
    /// ([`crate::holder::local_expiration`]), ready for a renewal manager.
    pub fn lease(
        &self,
        landlord: crate::LandlordId,
        sent_at: crate::Millis,
        max_drift_ppm: u32,
    ) -> crate::Lease {
        let start = crate::time::expiration_after(sent_at, self.waited.max(0));
        let expiration = crate::holder::local_expiration(start, self.duration, max_drift_ppm);
        crate::Lease::new(landlord, self.cookie, expiration)
    }
}

/// What [`crate::Landlord::acquire`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    /// Granted now.
    Granted(Acquired),
    /// Held: the answer comes out of [`crate::Landlord::poll_deferred`] with this ticket.
    Waiting(Ticket),
}

/// What [`crate::Landlord::handle_coord`] did with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// The answer.
    Now(CoordReply),
    /// Held: the answer comes out of [`crate::Landlord::poll_deferred`] with this ticket.
    Later(Ticket),
}

/// An exclusive resource's current holder (what [`crate::Landlord::holders`] lists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Holder {
    /// The resource.
    #[serde(with = "crate::wire::hex_bytes")]
    pub resource: Vec<u8>,
    /// The holder's fencing token (0 for a lease granted before tokens were turned on).
    #[serde(with = "crate::time::dec::u64")]
    pub token: u64,
    /// The label its holder gave when it acquired (empty if none).
    #[serde(with = "crate::wire::hex_bytes")]
    pub holder: Vec<u8>,
    /// Time left on the lease (before any grace), unless it is renewed.
    #[serde(with = "crate::time::dec::i64")]
    pub remaining: Duration,
}

/// What happened to a watched lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A lease was granted.
    Granted,
    /// A lease was renewed (only to watches that asked for renewals).
    Renewed,
    /// A lease was cancelled by its holder.
    Cancelled,
    /// A lease expired.
    Expired,
}

impl EventKind {
    /// The kind's number in binary forms.
    pub fn code(self) -> u8 {
        match self {
            EventKind::Granted => 1,
            EventKind::Renewed => 2,
            EventKind::Cancelled => 3,
            EventKind::Expired => 4,
        }
    }
    /// The kind of a number from [`EventKind::code`].
    pub fn from_code(c: u8) -> Option<EventKind> {
        Some(match c {
            1 => EventKind::Granted,
            2 => EventKind::Renewed,
            3 => EventKind::Cancelled,
            4 => EventKind::Expired,
            _ => return None,
        })
    }
    /// Whether the lease ended.
    pub fn is_end(self) -> bool {
        matches!(self, EventKind::Cancelled | EventKind::Expired)
    }
}

/// One event of a watch: what happened to which lease.
///
/// A lease is named by its token (unique within its landlord), never by its cookie: a cookie is
/// its holder's secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseEvent {
    /// Strictly greater than the number of the watch's earlier events; one more than the last
    /// when nothing was missed.
    #[serde(with = "crate::time::dec::u64")]
    pub sequence: u64,
    /// What happened.
    pub kind: EventKind,
    /// The lease's resource.
    #[serde(with = "crate::wire::hex_bytes")]
    pub resource: Vec<u8>,
    /// The lease's fencing token (0 for a lease granted before tokens were turned on).
    #[serde(with = "crate::time::dec::u64")]
    pub token: u64,
    /// The label its holder gave when it acquired (empty if none).
    #[serde(with = "crate::wire::hex_bytes")]
    pub holder: Vec<u8>,
    /// Granted duration (granted, renewed); 0 for an end.
    #[serde(with = "crate::time::dec::i64")]
    pub duration: Duration,
}

/// A watch registration as granted ([`crate::Landlord::watch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watching {
    /// The registration's lease cookie: renew and cancel it like a lease; poll with it.
    pub cookie: Cookie,
    /// Granted duration of the registration's lease.
    pub duration: Duration,
    /// The event id every event of this registration carries.
    pub event_id: EventId,
    /// The number of the last event before the registration was returned (0): the next event
    /// carries a greater one.
    pub sequence: u64,
    /// The exclusive resources the watch selects that were held when it was made: the state
    /// its events start from.
    pub current: Vec<Holder>,
}

/// A watch's events after a sequence number ([`crate::Landlord::poll_events`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Events {
    /// The registration's event id.
    #[serde(with = "crate::time::dec::u64")]
    pub event_id: EventId,
    /// The registration's handback, byte for byte.
    #[serde(with = "crate::wire::hex_bytes")]
    pub handback: Vec<u8>,
    /// The number of the last event issued so far (the next one is greater).
    #[serde(with = "crate::time::dec::u64")]
    pub last: u64,
    /// Events the watcher missed (some are older than the history kept): `from..=to`, from the
    /// number after the one asked for to the last issued. There are no `events` then:
    /// resynchronise with `current` (the state after event `to`) and go on from `to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed: Option<Missed>,
    /// With `missed`: the exclusive resources the watch selects that are held now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Vec<Holder>>,
    /// The events, in order of sequence number.
    pub events: Vec<LeaseEvent>,
}

/// Event numbers a watcher can no longer get ([`Events::missed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Missed {
    /// First number gone.
    #[serde(with = "crate::time::dec::u64")]
    pub from: u64,
    /// Last number gone.
    #[serde(with = "crate::time::dec::u64")]
    pub to: u64,
}

/// What a landlord's coordination holds, for [`crate::Landlord::coord_stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoordStats {
    /// The last fencing token granted.
    pub last_token: u64,
    /// Exclusive resources held.
    pub held: usize,
    /// Requests waiting (acquires and long polls).
    pub waiting: usize,
    /// Watches held.
    pub watches: usize,
}

/// A list of byte strings as hex strings.
pub(crate) mod hex_list {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(transparent)]
    struct Hex(#[serde(with = "crate::wire::hex_bytes")] Vec<u8>);

    pub fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|b| Hex(b.clone())))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Ok(Vec::<Hex>::deserialize(d)?.into_iter().map(|h| h.0).collect())
    }
}
