//! The module's memory allocator: the default (dlmalloc) for ordinary blocks, and a block list
//! for large ones that grows the last block in place.
//!
//! Why: WebAssembly memory never shrinks, and a landlord's lease table is one vector that doubles
//! as it grows. Under dlmalloc each doubling allocates the new table beside the old one before the
//! copy, so the memory ends up about twice the table (a million leases: ~100 MB for a 50 MB
//! table). Here a large block at the end of memory grows by `memory.grow` where it is, a freed
//! large block is reused (first fit, split, merged with free neighbours), and only a block that
//! cannot grow in place is moved.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;

/// Blocks of at least this many bytes are large.
pub const LARGE: usize = 256 * 1024;
const PAGE: usize = 65536;
/// Large blocks start at and are sized in multiples of this.
const GRAIN: usize = 64;
const MAX_BLOCKS: usize = 256;

#[derive(Clone, Copy, Debug)]
struct Block {
    start: usize,
    len: usize,
    free: bool,
}

/// Where memory ends and how to get more: the real module memory, or a test arena.
pub trait Memory {
    /// Bytes of memory now.
    fn end(&self) -> usize;
    /// Grows by `pages` pages; false if it cannot.
    fn grow(&mut self, pages: usize) -> bool;
}

/// The large-block list, sorted by address.
pub struct Large<M> {
    blocks: [Block; MAX_BLOCKS],
    count: usize,
    mem: M,
}

const fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

impl<M: Memory> Large<M> {
    /// An empty list over `mem`.
    pub const fn new(mem: M) -> Self {
        Large { blocks: [Block { start: 0, len: 0, free: true }; MAX_BLOCKS], count: 0, mem }
    }

    fn find(&self, start: usize) -> Option<usize> {
        self.blocks[..self.count].binary_search_by_key(&start, |b| b.start).ok()
    }

    /// Whether `ptr` is a large block handed out here.
    pub fn owns(&self, ptr: usize) -> bool {
        self.find(ptr).is_some_and(|i| !self.blocks[i].free)
    }

    fn insert(&mut self, at: usize, b: Block) -> bool {
        if self.count == MAX_BLOCKS {
            return false;
        }
        self.blocks.copy_within(at..self.count, at + 1);
        self.blocks[at] = b;
        self.count += 1;
        true
    }

    fn remove(&mut self, at: usize) {
        self.blocks.copy_within(at + 1..self.count, at);
        self.count -= 1;
    }

    /// Splits block `i` so that it is `len` bytes, the rest a free block (if there is room in
    /// the list and the rest is worth keeping).
    fn split(&mut self, i: usize, len: usize) {
        let b = self.blocks[i];
        if b.len >= len + LARGE {
            let rest = Block { start: b.start + len, len: b.len - len, free: true };
            if self.insert(i + 1, rest) {
                self.blocks[i].len = len;
            }
        }
    }

    fn is_last(&self, i: usize) -> bool {
        let b = self.blocks[i];
        b.start + b.len == self.mem.end()
    }

    /// Grows the last block `i` (which ends where memory ends) to at least `len` bytes.
    fn grow_last(&mut self, i: usize, len: usize) -> bool {
        let b = self.blocks[i];
        let pages = round_up(len - b.len, PAGE) / PAGE;
        if !self.mem.grow(pages) {
            return false;
        }
        self.blocks[i].len = self.mem.end() - b.start;
        true
    }

    /// A large block of at least `size` bytes, or None (the caller then uses dlmalloc).
    pub fn alloc(&mut self, size: usize) -> Option<usize> {
        let size = round_up(size, GRAIN);
        // First fit among free blocks.
        if let Some(i) =
            (0..self.count).find(|&i| self.blocks[i].free && self.blocks[i].len >= size)
        {
            self.blocks[i].free = false;
            self.split(i, size);
            return Some(self.blocks[i].start);
        }
        // A free block at the end of memory grows.
        if self.count > 0 && self.blocks[self.count - 1].free && self.is_last(self.count - 1) {
            let i = self.count - 1;
            if !self.grow_last(i, size) {
                return None;
            }
            self.blocks[i].free = false;
            self.split(i, size);
            return Some(self.blocks[i].start);
        }
        // New pages at the end.
        if self.count == MAX_BLOCKS {
            return None;
        }
        let start = self.mem.end();
        if !self.mem.grow(round_up(size, PAGE) / PAGE) {
            return None;
        }
        let b = Block { start, len: self.mem.end() - start, free: false };
        let at = self.count;
        self.insert(at, b).then_some(start)
    }

    /// Frees a large block, merging it with free neighbours.
    pub fn free(&mut self, ptr: usize) {
        let Some(mut i) = self.find(ptr) else { return };
        self.blocks[i].free = true;
        if i + 1 < self.count {
            let (b, n) = (self.blocks[i], self.blocks[i + 1]);
            if n.free && b.start + b.len == n.start {
                self.blocks[i].len += n.len;
                self.remove(i + 1);
            }
        }
        if i > 0 {
            let (p, b) = (self.blocks[i - 1], self.blocks[i]);
            if p.free && p.start + p.len == b.start {
                self.blocks[i - 1].len += b.len;
                self.remove(i);
                i -= 1;
            }
        }
        let _ = i;
    }

