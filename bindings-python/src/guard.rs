//! The one lock every pyclass uses, built so that no user code runs while it is held.
//!
//! User code can run whenever a Python object dies (`__del__`, weakref callbacks, the finalizers
//! a garbage collection triggers) and whenever the binding calls into Python. If it ran while a
//! binding held its lock and called back into the same object, the thread would wait for itself
//! for ever. So:
//!
//! * A closure run under the lock ([`Guarded::with`]) touches Rust data only: it never calls
//!   into Python and never allocates Python objects (an allocation can start a collection).
//! * Python objects the core drops while the lock is held (a resource cancelled through
//!   `handle_request`, say) are [`Held`]: their drop is deferred to a per-thread list that is
//!   emptied after the lock is released, so their `__del__` runs outside it.
//! * Waiting for a lock another thread holds is done detached from the interpreter, and the
//!   lock is taken only once attached again (pyo3 runs deferred decrefs when it re-attaches; they
//!   must not run under the lock either).
//! * Should a call ever reach an object that its own thread has locked, it raises
//!   `leasehold.ReentrantCallError` instead of deadlocking.

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::prelude::*;

/// What a thread needs for [`Guarded::with`], in one thread-local (each access to a thread-local
/// of a shared library is a call, so there is one per `with`).
struct ThreadState {
    /// How many [`Guarded::with`] scopes this thread is inside.
    depth: Cell<usize>,
    /// Python objects dropped inside a scope, released when the outermost scope ends.
    grave: RefCell<Vec<Py<PyAny>>>,
}

thread_local! {
    /// Its address also identifies the thread (cheaper than `thread::current().id()`).
    static STATE: ThreadState = const {
        ThreadState { depth: Cell::new(0), grave: RefCell::new(Vec::new()) }
    };
}

/// Drops `obj` now, or after the lock is released when called under a [`Guarded::with`].
fn release(obj: Py<PyAny>) {
    let obj = STATE.try_with(|st| {
        if st.depth.get() > 0 {
            st.grave.borrow_mut().push(obj);
            None
        } else {
            Some(obj)
        }
    });
    match obj {
        Ok(Some(o)) => drop(o),
        Ok(None) => {}
        Err(_) => {} // thread exiting: nothing can run under a lock any more; pyo3 frees it
    }
}

/// A Python object kept by the core (a resource); see the module docs for why its drop is deferred.
pub struct Held(ManuallyDrop<Py<PyAny>>);

impl Held {
    /// Holds `obj`.
    #[inline]
    pub fn new(obj: Py<PyAny>) -> Self {
        Held(ManuallyDrop::new(obj))
    }
    /// The object, to hand back to Python (call outside the lock).
    #[inline]
    pub fn into_inner(self) -> Py<PyAny> {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never used or dropped again, so the object is taken exactly once.
        unsafe { ManuallyDrop::take(&mut me.0) }
    }
    /// A new reference to the object (an incref: runs no Python code).
    #[inline]
    pub fn clone_ref(&self, py: Python<'_>) -> Py<PyAny> {
        self.0.clone_ref(py)
    }
}

impl Clone for Held {
    /// An incref. Not `Python::attach`: that may release objects other threads dropped, which
    /// would run their `__del__` under the lock (the core clones resources in `snapshot`).
    fn clone(&self) -> Self {
        // A clone is an incref, which needs the interpreter: calls made detached
        // (`Guarded::with_detached`: batches and wire bodies) never clone a resource.
        // SAFETY: a `Held` is only cloned by core calls the binding makes from its methods
        // while attached (the core clones resources only in `snapshot`).
        let py = unsafe { Python::assume_attached() };
        Held::new(self.clone_ref(py))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: drop runs once and `self.0` is not used afterwards.
        release(unsafe { ManuallyDrop::take(&mut self.0) });
    }
}

/// A `Mutex` for a pyclass's state; see the module docs.
pub struct Guarded<T> {
    inner: Mutex<T>,
    /// The token of the thread holding `inner`, 0 when none.
    owner: AtomicUsize,
}

