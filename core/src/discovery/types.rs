//! The values of lookup discovery: registrar ids, locators, groups, registrars, announcements,
//! unicast requests and answers, delivery failures and the discovery event.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{LeaseError, Result};
use crate::event::RemoteEvent;
use crate::time::Duration;

/// The longest group name and the longest locator host, in bytes (UTF-8 for group names).
pub const MAX_NAME_BYTES: usize = 255;

/// Identifies a lookup service (a *registrar*, Jini's `ServiceID`): 128 bits, chosen by the
/// registrar and kept across its restarts.
///
/// Written as 32 lower-case hex digits in text forms (either case is read).
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RegistrarId(pub u128);

impl RegistrarId {
    /// The 32 lowercase hex digits, without going through `fmt` (ids are written in every
    /// registrar a binding hands out, so this is on the bindings' hot path).
    fn hex(&self) -> [u8; 32] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut buf = [0u8; 32];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = DIGITS[((self.0 >> (124 - 4 * i)) & 0xf) as usize];
        }
        buf
    }
}

impl fmt::Display for RegistrarId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // ASCII hex digits are valid UTF-8.
        f.write_str(std::str::from_utf8(&self.hex()).unwrap_or_default())
    }
}

impl fmt::Debug for RegistrarId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RegistrarId({self})")
    }
}

impl FromStr for RegistrarId {
    type Err = LeaseError;
    fn from_str(s: &str) -> Result<RegistrarId> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(LeaseError::Decode(format!(
                "registrar id must be 32 hex digits, got {:?}",
                s.chars().take(40).collect::<String>()
            )));
        }
        u128::from_str_radix(s, 16)
            .map(RegistrarId)
            .map_err(|e| LeaseError::Decode(format!("registrar id: {e}")))
    }
}

impl Serialize for RegistrarId {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(std::str::from_utf8(&self.hex()).unwrap_or_default())
    }
}

impl<'de> Deserialize<'de> for RegistrarId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Identifies a registration inside its [`super::DiscoveryService`]. Numbers start at 1 and are
/// never reused. Remote clients name their registration by its lease cookie instead (which
/// cannot be guessed); this number is the event source's `object`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RegistrationId(pub u64);

impl fmt::Debug for RegistrationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RegistrationId({})", self.0)
    }
}

impl fmt::Display for RegistrationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "registration {}", self.0)
    }
}

/// Where a lookup service listens for unicast discovery (Jini's `LookupLocator`): a host and a
/// port.
///
/// The host is kept in lower case, so two locators are equal exactly when their hosts are equal
/// ignoring ASCII case and their ports are equal (`LookupLocator.equals`). No name resolution
/// is done: `localhost:4160` and `127.0.0.1:4160` are different locators.
///
/// Text form: `host:port`, or `[v6-address]:port` for a host containing `:` (an IPv6 literal).
/// A host is 1 to 255 bytes of ASCII letters, digits, `.`, `-`, `_`, `:` and `%`; the port is
/// 1 to 65535.
///
/// ```
/// use leasehold::discovery::Locator;
/// let l: Locator = "Registrar.Example:4160".parse().unwrap();
/// assert_eq!(l.host(), "registrar.example");
/// assert_eq!(l.to_string(), "registrar.example:4160");
/// assert_eq!("[::1]:4160".parse::<Locator>().unwrap().host(), "::1");
/// assert!("no-port".parse::<Locator>().is_err());
/// ```
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Locator {
    host: String,
    port: u16,
}

impl Locator {
    /// A locator for `host` and `port`; the host is lower-cased. A bad host or port 0 is an
    /// [`LeaseError::InvalidArgument`].
    pub fn new(host: &str, port: u16) -> Result<Locator> {
        check_host(host).map_err(LeaseError::InvalidArgument)?;
        if port == 0 {
            return Err(LeaseError::InvalidArgument(format!("locator {host}: port 0")));
        }
        Ok(Locator { host: host.to_ascii_lowercase(), port })
    }

    /// The host, in lower case (an IPv6 literal without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

fn check_host(host: &str) -> std::result::Result<(), String> {
    if host.is_empty() || host.len() > MAX_NAME_BYTES {
        return Err(format!("a locator host is 1 to {MAX_NAME_BYTES} bytes, got {}", host.len()));
    }
    let ok = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'%');
    if let Some(b) = host.bytes().find(|&b| !ok(b)) {
        return Err(format!(
            "a locator host has letters, digits and . - _ : % only, got {:?} in {:?}",
            b as char,
            host.chars().take(40).collect::<String>()
        ));
    }
    Ok(())
}

impl fmt::Display for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Debug for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Locator({self})")
    }
}

