//! The renewal service (`RenewalService`, `RenewalSet`).

use leasehold::service::machine::{ServiceOptions, SetEventData};
use leasehold::service::{RenewalService, RenewalServiceConfig, ServiceSnapshot, SetId};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::convert::{bytes_arg, duration_arg, text_arg, u64_arg, Ll, Now};
use crate::data::from_py;
use crate::errors::IntoPyResult;
use crate::event::{registration, PyEventRegistration};
use crate::guard::Guarded;
use crate::landlord::seed_arg;
use crate::lease::PyLease;
use crate::sansio::{answer_methods, answers, guarded_component, renewer_methods, timed, Data};

/// A service's settings from the keywords of `RenewalService(id, **settings)` (seed,
/// set_policy, grace, limits, restore_jump, manager) read as the core's `ServiceOptions`;
/// `seed` when the keywords give none.
fn service_config(
    py: Python<'_>,
    id: Ll,
    settings: Option<&Bound<'_, PyDict>>,
    seed: [u8; 32],
) -> PyResult<RenewalServiceConfig> {
    let d = crate::machine::settings(py, settings)?;
    d.set_item("id", id.0 .0)?;
    from_py::<ServiceOptions>(d.as_any())?.config(seed).py(py)
}

/// The lease renewal service: renewal sets (themselves leased), their client leases, and events.
/// Sans-I/O like the renewal manager (drive it with `leasehold.aio.RenewalDriver` or
/// `leasehold.threaded.RenewalDriver`); set leases are renewed and cancelled through
/// `handle_request` / `handle_bytes`.
#[pyclass(frozen, module = "leasehold._native", name = "RenewalService")]
pub struct PyRenewalService(Guarded<RenewalService>);

guarded_component!(PyRenewalService, RenewalService);
timed!(RenewalService);

answers!(RenewalService);
renewer_methods!(PyRenewalService, Data<SetEventData>);
answer_methods!(PyRenewalService);

impl PyRenewalService {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut RenewalService) -> T) -> PyResult<T> {
        self.0.with(py, f)
    }
}

#[pymethods]
impl PyRenewalService {
    /// A service with keyword `settings` (seed, set_policy, grace, limits, restore_jump, manager).
    #[new]
    #[pyo3(signature = (id, **settings))]
    fn new(py: Python<'_>, id: Ll, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let c = service_config(py, id, settings, seed_arg(py, None)?)?;
        Ok(PyRenewalService(Guarded::new(RenewalService::new(c).py(py)?)))
    }

    /// Rebuilds a service from `snapshot` (JSON from `snapshot()`) at `now`; the settings are
    /// given again as for the constructor, but for the seed (the id must match the snapshot's).
    #[staticmethod]
    #[pyo3(signature = (snapshot, now, id, **settings))]
    fn restore(
        py: Python<'_>,
        snapshot: &Bound<'_, PyAny>,
        now: Now,
        id: Ll,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let snap = ServiceSnapshot::from_json(&text_arg(snapshot, "snapshot")?).py(py)?;
        let c = service_config(py, id, settings, [0; 32])?;
        Ok(PyRenewalService(Guarded::new(RenewalService::restore(c, snap, now.0).py(py)?)))
    }

    /// Everything the service holds at `now`, as JSON text (it contains the cookie secret).
    fn snapshot<'py>(&self, py: Python<'py>, now: Now) -> PyResult<Bound<'py, PyString>> {
        let text = self.with(py, |s| s.snapshot(now.0).to_json())?;
        Ok(PyString::new(py, &text))
    }

    /// The id of the service's landlord: every set lease carries it.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |s| s.id().0)
    }

    /// Creates a set whose lease lasts at most `lease_duration`; returns the set and its lease.
    fn create_set(
        slf: &Bound<'_, Self>,
        lease_duration: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<(PyRenewalSet, PyLease)> {
        let py = slf.py();
        let d = duration_arg(lease_duration, "lease_duration")?;
        let (id, lease) = slf.get().with(py, |s| s.create_set(d, now.0))?.py(py)?;
        Ok((PyRenewalSet { service: slf.clone().unbind(), id: id.0 }, PyLease(lease)))
    }

    /// The handle of set `id` (whether or not it is still alive).
    fn set(slf: &Bound<'_, Self>, id: &Bound<'_, PyAny>) -> PyResult<PyRenewalSet> {
        Ok(PyRenewalSet { service: slf.clone().unbind(), id: u64_arg(id, "set id")? })
    }

    /// The sets alive, in creation order.
    fn sets(slf: &Bound<'_, Self>) -> PyResult<Vec<PyRenewalSet>> {
        let ids = slf.get().with(slf.py(), |s| s.sets())?;
        Ok(ids
            .into_iter()
            .map(|id| PyRenewalSet { service: slf.clone().unbind(), id: id.0 })
            .collect())
    }

    /// The set whose lease is `lease`, if it is alive at `now`.
    fn set_of(
        slf: &Bound<'_, Self>,
        lease: PyRef<'_, PyLease>,
        now: Now,
    ) -> PyResult<Option<PyRenewalSet>> {
        let l = lease.0;
        let id = slf.get().with(slf.py(), |s| s.set_of(&l, now.0))?;
        Ok(id.map(|id| PyRenewalSet { service: slf.clone().unbind(), id: id.0 }))
    }

    /// The host reports that the listener of `event_id` answered "unknown event"; returns
    /// whether the registration was active.
    fn unknown_event(&self, py: Python<'_>, event_id: &Bound<'_, PyAny>) -> PyResult<bool> {
        let id = u64_arg(event_id, "event_id")?;
        self.with(py, |s| s.unknown_event(id))
    }

    /// The host reports that the event `(event_id, sequence)` reached its listener (or was
    /// given up on): it is not handed out again after a restart. Returns whether it was
    /// handed out and not yet reported.
    fn delivered(
        &self,
        py: Python<'_>,
        event_id: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<bool> {
        let (id, seq) = (u64_arg(event_id, "event_id")?, u64_arg(sequence, "sequence")?);
        self.with(py, |s| s.delivered(id, seq, now.0))
    }

    /// The client leases the service renews (copies with their actual expirations).
    fn managed_leases(&self, py: Python<'_>) -> PyResult<Vec<PyLease>> {
        self.with(py, |s| s.manager().leases().map(|l| PyLease(*l)).collect())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| format!("RenewalService(id={}, sets={})", s.id().0, s.sets().len()))
    }
}

