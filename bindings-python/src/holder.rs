//! The holder side: `LeaseMap`, `RenewalManager`, and reading grants from replies.

use leasehold::holder::machine::RttData;
use leasehold::holder::{
    lease_from_reply_with_drift, local_expiration, LeaseMap, ManagerOptions, RenewalEvent,
    RenewalManager, Transmit,
};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert::{duration_arg, i64_arg, landlord_arg, u64_arg, Dur, Now};
use crate::data::{from_py, plain};
use crate::errors::{to_instance, IntoPyResult};
use crate::guard::Guarded;
use crate::lease::PyLease;
use crate::sansio::{guarded_component, renewer_methods, timed, EventOut};
use crate::wire::{PyReply, PyRequest};

fn lease_arg(obj: &Bound<'_, PyAny>) -> PyResult<leasehold::Lease> {
    obj.cast::<PyLease>().map(|l| l.get().0).map_err(|_| {
        PyTypeError::new_err(format!("expected a Lease, got {}", crate::convert::type_name(obj)))
    })
}

pub fn ppm_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
    match obj {
        None => Ok(0),
        Some(o) => u32::try_from(u64_arg(o, "max_drift_ppm")?)
            .map_err(|_| PyValueError::new_err("max_drift_ppm is too large")),
    }
}

