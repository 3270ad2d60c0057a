//! The Python methods every sans-I/O part shares, written once: the timer (`poll_timeout`,
//! `handle_timeout`), requests out and replies in (`poll_transmit`, `handle_reply`,
//! `handle_failure`), events out (`poll_event`, `drain_events`), and answering requests
//! (`handle_request`, `handle_bytes`).
//!
//! A new part needs: its pyclass holding the core state in a [`Guarded`] and implementing
//! [`Component`]; then one line per group of methods: `renewer_methods!(PyIt, Data<ItEventData>)`
//! for a core [`Renewer`] whose events cross as records of the data form `ItEventData` (or a
//! native class implementing [`EventOut`]),
//! `answer_methods!(PyIt)` for a part that answers wire requests ([`Answers`]). Each macro adds
//! its own `#[pymethods]` block (pyo3's `multiple-pymethods`), so the part's own file keeps
//! only what is its own. The lock discipline of [`crate::guard`] holds for every method here:
//! nothing under the lock touches Python, events become Python objects after it.

use leasehold::holder::Renewer;
use leasehold::{Encoding, LeaseError, Millis, Reply, Request};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::Serialize;

use crate::convert::{bytes_arg, u64_arg, Enc, Now};
use crate::data::to_py;
use crate::errors::from_instance;
use crate::holder::{transmit_to_py, PyTransmit};
use crate::wire::{PyReply, PyRequest};

/// A pyclass whose state is a core state machine, behind the binding's lock (`guard`) or in a
/// store (`store::Backend`).
pub trait Component {
    /// The core type.
    type State: Send;
    /// Runs `f` on the state (`f` must not touch Python); nothing waits for the disk.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Self::State) -> T + Send,
    ) -> PyResult<T>;
    /// As [`Component::with`], for calls whose result leaves the process (a reply, an event,
    /// a request): a durable part returns it only once the records behind it are durable.
    fn answer<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Self::State) -> T + Send,
    ) -> PyResult<T> {
        self.with(py, f)
    }
}

/// [`Component`] for a pyclass `$cls(Guarded<$state>)` (in memory only).
macro_rules! guarded_component {
    ($cls:ty, $state:ty) => {
        impl $crate::sansio::Component for $cls {
            type State = $state;
            #[inline]
            fn with<T: Send>(
                &self,
                py: Python<'_>,
                f: impl FnOnce(&mut $state) -> T + Send,
            ) -> PyResult<T> {
                self.0.with(py, f)
            }
        }
    };
}
pub(crate) use guarded_component;

/// A core part with a timer (every active part: `poll_timeout`, `handle_timeout`).
pub trait Timed {
    /// When the host should call `handle_timeout` next.
    fn poll_timeout(&self) -> Option<Millis>;
    /// Advances to `now`.
    fn handle_timeout(&mut self, now: Millis);
}

/// [`Timed`] for a core type with inherent `poll_timeout` and `handle_timeout`.
macro_rules! timed {
    ($t:ty) => {
        impl $crate::sansio::Timed for $t {
            fn poll_timeout(&self) -> Option<leasehold::Millis> {
                <$t>::poll_timeout(self)
            }
            fn handle_timeout(&mut self, now: leasehold::Millis) {
                <$t>::handle_timeout(self, now)
            }
        }
    };
}
pub(crate) use timed;

/// How a part's core events `E` become Python objects (with no lock held).
pub trait EventOut<E> {
    /// The Python object of `e`.
    fn out(py: Python<'_>, e: E) -> PyResult<Bound<'_, PyAny>>;
}

/// Events as records of their data form `D` (see `data.rs`).
pub struct Data<D>(std::marker::PhantomData<D>);

impl<E, D: Serialize + From<E>> EventOut<E> for Data<D> {
    fn out(py: Python<'_>, e: E) -> PyResult<Bound<'_, PyAny>> {
        to_py(py, &D::from(e))
    }
}

/// A core part that answers wire requests.
pub trait Answers {
    /// Answers one decoded request.
    fn handle_request(&mut self, request: &Request, now: Millis) -> Reply;
    /// Decodes a request message, answers it and encodes the reply.
    fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8>;
}

/// [`Answers`] for a core type with inherent `handle_request` and `handle_bytes`.
macro_rules! answers {
    ($t:ty) => {
        impl $crate::sansio::Answers for $t {
            fn handle_request(
                &mut self,
                request: &leasehold::Request,
                now: leasehold::Millis,
            ) -> leasehold::Reply {
                <$t>::handle_request(self, request, now)
            }
            fn handle_bytes(
                &mut self,
                bytes: &[u8],
                encoding: leasehold::Encoding,
                now: leasehold::Millis,
            ) -> Vec<u8> {
                <$t>::handle_bytes(self, bytes, encoding, now)
            }
        }
    };
}
pub(crate) use answers;

// ---------- the shared bodies ----------

pub fn poll_timeout<C: Component<State: Timed>>(c: &C, py: Python<'_>) -> PyResult<Option<i64>> {
    c.with(py, |s| s.poll_timeout())
}

pub fn handle_timeout<C: Component<State: Timed>>(c: &C, py: Python<'_>, now: Now) -> PyResult<()> {
    c.with(py, |s| s.handle_timeout(now.0))
}

pub fn poll_transmit<C: Component<State: Renewer>>(
    c: &C,
    py: Python<'_>,
    now: Now,
) -> PyResult<Option<PyTransmit>> {
    let t = c.answer(py, |s| s.poll_transmit(now.0))?;
    t.map(|t| transmit_to_py(py, t)).transpose()
}

pub fn handle_reply<C: Component<State: Renewer>>(
    c: &C,
    py: Python<'_>,
    reply: &PyReply,
    now: Now,
) -> PyResult<()> {
    c.with(py, |s| s.handle_reply(&reply.0, now.0))
}

pub fn handle_failure<C: Component<State: Renewer>>(
    c: &C,
    py: Python<'_>,
    request_id: &Bound<'_, PyAny>,
    error: &Bound<'_, PyAny>,
    now: Now,
) -> PyResult<()> {
    let id = u64_arg(request_id, "request_id")?;
    let err: LeaseError = from_instance(error)?;
    c.with(py, |s| s.handle_failure(id, err, now.0))
}

pub fn poll_event<'py, C, O>(c: &C, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>>
where
    C: Component<State: Renewer<Event: Send>>,
    O: EventOut<<C::State as Renewer>::Event>,
{
    let e = c.answer(py, |s| s.poll_event())?;
    e.map(|e| O::out(py, e)).transpose()
}

pub fn drain_events<'py, C, O>(c: &C, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>>
where
    C: Component<State: Renewer<Event: Send>>,
    O: EventOut<<C::State as Renewer>::Event>,
{
    let all: Vec<_> = c.answer(py, |s| std::iter::from_fn(|| s.poll_event()).collect())?;
    all.into_iter().map(|e| O::out(py, e)).collect()
}

pub fn handle_request<C: Component<State: Answers>>(
    c: &C,
    py: Python<'_>,
    request: &PyRequest,
    now: Now,
) -> PyResult<PyReply> {
    Ok(PyReply(c.answer(py, |s| s.handle_request(&request.0, now.0))?))
}

pub fn handle_bytes<'py, C: Component<State: Answers>>(
    c: &C,
    py: Python<'py>,
    data: &Bound<'_, PyAny>,
    encoding: Enc,
    now: Now,
) -> PyResult<Bound<'py, PyBytes>> {
    let data = bytes_arg(data, "data")?;
    let out = c.answer(py, |s| s.handle_bytes(&data, encoding.0, now.0))?;
    Ok(PyBytes::new(py, &out))
}

