//! Durability without I/O: the byte formats of journals and snapshots, and the rule that no
//! reply leaves before the records behind it are durable.
//!
//! A state machine that holds leases or registrations (a [`crate::Landlord`], and the services
//! built on one) can keep a *journal*: a record for every change, each with a sequence number.
//! The core decides what is written and how it is read back; the host only moves bytes:
//!
//! 1. it takes the records written since the last time as one *frame*
//!    (e.g. [`crate::Landlord::take_journal`]) and appends the frame to its log (a file, a
//!    database row);
//! 2. once the log is durable (fsync, commit) up to a sequence number, it releases the replies
//!    that depend on it ([`Gate`]): one sync covers every request answered meanwhile (group
//!    commit);
//! 3. from time to time it writes a snapshot (e.g. [`crate::Landlord::snapshot_bytes`]), and
//!    drops the log records the snapshot covers;
//! 4. after a crash it reads the snapshot back, replays the frames of the log that follow it
//!    ([`scan`] parses a log's bytes), and resumes.
//!
//! Snapshot plus journal gives exactly the state the original had: the same replies, the same
//! next cookie, the same expiries.
//!
//! # Frames
//!
//! A log is a sequence of frames, each the unit the host writes in one go. All integers are
//! little-endian:
//!
//! ```text
//! magic  u32   "LHJ1" (0x314A484C)
//! len    u32   payload bytes
//! seq    u64   sequence number of the frame's first record
//! count  u32   records in the frame (at least 1)
//! hcrc   u32   CRC-32 of the 20 bytes above
//! pcrc   u32   CRC-32 of the payload
//! payload      `count` records, each: LEB128 length, then that many bytes (kind byte first)
//! ```
//!
//! Sequence numbers run on without a gap from one frame to the next. A log whose *last* frame is
//! incomplete or fails its checksum, with nothing valid after it, has a torn tail (a write cut
//! short by a crash): [`scan`] accepts the frames before it and says where to truncate. Damage
//! anywhere else (a frame that fails its checksum followed by a valid one, a gap or a step back
//! in sequence numbers) is refused with a [`LeaseError::Decode`] naming the byte offset: a log
//! is never silently cut in the middle.
//!
//! # Snapshots
//!
//! ```text
//! magic  u32   "LHS1" (0x3153484C)
//! kind   u16   what state machine (1: landlord)
//! ver    u16   version of that kind's body
//! seq    u64   sequence number of the last record the snapshot includes
//! len    u64   body bytes
//! hcrc   u32   CRC-32 of the 24 bytes above
//! bcrc   u32   CRC-32 of the body
//! body
//! ```

use std::collections::VecDeque;
use std::ops::Range;

use crate::error::{LeaseError, Result};

/// First four bytes of every frame ("LHJ1").
pub const FRAME_MAGIC: u32 = u32::from_le_bytes(*b"LHJ1");
/// Bytes of a frame header.
pub const FRAME_HEADER: usize = 28;
/// First four bytes of every snapshot ("LHS1").
pub const SNAPSHOT_MAGIC: u32 = u32::from_le_bytes(*b"LHS1");
/// Bytes of a snapshot header.
pub const SNAPSHOT_HEADER: usize = 32;
/// Largest frame payload [`scan`] accepts (1 GiB): a larger length field is damage.
pub const MAX_FRAME: usize = 1 << 30;

/// The snapshot kind of a [`crate::Landlord`].
pub const KIND_LANDLORD: u16 = 1;
/// The snapshot kind of a [`crate::RenewalService`].
pub const KIND_RENEWAL_SERVICE: u16 = 2;
/// The snapshot kind of the lookup discovery service.
pub const KIND_DISCOVERY: u16 = 3;

/// CRC-32 (IEEE) of `bytes`.
#[inline]
pub fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

fn corrupt(msg: String) -> LeaseError {
    LeaseError::Decode(msg)
}

