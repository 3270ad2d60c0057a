//! The life of an opaque handle, shared by every type of handle: `_new` boxes it, `_free` drops
//! it, and each call borrows its state for as long as it runs Rust code and never while it runs
//! the host's code.
//!
//! Handles whose calls run callbacks (landlord, lease map, renewal manager, renewal service)
//! are [`Opaque`]: a [`Handle`] around the core's state with a small guard, so that a callback
//! may call back into the handle that runs it (re-entrancy) without aliasing that state:
//! - a call borrows the state only inside [`Call::with`] / [`Call::with_mut`] (or [`read`] /
//!   [`write`]), whose closures never call user code; callbacks run between such borrows, so a
//!   re-entrant call finds the state free and simply works;
//! - visitors see a copy taken first ([`for_each`]), so a visitor may change what it visits;
//! - `_free` from inside a callback (of this handle or of any handle it is running under) is
//!   deferred: the handle is marked freed, every later call on it is `BUSY`, the call that ran
//!   the callback makes no further callbacks, and the memory goes when the outermost call on
//!   the handle returns;
//! - should a borrow ever meet another (a bug: user code inside a borrow), the second call fails
//!   with `BUSY` instead of aliasing.
//!
//! Immutable or callback-free handles (configurations, policies, messages, event tables) are
//! plain boxes: [`give_box`] and [`free_box`].

use std::cell::{Cell, UnsafeCell};

use crate::error::{guard, guard_void, leasehold_status, null, Fail, Maybe, Out, Res};

/// The state of a handle and its re-entrancy guard. Not `Sync`: a handle is used by one thread
/// at a time (README, Threading), which is what makes the `Cell`s sound.
pub(crate) struct Handle<T> {
    /// Calls into this handle now on the thread's stack that may run user code.
    active: Cell<u32>,
    /// The state is borrowed by a call in progress.
    borrowed: Cell<bool>,
    /// `_free` was called while `active` > 0: the handle is dead, its memory not yet released.
    freed: Cell<bool>,
    inner: UnsafeCell<T>,
}

impl<T> Handle<T> {
    pub(crate) fn new(inner: T) -> Handle<T> {
        Handle {
            active: Cell::new(0),
            borrowed: Cell::new(false),
            freed: Cell::new(false),
            inner: UnsafeCell::new(inner),
        }
    }
}

/// A C handle type: a named opaque struct (what cbindgen declares) around a [`Handle`].
pub(crate) trait Opaque: Sized + 'static {
    /// The core state the handle owns.
    type Inner;
    /// The argument name used in messages (`"manager"`: "manager is NULL").
    const ARG: &'static str;
    /// What the handle is, in messages (`"renewal manager"`).
    const WHAT: &'static str;
    fn wrap(h: Handle<Self::Inner>) -> Self;
    fn handle(&self) -> &Handle<Self::Inner>;
}

/// Makes a C handle struct `pub struct leasehold_x { h: Handle<Inner> }` [`Opaque`]:
/// `opaque!(leasehold_x, Inner, "x", "thing x");`. The struct itself is written out where it
/// is declared, with its doc comment, because cbindgen reads the source and not macro output.
macro_rules! opaque {
    ($c:ident, $inner:ty, $arg:literal, $what:literal) => {
        impl $crate::handle::Opaque for $c {
            type Inner = $inner;
            const ARG: &'static str = $arg;
            const WHAT: &'static str = $what;
            fn wrap(h: $crate::handle::Handle<$inner>) -> Self {
                $c { h }
            }
            fn handle(&self) -> &$crate::handle::Handle<$inner> {
                &self.h
            }
        }
    };
}
pub(crate) use opaque;

fn busy_freed<H: Opaque>() -> Fail {
    Fail::new(
        leasehold_status::LEASEHOLD_STATUS_BUSY,
        format!(
            "the {} was freed inside a callback and can no longer be used (its memory goes when \
             the call that ran the callback returns)",
            H::WHAT
        ),
    )
}

fn busy_borrowed<H: Opaque>() -> Fail {
    Fail::new(
        leasehold_status::LEASEHOLD_STATUS_BUSY,
        format!("the {} is in use by a call further up this thread's stack", H::WHAT),
    )
}

