//! A hierarchical timing wheel over `u64` keys, with intrusive doubly-linked lists of slab
//! indices, so that filing, unfiling and finding the earliest entry are O(1) (O(levels)).
//!
//! Keys are points in time mapped monotonically onto `u64` ([`key_of`]). The wheel has
//! [`LEVELS`] levels of 64 lists each; level `L` list `i` holds the entries whose key agrees with
//! `elapsed` above bit `6 (L + 1)`, differs from it in the 6-bit digit `L`, and has digit `i`
//! there (always above `elapsed`'s own digit). So every entry of level `L` is earlier than every
//! entry of level `L + 1`, and the earliest list is the first occupied one of the lowest occupied
//! level: an occupancy bit mask per level finds it with one `trailing_zeros`.
//!
//! The nodes live in the caller's slab; the wheel only keeps the list heads. An entry filed at a
//! key not above `elapsed` (the host's clock went backwards) goes to a small ordered side set.
//!
//! Processing is done by the landlord, which decides per entry whether it expires: a list whose
//! whole range is due is drained; a list that is only partly due is *cascaded*: `elapsed` moves
//! to its start and its entries are re-filed one by one (landing on lower levels).

use std::collections::BTreeSet;

/// No index (end of a list, empty list).
pub(crate) const NIL: u32 = u32::MAX;
/// `Links::list` of an entry filed nowhere.
pub(crate) const LIST_NONE: u16 = 0x7ffe;
/// `Links::list` of an entry in the side set (filed at or before `elapsed`).
pub(crate) const LIST_EARLY: u16 = 0x7ffd;

const BITS: u32 = 6;
const WIDTH: usize = 1 << BITS;
/// Levels needed to cover 64-bit keys with 6-bit digits.
pub(crate) const LEVELS: usize = 11;
const LISTS: usize = LEVELS * WIDTH;

/// Maps a time in ms (`i64`) onto `u64`, keeping the order.
#[inline]
pub(crate) fn key_of(t: i64) -> u64 {
    (t as u64) ^ (1 << 63)
}

/// The inverse of [`key_of`].
#[inline]
pub(crate) fn time_of(k: u64) -> i64 {
    (k ^ (1 << 63)) as i64
}

/// The intrusive part of a slab slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Links {
    /// Previous entry of the same list, or [`NIL`].
    pub prev: u32,
    /// Next entry of the same list, or [`NIL`]; for a free slot, the next free slot.
    pub next: u32,
    /// Which list: `0..LISTS` for a wheel list, or one of the `LIST_*` tags.
    pub list: u16,
}

/// Gives the wheel access to the links of a slab slot (stored flat in the slot, so that the
/// slot packs without padding).
pub(crate) trait Node {
    /// The slot's links.
    fn links(&self) -> Links;
    /// Sets all links.
    fn set_links(&mut self, links: Links);
    /// Sets the previous entry.
    fn set_prev(&mut self, prev: u32);
    /// Sets the next entry.
    fn set_next(&mut self, next: u32);
}

/// A list that has reached its time, as found by [`Wheel::earliest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    /// The list.
    pub list: u16,
    /// Smallest key the list can hold.
    pub start: u64,
    /// Largest key the list can hold.
    pub end: u64,
}

/// The wheel: list heads, occupancy, and the time it has advanced to.
#[derive(Debug, Clone)]
pub(crate) struct Wheel {
    heads: Box<[u32]>,
    occupied: [u64; LEVELS],
    elapsed: u64,
    filed: usize,
    early: BTreeSet<(u64, u32)>,
}

#[inline]
fn level_of(elapsed: u64, key: u64) -> usize {
    debug_assert!(key > elapsed);
    ((63 - (elapsed ^ key).leading_zeros()) / BITS) as usize
}

#[inline]
fn digit(key: u64, level: usize) -> usize {
    ((key >> (BITS as usize * level)) as usize) & (WIDTH - 1)
}

#[inline]
fn above(level: usize) -> u64 {
    let shift = BITS as usize * (level + 1);
    if shift >= 64 {
        0
    } else {
        !0u64 << shift
    }
}

impl Wheel {
    /// An empty wheel at `elapsed`.
    pub fn new(elapsed: u64) -> Wheel {
        Wheel {
            heads: vec![NIL; LISTS].into_boxed_slice(),
            occupied: [0; LEVELS],
            elapsed,
            filed: 0,
            early: BTreeSet::new(),
        }
    }