    /// Grows or shrinks block `ptr` in place to at least `size` bytes if it can.
    pub fn resize_in_place(&mut self, ptr: usize, size: usize) -> bool {
        let Some(i) = self.find(ptr) else { return false };
        let size = round_up(size, GRAIN);
        if size <= self.blocks[i].len {
            self.split(i, size);
            return true;
        }
        // Take a free neighbour after it.
        if i + 1 < self.count {
            let (b, n) = (self.blocks[i], self.blocks[i + 1]);
            if n.free && b.start + b.len == n.start {
                if b.len + n.len >= size {
                    self.blocks[i].len += n.len;
                    self.remove(i + 1);
                    self.split(i, size);
                    return true;
                }
                if i + 2 == self.count && self.is_last(i + 1) {
                    self.blocks[i].len += n.len;
                    self.remove(i + 1);
                    return self.grow_last(i, size);
                }
            }
        }
        i + 1 == self.count && self.is_last(i) && self.grow_last(i, size)
    }
}

/// The real module memory.
pub struct Wasm;

impl Memory for Wasm {
    fn end(&self) -> usize {
        #[cfg(target_arch = "wasm32")]
        {
            core::arch::wasm32::memory_size(0) * PAGE
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            0
        }
    }
    fn grow(&mut self, pages: usize) -> bool {
        #[cfg(target_arch = "wasm32")]
        {
            core::arch::wasm32::memory_grow(0, pages) != usize::MAX
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = pages;
            false
        }
    }
}

/// The global allocator of the module.
pub struct Alloc(UnsafeCell<Large<Wasm>>);

// SAFETY: wasm32-unknown-unknown runs this module on one thread.
unsafe impl Sync for Alloc {}

impl Alloc {
    /// A new allocator.
    pub const fn new() -> Self {
        Alloc(UnsafeCell::new(Large::new(Wasm)))
    }
    #[allow(clippy::mut_from_ref)]
    fn large(&self) -> &mut Large<Wasm> {
        // SAFETY: one thread, and no call below re-enters the allocator while this is held.
        unsafe { &mut *self.0.get() }
    }
}

impl Default for Alloc {
    fn default() -> Self {
        Self::new()
    }
}

unsafe impl GlobalAlloc for Alloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE && layout.align() <= GRAIN {
            if let Some(p) = self.large().alloc(layout.size()) {
                return p as *mut u8;
            }
        }
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= LARGE && self.large().owns(ptr as usize) {
            self.large().free(ptr as usize);
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let ours = layout.size() >= LARGE && self.large().owns(ptr as usize);
        if ours && new_size >= LARGE && self.large().resize_in_place(ptr as usize, new_size) {
            return ptr;
        }
        if !ours && new_size < LARGE {
            return System.realloc(ptr, layout, new_size);
        }
        // Move: into a new block (large or not), then free the old one.
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let p = self.alloc(new_layout);
        if !p.is_null() {
            std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memory that only counts: blocks are address ranges, checked for overlap.
    struct Fake(usize);
    impl Memory for Fake {
        fn end(&self) -> usize {
            self.0
        }
        fn grow(&mut self, pages: usize) -> bool {
            self.0 += pages * PAGE;
            true
        }
    }

    #[test]
    fn a_doubling_vector_grows_in_place() {
        let mut l = Large::new(Fake(PAGE));
        let mut size = LARGE;
        let p = l.alloc(size).unwrap();
        for _ in 0..8 {
            size *= 2;
            assert!(l.resize_in_place(p, size));
        }
        assert_eq!(l.mem.end(), PAGE + size, "memory is the block, no copies left behind");
    }

    #[test]
    fn random_operations_keep_blocks_disjoint_and_reuse_memory() {
        let mut l = Large::new(Fake(0));
        let mut live: Vec<(usize, usize)> = Vec::new();
        let mut x: u32 = 7;
        let mut rnd = |m: usize| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as usize % m
        };
        for step in 0..20_000 {
            match rnd(4) {
                0 | 1 if live.len() < 100 => {
                    let size = LARGE + rnd(4 * LARGE);
                    let p = l.alloc(size).unwrap();
                    live.push((p, size));
                }
                2 if !live.is_empty() => {
                    let i = rnd(live.len());
                    let (p, _) = live.swap_remove(i);
                    l.free(p);
                }
                _ if !live.is_empty() => {
                    let i = rnd(live.len());
                    let (p, _) = live[i];
                    let new = LARGE + rnd(6 * LARGE);
                    if l.resize_in_place(p, new) {
                        live[i].1 = new;
                    } else {
                        let q = l.alloc(new).unwrap();
                        l.free(p);
                        live[i] = (q, new);
                    }
                }
                _ => {}
            }
            // disjoint, within memory, and every live block is known as ours
            let mut v = live.clone();
            v.sort();
            for w in v.windows(2) {
                assert!(w[0].0 + w[0].1 <= w[1].0, "overlap at step {step}");
            }
            for &(p, s) in &live {
                assert!(l.owns(p));
                assert!(p + s <= l.mem.end());
            }
        }
        // freed memory is reused: far less than everything ever asked for
        let live_bytes: usize = live.iter().map(|b| b.1).sum();
        assert!(
            l.mem.end() < 8 * live_bytes.max(LARGE) + 64 * LARGE,
            "memory {} for {live_bytes} live",
            l.mem.end()
        );
    }
}
