//! Inverted leasing (seed 004): the landlord polls (`Poller`), holders answer (`PollListener`).

use leasehold::inverted::{
    ListenerConfig, ListenerEvent, ListenerTransmit, Poll, PollListener, Poller, PollerConfig,
};
use leasehold::LeaseError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use serde::de::DeserializeOwned;

use crate::convert::{
    cookie_str, duration_arg, i64_arg, landlord_arg, u64_arg, usize_arg, Ck, Now,
};
use crate::data::{from_py, to_py};
use crate::errors::{from_instance, to_instance, IntoPyResult};
use crate::guard::{Guarded, Held};
use crate::landlord::{seed_arg, PyExpired};

fn f64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!("{what} must be a number")));
    }
    obj.extract::<f64>().map_err(|_| PyTypeError::new_err(format!("{what} must be a number")))
}

/// The polling landlord of inverted leasing: admits holders, polls them, expires the silent.
#[pyclass(frozen, module = "leasehold._native", name = "Poller")]
pub struct PyPoller(Guarded<Poller<Held>>);

#[pymethods]
impl PyPoller {
    /// A poller with id `id`, budget G = `renewals_per_second`, L_MIN `min`, L_MAX `max` (ms),
    /// and A = `extra_fraction` x D.
    #[new]
    #[pyo3(signature = (id, renewals_per_second, min, max, extra_fraction = None, *, seed = None, now = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        renewals_per_second: &Bound<'_, PyAny>,
        min: &Bound<'_, PyAny>,
        max: &Bound<'_, PyAny>,
        extra_fraction: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let frac = match extra_fraction {
            Some(f) => f64_arg(f, "extra_fraction")?,
            None => 0.2,
        };
        let c = PollerConfig::new(
            landlord_arg(id)?,
            seed_arg(py, seed)?,
            f64_arg(renewals_per_second, "renewals_per_second")?,
            duration_arg(min, "min")?,
            duration_arg(max, "max")?,
            frac,
        )
        .py(py)?;
        let now = match now {
            Some(n) => i64_arg(n, "now")?,
            None => 0,
        };
        Ok(PyPoller(Guarded::new(Poller::new(c, now).py(py)?)))
    }
    /// N_MAX = L_MAX x G: most holders admitted.
    fn max_holders(&self, py: Python<'_>) -> PyResult<f64> {
        self.0.with(py, |m| m.config().max_holders())
    }
    /// (D, A) in ms for `n` holders.
    fn period_for(&self, py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<(i64, i64)> {
        let n = usize_arg(n, "n")?;
        self.0.with(py, |m| m.config().period_for(n))
    }
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.0.with(py, |m| m.len())
    }
    /// Message and byte counters.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.0.with(py, |m| *m.stats())?)
    }
    /// The last poll sent, if any.
    fn last_poll<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.0.with(py, |m| m.last_poll().copied())?)
    }
    /// When the next poll goes out.
    fn next_poll_at(&self, py: Python<'_>) -> PyResult<i64> {
        self.0.with(py, |m| m.next_poll_at())
    }
    /// Whether `cookie` is an admitted holder.
    fn contains(&self, py: Python<'_>, cookie: Ck) -> PyResult<bool> {
        self.0.with(py, |m| m.contains(cookie.0))
    }
    /// Admits a holder on `resource`, or raises LeaseDeniedError beyond N_MAX.
    fn join<'py>(
        &self,
        py: Python<'py>,
        resource: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<Bound<'py, PyAny>> {
        let r = Held::new(resource.clone().unbind());
        to_py(py, &self.0.with(py, |m| m.join(r, now.0))?.py(py)?)
    }
    /// Takes a holder's answer to poll `seq`; returns the confirmation.
    fn respond<'py>(
        &self,
        py: Python<'py>,
        cookie: Ck,
        seq: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<Bound<'py, PyAny>> {
        let seq = u64_arg(seq, "seq")?;
        to_py(py, &self.0.with(py, |m| m.respond(cookie.0, seq, now.0))?.py(py)?)
    }
    /// A holder leaves; returns its resource.
    fn leave(&self, py: Python<'_>, cookie: Ck, now: Now) -> PyResult<Py<PyAny>> {
        self.0.with(py, |m| m.leave(cookie.0, now.0))?.py(py).map(Held::into_inner)
    }
    fn poll_timeout(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.0.with(py, |m| m.poll_timeout())
    }
    fn handle_timeout(&self, py: Python<'_>, now: Now) -> PyResult<()> {
        self.0.with(py, |m| m.handle_timeout(now.0))
    }
    /// The next poll to multicast, if one is due.
    fn poll_transmit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.0.with(py, |m| m.poll_transmit())?)
    }
    /// The next holder that lost its lease (did not answer in time).
    fn poll_expired(&self, py: Python<'_>) -> PyResult<Option<PyExpired>> {
        Ok(self
            .0
            .with(py, |m| m.poll_expired())?
            .map(|e| PyExpired::new(e.cookie, e.expiration, e.resource.into_inner())))
    }
}

/// What a listener asks its host to send: kind "join" or "respond" (with cookie and seq).
#[pyclass(frozen, module = "leasehold._native", name = "ListenerTransmit")]
pub struct PyListenerTransmit {
    #[pyo3(get)]
    kind: &'static str,
    #[pyo3(get)]
    cookie: Option<String>,
    #[pyo3(get)]
    seq: Option<u64>,
}