/// The holder's lease from a landlord's reply to a grant request sent at `sent_at` (holder's
/// clock), shortened for clock drift of up to `max_drift_ppm` parts per million.
#[pyfunction]
#[pyo3(signature = (reply, sent_at, max_drift_ppm = None))]
pub fn lease_from_reply(
    py: Python<'_>,
    reply: PyRef<'_, PyReply>,
    sent_at: &Bound<'_, PyAny>,
    max_drift_ppm: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyLease> {
    let sent_at = i64_arg(sent_at, "sent_at")?;
    lease_from_reply_with_drift(&reply.0, sent_at, ppm_arg(max_drift_ppm)?).py(py).map(PyLease)
}

/// The local expiration of a lease granted `granted` ms in reply to a request sent at `sent_at`.
#[pyfunction(name = "local_expiration")]
#[pyo3(signature = (sent_at, granted, max_drift_ppm = None))]
pub fn py_local_expiration(
    sent_at: &Bound<'_, PyAny>,
    granted: &Bound<'_, PyAny>,
    max_drift_ppm: Option<&Bound<'_, PyAny>>,
) -> PyResult<i64> {
    Ok(local_expiration(
        i64_arg(sent_at, "sent_at")?,
        duration_arg(granted, "granted")?,
        ppm_arg(max_drift_ppm)?,
    ))
}

/// Leases of one landlord, each with the duration to renew it for, renewed or cancelled in one
/// message. A mapping from `Lease` to its renewal duration.
#[pyclass(frozen, module = "leasehold._native", name = "LeaseMap")]
pub struct PyLeaseMap(Guarded<LeaseMap>);

#[pymethods]
impl PyLeaseMap {
    #[new]
    #[pyo3(signature = (landlord = None))]
    fn new(landlord: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(PyLeaseMap(Guarded::new(match landlord {
            Some(l) => LeaseMap::for_landlord(landlord_arg(l)?),
            None => LeaseMap::new(),
        })))
    }
    /// The landlord whose leases the map holds, once known.
    #[getter]
    fn landlord(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        Ok(self.0.with(py, |m| m.landlord())?.map(|l| l.0))
    }
    /// Whether `lease` can batch with the leases of this map (Jini `canContainKey`).
    fn can_contain_key(&self, py: Python<'_>, lease: PyRef<'_, PyLease>) -> PyResult<bool> {
        self.0.with(py, |m| m.can_contain_key(&lease.0))
    }
    /// Adds (or replaces) `lease` with the duration to renew it for.
    fn insert(&self, py: Python<'_>, lease: PyRef<'_, PyLease>, duration: Dur) -> PyResult<()> {
        self.0.with(py, |m| m.insert(lease.0, duration.0))?.py(py)
    }
    /// Removes `lease`; gives back the stored copy and its renewal duration, or None.
    fn remove(
        &self,
        py: Python<'_>,
        lease: PyRef<'_, PyLease>,
    ) -> PyResult<Option<(PyLease, i64)>> {
        Ok(self.0.with(py, |m| m.remove(&lease.0))?.map(|(l, d)| (PyLease(l), d)))
    }
    /// The stored copy of `lease` (with its current expiration) and its renewal duration, or None.
    fn get(&self, py: Python<'_>, lease: PyRef<'_, PyLease>) -> PyResult<Option<(PyLease, i64)>> {
        Ok(self.0.with(py, |m| m.get(&lease.0))?.map(|(l, d)| (PyLease(l), d)))
    }
    /// The leases (current copies) and their renewal durations, in cookie order.
    fn items(&self, py: Python<'_>) -> PyResult<Vec<(PyLease, i64)>> {
        self.0.with(py, |m| m.iter().map(|(l, d)| (PyLease(*l), d)).collect())
    }
    /// One request renewing every lease for its duration (Jini `renewAll`).
    fn renew_all_request(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyRequest> {
        let id = u64_arg(id, "id")?;
        Ok(PyRequest(self.0.with(py, |m| m.renew_all_request(id))?))
    }
    /// One request cancelling every lease (Jini `cancelAll`).
    fn cancel_all_request(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyRequest> {
        let id = u64_arg(id, "id")?;
        Ok(PyRequest(self.0.with(py, |m| m.cancel_all_request(id))?))
    }
    /// Applies the reply to `renew_all_request`, sent at `sent_at`. Failed leases are removed and
    /// raised together as `LeaseMapError`; a whole-request error is raised as itself.
    fn apply_renew_all(
        &self,
        py: Python<'_>,
        reply: PyRef<'_, PyReply>,
        sent_at: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let sent_at = i64_arg(sent_at, "sent_at")?;
        self.0.with(py, |m| m.apply_renew_all(&reply.0, sent_at))?.py(py)
    }
    /// Applies the reply to `cancel_all_request`; failed cancels are removed and raised as `LeaseMapError`.
    fn apply_cancel_all(&self, py: Python<'_>, reply: PyRef<'_, PyReply>) -> PyResult<()> {
        self.0.with(py, |m| m.apply_cancel_all(&reply.0))?.py(py)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.0.with(py, |m| m.len())
    }
    fn __contains__(&self, py: Python<'_>, lease: &Bound<'_, PyAny>) -> PyResult<bool> {
        match lease.cast::<PyLease>() {
            Ok(l) => {
                let l = l.get().0;
                self.0.with(py, |m| m.contains(&l))
            }
            Err(_) => Ok(false),
        }
    }
    fn __getitem__(&self, py: Python<'_>, lease: &Bound<'_, PyAny>) -> PyResult<i64> {
        let l = lease_arg(lease)?;
        self.0
            .with(py, |m| m.get(&l).map(|(_, d)| d))?
            .ok_or_else(|| PyKeyError::new_err(lease.clone().unbind()))
    }
    fn __setitem__(&self, py: Python<'_>, lease: &Bound<'_, PyAny>, duration: Dur) -> PyResult<()> {
        let l = lease_arg(lease)?;
        self.0.with(py, |m| m.insert(l, duration.0))?.py(py)
    }
    fn __delitem__(&self, py: Python<'_>, lease: &Bound<'_, PyAny>) -> PyResult<()> {
        let l = lease_arg(lease)?;
        self.0
            .with(py, |m| m.remove(&l).map(|_| ()))?
            .ok_or_else(|| PyKeyError::new_err(lease.clone().unbind()))
    }
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let leases: Vec<PyLease> =
            self.0.with(py, |m| m.iter().map(|(l, _)| PyLease(*l)).collect())?;
        Ok(PyList::new(py, leases)?.into_any().try_iter()?.into_any())
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let (landlord, n) = self.0.with(py, |m| (m.landlord(), m.len()))?;
        Ok(match landlord {
            Some(l) => format!("LeaseMap(landlord={}, leases={n})", l.0),
            None => format!("LeaseMap(leases={n})"),
        })
    }
}

/// A request the host must send to `landlord`.
#[pyclass(frozen, module = "leasehold._native", name = "Transmit")]
pub struct PyTransmit {
    #[pyo3(get)]
    landlord: u64,
    #[pyo3(get)]
    request: Py<PyRequest>,
}

#[pymethods]
impl PyTransmit {
    /// The request's id (its reply carries the same).
    #[getter]
    fn id(&self, py: Python<'_>) -> u64 {
        self.request.bind(py).get().0.id
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Transmit(landlord={}, request={})",
            self.landlord,
            crate::wire::PyMessage::repr(self.request.bind(py).get())
        )
    }
}

pub fn transmit_to_py(py: Python<'_>, t: Transmit) -> PyResult<PyTransmit> {
    Ok(PyTransmit { landlord: t.landlord.0, request: Py::new(py, PyRequest(t.request))? })
}

/// What a renewal manager tells its host: `kind` is "renewal_failed", "desired_expiration_reached"
/// or "renewed". `desired_expiration` is the lease's desired expiration (holder's clock) for the
/// first two; a "desired_expiration_reached" event never comes before it.
#[pyclass(frozen, module = "leasehold._native", name = "RenewalEvent")]
pub struct PyRenewalEvent {
    #[pyo3(get)]
    kind: &'static str,
    #[pyo3(get)]
    lease: PyLease,
    #[pyo3(get)]
    desired_expiration: Option<i64>,
    #[pyo3(get)]
    error: Option<Py<PyAny>>,
}

#[pymethods]
impl PyRenewalEvent {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let err = self.error.as_ref().map(|e| e.bind(py).repr()).transpose()?;
        let desired = self.desired_expiration.map(|d| d.to_string());
        Ok(format!(
            "RenewalEvent(kind='{}', lease={}, desired_expiration={}, error={})",
            self.kind,
            self.lease.repr(),
            desired.as_deref().unwrap_or("None"),
            err.map_or_else(|| "None".into(), |r| r.to_string())
        ))
    }
}

