//! Inverted leasing (seed 004): the landlord polls (`Poller`), holders answer (`PollListener`).

use leasehold::inverted::{
    Admission, Confirm, ListenerConfig, ListenerEvent, ListenerTransmit, Poll, PollListener,
    Poller, PollerConfig, TrafficStats,
};
use leasehold::LeaseError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{
    cookie_arg, cookie_str, duration_arg, i64_arg, landlord_arg, text_arg, u64_arg, usize_arg,
};
use crate::errors::{from_instance, to_instance, to_py, IntoPyResult};
use crate::guard::{Guarded, Held};
use crate::landlord::{seed_arg, PyExpired};

fn stats_dict<'py>(py: Python<'py>, s: &TrafficStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("messages_sent", s.messages_sent)?;
    d.set_item("messages_received", s.messages_received)?;
    d.set_item("bytes_sent", s.bytes_sent)?;
    d.set_item("bytes_received", s.bytes_received)?;
    d.set_item("polls", s.polls)?;
    d.set_item("joins", s.joins)?;
    d.set_item("denials", s.denials)?;
    d.set_item("responses", s.responses)?;
    d.set_item("cancelled", s.cancelled)?;
    Ok(d)
}

fn decode_json<T: serde::de::DeserializeOwned>(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<T> {
    let t = text_arg(text, what)?;
    if t.len() > 4096 {
        return Err(to_py(py, &LeaseError::Decode(format!("{what} JSON is too long"))));
    }
    serde_json::from_str(&t)
        .map_err(|e| to_py(py, &LeaseError::Decode(format!("{what} JSON: {e}"))))
}

fn f64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!("{what} must be a number")));
    }
    obj.extract::<f64>().map_err(|_| PyTypeError::new_err(format!("{what} must be a number")))
}

/// A poll, multicast by the landlord to every holder: round `seq`, listening time `duration`
/// (D) and extra time `extra` (A), in ms.
#[pyclass(frozen, module = "leasehold._native", name = "Poll")]
#[derive(Clone)]
pub struct PyPoll(Poll);

#[pymethods]
impl PyPoll {
    #[new]
    fn new(
        landlord: &Bound<'_, PyAny>,
        seq: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
        extra: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        Ok(PyPoll(Poll {
            landlord: landlord_arg(landlord)?,
            seq: u64_arg(seq, "seq")?,
            duration: duration_arg(duration, "duration")?,
            extra: duration_arg(extra, "extra")?,
        }))
    }
    #[getter]
    fn landlord(&self) -> u64 {
        self.0.landlord.0
    }
    #[getter]
    fn seq(&self) -> u64 {
        self.0.seq
    }
    #[getter]
    fn duration(&self) -> i64 {
        self.0.duration
    }
    #[getter]
    fn extra(&self) -> i64 {
        self.0.extra
    }
    fn to_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Self> {
        decode_json(py, text, "poll").map(PyPoll)
    }
    fn __repr__(&self) -> String {
        format!(
            "Poll(landlord={}, seq={}, duration={}, extra={})",
            self.0.landlord.0, self.0.seq, self.0.duration, self.0.extra
        )
    }
}

/// The landlord's answer to a join: the holder's cookie and when the next poll comes (ms).
#[pyclass(frozen, module = "leasehold._native", name = "Admission")]
pub struct PyAdmission(Admission);

#[pymethods]
impl PyAdmission {
    #[new]
    fn new(cookie: &Bound<'_, PyAny>, next_poll_in: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyAdmission(Admission {
            cookie: cookie_arg(cookie)?,
            next_poll_in: duration_arg(next_poll_in, "next_poll_in")?,
        }))
    }
    #[getter]
    fn cookie(&self) -> String {
        cookie_str(self.0.cookie)
    }
    #[getter]
    fn next_poll_in(&self) -> i64 {
        self.0.next_poll_in
    }
    fn to_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Self> {
        decode_json(py, text, "admission").map(PyAdmission)
    }
}

/// The landlord's confirmation of a poll response.
#[pyclass(frozen, module = "leasehold._native", name = "Confirm")]
pub struct PyConfirm(Confirm);