/// Resources a durable landlord can write to its journal and snapshots.
///
/// Implemented for byte vectors, strings, `()` and `u64`; implement it for your own resource
/// type to make a `Landlord<YourType>` durable.
pub trait Durable: Sized {
    /// Appends the resource's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads a resource back from exactly the bytes [`Durable::encode`] wrote.
    fn decode(bytes: &[u8]) -> Result<Self>;
}

impl Durable for Vec<u8> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
    fn decode(bytes: &[u8]) -> Result<Self> {
        Ok(bytes.to_vec())
    }
}

impl Durable for String {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(bytes: &[u8]) -> Result<Self> {
        String::from_utf8(bytes.to_vec())
            .map_err(|_| corrupt("a string resource is not UTF-8".into()))
    }
}

impl Durable for () {
    fn encode(&self, _out: &mut Vec<u8>) {}
    fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.is_empty() {
            Ok(())
        } else {
            Err(corrupt(format!("a () resource has {} bytes", bytes.len())))
        }
    }
}

impl Durable for u64 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn decode(bytes: &[u8]) -> Result<Self> {
        let b: [u8; 8] = bytes
            .try_into()
            .map_err(|_| corrupt(format!("a u64 resource has {} bytes", bytes.len())))?;
        Ok(u64::from_le_bytes(b))
    }
}