/// The renewal manager's events stay a native class: one can come with every renewal, and a
/// record of the data form costs twenty times more per event (`bench/bench_renewal.py`).
impl EventOut<RenewalEvent> for PyRenewalEvent {
    fn out(py: Python<'_>, e: RenewalEvent) -> PyResult<Bound<'_, PyAny>> {
        Ok(Bound::new(py, event_to_py(py, e)?)?.into_any())
    }
}

fn event_to_py(py: Python<'_>, e: RenewalEvent) -> PyResult<PyRenewalEvent> {
    Ok(match e {
        RenewalEvent::RenewalFailed { lease, desired_expiration, error } => PyRenewalEvent {
            kind: "renewal_failed",
            lease: PyLease(lease),
            desired_expiration: Some(desired_expiration),
            error: match error {
                Some(err) => Some(to_instance(py, &err)?.unbind()),
                None => None,
            },
        },
        RenewalEvent::DesiredExpirationReached { lease, desired_expiration } => PyRenewalEvent {
            kind: "desired_expiration_reached",
            lease: PyLease(lease),
            desired_expiration: Some(desired_expiration),
            error: None,
        },
        RenewalEvent::Renewed { lease } => PyRenewalEvent {
            kind: "renewed",
            lease: PyLease(lease),
            desired_expiration: None,
            error: None,
        },
    })
}

/// Renews leases until their desired expirations, sans-I/O: the host runs the timer and carries
/// the messages (or lets `leasehold.aio.RenewalDriver` / `leasehold.threaded.RenewalDriver` do it).
#[pyclass(frozen, module = "leasehold._native", name = "RenewalManager")]
pub struct PyRenewalManager(Guarded<RenewalManager>);

guarded_component!(PyRenewalManager, RenewalManager);
timed!(RenewalManager);

renewer_methods!(PyRenewalManager, PyRenewalEvent);

#[pymethods]
impl PyRenewalManager {
    /// A manager with keyword `settings` (batch_window, max_batch, initial_rtt, min_rto,
    /// max_rto, attempts, renew_divisor, max_retry_interval, max_clock_drift_ppm,
    /// first_request_id, report_renewals); unset ones keep the core's defaults.
    #[new]
    #[pyo3(signature = (**settings))]
    fn new(py: Python<'_>, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let o: ManagerOptions = from_py(crate::machine::settings(py, settings)?.as_any())?;
        Ok(PyRenewalManager(Guarded::new(RenewalManager::try_new(o.config().py(py)?).py(py)?)))
    }