    /// Heap bytes held by the wheel itself (not the nodes).
    pub fn heap_bytes(&self) -> usize {
        self.heads.len() * std::mem::size_of::<u32>()
            + self.early.len() * std::mem::size_of::<(u64, u32)>()
    }

    /// Files `idx` at `key`. `now` (a key) lets an empty wheel jump forward for free.
    pub fn insert<N: Node>(&mut self, nodes: &mut [N], idx: u32, key: u64, now: u64) {
        if self.filed == 0 {
            // Nothing filed: any `elapsed` up to the landlord's now is consistent. Never back:
            // a cascade in progress has moved `elapsed` to the start of the list it empties.
            self.elapsed = self.elapsed.max(now.min(key.saturating_sub(1)));
        }
        if key <= self.elapsed {
            self.early.insert((key, idx));
            nodes[idx as usize].set_links(Links { prev: NIL, next: NIL, list: LIST_EARLY });
            return;
        }
        let level = level_of(self.elapsed, key);
        let d = digit(key, level);
        let list = level * WIDTH + d;
        let head = self.heads[list];
        nodes[idx as usize].set_links(Links { prev: NIL, next: head, list: list as u16 });
        if head == NIL {
            self.occupied[level] |= 1 << d;
        } else {
            nodes[head as usize].set_prev(idx);
        }
        self.heads[list] = idx;
        self.filed += 1;
    }

    /// Takes `idx` out of whatever it is filed in. `key` is needed only for the side set (it
    /// must be the key the entry was filed at). Leaves the links tagged [`LIST_NONE`].
    pub fn remove<N: Node>(&mut self, nodes: &mut [N], idx: u32, key: u64) {
        let Links { prev, next, list } = nodes[idx as usize].links();
        match list {
            LIST_EARLY => {
                self.early.remove(&(key, idx));
            }
            LIST_NONE => {}
            _ => {
                let l = list as usize;
                if prev == NIL {
                    self.heads[l] = next;
                    if next == NIL {
                        self.occupied[l / WIDTH] &= !(1 << (l % WIDTH));
                    }
                } else {
                    nodes[prev as usize].set_next(next);
                }
                if next != NIL {
                    nodes[next as usize].set_prev(prev);
                }
                self.filed -= 1;
            }
        }
        nodes[idx as usize].set_links(Links { prev: NIL, next: NIL, list: LIST_NONE });
    }

    /// Takes the first entry of wheel list `list`, tagging it [`LIST_NONE`].
    pub fn pop<N: Node>(&mut self, nodes: &mut [N], list: u16) -> Option<u32> {
        let l = list as usize;
        let idx = self.heads[l];
        if idx == NIL {
            return None;
        }
        let next = nodes[idx as usize].links().next;
        nodes[idx as usize].set_links(Links { prev: NIL, next: NIL, list: LIST_NONE });
        self.heads[l] = next;
        if next == NIL {
            self.occupied[l / WIDTH] &= !(1 << (l % WIDTH));
        } else {
            nodes[next as usize].set_prev(NIL);
        }
        self.filed -= 1;
        Some(idx)
    }

    /// The first entry of the side set if its key is at most `t`.
    pub fn pop_early(&mut self, t: u64) -> Option<(u64, u32)> {
        match self.early.first() {
            Some(&(k, _)) if k <= t => self.early.pop_first(),
            _ => None,
        }
    }

    /// Starts cascading `due` (a list only partly due): `elapsed` moves to its start, so its
    /// entries, popped and inserted again, land on lower levels.
    pub fn begin_cascade(&mut self, due: Due) {
        debug_assert!(due.start > self.elapsed);
        self.elapsed = due.start;
    }

    /// The smallest key wheel list `list` can hold (for an occupied list; between calls, not
    /// during a cascade). Every entry of a list is due at or after its start, so an entry whose
    /// key moved later, or moved earlier but not before this, may stay where it is: the list is
    /// taken before anything in it can be due, and each entry is then judged by its own key.
    #[inline]
    pub fn list_start(&self, list: u16) -> u64 {
        let level = list as usize / WIDTH;
        let d = (list as usize % WIDTH) as u64;
        (self.elapsed & above(level)) | (d << (BITS as usize * level))
    }

    /// The earliest occupied list.
    pub fn earliest(&self) -> Option<Due> {
        for level in 0..LEVELS {
            let cur = digit(self.elapsed, level);
            let mask =
                if cur == WIDTH - 1 { 0 } else { self.occupied[level] & (!0u64 << (cur + 1)) };
            if mask != 0 {
                let d = mask.trailing_zeros() as u16;
                let list = (level * WIDTH) as u16 + d;
                let start = self.list_start(list);
                let end = start + ((1u64 << (BITS as usize * level)) - 1);
                return Some(Due { list, start, end });
            }
        }
        None
    }