impl FromStr for Locator {
    type Err = LeaseError;
    /// Parses `host:port` or `[v6]:port`; any failure is an [`LeaseError::InvalidArgument`].
    fn from_str(s: &str) -> Result<Locator> {
        let bad = |why: &str| {
            LeaseError::InvalidArgument(format!(
                "locator {:?}: {why}",
                s.chars().take(60).collect::<String>()
            ))
        };
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(|| bad("no closing ]"))?;
            let port = after.strip_prefix(':').ok_or_else(|| bad("no :port after ]"))?;
            if !host.contains(':') {
                return Err(bad("brackets are for IPv6 literals only"));
            }
            (host, port)
        } else {
            let (host, port) = s.rsplit_once(':').ok_or_else(|| bad("no :port"))?;
            if host.contains(':') {
                return Err(bad("an IPv6 host goes in brackets: [host]:port"));
            }
            (host, port)
        };
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("the port is 1 to 65535"));
        }
        let port: u16 = port.parse().map_err(|_| bad("the port is 1 to 65535"))?;
        Locator::new(host, port).map_err(|e| bad(&e.detail()))
    }
}

impl Serialize for Locator {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        // One string, not `collect_str`: serde_json escapes each piece `fmt` writes.
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Locator {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(|e: LeaseError| serde::de::Error::custom(e.detail()))
    }
}

/// Checks a group name: at most [`MAX_NAME_BYTES`] bytes of UTF-8 (the empty name is Jini's
/// "public" group).
pub fn check_group(name: &str) -> Result<()> {
    if name.len() > MAX_NAME_BYTES {
        return Err(LeaseError::InvalidArgument(format!(
            "a group name is at most {MAX_NAME_BYTES} bytes, got {}",
            name.len()
        )));
    }
    Ok(())
}

/// The groups a registration wants discovered (Jini's managed set of groups).
///
/// [`Groups::All`] is Jini's `ALL_GROUPS` (`null`): every lookup service, whatever its groups.
/// `Groups::Only` with an empty set is `NO_GROUPS`: no group discovery at all. Otherwise, a
/// lookup service is wanted when it is a member of at least one of the names. Duplicates
/// collapse; a name may be empty (the public group) but is never missing.
///
/// JSON form: `null` for all groups, else an array of names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Groups {
    /// Every group (Jini `ALL_GROUPS`).
    All,
    /// These groups only; none when empty (Jini `NO_GROUPS`).
    Only(BTreeSet<String>),
}

impl Groups {
    /// Every group.
    pub fn all() -> Groups {
        Groups::All
    }

    /// No group.
    pub fn none() -> Groups {
        Groups::Only(BTreeSet::new())
    }

    /// The named groups (duplicates collapse).
    pub fn of<I, S>(names: I) -> Groups
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Groups::Only(names.into_iter().map(Into::into).collect())
    }

    /// Whether this is [`Groups::All`].
    pub fn is_all(&self) -> bool {
        matches!(self, Groups::All)
    }

    /// The names, or `None` for all groups.
    pub fn names(&self) -> Option<&BTreeSet<String>> {
        match self {
            Groups::All => None,
            Groups::Only(s) => Some(s),
        }
    }

    /// Whether a lookup service that is a member of `member_of` is wanted.
    pub fn matches(&self, member_of: &BTreeSet<String>) -> bool {
        match self {
            Groups::All => true,
            Groups::Only(s) => {
                // Walk the smaller set.
                let (a, b) =
                    if s.len() <= member_of.len() { (s, member_of) } else { (member_of, s) };
                a.iter().any(|g| b.contains(g))
            }
        }
    }

    /// Checks every name ([`check_group`]) and the count against `max`.
    pub fn check(&self, max: usize) -> Result<()> {
        if let Groups::Only(s) = self {
            check_names(s.iter(), s.len(), max)?;
        }
        Ok(())
    }
}

pub(crate) fn check_names<'a>(
    mut names: impl Iterator<Item = &'a String>,
    count: usize,
    max: usize,
) -> Result<()> {
    if count > max {
        return Err(LeaseError::InvalidArgument(format!(
            "{count} group names, more than the {max} allowed"
        )));
    }
    names.try_for_each(|n| check_group(n))
}

impl Serialize for Groups {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Groups::All => s.serialize_none(),
            Groups::Only(names) => s.collect_seq(names),
        }
    }
}

impl<'de> Deserialize<'de> for Groups {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(match Option::<Vec<String>>::deserialize(d)? {
            None => Groups::All,
            Some(v) => {
                for n in &v {
                    check_group(n).map_err(|e| serde::de::Error::custom(e.detail()))?;
                }
                Groups::Only(v.into_iter().collect())
            }
        })
    }
}