/// Ends a [`Guarded::with`] scope: unlocks, then releases what died inside it.
struct Scope<'a, T> {
    guard: Option<MutexGuard<'a, T>>,
    owner: &'a AtomicUsize,
    state: &'a ThreadState,
}

impl<T> Drop for Scope<'_, T> {
    fn drop(&mut self) {
        self.owner.store(0, Ordering::Relaxed);
        drop(self.guard.take());
        let depth = self.state.depth.get() - 1;
        self.state.depth.set(depth);
        if depth == 0 && !self.state.grave.borrow().is_empty() {
            // `take` leaves an empty list behind, so a `__del__` that calls back in starts afresh.
            let dead = std::mem::take(&mut *self.state.grave.borrow_mut());
            drop(dead);
        }
    }
}

impl<T: Send> Guarded<T> {
    /// Guards `value`.
    pub fn new(value: T) -> Self {
        Guarded { inner: Mutex::new(value), owner: AtomicUsize::new(0) }
    }

    /// Runs `f` on the state under the lock. `f` must not call into Python (see the module docs).
    /// A call from the thread that holds the lock raises `ReentrantCallError`.
    #[inline]
    pub fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut T) -> R) -> PyResult<R> {
        STATE.with(|state| {
            let me = state as *const ThreadState as usize;
            let guard = loop {
                match self.inner.try_lock() {
                    Ok(g) => break g,
                    Err(TryLockError::Poisoned(p)) => break p.into_inner(),
                    Err(TryLockError::WouldBlock) => {
                        if self.owner.load(Ordering::Relaxed) == me {
                            return Err(reentrant(py));
                        }
                        // Wait detached (the holder may need the interpreter to finish), then
                        // take the lock attached, so nothing pyo3 runs on re-attaching runs
                        // under it.
                        py.detach(|| drop(self.inner.lock()));
                    }
                }
            };
            self.owner.store(me, Ordering::Relaxed);
            state.depth.set(state.depth.get() + 1);
            let mut scope = Scope { guard: Some(guard), owner: &self.owner, state };
            let out = match scope.guard.as_mut() {
                Some(g) => f(g),
                None => unreachable!("the scope holds its guard until dropped"),
            };
            drop(scope);
            Ok(out)
        })
    }
}

impl<T: Send> Guarded<T> {
    /// As [`Guarded::with`], but detached from the interpreter while `f` runs, so other Python
    /// threads run meanwhile: for long calls (big batches), where it pays for its two switches.
    /// The lock is released before re-attaching (pyo3 may run deferred decrefs then).
    pub fn with_detached<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut T) -> R + Send,
    ) -> PyResult<R> {
        STATE.with(|state| {
            let me = state as *const ThreadState as usize;
            if self.owner.load(Ordering::Relaxed) == me {
                return Err(reentrant(py));
            }
            state.depth.set(state.depth.get() + 1);
            let depth = Depth(state);
            let owner = &self.owner;
            let inner = &self.inner;
            let out = py.detach(move || {
                let mut g = inner.lock().unwrap_or_else(|p| p.into_inner());
                owner.store(me, Ordering::Relaxed);
                let out = f(&mut g);
                owner.store(0, Ordering::Relaxed);
                drop(g);
                out
            });
            drop(depth);
            Ok(out)
        })
    }
}

/// Leaves a scope counted in `depth` without a guard of its own ([`Guarded::with_detached`]).
struct Depth<'a>(&'a ThreadState);

impl Drop for Depth<'_> {
    fn drop(&mut self) {
        let depth = self.0.depth.get() - 1;
        self.0.depth.set(depth);
        if depth == 0 && !self.0.grave.borrow().is_empty() {
            let dead = std::mem::take(&mut *self.0.grave.borrow_mut());
            drop(dead);
        }
    }
}

fn reentrant(py: Python<'_>) -> PyErr {
    let make = || -> PyResult<PyErr> {
        let cls = py.import("leasehold._errors")?.getattr("ReentrantCallError")?;
        Ok(PyErr::from_value(cls.call1((
            "re-entrant call: this object is busy in an outer call on the same thread \
             (a destructor, callback or transport called back into it); call it after \
             the outer call returns",
        ))?))
    };
    make().unwrap_or_else(|e| e)
}