    /// Entries filed in wheel lists (not the side set).
    pub fn filed(&self) -> usize {
        self.filed
    }

    /// Entries in the side set.
    pub fn early_len(&self) -> usize {
        self.early.len()
    }

    /// Marks everything up to `t` processed (call only when nothing at or before `t` is left).
    pub fn advance(&mut self, t: u64) {
        if t > self.elapsed {
            self.elapsed = t;
        }
    }

    /// The smallest key at which something may be due: a lower bound, never later than the
    /// earliest entry.
    pub fn next_key(&self) -> Option<u64> {
        let mut best = self.early.first().map(|&(k, _)| k);
        if let Some(d) = self.earliest() {
            best = Some(best.map_or(d.start, |b| b.min(d.start)));
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct N(Links);
    impl Node for N {
        fn links(&self) -> Links {
            self.0
        }
        fn set_links(&mut self, l: Links) {
            self.0 = l;
        }
        fn set_prev(&mut self, p: u32) {
            self.0.prev = p;
        }
        fn set_next(&mut self, n: u32) {
            self.0.next = n;
        }
    }

    fn nodes(n: usize) -> Vec<N> {
        (0..n).map(|_| N(Links { prev: NIL, next: NIL, list: LIST_NONE })).collect()
    }

    #[test]
    fn key_mapping_keeps_order() {
        let ts = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX - 1, i64::MAX];
        for w in ts.windows(2) {
            assert!(key_of(w[0]) < key_of(w[1]));
            assert_eq!(time_of(key_of(w[0])), w[0]);
        }
    }

    #[test]
    fn earliest_is_the_lowest_key_across_levels() {
        let mut ns = nodes(4);
        let mut w = Wheel::new(1000);
        w.insert(&mut ns, 0, 1_000_000, 1000);
        w.insert(&mut ns, 1, 1005, 1000);
        w.insert(&mut ns, 2, 5000, 1000);
        let d = w.earliest().unwrap();
        assert_eq!((d.start, d.end), (1005, 1005));
        assert_eq!(w.pop(&mut ns, d.list), Some(1));
        let d = w.earliest().unwrap();
        assert!(d.start <= 5000 && 5000 <= d.end);
        w.remove(&mut ns, 2, 5000);
        let d = w.earliest().unwrap();
        assert!(d.start <= 1_000_000 && 1_000_000 <= d.end);
        assert_eq!(w.next_key(), Some(d.start));
    }

    #[test]
    fn top_level_covers_the_largest_keys() {
        let mut ns = nodes(2);
        let mut w = Wheel::new(0);
        w.insert(&mut ns, 0, u64::MAX, 0);
        w.insert(&mut ns, 1, 1 << 63, 0);
        let d = w.earliest().unwrap();
        assert!(d.start <= 1 << 63 && (1 << 63) <= d.end);
        assert_eq!(w.pop(&mut ns, d.list), Some(1));
        let d = w.earliest().unwrap();
        assert_eq!(d.end, u64::MAX);
    }

    #[test]
    fn keys_behind_elapsed_go_to_the_side_set() {
        let mut ns = nodes(2);
        let mut w = Wheel::new(0);
        w.insert(&mut ns, 0, 500, 100);
        assert_eq!(w.elapsed, 100);
        w.insert(&mut ns, 1, 50, 100);
        assert_eq!(ns[1].0.list, LIST_EARLY);
        assert_eq!(w.next_key(), Some(50));
        assert_eq!(w.pop_early(49), None);
        assert_eq!(w.pop_early(50), Some((50, 1)));
    }

    /// Regression: re-filing the only entry of a list being cascaded must not move `elapsed`
    /// back, or the entry lands in the same list again and the cascade never ends.
    #[test]
    fn a_cascade_of_one_entry_never_moves_back() {
        let mut ns = nodes(1);
        let mut w = Wheel::new(0);
        w.insert(&mut ns, 0, 128, 0);
        let due = w.earliest().unwrap();
        assert!(due.start <= 128 && due.end > 128);
        w.begin_cascade(due);
        assert_eq!(w.pop(&mut ns, due.list), Some(0));
        w.insert(&mut ns, 0, 128, 200);
        assert_eq!(ns[0].0.list, LIST_EARLY, "filed at or behind elapsed, not in a wheel list");
    }
}