#[pymethods]
impl PyConfirm {
    #[new]
    fn new(cookie: &Bound<'_, PyAny>, seq: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyConfirm(Confirm { cookie: cookie_arg(cookie)?, seq: u64_arg(seq, "seq")? }))
    }
    #[getter]
    fn cookie(&self) -> String {
        cookie_str(self.0.cookie)
    }
    #[getter]
    fn seq(&self) -> u64 {
        self.0.seq
    }
    fn to_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Self> {
        decode_json(py, text, "confirm").map(PyConfirm)
    }
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
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.0.with(py, |m| *m.stats())?;
        stats_dict(py, &s)
    }
    /// The last poll sent, if any.
    fn last_poll(&self, py: Python<'_>) -> PyResult<Option<PyPoll>> {
        Ok(self.0.with(py, |m| m.last_poll().copied())?.map(PyPoll))
    }
    /// When the next poll goes out.
    fn next_poll_at(&self, py: Python<'_>) -> PyResult<i64> {
        self.0.with(py, |m| m.next_poll_at())
    }
    /// Whether `cookie` is an admitted holder.
    fn contains(&self, py: Python<'_>, cookie: &Bound<'_, PyAny>) -> PyResult<bool> {
        let c = cookie_arg(cookie)?;
        self.0.with(py, |m| m.contains(c))
    }
    /// Admits a holder on `resource`, or raises LeaseDeniedError beyond N_MAX.
    fn join(
        &self,
        py: Python<'_>,
        resource: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<PyAdmission> {
        let now = i64_arg(now, "now")?;
        let r = Held::new(resource.clone().unbind());
        self.0.with(py, |m| m.join(r, now))?.py(py).map(PyAdmission)
    }
    /// Takes a holder's answer to poll `seq`; returns the confirmation.
    fn respond(
        &self,
        py: Python<'_>,
        cookie: &Bound<'_, PyAny>,
        seq: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<PyConfirm> {
        let c = cookie_arg(cookie)?;
        let seq = u64_arg(seq, "seq")?;
        let now = i64_arg(now, "now")?;
        self.0.with(py, |m| m.respond(c, seq, now))?.py(py).map(PyConfirm)
    }
    /// A holder leaves; returns its resource.
    fn leave(
        &self,
        py: Python<'_>,
        cookie: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let c = cookie_arg(cookie)?;
        let now = i64_arg(now, "now")?;
        self.0.with(py, |m| m.leave(c, now))?.py(py).map(Held::into_inner)
    }
    fn poll_timeout(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.0.with(py, |m| m.poll_timeout())
    }
    fn handle_timeout(&self, py: Python<'_>, now: &Bound<'_, PyAny>) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        self.0.with(py, |m| m.handle_timeout(now))
    }
    /// The next poll to multicast, if one is due.
    fn poll_transmit(&self, py: Python<'_>) -> PyResult<Option<PyPoll>> {
        Ok(self.0.with(py, |m| m.poll_transmit())?.map(PyPoll))
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

fn result_arg<T>(
    obj: &Bound<'_, PyAny>,
    ok: impl FnOnce(&Bound<'_, PyAny>) -> Option<T>,
) -> PyResult<Result<T, LeaseError>> {
    if let Some(v) = ok(obj) {
        return Ok(Ok(v));
    }
    Ok(Err(from_instance(obj)?))
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
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.0.with(py, |m| *m.stats())?;
        stats_dict(py, &s)
    }
    /// Starts joining (a "join" transmit follows).
    fn join(&self, py: Python<'_>, now: &Bound<'_, PyAny>) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        self.0.with(py, |m| m.join(now))?;
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
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        let r = result_arg(result, |o| o.cast::<PyAdmission>().ok().map(|a| a.get().0))?;
        self.0.with(py, |m| m.handle_admission(r, now))?;
        Ok(())
    }
    /// A poll heard at `now`.
    fn handle_poll(
        &self,
        py: Python<'_>,
        poll: PyRef<'_, PyPoll>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        self.0.with(py, |m| m.handle_poll(&poll.0, now))?;
        Ok(())
    }
    /// The landlord's answer to a response: a `Confirm` or a `LeaseError`.
    fn handle_confirm(
        &self,
        py: Python<'_>,
        result: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        let r = result_arg(result, |o| o.cast::<PyConfirm>().ok().map(|c| c.get().0))?;
        self.0.with(py, |m| m.handle_confirm(r, now))?;
        Ok(())
    }
    fn poll_timeout(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.0.with(py, |m| m.poll_timeout())
    }
    fn handle_timeout(&self, py: Python<'_>, now: &Bound<'_, PyAny>) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        self.0.with(py, |m| m.handle_timeout(now))
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