/// What a listener tells its host: kind "joined", "denied", "poll_missed" or "cancelled".
#[pyclass(frozen, module = "leasehold._native", name = "ListenerEvent")]
pub struct PyListenerEvent {
    #[pyo3(get)]
    kind: &'static str,
    #[pyo3(get)]
    cookie: Option<String>,
    #[pyo3(get)]
    error: Option<Py<PyAny>>,
}

/// The holder side of inverted leasing: listens for polls and answers each at a random time.
#[pyclass(frozen, module = "leasehold._native", name = "PollListener")]
pub struct PyPollListener(Guarded<PollListener>);

/// A landlord's answer: a `LeaseError`, or the value `T` (data).
fn result_arg<T: DeserializeOwned>(obj: &Bound<'_, PyAny>) -> PyResult<Result<T, LeaseError>> {
    match from_instance(obj) {
        Ok(e) => Ok(Err(e)),
        Err(_) => Ok(Ok(from_py(obj)?)),
    }
}

#[pymethods]
impl PyPollListener {
    /// A listener seeded with `seed` (its random answer times), with a network allowance `guard` (ms).
    #[new]
    #[pyo3(signature = (seed, *, guard = None))]
    fn new(
        py: Python<'_>,
        seed: &Bound<'_, PyAny>,
        guard: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut c = ListenerConfig::new(u64_arg(seed, "seed")?);
        if let Some(g) = guard {
            c = c.with_guard(i64_arg(g, "guard")?);
        }
        Ok(PyPollListener(Guarded::new(PollListener::new(c).py(py)?)))
    }
    /// The holder's lease while admitted.
    #[getter]
    fn cookie(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.0.with(py, |m| m.cookie())?.map(cookie_str))
    }
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.0.with(py, |m| *m.stats())?)
    }
    /// Starts joining (a "join" transmit follows).
    fn join(&self, py: Python<'_>, now: Now) -> PyResult<()> {
        self.0.with(py, |m| m.join(now.0))?;
        Ok(())
    }
    /// Leaves; returns the lease it held, if any.
    fn leave(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.0.with(py, |m| m.leave())?.map(cookie_str))
    }
    /// The landlord's answer to a join: an `Admission` or a `LeaseError`.
    fn handle_admission(
        &self,
        py: Python<'_>,
        result: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<()> {
        let r = result_arg(result)?;
        self.0.with(py, |m| m.handle_admission(r, now.0))?;
        Ok(())
    }
    /// A poll heard at `now`.
    fn handle_poll(&self, py: Python<'_>, poll: &Bound<'_, PyAny>, now: Now) -> PyResult<()> {
        let poll: Poll = from_py(poll)?;
        self.0.with(py, |m| m.handle_poll(&poll, now.0))?;
        Ok(())
    }
    /// The landlord's answer to a response: a `Confirm` or a `LeaseError`.
    fn handle_confirm(&self, py: Python<'_>, result: &Bound<'_, PyAny>, now: Now) -> PyResult<()> {
        let r = result_arg(result)?;
        self.0.with(py, |m| m.handle_confirm(r, now.0))?;
        Ok(())
    }
    fn poll_timeout(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.0.with(py, |m| m.poll_timeout())
    }
    fn handle_timeout(&self, py: Python<'_>, now: Now) -> PyResult<()> {
        self.0.with(py, |m| m.handle_timeout(now.0))
    }
    /// The next message to send to the landlord.
    fn poll_transmit(&self, py: Python<'_>) -> PyResult<Option<PyListenerTransmit>> {
        Ok(self.0.with(py, |m| m.poll_transmit())?.map(|t| match t {
            ListenerTransmit::Join => PyListenerTransmit { kind: "join", cookie: None, seq: None },
            ListenerTransmit::Respond { cookie, seq } => PyListenerTransmit {
                kind: "respond",
                cookie: Some(cookie_str(cookie)),
                seq: Some(seq),
            },
        }))
    }
    /// The next event, or None.
    fn poll_event(&self, py: Python<'_>) -> PyResult<Option<PyListenerEvent>> {
        let e = self.0.with(py, |m| m.poll_event())?;
        Ok(match e {
            None => None,
            Some(ListenerEvent::Joined(c)) => {
                Some(PyListenerEvent { kind: "joined", cookie: Some(cookie_str(c)), error: None })
            }
            Some(ListenerEvent::Denied(err)) => Some(PyListenerEvent {
                kind: "denied",
                cookie: None,
                error: Some(to_instance(py, &err)?.unbind()),
            }),
            Some(ListenerEvent::PollMissed(c)) => Some(PyListenerEvent {
                kind: "poll_missed",
                cookie: Some(cookie_str(c)),
                error: None,
            }),
            Some(ListenerEvent::Cancelled(c)) => Some(PyListenerEvent {
                kind: "cancelled",
                cookie: Some(cookie_str(c)),
                error: None,
            }),
        })
    }
}

/// Bandwidth of inverted leasing in bytes/s for `n` holders and polling interval `period` (ms),
/// with the default message sizes.
#[pyfunction]
pub fn inverted_bandwidth(n: f64, period: &Bound<'_, PyAny>) -> PyResult<f64> {
    Ok(leasehold::inverted::bandwidth(n, duration_arg(period, "period")?, &Default::default()))
}

/// Expected failure-detection delay (ms) with listening time `d` and extra time `a`.
#[pyfunction]
pub fn expected_detection(d: &Bound<'_, PyAny>, a: &Bound<'_, PyAny>) -> PyResult<f64> {
    Ok(leasehold::inverted::expected_detection(duration_arg(d, "d")?, duration_arg(a, "a")?))
}
