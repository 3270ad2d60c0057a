//! `Landlord`: the grantor, holding Python objects (or the bytes of wire grants) as resources.

use std::sync::Mutex;

use leasehold::{Landlord, LandlordConfig};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::convert::{
    bytes_arg, cookie_arg, cookie_py, cookie_str, duration_arg, encoding_arg, i64_arg,
    landlord_arg, usize_arg,
};
use crate::errors::{to_instance, IntoPyResult};
use crate::lease::PyLease;
use crate::policy::PyPolicy;
use crate::wire::{items_arg, PyLimits, PyReply, PyRequest};

/// What a lease is for: any Python object, or the bytes a wire grant carried.
pub enum Res {
    /// Granted from Python.
    Obj(Py<PyAny>),
    /// Granted through the wire protocol.
    Bytes(Vec<u8>),
}

impl From<Vec<u8>> for Res {
    fn from(v: Vec<u8>) -> Self {
        Res::Bytes(v)
    }
}

impl Res {
    pub fn to_py(&self, py: Python<'_>) -> Py<PyAny> {
        match self {
            Res::Obj(o) => o.clone_ref(py),
            Res::Bytes(b) => PyBytes::new(py, b).into_any().unbind(),
        }
    }
    pub fn into_py(self, py: Python<'_>) -> Py<PyAny> {
        match self {
            Res::Obj(o) => o,
            Res::Bytes(b) => PyBytes::new(py, &b).into_any().unbind(),
        }
    }
}

/// A granted lease, as the landlord answers a grant.
#[pyclass(frozen, module = "leasehold._native", name = "Grant")]
pub struct PyGrant {
    cookie: leasehold::Cookie,
    #[pyo3(get)]
    duration: i64,
    #[pyo3(get)]
    expiration: i64,
}

#[pymethods]
impl PyGrant {
    #[getter]
    fn cookie<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyString> {
        cookie_py(py, self.cookie)
    }
    fn __repr__(&self) -> String {
        format!(
            "Grant(cookie='{}', duration={}, expiration={})",
            self.cookie, self.duration, self.expiration
        )
    }
}

/// A lease that expired, handed back with its resource.
#[pyclass(frozen, module = "leasehold._native", name = "Expired")]
pub struct PyExpired {
    #[pyo3(get)]
    cookie: String,
    #[pyo3(get)]
    expiration: i64,
    #[pyo3(get)]
    resource: Py<PyAny>,
}

#[pymethods]
impl PyExpired {
    fn __repr__(&self, py: Python<'_>) -> String {
        let r = self.resource.bind(py).repr().map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
        format!("Expired(cookie='{}', expiration={}, resource={})", self.cookie, self.expiration, r)
    }
}

/// Issues, renews, cancels and expires leases. Thread-safe: calls from several threads are serialised.
#[pyclass(frozen, module = "leasehold._native", name = "Landlord")]
pub struct PyLandlord {
    pub inner: Mutex<Landlord<Res>>,
    policy: PyPolicy,
}

impl PyLandlord {
    pub fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut Landlord<Res>) -> T) -> T {
        let mut g = self.inner.lock_py_attached(py).unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }
}

pub fn seed_arg(py: Python<'_>, seed: Option<&Bound<'_, PyAny>>) -> PyResult<[u8; 32]> {
    match seed {
        Some(s) => {
            let b = bytes_arg(s, "seed")?;
            <[u8; 32]>::try_from(b.as_ref()).map_err(|_| {
                PyValueError::new_err(format!("seed must be 32 bytes, got {}", b.len()))
            })
        }
        None => {
            let b = py.import("os")?.call_method1("urandom", (32,))?;
            let b = b.cast::<PyBytes>()?;
            <[u8; 32]>::try_from(b.as_bytes())
                .map_err(|_| PyValueError::new_err("os.urandom gave too few bytes"))
        }
    }
}