/// Resets the borrow flag when a borrow ends, also when it ends by a panic.
struct Borrow<'a>(&'a Cell<bool>);

impl Drop for Borrow<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// # Safety
/// `p` is NULL or a live handle made by this library (a handle freed inside a callback stays
/// allocated until its outermost call returns).
unsafe fn handle_of<'a, H: Opaque>(p: *const H) -> Res<&'a Handle<H::Inner>> {
    match unsafe { p.as_ref() } {
        Some(h) => Ok(h.handle()),
        None => Err(null(H::ARG)),
    }
}

fn borrow<H: Opaque>(h: &Handle<H::Inner>) -> Res<Borrow<'_>> {
    if h.freed.get() {
        return Err(busy_freed::<H>());
    }
    if h.borrowed.get() {
        return Err(busy_borrowed::<H>());
    }
    h.borrowed.set(true);
    Ok(Borrow(&h.borrowed))
}

/// Runs `f` on the state of the handle at `p` (a call that runs no user code).
///
/// # Safety
/// `p` is NULL or a live handle; `f` calls no user code.
#[inline(always)]
pub(crate) unsafe fn read<H: Opaque, R>(
    p: *const H,
    f: impl FnOnce(&H::Inner) -> Res<R>,
) -> Res<R> {
    let h = unsafe { handle_of(p) }?;
    let _b = borrow::<H>(h)?;
    // SAFETY: the flag guarantees no other reference to the state is alive on this thread, and
    // the threading contract that no other thread uses the handle.
    f(unsafe { &*h.inner.get() })
}

/// Runs `f` on the state of the handle at `p`, mutably (a call that runs no user code).
///
/// # Safety
/// As [`read`].
#[inline(always)]
pub(crate) unsafe fn write<H: Opaque, R>(
    p: *mut H,
    f: impl FnOnce(&mut H::Inner) -> Res<R>,
) -> Res<R> {
    let h = unsafe { handle_of(p.cast_const()) }?;
    let _b = borrow::<H>(h)?;
    // SAFETY: as in `read`; the flag makes this the only reference.
    f(unsafe { &mut *h.inner.get() })
}

/// [`write`] for a change that cannot fail.
///
/// # Safety
/// As [`read`].
#[inline(always)]
pub(crate) unsafe fn apply<H: Opaque>(p: *mut H, f: impl FnOnce(&mut H::Inner)) -> Res {
    unsafe {
        write(p, |m| {
            f(m);
            Ok(())
        })
    }
}

/// The body of a call that reads one value from the handle into `out` (NULL-checked first).
///
/// # Safety
/// `p` is NULL or a live handle; `out` is NULL or writable; `f` calls no user code.
#[inline(always)]
pub(crate) unsafe fn get<H: Opaque, T>(
    p: *const H,
    out: *mut T,
    f: impl FnOnce(&H::Inner) -> Res<T>,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let v = unsafe { read(p, f) }?;
        unsafe { out.write(v) };
        Ok(())
    })
}

/// The body of a call that reads an optional value: the flag at `names[0]` says whether there
/// is one, the value goes to `names[1]`.
///
/// # Safety
/// As [`get`].
#[inline(always)]
pub(crate) unsafe fn get_maybe<H: Opaque, T>(
    p: *const H,
    out_has: *mut bool,
    out: *mut T,
    names: [&str; 2],
    f: impl FnOnce(&H::Inner) -> Res<Option<T>>,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_has, names[0], out, names[1])?;
        let v = unsafe { read(p, f) }?;
        unsafe { out.write(v) };
        Ok(())
    })
}

/// The body of a call that changes the handle and answers with its status only.
///
/// # Safety
/// `p` is NULL or a live handle; `f` calls no user code.
#[inline(always)]
pub(crate) unsafe fn change<H: Opaque>(
    p: *mut H,
    f: impl FnOnce(&mut H::Inner) -> Res,
) -> leasehold_status {
    guard(|| unsafe { write(p, f) })
}

/// A call in progress that runs user code: while it lives, `_free` of the handle is deferred,
/// and its state is borrowed only inside [`Call::with`] and [`Call::with_mut`].
pub(crate) struct Call<H: Opaque> {
    p: *mut H,
}