/// Appends `v` as LEB128.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a signed `v` as a zigzag LEB128 (small magnitudes, either sign, take few bytes).
#[inline]
pub fn put_ivarint(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Appends `bytes` with their length (LEB128) in front.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A cursor over bytes being decoded; every read checks the bounds first.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// Reads `bytes`; `what` names them in error messages.
    pub fn new(bytes: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { bytes, pos: 0, what }
    }
    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
    /// The read position.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// An error naming the position.
    pub fn error(&self, msg: impl std::fmt::Display) -> LeaseError {
        corrupt(format!("{} at byte {}: {msg}", self.what, self.pos))
    }
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(self.error(format!("{n} bytes needed, {} left", self.remaining())));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.bytes[self.pos..];
        self.pos = self.bytes.len();
        s
    }
    /// One byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    /// A little-endian u16.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    /// A little-endian u32.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    /// A little-endian u64.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// A little-endian i64.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(self.u64()? as i64)
    }
    /// A little-endian u128.
    pub fn u128(&mut self) -> Result<u128> {
        Ok(u128::from_le_bytes(self.take(16)?.try_into().expect("16 bytes")))
    }
    /// A LEB128 number of at most 64 bits.
    pub fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8()?;
            if i == 9 && b > 1 {
                return Err(self.error("varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(self.error("varint longer than 10 bytes"))
    }
    /// A LEB128 count that must fit in what is left (each item at least `min_item` bytes), so
    /// that hostile input cannot make the reader allocate more than the input's size.
    pub fn count(&mut self, min_item: usize) -> Result<usize> {
        let n = self.varint()?;
        if n > (self.remaining() / min_item.max(1)) as u64 {
            return Err(self.error(format!("count {n} exceeds what the bytes can hold")));
        }
        Ok(n as usize)
    }
    /// A zigzag LEB128 signed number ([`put_ivarint`]).
    pub fn ivarint(&mut self) -> Result<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }
    /// Bytes with their length in front ([`put_bytes`]).
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.count(1)?;
        self.take(n)
    }
    /// Fails unless everything was read.
    pub fn finish(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(self.error(format!("{} unexpected trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

/// Records written but not yet taken as a frame; kept inside each journaled state machine.
#[derive(Debug, Clone, Default)]
pub struct Pending {
    buf: Vec<u8>,
    /// Sequence number of the first record in `buf`.
    first: u64,
    count: u32,
    /// Sequence number of the last record written (0: none yet).
    last: u64,
    start: usize,
}

impl Pending {
    /// A journal whose last record so far is `last` (0 for a new one).
    pub fn new(last: u64) -> Pending {
        Pending { buf: Vec::new(), first: last + 1, count: 0, last, start: 0 }
    }

    /// The sequence number of the last record written.
    pub fn last_seq(&self) -> u64 {
        self.last
    }

    /// Marks records up to `seq` as written elsewhere (replayed from a log): the next record
    /// gets `seq + 1`. Only while nothing is pending.
    pub fn advance_to(&mut self, seq: u64) {
        debug_assert!(self.count == 0);
        self.last = seq;
        self.first = seq + 1;
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Whether records wait to be taken.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Starts a record of `kind`: the caller appends its body to the returned buffer, then
    /// calls [`Pending::end`].
    #[inline]
    pub fn begin(&mut self, kind: u8) -> &mut Vec<u8> {
        // Room for the length prefix, patched in `end` (records are almost always < 128 bytes).
        self.start = self.buf.len();
        self.buf.push(0);
        self.buf.push(kind);
        &mut self.buf
    }

    /// Ends the record started by [`Pending::begin`].
    #[inline]
    pub fn end(&mut self) {
        let len = self.buf.len() - self.start - 1;
        if len < 0x80 {
            self.buf[self.start] = len as u8;
        } else {
            let mut prefix = Vec::with_capacity(5);
            put_varint(&mut prefix, len as u64);
            self.buf.splice(self.start..self.start + 1, prefix);
        }
        self.count += 1;
        self.last += 1;
    }

    /// The body of the last record written, if it is of `kind`, still pending, and short (so
    /// that a counting record can be updated in place instead of repeated).
    pub fn last_body_mut(&mut self, kind: u8) -> Option<&mut [u8]> {
        if self.count == 0 || self.start + 2 > self.buf.len() {
            return None;
        }
        if self.buf[self.start] < 0x80 && self.buf[self.start + 1] == kind {
            Some(&mut self.buf[self.start + 2..])
        } else {
            None
        }
    }

    /// Appends one frame holding every pending record to `out` and returns their sequence
    /// numbers; `None` (and nothing appended) when no record is pending.
    pub fn take(&mut self, out: &mut Vec<u8>) -> Option<Range<u64>> {
        if self.count == 0 {
            return None;
        }
        let range = self.first..self.last + 1;
        write_frame(out, self.first, self.count, &self.buf);
        self.buf.clear();
        self.first = self.last + 1;
        self.count = 0;
        Some(range)
    }
}

/// Appends a frame of `count` records starting at `seq` (payload already encoded) to `out`.
pub fn write_frame(out: &mut Vec<u8>, seq: u64, count: u32, payload: &[u8]) {
    let mut h = [0u8; FRAME_HEADER];
    h[0..4].copy_from_slice(&FRAME_MAGIC.to_le_bytes());
    h[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    h[16..20].copy_from_slice(&count.to_le_bytes());
    let hcrc = crc(&h[0..20]);
    h[20..24].copy_from_slice(&hcrc.to_le_bytes());
    h[24..28].copy_from_slice(&crc(payload).to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
}

/// One valid frame found by [`scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Byte offset of the frame in the log.
    pub offset: usize,
    /// Sequence number of its first record.
    pub seq: u64,
    /// Records in it.
    pub count: u32,
    /// The records, each a LEB128 length and that many bytes.
    pub payload: &'a [u8],
}

impl<'a> Frame<'a> {
    /// The sequence numbers of its records.
    pub fn seqs(&self) -> Range<u64> {
        self.seq..self.seq + u64::from(self.count)
    }

    /// Its records, with their sequence numbers. Fails on a record that does not parse (which
    /// a frame that passed its checksum only has if it was written wrong).
    pub fn records(&self) -> Result<Vec<(u64, &'a [u8])>> {
        let mut r = Reader::new(self.payload, "journal frame");
        let mut out = Vec::with_capacity(self.count as usize);
        for i in 0..u64::from(self.count) {
            let len = r.count(1)?;
            let rec = r.take(len)?;
            if rec.is_empty() {
                return Err(r.error("empty record"));
            }
            out.push((self.seq + i, rec));
        }
        r.finish()?;
        Ok(out)
    }
}

/// What [`scan`] found in a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan<'a> {
    /// The valid frames, in order.
    pub frames: Vec<Frame<'a>>,
    /// Bytes of the log that hold valid frames: truncate the log to this length before
    /// appending to it again.
    pub valid_len: usize,
    /// Why the bytes after `valid_len` were dropped, if any were: a torn last write.
    pub torn: Option<String>,
}

impl Scan<'_> {
    /// The sequence number of the last record in the log, if it has any.
    pub fn last_seq(&self) -> Option<u64> {
        self.frames.last().map(|f| f.seq + u64::from(f.count) - 1)
    }
}

/// Why the frame at `at` is not valid, or `Ok(len)` with its total length.
fn check_frame(bytes: &[u8], at: usize) -> std::result::Result<Frame<'_>, String> {
    let rest = &bytes[at..];
    if rest.len() < FRAME_HEADER {
        return Err(format!("{} bytes, shorter than a frame header", rest.len()));
    }
    let magic = u32::from_le_bytes(rest[0..4].try_into().expect("4"));
    if magic != FRAME_MAGIC {
        return Err(format!("no frame magic (found {magic:#010x})"));
    }
    let hcrc = u32::from_le_bytes(rest[20..24].try_into().expect("4"));
    if crc(&rest[0..20]) != hcrc {
        return Err("frame header fails its checksum".into());
    }
    let len = u32::from_le_bytes(rest[4..8].try_into().expect("4")) as usize;
    let seq = u64::from_le_bytes(rest[8..16].try_into().expect("8"));
    let count = u32::from_le_bytes(rest[16..20].try_into().expect("4"));
    if count == 0 || len > MAX_FRAME || len < count as usize * 2 {
        return Err(format!("frame header is inconsistent ({count} records in {len} bytes)"));
    }
    if rest.len() < FRAME_HEADER + len {
        return Err(format!(
            "frame of {} bytes cut short at {} bytes",
            FRAME_HEADER + len,
            rest.len()
        ));
    }
    let payload = &rest[FRAME_HEADER..FRAME_HEADER + len];
    let pcrc = u32::from_le_bytes(rest[24..28].try_into().expect("4"));
    if crc(payload) != pcrc {
        return Err("frame payload fails its checksum".into());
    }
    Ok(Frame { offset: at, seq, count, payload })
}

/// Parses a log's bytes into frames.
///
/// `expect_seq`, if given, is the sequence number the first frame must start at (the record
/// after the previous segment's last). Accepts a torn tail (see the module docs) and reports
/// it; refuses damage elsewhere, and any gap or step back in sequence numbers, with a
/// [`LeaseError::Decode`] error naming the byte offset.
pub fn scan(bytes: &[u8], expect_seq: Option<u64>) -> Result<Scan<'_>> {
    let mut frames: Vec<Frame<'_>> = Vec::new();
    let mut at = 0;
    let mut next = expect_seq;
    while at < bytes.len() {
        match check_frame(bytes, at) {
            Ok(f) => {
                if let Some(n) = next {
                    if f.seq != n {
                        return Err(corrupt(format!(
                            "journal frame at byte {at} starts at record {}, expected {n}{}",
                            f.seq,
                            if f.seq > n { " (records missing)" } else { " (records repeated)" }
                        )));
                    }
                }
                next = Some(f.seq + u64::from(f.count));
                at += FRAME_HEADER + f.payload.len();
                frames.push(f);
            }
            Err(why) => {
                // Torn only if nothing valid follows: look for a later frame that continues the
                // sequence (or any valid frame at all, if we know no sequence yet).
                if let Some(later) = find_valid_frame(bytes, at + 1) {
                    return Err(corrupt(format!(
                        "journal damaged at byte {at} ({why}); a valid frame follows at byte {}",
                        later
                    )));
                }
                return Ok(Scan {
                    frames,
                    valid_len: at,
                    torn: Some(format!("torn tail at byte {at} of {}: {why}", bytes.len())),
                });
            }
        }
    }
    Ok(Scan { frames, valid_len: bytes.len(), torn: None })
}

/// Where a log stops being readable, as [`scan_prefix`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// Byte offset of the first byte that is not a valid frame.
    pub offset: usize,
    /// What is wrong there.
    pub why: String,
    /// Offsets of the valid frames found after it (damage, if any; none: a torn tail).
    pub later_frames: Vec<usize>,
}

/// Like [`scan`], but never refuses: the valid frames from the start of `bytes` up to the
/// first byte that is not one, and where and why it stopped (with the valid frames that
/// follow the damage, if any). Sequence numbers are not checked. For tools that inspect and
/// repair a damaged log (say exactly what a truncation at the damage would drop); recovery
/// uses [`scan`].
pub fn scan_prefix(bytes: &[u8]) -> (Vec<Frame<'_>>, Option<Break>) {
    let mut frames = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match check_frame(bytes, at) {
            Ok(f) => {
                at += FRAME_HEADER + f.payload.len();
                frames.push(f);
            }
            Err(why) => {
                let mut later_frames = Vec::new();
                let mut from = at + 1;
                while let Some(next) = find_valid_frame(bytes, from) {
                    later_frames.push(next);
                    from = next
                        + check_frame(bytes, next).map_or(1, |f| FRAME_HEADER + f.payload.len());
                }
                return (frames, Some(Break { offset: at, why, later_frames }));
            }
        }
    }
    (frames, None)
}