#[pymethods]
impl PyLandlord {
    /// A landlord with id `id` granting by `policy`. `seed` (32 bytes) makes cookies
    /// reproducible; without it the cookies come from `os.urandom`.
    #[new]
    #[pyo3(signature = (id, policy, *, seed = None, grace = None, expiry_budget = None, limits = None))]
    fn new(
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        policy: PyRef<'_, PyPolicy>,
        seed: Option<&Bound<'_, PyAny>>,
        grace: Option<&Bound<'_, PyAny>>,
        expiry_budget: Option<&Bound<'_, PyAny>>,
        limits: Option<PyRef<'_, PyLimits>>,
    ) -> PyResult<Self> {
        let mut config = LandlordConfig::new(landlord_arg(id)?, seed_arg(py, seed)?);
        if let Some(g) = grace {
            config = config.with_grace(duration_arg(g, "grace")?);
        }
        if let Some(b) = expiry_budget {
            let b = usize_arg(b, "expiry_budget")?;
            if b == 0 {
                return Err(PyValueError::new_err("expiry_budget must be at least 1"));
            }
            config.expiry_budget = b;
        }
        if let Some(l) = limits {
            config.limits = l.0;
        }
        let built = policy.0.build().py(py)?;
        Ok(PyLandlord { inner: Mutex::new(Landlord::new(config, built)), policy: policy.clone() })
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> u64 {
        self.with(py, |l| l.id().0)
    }
    #[getter]
    fn grace(&self, py: Python<'_>) -> i64 {
        self.with(py, |l| l.config().grace)
    }
    #[getter]
    fn expiry_budget(&self, py: Python<'_>) -> usize {
        self.with(py, |l| l.config().expiry_budget)
    }
    #[getter]
    fn limits(&self, py: Python<'_>) -> PyLimits {
        self.with(py, |l| PyLimits(l.config().limits))
    }
    #[getter]
    fn policy(&self) -> PyPolicy {
        self.policy.clone()
    }

    /// Grants a lease on `resource` (any object) for at most `duration`.
    fn grant(
        &self,
        py: Python<'_>,
        resource: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<PyGrant> {
        let d = duration_arg(duration, "duration")?;
        let now = i64_arg(now, "now")?;
        let res = Res::Obj(resource.clone().unbind());
        let g = self.with(py, |l| l.grant(res, d, now)).py(py)?;
        Ok(PyGrant { cookie: g.cookie, duration: g.duration, expiration: g.expiration })
    }

    /// Renews a lease for at most `duration` from `now`; returns the granted duration.
    fn renew(
        &self,
        py: Python<'_>,
        cookie: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<i64> {
        let c = cookie_arg(cookie)?;
        let d = duration_arg(duration, "duration")?;
        let now = i64_arg(now, "now")?;
        self.with(py, |l| l.renew(c, d, now)).py(py)
    }

    /// Cancels a lease; returns its resource.
    fn cancel(
        &self,
        py: Python<'_>,
        cookie: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let c = cookie_arg(cookie)?;
        let now = i64_arg(now, "now")?;
        let r = self.with(py, |l| l.cancel(c, now)).py(py)?;
        Ok(r.into_py(py))
    }

    /// Renews many leases: `items` are (cookie, duration) pairs. Returns one result per item, in
    /// order: the granted duration, or a `LeaseError` instance (never raised) for that lease.
    fn renew_all<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let items = items_arg(items)?;
        let now = i64_arg(now, "now")?;
        let results = self.with(py, |l| l.renew_all(&items, now));
        let out: Vec<Py<PyAny>> = results
            .into_iter()
            .map(|r| match r {
                Ok(d) => Ok(d.into_pyobject(py)?.into_any().unbind()),
                Err(e) => Ok(to_instance(py, &e)?.unbind()),
            })
            .collect::<PyResult<_>>()?;
        PyList::new(py, out)
    }

    /// Cancels many leases. Returns one result per cookie, in order: the resource, or a
    /// `LeaseError` instance (never raised) for that lease.
    fn cancel_all<'py>(
        &self,
        py: Python<'py>,
        cookies: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut cs = Vec::new();
        for c in cookies.try_iter()? {
            cs.push(cookie_arg(&c?)?);
        }
        let now = i64_arg(now, "now")?;
        let results = self.with(py, |l| l.cancel_all(&cs, now));
        let out: Vec<Py<PyAny>> = results
            .into_iter()
            .map(|r| match r {
                Ok(res) => Ok(res.into_py(py)),
                Err(e) => Ok(to_instance(py, &e)?.unbind()),
            })
            .collect::<PyResult<_>>()?;
        PyList::new(py, out)
    }

    /// `(expiration, resource)` of a lease still honoured at `now`, or None.
    fn get<'py>(
        &self,
        py: Python<'py>,
        cookie: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let c = cookie_arg(cookie)?;
        let now = i64_arg(now, "now")?;
        let found = self.with(py, |l| l.get(c, now).map(|(e, r)| (e, r.to_py(py))));
        match found {
            Some((e, r)) => {
                Ok(Some(PyTuple::new(py, [e.into_pyobject(py)?.into_any(), r.into_bound(py)])?))
            }
            None => Ok(None),
        }
    }