/// A lookup service as the discovery service knows it: its id, the groups it is a member of,
/// and the locators it was found at (announced, or reached by unicast discovery).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registrar {
    /// Its id.
    pub id: RegistrarId,
    /// The groups it is a member of, as last heard.
    pub groups: BTreeSet<String>,
    /// Where it was found.
    pub locators: BTreeSet<Locator>,
}

/// A multicast announcement of a lookup service, as the host received it (the datagram format
/// is [`Announcement::encode`]).
///
/// A registrar announces itself every so often. `ttl` says how long after this announcement it
/// should still count as present without another one (typically a few announcement intervals);
/// once that passes in silence, the service treats it as unreachable. `sequence` grows with
/// every announcement of the registrar, across its restarts (for example epoch milliseconds at
/// start plus a counter): an announcement with a number at or below the last one accepted from
/// that registrar is stale (duplicated or reordered) and ignored.
///
/// Data form (serde): `{registrar, groups, locator, sequence, ttl}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Announcement {
    /// Who announces.
    pub registrar: RegistrarId,
    /// Its groups.
    pub groups: BTreeSet<String>,
    /// Where it takes unicast discovery.
    pub locator: Locator,
    /// Grows with every announcement of this registrar.
    pub sequence: u64,
    /// How long it counts as present after this announcement, in ms (1 to 2^32 - 1).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub ttl: Duration,
}

/// A unicast discovery the host should make: contact the lookup service at `locator` and
/// report what it found with [`super::DiscoveryService::handle_unicast`], quoting `id`.
///
/// Data form (serde, written only): `{id, locator, host, port}` (host and port are the
/// locator's, for hosts that open a socket).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnicastRequest {
    /// Quote it in the answer.
    pub id: u64,
    /// Whom to contact.
    pub locator: Locator,
}

impl Serialize for UnicastRequest {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("UnicastRequest", 4)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("locator", &self.locator)?;
        st.serialize_field("host", self.locator.host())?;
        st.serialize_field("port", &self.locator.port())?;
        st.end()
    }
}

/// What unicast discovery of a locator found: the lookup service there and its groups.
///
/// Data form (serde): `{registrar, groups}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnicastResponse {
    /// The lookup service that answered.
    pub registrar: RegistrarId,
    /// Its groups.
    pub groups: BTreeSet<String>,
}

impl From<&Announcement> for UnicastResponse {
    /// A lookup service may answer a unicast probe with an announcement datagram: its id and
    /// groups are the answer.
    fn from(a: &Announcement) -> UnicastResponse {
        UnicastResponse { registrar: a.registrar, groups: a.groups.clone() }
    }
}

/// Why an event could not be delivered to a registration's listener (LD.3.1).
///
/// Data form (serde): `{kind: "indefinite", message}`, `{kind: "unknown_event"}`,
/// `{kind: "bad_object", message}`, `{kind: "bad_invocation", message}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum DeliveryFailure {
    /// A transport failure or time-out: the event is sent again later, until it is delivered or
    /// the registration's lease ends.
    Indefinite(String),
    /// The listener does not know the event id (`UnknownEventException`): the registration is
    /// cancelled.
    UnknownEvent,
    /// The listener is broken (a bad object exception): the registration is cancelled.
    BadObject(String),
    /// The call itself was refused (a bad invocation exception): the registration is cancelled.
    BadInvocation(String),
}

impl DeliveryFailure {
    /// Whether the failure ends the registration (everything but [`DeliveryFailure::Indefinite`]).
    pub fn is_definite(&self) -> bool {
        !matches!(self, DeliveryFailure::Indefinite(_))
    }
}

/// What a discovery event reports: registrars discovered, or registrars discarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryChange {
    /// `true` for a discarded event, `false` for a discovered one.
    pub discarded: bool,
    /// The registrars, by id, never empty, each as known when the event was made.
    pub registrars: Vec<Registrar>,
}

/// An event of a discovery registration (Jini's `RemoteDiscoveryEvent`), as the host delivers
/// it to the registration's listener: event id, source, strictly increasing sequence number,
/// the handback exactly as registered, and what changed.
pub type RemoteDiscoveryEvent = RemoteEvent<DiscoveryChange>;

impl RemoteEvent<DiscoveryChange> {
    /// Whether this is a discarded event (`isDiscarded`).
    pub fn is_discarded(&self) -> bool {
        self.kind.discarded
    }

    /// The registrars discovered or discarded (`getRegistrars`).
    pub fn registrars(&self) -> &[Registrar] {
        &self.kind.registrars
    }

    /// Each registrar's groups, by id (`getGroups`).
    pub fn groups(&self) -> BTreeMap<RegistrarId, &BTreeSet<String>> {
        self.kind.registrars.iter().map(|r| (r.id, &r.groups)).collect()
    }
}