/// The frame at byte `at` of `bytes`, if a valid one starts there.
pub fn frame_at(bytes: &[u8], at: usize) -> Option<Frame<'_>> {
    check_frame(bytes, at).ok()
}

fn find_valid_frame(bytes: &[u8], from: usize) -> Option<usize> {
    let magic = FRAME_MAGIC.to_le_bytes();
    let mut i = from;
    while i + FRAME_HEADER <= bytes.len() {
        match bytes[i..].windows(4).position(|w| w == magic) {
            Some(p) => {
                let at = i + p;
                if check_frame(bytes, at).is_ok() {
                    return Some(at);
                }
                i = at + 1;
            }
            None => return None,
        }
    }
    None
}

/// What replaying a log found ([`replay_segments`], and the state machines' own
/// `replay_segments` and `recover`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recovered {
    /// Journal records applied on top of the snapshot.
    pub replayed: u64,
    /// Sequence number of the last record now in the state.
    pub last_seq: u64,
    /// A torn tail in the last segment: the segment's index, the length to truncate it to
    /// before appending again, and what was wrong.
    pub torn: Option<(usize, usize, String)>,
}

/// Replays a log kept in segments (oldest first): scans each, hands every valid frame to
/// `apply` (which skips records its state already has and returns how many it applied), and
/// accepts a torn tail in the last segment only. Damage anywhere else, or a torn tail in a
/// segment that later ones follow, is a [`LeaseError::Decode`] error.
pub fn replay_segments(
    segments: &[&[u8]],
    mut apply: impl FnMut(&Frame<'_>) -> Result<u64>,
) -> Result<Recovered> {
    let mut out = Recovered::default();
    for (i, seg) in segments.iter().enumerate() {
        let s = scan(seg, None).map_err(|e| corrupt(format!("log segment {i}: {}", e.detail())))?;
        for f in &s.frames {
            out.replayed += apply(f)?;
        }
        if let Some(why) = s.torn {
            if i + 1 != segments.len() {
                return Err(corrupt(format!(
                    "log segment {i} is cut short ({why}) but later segments follow"
                )));
            }
            out.torn = Some((i, s.valid_len, why));
        }
    }
    Ok(out)
}

/// A state machine that keeps a journal: what a store needs of it to write it down and to
/// compact its log. Building one back from a snapshot needs more (a landlord's policy, say),
/// so each type has its own `from_snapshot_bytes`/`recover`.
pub trait Journaled {
    /// The snapshot kind it writes.
    const KIND: u16;
    /// Sequence number of the last record written.
    fn journal_seq(&self) -> u64;
    /// Appends the records written since the last call as one frame to `out`.
    fn take_journal(&mut self, out: &mut Vec<u8>) -> Option<Range<u64>>;
    /// Appends a binary snapshot to `out`; returns the last record it includes.
    fn snapshot_bytes(&mut self, out: &mut Vec<u8>) -> u64;
    /// Replays log segments onto the state (see [`replay_segments`]).
    fn replay_segments(&mut self, segments: &[&[u8]]) -> Result<Recovered>;
    /// Continues the state machine's time on a host clock that now reads `now` (time spent
    /// down does not count); called once after recovery.
    fn resume(&mut self, now: crate::time::Millis);
}

/// Writes a snapshot container around `body`.
pub fn write_snapshot(out: &mut Vec<u8>, kind: u16, version: u16, seq: u64, body: &[u8]) {
    let mut h = [0u8; SNAPSHOT_HEADER];
    h[0..4].copy_from_slice(&SNAPSHOT_MAGIC.to_le_bytes());
    h[4..6].copy_from_slice(&kind.to_le_bytes());
    h[6..8].copy_from_slice(&version.to_le_bytes());
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    h[16..24].copy_from_slice(&(body.len() as u64).to_le_bytes());
    let hcrc = crc(&h[0..24]);
    h[24..28].copy_from_slice(&hcrc.to_le_bytes());
    h[28..32].copy_from_slice(&crc(body).to_le_bytes());
    out.reserve(SNAPSHOT_HEADER + body.len());
    out.extend_from_slice(&h);
    out.extend_from_slice(body);
}

/// A snapshot container, checked: its kind, version, sequence number and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotRef<'a> {
    /// What state machine it is of.
    pub kind: u16,
    /// Version of the body's format.
    pub version: u16,
    /// Sequence number of the last journal record it includes.
    pub seq: u64,
    /// The body.
    pub body: &'a [u8],
}