// ---------- the methods, one macro per group ----------

/// `poll_timeout` and `handle_timeout` of a part whose core state is [`Timed`].
macro_rules! timer_methods {
    ($cls:ty) => {
        #[pyo3::pymethods]
        impl $cls {
            /// When to call `handle_timeout` next (ms, host's clock); None if nothing is scheduled.
            fn poll_timeout(&self, py: Python<'_>) -> PyResult<Option<i64>> {
                $crate::sansio::poll_timeout(self, py)
            }
            /// Advances the timers to `now`.
            fn handle_timeout(&self, py: Python<'_>, now: $crate::convert::Now) -> PyResult<()> {
                $crate::sansio::handle_timeout(self, py, now)
            }
        }
    };
}
pub(crate) use timer_methods;

/// The timer, requests out, replies and failures in, and events out of a core [`Renewer`],
/// as Python methods of `$cls`; its events become Python objects by `$event` ([`EventOut`]).
macro_rules! renewer_methods {
    ($cls:ty, $event:ty) => {
        $crate::sansio::timer_methods!($cls);

        #[pyo3::pymethods]
        impl $cls {
            /// The next request to send, stamped with `now` as its send time; None when there is none.
            fn poll_transmit(
                &self,
                py: Python<'_>,
                now: $crate::convert::Now,
            ) -> PyResult<Option<$crate::holder::PyTransmit>> {
                $crate::sansio::poll_transmit(self, py, now)
            }
            /// Takes a landlord's reply received at `now` (unknown or stale ids are ignored).
            fn handle_reply(
                &self,
                py: Python<'_>,
                reply: PyRef<'_, $crate::wire::PyReply>,
                now: $crate::convert::Now,
            ) -> PyResult<()> {
                $crate::sansio::handle_reply(self, py, &reply, now)
            }
            /// Reports that request `request_id` failed in transport with `error` (a `LeaseError`;
            /// `IndefiniteError` is retried, anything else drops the request's leases).
            fn handle_failure(
                &self,
                py: Python<'_>,
                request_id: &Bound<'_, PyAny>,
                error: &Bound<'_, PyAny>,
                now: $crate::convert::Now,
            ) -> PyResult<()> {
                $crate::sansio::handle_failure(self, py, request_id, error, now)
            }
            /// The next event (a record), or None.
            fn poll_event<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
                $crate::sansio::poll_event::<_, $event>(self, py)
            }
            /// Every pending event (`poll_event` until None).
            fn drain_events<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
                $crate::sansio::drain_events::<_, $event>(self, py)
            }
        }
    };
}
pub(crate) use renewer_methods;

/// `handle_request` and `handle_bytes` of a part whose core state [`Answers`] wire requests.
macro_rules! answer_methods {
    ($cls:ty) => {
        #[pyo3::pymethods]
        impl $cls {
            /// Answers one `Request` with a `Reply`.
            fn handle_request(
                &self,
                py: Python<'_>,
                request: PyRef<'_, $crate::wire::PyRequest>,
                now: $crate::convert::Now,
            ) -> PyResult<$crate::wire::PyReply> {
                $crate::sansio::handle_request(self, py, &request, now)
            }
            /// Decodes a request message, answers it and returns the encoded reply (same
            /// encoding). Undecodable input gets an error reply, never an exception.
            fn handle_bytes<'py>(
                &self,
                py: Python<'py>,
                data: &Bound<'_, PyAny>,
                encoding: $crate::convert::Enc,
                now: $crate::convert::Now,
            ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
                $crate::sansio::handle_bytes(self, py, data, encoding, now)
            }
        }
    };
}
pub(crate) use answer_methods;