impl<H: Opaque> Call<H> {
    /// Enters a call on the handle at `p`: `NULL_ARGUMENT` for NULL, `BUSY` if it was freed.
    ///
    /// # Safety
    /// `p` is NULL or a live handle.
    pub(crate) unsafe fn enter(p: *const H) -> Res<Call<H>> {
        let h = unsafe { handle_of(p) }?;
        if h.freed.get() {
            return Err(busy_freed::<H>());
        }
        h.active.set(h.active.get() + 1);
        Ok(Call { p: p.cast_mut() })
    }

    fn h(&self) -> &Handle<H::Inner> {
        // SAFETY: the handle stays allocated while a `Call` on it lives (see `free`).
        unsafe { &*self.p }.handle()
    }

    /// Whether a callback freed the handle: then no further callback may run.
    pub(crate) fn freed(&self) -> bool {
        self.h().freed.get()
    }

    /// Borrows the state for `f`, which must not call user code.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&H::Inner) -> Res<R>) -> Res<R> {
        let h = self.h();
        let _b = borrow::<H>(h)?;
        // SAFETY: as in `read`.
        f(unsafe { &*h.inner.get() })
    }

    /// Borrows the state mutably for `f`, which must not call user code.
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(&mut H::Inner) -> Res<R>) -> Res<R> {
        let h = self.h();
        let _b = borrow::<H>(h)?;
        // SAFETY: as in `write`.
        f(unsafe { &mut *h.inner.get() })
    }
}

impl<H: Opaque> Drop for Call<H> {
    fn drop(&mut self) {
        let h = self.h();
        let n = h.active.get() - 1;
        h.active.set(n);
        if n == 0 && h.freed.get() {
            // SAFETY: the last call on a handle freed inside a callback: nothing refers to it.
            drop(unsafe { Box::from_raw(self.p) });
        }
    }
}

/// Boxes a new handle around `inner` and hands it to C.
pub(crate) fn give<H: Opaque>(inner: H::Inner, out: Out<*mut H>) {
    unsafe { out.write(Box::into_raw(Box::new(H::wrap(Handle::new(inner))))) }
}

/// The body of a handle's `_free`: NULL is ignored; inside a call on the handle that runs user
/// code, the handle is marked freed and released when that call returns; else dropped now.
/// A second free of a handle already freed inside a callback is ignored.
///
/// # Safety
/// `p` is NULL or a handle made by this library and not freed before (a handle freed inside a
/// callback may be freed again until that callback returns).
pub(crate) unsafe fn free<H: Opaque>(p: *mut H) {
    guard_void(|| {
        if p.is_null() {
            return;
        }
        let h = unsafe { &*p }.handle();
        if h.freed.get() {
            return;
        }
        if h.active.get() > 0 {
            h.freed.set(true);
        } else {
            drop(unsafe { Box::from_raw(p) });
        }
    })
}

/// Visits a copy of what `collect` takes from the handle's state: `visit` runs for each item
/// with nothing borrowed, so it may call anything on the handle (changes show in later calls,
/// not in this visit), until it returns non-zero or frees the handle.
///
/// # Safety
/// `p` is NULL or a live handle; `visit` calls a valid C function.
pub(crate) unsafe fn for_each<H: Opaque, T>(
    p: *const H,
    collect: impl FnOnce(&H::Inner) -> Res<Vec<T>>,
    mut visit: impl FnMut(&T) -> i32,
) -> Res {
    let call = unsafe { Call::enter(p) }?;
    let items = call.with(collect)?;
    for item in &items {
        if call.freed() || visit(item) != 0 {
            break;
        }
    }
    Ok(())
}

// ---------- plain boxes ----------

/// Hands a boxed value (an immutable or callback-free handle) to C.
pub(crate) fn give_box<T>(v: T, out: Out<*mut T>) {
    unsafe { out.write(Box::into_raw(Box::new(v))) }
}

/// The body of `_free` for a plain box: NULL is ignored.
///
/// # Safety
/// `p` is NULL or was made by [`give_box`] and not freed before.
pub(crate) unsafe fn free_box<T>(p: *mut T) {
    guard_void(|| {
        if !p.is_null() {
            drop(unsafe { Box::from_raw(p) });
        }
    })
}