/// Checks a snapshot's header and checksums; a snapshot must be whole (it is replaced
/// atomically, never appended to), so any damage is an error.
pub fn read_snapshot(bytes: &[u8]) -> Result<SnapshotRef<'_>> {
    let bad = |m: String| corrupt(format!("bad snapshot: {m}"));
    if bytes.len() < SNAPSHOT_HEADER {
        return Err(bad(format!("{} bytes, shorter than its header", bytes.len())));
    }
    let magic = u32::from_le_bytes(bytes[0..4].try_into().expect("4"));
    if magic != SNAPSHOT_MAGIC {
        return Err(bad(format!("no snapshot magic (found {magic:#010x})")));
    }
    if crc(&bytes[0..24]) != u32::from_le_bytes(bytes[24..28].try_into().expect("4")) {
        return Err(bad("header fails its checksum".into()));
    }
    let kind = u16::from_le_bytes(bytes[4..6].try_into().expect("2"));
    let version = u16::from_le_bytes(bytes[6..8].try_into().expect("2"));
    let seq = u64::from_le_bytes(bytes[8..16].try_into().expect("8"));
    let len = u64::from_le_bytes(bytes[16..24].try_into().expect("8"));
    if len != (bytes.len() - SNAPSHOT_HEADER) as u64 {
        return Err(bad(format!(
            "body of {len} bytes announced, {} present",
            bytes.len() - SNAPSHOT_HEADER
        )));
    }
    let body = &bytes[SNAPSHOT_HEADER..];
    if crc(body) != u32::from_le_bytes(bytes[28..32].try_into().expect("4")) {
        return Err(bad("body fails its checksum".into()));
    }
    Ok(SnapshotRef { kind, version, seq, body })
}