    /// The holder's view of a lease still honoured at `now` (expiration on the landlord's clock).
    fn lease(
        &self,
        py: Python<'_>,
        cookie: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyLease>> {
        let c = cookie_arg(cookie)?;
        let now = i64_arg(now, "now")?;
        Ok(self.with(py, |l| l.lease(c, now)).map(PyLease))
    }

    /// Every lease held, as (cookie, expiration, resource) tuples, in no particular order.
    fn leases<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows: Vec<(String, i64, Py<PyAny>)> =
            self.with(py, |l| l.iter().map(|(c, e, r)| (cookie_str(c), e, r.to_py(py))).collect());
        PyList::new(py, rows)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.leases(py)?.into_any().try_iter()?.into_any())
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.with(py, |l| l.len())
    }

    /// When to call `handle_timeout` next; None if nothing will expire.
    fn poll_timeout(&self, py: Python<'_>) -> Option<i64> {
        self.with(py, |l| l.poll_timeout())
    }

    /// Advances expiry to `now`; expired leases are then handed out by `poll_expired`.
    fn handle_timeout(&self, py: Python<'_>, now: &Bound<'_, PyAny>) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        self.with(py, |l| l.handle_timeout(now));
        Ok(())
    }

    /// The next expired lease found by `handle_timeout`, or None.
    fn poll_expired(&self, py: Python<'_>) -> Option<PyExpired> {
        self.with(py, |l| l.poll_expired()).map(|e| PyExpired {
            cookie: cookie_str(e.cookie),
            expiration: e.expiration,
            resource: e.resource.into_py(py),
        })
    }

    /// Every expired lease found so far (`poll_expired` until None).
    fn drain_expired(&self, py: Python<'_>) -> Vec<PyExpired> {
        let all: Vec<_> = self.with(py, |l| std::iter::from_fn(|| l.poll_expired()).collect());
        all.into_iter()
            .map(|e| PyExpired {
                cookie: cookie_str(e.cookie),
                expiration: e.expiration,
                resource: e.resource.into_py(py),
            })
            .collect()
    }

    /// Answers one `Request` with a `Reply`.
    fn handle_request(
        &self,
        py: Python<'_>,
        request: PyRef<'_, PyRequest>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<PyReply> {
        let now = i64_arg(now, "now")?;
        Ok(PyReply(self.with(py, |l| l.handle_request(&request.0, now))))
    }

    /// Decodes a request message, answers it and returns the encoded reply (same encoding).
    /// Undecodable input gets an error reply, never an exception.
    fn handle_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        encoding: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let enc = encoding_arg(encoding)?;
        let now = i64_arg(now, "now")?;
        let data = bytes_arg(data, "data")?;
        let out = self.with(py, |l| l.handle_bytes(&data, enc, now));
        Ok(PyBytes::new(py, &out))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.with(py, |l| format!("Landlord(id={}, leases={})", l.id().0, l.len()))
    }
}