/// A renewal set of a `RenewalService` (Jini `LeaseRenewalSet`).
#[pyclass(frozen, module = "leasehold._native", name = "RenewalSet")]
pub struct PyRenewalSet {
    service: Py<PyRenewalService>,
    /// The set's number.
    #[pyo3(get)]
    id: u64,
}

impl PyRenewalSet {
    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut RenewalService, SetId) -> T,
    ) -> PyResult<T> {
        let id = SetId(self.id);
        self.service.bind(py).get().0.with(py, |s| f(s, id))
    }
}

#[pymethods]
impl PyRenewalSet {
    /// `renewFor`: keeps `lease` renewed for `membership_duration`, `renew_duration` at a time.
    fn renew_for(
        &self,
        py: Python<'_>,
        lease: PyRef<'_, PyLease>,
        membership_duration: &Bound<'_, PyAny>,
        renew_duration: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<()> {
        let m = duration_arg(membership_duration, "membership_duration")?;
        let r = duration_arg(renew_duration, "renew_duration")?;
        let l = lease.0;
        self.with(py, |s, id| s.add(id, l, m, r, now.0))?.py(py)
    }
    /// Removes `lease` from the set; returns its last known copy, or None if the set did not hold it.
    fn remove(
        &self,
        py: Python<'_>,
        lease: PyRef<'_, PyLease>,
        now: Now,
    ) -> PyResult<Option<PyLease>> {
        let l = lease.0;
        Ok(self.with(py, |s, id| s.remove(id, &l, now.0))?.py(py)?.map(PyLease))
    }
    /// The client leases in the set.
    fn leases(&self, py: Python<'_>, now: Now) -> PyResult<Vec<PyLease>> {
        Ok(self.with(py, |s, id| s.leases(id, now.0))?.py(py)?.into_iter().map(PyLease).collect())
    }
    /// `(desired_expiration, renew_duration)` of `lease` in this set, or None.
    fn membership(
        &self,
        py: Python<'_>,
        lease: PyRef<'_, PyLease>,
        now: Now,
    ) -> PyResult<Option<(i64, i64)>> {
        let l = lease.0;
        Ok(self
            .with(py, |s, id| s.membership(id, &l, now.0))?
            .py(py)?
            .map(|m| (m.expiration, m.renew_duration)))
    }
    /// The set's own lease, if the set is alive.
    fn lease(&self, py: Python<'_>, now: Now) -> PyResult<Option<PyLease>> {
        Ok(self.with(py, |s, id| s.set_lease(id, now.0))?.map(PyLease))
    }
    /// Registers for the expiration warning, `min_warning` before the set's lease expires.
    fn set_expiration_warning_listener(
        &self,
        py: Python<'_>,
        min_warning: &Bound<'_, PyAny>,
        handback: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<PyEventRegistration> {
        let w = duration_arg(min_warning, "min_warning")?;
        let h = bytes_arg(handback, "handback")?.into_owned();
        Ok(registration(
            self.with(py, |s, id| s.set_expiration_warning_listener(id, w, h, now.0))?.py(py)?,
        ))
    }
    /// Registers for renewal-failure events.
    fn set_renewal_failure_listener(
        &self,
        py: Python<'_>,
        handback: &Bound<'_, PyAny>,
        now: Now,
    ) -> PyResult<PyEventRegistration> {
        let h = bytes_arg(handback, "handback")?.into_owned();
        Ok(registration(
            self.with(py, |s, id| s.set_renewal_failure_listener(id, h, now.0))?.py(py)?,
        ))
    }
    /// Ends the expiration-warning registration.
    fn clear_expiration_warning_listener(&self, py: Python<'_>, now: Now) -> PyResult<()> {
        self.with(py, |s, id| s.clear_expiration_warning_listener(id, now.0))?.py(py)
    }
    /// Ends the renewal-failure registration.
    fn clear_renewal_failure_listener(&self, py: Python<'_>, now: Now) -> PyResult<()> {
        self.with(py, |s, id| s.clear_renewal_failure_listener(id, now.0))?.py(py)
    }
    /// The active event registrations of the set.
    fn registrations(&self, py: Python<'_>, now: Now) -> PyResult<Vec<PyEventRegistration>> {
        Ok(self
            .with(py, |s, id| s.registrations(id, now.0))?
            .py(py)?
            .into_iter()
            .map(registration)
            .collect())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<PyRenewalSet>() {
            Ok(o) => {
                let same = o.get().id == self.id && o.get().service.is(&self.service);
                Ok(pyo3::types::PyBool::new(py, same).to_owned().into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    fn __hash__(&self) -> u64 {
        self.id
    }
    fn __repr__(&self) -> String {
        format!("RenewalSet(id={})", self.id)
    }
}