/// Holds outputs (replies, events) until the journal records they depend on are durable.
///
/// Push each output with the journal's last sequence number at the time it was made
/// ([`crate::Landlord::journal_seq`]); when the store confirms a sequence number durable,
/// [`Gate::release`] hands back, in order, every output that may now leave.
///
/// ```
/// use leasehold::journal::Gate;
/// let mut gate = Gate::new();
/// gate.push(3, "reply to a");
/// gate.push(5, "reply to b");
/// assert_eq!(gate.release(4).collect::<Vec<_>>(), ["reply to a"]);
/// assert_eq!(gate.release(5).collect::<Vec<_>>(), ["reply to b"]);
/// ```
#[derive(Debug, Clone)]
pub struct Gate<T> {
    waiting: VecDeque<(u64, T)>,
    durable: u64,
}

impl<T> Default for Gate<T> {
    fn default() -> Self {
        Gate::new()
    }
}

impl<T> Gate<T> {
    /// An empty gate; nothing is durable yet.
    pub fn new() -> Gate<T> {
        Gate { waiting: VecDeque::new(), durable: 0 }
    }

    /// Holds `item` until record `seq` is durable. Items must be pushed in order of `seq`
    /// (which they are, when `seq` is read right after each call).
    pub fn push(&mut self, seq: u64, item: T) {
        debug_assert!(self.waiting.back().map_or(true, |(s, _)| *s <= seq));
        self.waiting.push_back((seq, item));
    }