    /// The settings in force, as a dict.
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.0.with(py, |m| m.config().clone())?;
        plain(py, &c)
    }

    /// Renews `lease` until `duration` from `now` (FOREVER: forever), asking for `renew_duration` each time.
    fn renew_for(
        &self,
        py: Python<'_>,
        lease: PyRef<'_, PyLease>,
        duration: Dur,
        renew_duration: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<()> {
        let r = duration_arg(renew_duration, "renew_duration")?;
        self.0.with(py, |m| m.renew_for(lease.0, duration.0, r, now.0))?.py(py)
    }

    /// Renews `lease` until `desired_expiration` (holder's clock), asking for `renew_duration` each time.
    fn renew_until(
        &self,
        py: Python<'_>,
        lease: PyRef<'_, PyLease>,
        desired_expiration: &Bound<'_, PyAny>,
        renew_duration: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<()> {
        let d = i64_arg(desired_expiration, "desired_expiration")?;
        let r = duration_arg(renew_duration, "renew_duration")?;
        self.0.with(py, |m| m.renew_until(lease.0, d, r, now.0))?.py(py)
    }

    /// Stops managing `lease` (it is not cancelled); returns the manager's copy.
    fn remove(&self, py: Python<'_>, lease: PyRef<'_, PyLease>) -> PyResult<PyLease> {
        self.0.with(py, |m| m.remove(&lease.0))?.py(py).map(PyLease)
    }

    /// Stops managing `lease` and queues a cancel request for it.
    fn cancel(&self, py: Python<'_>, lease: PyRef<'_, PyLease>, now: Now) -> PyResult<()> {
        self.0.with(py, |m| m.cancel(&lease.0, now.0))?.py(py)
    }

    /// The desired expiration of a managed lease.
    fn expiration(&self, py: Python<'_>, lease: PyRef<'_, PyLease>) -> PyResult<i64> {
        self.0.with(py, |m| m.expiration(&lease.0))?.py(py)
    }

    /// Changes the desired expiration of a managed lease.
    fn set_expiration(
        &self,
        py: Python<'_>,
        lease: PyRef<'_, PyLease>,
        desired_expiration: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<()> {
        let d = i64_arg(desired_expiration, "desired_expiration")?;
        self.0.with(py, |m| m.set_expiration(&lease.0, d, now.0))?.py(py)
    }

    /// The manager's copy of `lease` (with its actual expiration), or None if not managed.
    fn lease(&self, py: Python<'_>, lease: PyRef<'_, PyLease>) -> PyResult<Option<PyLease>> {
        Ok(self.0.with(py, |m| m.lease(&lease.0))?.map(PyLease))
    }

    /// The renewal duration of a managed lease.
    fn renew_duration(&self, py: Python<'_>, lease: PyRef<'_, PyLease>) -> PyResult<i64> {
        self.0.with(py, |m| m.renew_duration(&lease.0))?.py(py)
    }

    /// When the next renewal of `lease` is due, if one is scheduled.
    fn next_renewal(&self, py: Python<'_>, lease: PyRef<'_, PyLease>) -> PyResult<Option<i64>> {
        self.0.with(py, |m| m.next_renewal(&lease.0))
    }

    /// The round-trip estimate for `landlord`: srtt, rttvar, samples, rto, request_timeout.
    fn rtt<'py>(
        &self,
        py: Python<'py>,
        landlord: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let id = landlord_arg(landlord)?;
        let est = self.0.with(py, |m| m.rtt(id).map(RttData::from))?;
        est.map(|r| plain(py, &r)).transpose()
    }

    /// The managed leases (copies with their actual expirations).
    fn leases(&self, py: Python<'_>) -> PyResult<Vec<PyLease>> {
        self.0.with(py, |m| m.leases().map(|l| PyLease(*l)).collect())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.0.with(py, |m| m.len())
    }

    /// Traffic counters, as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.0.with(py, |m| m.stats())?;
        plain(py, &s)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("RenewalManager(leases={})", self.0.with(py, |m| m.len())?))
    }
}