    /// Records durable up to `durable` (inclusive): the items that may now leave, in order.
    pub fn release(&mut self, durable: u64) -> impl Iterator<Item = T> + '_ {
        self.durable = self.durable.max(durable);
        let n = self.waiting.iter().take_while(|(s, _)| *s <= self.durable).count();
        self.waiting.drain(..n).map(|(_, t)| t)
    }

    /// Items still waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Nothing waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The highest sequence number confirmed durable so far.
    pub fn durable(&self) -> u64 {
        self.durable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(frames: &[(u64, &[&[u8]])]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(seq, recs) in frames {
            let mut p = Pending::new(seq - 1);
            for r in recs {
                let b = p.begin(r[0]);
                b.extend_from_slice(&r[1..]);
                p.end();
            }
            p.take(&mut out).unwrap();
        }
        out
    }

    #[test]
    fn frames_round_trip_with_long_records() {
        let long = vec![7u8; 300];
        let log = log_of(&[(1, &[b"a1", &long]), (3, &[b"b"])]);
        let s = scan(&log, Some(1)).unwrap();
        assert_eq!(s.torn, None);
        assert_eq!(s.valid_len, log.len());
        assert_eq!(s.last_seq(), Some(3));
        let recs = s.frames[0].records().unwrap();
        assert_eq!(recs[0], (1, &b"a1"[..]));
        assert_eq!(recs[1], (2, &long[..]));
        assert_eq!(s.frames[1].records().unwrap(), vec![(3, &b"b"[..])]);
    }

    #[test]
    fn a_torn_tail_is_dropped_at_every_cut() {
        let log = log_of(&[(1, &[b"a1"]), (2, &[b"b2", b"c3"])]);
        let first = FRAME_HEADER + 3;
        for cut in first..log.len() {
            let s = scan(&log[..cut], None).unwrap();
            assert_eq!(s.valid_len, first, "cut at {cut}");
            assert_eq!(s.frames.len(), 1);
            assert!(s.torn.is_some() || cut == first);
        }
    }

    #[test]
    fn damage_before_a_valid_frame_is_refused_and_in_the_last_frame_is_torn() {
        let log = log_of(&[(1, &[b"a1"]), (2, &[b"b2"]), (3, &[b"c3"])]);
        let frame = FRAME_HEADER + 3;
        for at in 0..log.len() {
            let mut bad = log.clone();
            bad[at] ^= 0x40;
            let r = scan(&bad, Some(1));
            if at < 2 * frame {
                let e = r.expect_err(&format!("flip at {at} accepted"));
                assert!(e.to_string().contains("a valid frame follows"), "{e}");
            } else {
                let s = r.unwrap();
                assert_eq!(s.valid_len, 2 * frame);
                assert!(s.torn.is_some());
            }
        }
    }

    #[test]
    fn scan_prefix_stops_at_damage_and_names_the_frames_after_it() {
        let log = log_of(&[(1, &[b"a1"]), (2, &[b"b2"]), (3, &[b"c3"])]);
        let frame = FRAME_HEADER + 3;
        let (frames, brk) = scan_prefix(&log);
        assert_eq!((frames.len(), brk), (3, None));
        let mut bad = log.clone();
        bad[frame + 5] ^= 0x40;
        let (frames, brk) = scan_prefix(&bad);
        assert_eq!(frames.len(), 1);
        let brk = brk.unwrap();
        assert_eq!((brk.offset, brk.later_frames.clone()), (frame, vec![2 * frame]));
        assert_eq!(frame_at(&bad, 2 * frame).unwrap().seq, 3);
        // A torn tail: nothing valid after it.
        let (frames, brk) = scan_prefix(&log[..log.len() - 2]);
        assert_eq!(frames.len(), 2);
        assert!(brk.unwrap().later_frames.is_empty());
    }

    #[test]
    fn gaps_and_repeats_are_refused() {
        let mut log = log_of(&[(1, &[b"a1"])]);
        log.extend(log_of(&[(3, &[b"c3"])]));
        assert!(scan(&log, None).unwrap_err().to_string().contains("missing"));
        let mut log = log_of(&[(1, &[b"a1"])]);
        log.extend(log_of(&[(1, &[b"a1"])]));
        assert!(scan(&log, None).unwrap_err().to_string().contains("repeated"));
        assert!(scan(&log_of(&[(5, &[b"x"])]), Some(4)).is_err());
    }

    #[test]
    fn snapshots_check_everything() {
        let mut s = Vec::new();
        write_snapshot(&mut s, KIND_LANDLORD, 2, 42, b"body");
        let r = read_snapshot(&s).unwrap();
        assert_eq!((r.kind, r.version, r.seq, r.body), (KIND_LANDLORD, 2, 42, &b"body"[..]));
        for at in 0..s.len() {
            let mut bad = s.clone();
            bad[at] ^= 1;
            assert!(read_snapshot(&bad).is_err(), "flip at {at}");
        }
        assert!(read_snapshot(&s[..s.len() - 1]).is_err());
    }

    #[test]
    fn varints_and_counts_are_bounded() {
        let mut v = Vec::new();
        for x in [0, 1, 127, 128, 300, u64::MAX] {
            v.clear();
            put_varint(&mut v, x);
            assert_eq!(Reader::new(&v, "t").varint().unwrap(), x);
        }
        assert!(Reader::new(&[0xff; 11], "t").varint().is_err());
        for x in [0, 1, -1, 63, -64, 64, i64::MIN, i64::MAX] {
            v.clear();
            put_ivarint(&mut v, x);
            assert_eq!(Reader::new(&v, "t").ivarint().unwrap(), x);
        }
        v.clear();
        put_bytes(&mut v, b"abc");
        assert_eq!(Reader::new(&v, "t").bytes().unwrap(), b"abc");
        let mut v = Vec::new();
        put_varint(&mut v, 1 << 40);
        assert!(Reader::new(&v, "t").count(1).is_err());
    }
}
