//! `Landlord`: the grantor, holding Python objects (or the bytes of wire grants) as resources.

use leasehold::store::StoreConfig;
use leasehold::{Landlord, LandlordConfig, LandlordId};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::convert::{
    bytes_arg, cookie_arg, cookie_bytes, cookie_py, cookie_str, duration_arg, i64_arg,
    read_settings, u64_arg, usize_arg, Ck, Enc, Ll, Now,
};
use crate::errors::{to_instance, IntoPyResult};
use crate::guard::{Guarded, Held};
use crate::lease::PyLease;
use crate::policy::PyPolicy;
use crate::store::{durable_methods, path_arg, OpenArgs, Store, Stored};
use crate::wire::{cookies_arg, items_arg, PyLimits, PyReply, PyRequest};
use leasehold::journal::Durable as DurableResource;

/// What a lease is for: any Python object, or the bytes a wire grant carried.
pub enum Res {
    /// Granted from Python (its drop is deferred past the lock: see `guard`).
    Obj(Held),
    /// Granted through the wire protocol.
    Bytes(Vec<u8>),
}

impl From<Vec<u8>> for Res {
    fn from(v: Vec<u8>) -> Self {
        Res::Bytes(v)
    }
}

impl Clone for Res {
    fn clone(&self) -> Self {
        match self {
            Res::Bytes(b) => Res::Bytes(b.clone()),
            Res::Obj(o) => Res::Obj(o.clone()),
        }
    }
}

/// A resource in a snapshot: its bytes, written as lower-case hex.
struct HexRes(Vec<u8>);

impl serde::Serialize for HexRes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(self.0.len() * 2);
        for b in &self.0 {
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
        s.serialize_str(&out)
    }
}

impl<'de> serde::Deserialize<'de> for HexRes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        let digit = |c: u8| (c as char).to_digit(16).map(|v| v as u8);
        let b = s.as_bytes();
        if b.len() % 2 != 0 {
            return Err(serde::de::Error::custom("resource hex has an odd length"));
        }
        b.chunks(2)
            .map(|p| match (digit(p[0]), digit(p[1])) {
                (Some(h), Some(l)) => Ok(h << 4 | l),
                _ => Err(serde::de::Error::custom("resource is not hex")),
            })
            .collect::<Result<Vec<u8>, _>>()
            .map(HexRes)
    }
}

/// Batches at least this long run detached from the interpreter (other threads run meanwhile).
const DETACH_BATCH: usize = 256;

/// Bodies at least this long are answered detached from the interpreter.
const DETACH_BYTES: usize = 8 * 1024;

/// Per-lease renewal results as a list: each duration an int (one object shared by equal
/// neighbours, as batches mostly grant the same duration), each failure a `LeaseError` instance.
fn durations_list<'py>(
    py: Python<'py>,
    results: Vec<Result<i64, leasehold::LeaseError>>,
) -> PyResult<Bound<'py, PyList>> {
    let mut last: Option<(i64, Bound<'py, PyAny>)> = None;
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        out.push(match r {
            Ok(d) => match &last {
                Some((v, o)) if *v == d => o.clone(),
                _ => {
                    let o = d.into_pyobject(py)?.into_any();
                    last = Some((d, o.clone()));
                    o
                }
            },
            Err(e) => to_instance(py, &e)?,
        });
    }
    PyList::new(py, out)
}

/// Largest snapshot text `Landlord.restore` reads.
const MAX_SNAPSHOT_TEXT: usize = 1 << 30;

impl Res {
    pub fn into_py(self, py: Python<'_>) -> Py<PyAny> {
        match self {
            Res::Obj(o) => o.into_inner(),
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

/// `cookie` (text) and `cookie_bytes` of a class with a `cookie` field.
macro_rules! cookie_getters {
    ($($cls:ty),*) => {$(
        #[pymethods]
        impl $cls {
            #[getter]
            fn cookie<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyString> {
                cookie_py(py, self.cookie)
            }
            /// The cookie as its 16 raw bytes (big-endian): the compact form every method also
            /// accepts.
            #[getter]
            fn cookie_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                cookie_bytes(py, self.cookie)
            }
        }
    )*};
}
cookie_getters!(PyGrant, PyExpired);

#[pymethods]
impl PyGrant {
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
    cookie: leasehold::Cookie,
    #[pyo3(get)]
    expiration: i64,
    #[pyo3(get)]
    resource: Py<PyAny>,
}

impl PyExpired {
    /// An expired lease for Python.
    pub fn new(cookie: leasehold::Cookie, expiration: i64, resource: Py<PyAny>) -> Self {
        PyExpired { cookie, expiration, resource }
    }
}

#[pymethods]
impl PyExpired {
    fn __repr__(&self, py: Python<'_>) -> String {
        let r = self.resource.bind(py).repr().map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
        format!("Expired(cookie='{}', expiration={}, resource={})", self.cookie, self.expiration, r)
    }
}

type Backend = crate::store::Backend<Landlord<Res>>;

impl DurableResource for Res {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Res::Bytes(b) => out.extend_from_slice(b),
            // Never reached: a durable landlord is only ever given bytes (`Landlord.open`
            // converts at the boundary, and refuses anything else), and a landlord in memory
            // has no journal, so it never encodes.
            Res::Obj(_) => {}
        }
    }
    fn decode(bytes: &[u8]) -> leasehold::Result<Self> {
        Ok(Res::Bytes(bytes.to_vec()))
    }
}

/// Issues, renews, cancels and expires leases. Thread-safe: calls from several threads are serialised.
#[pyclass(frozen, module = "leasehold._native", name = "Landlord")]
pub struct PyLandlord {
    inner: Backend,
    policy: PyPolicy,
    /// The int object of the last granted duration, handed out again while durations repeat
    /// (they mostly do), instead of a new int per renewal.
    last_duration: std::sync::Mutex<Option<(i64, Py<PyAny>)>>,
}

impl Stored for PyLandlord {
    type State = Landlord<Res>;
    fn backend(&self) -> &Backend {
        &self.inner
    }
}

durable_methods!(PyLandlord);

impl PyLandlord {
    /// Runs `f` on the landlord; `f` must not touch Python (see `guard`). For a durable
    /// landlord it runs detached, and nothing waits for the disk: use it for calls that answer
    /// no holder.
    #[inline]
    pub fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Landlord<Res>) -> T + Send,
    ) -> PyResult<T> {
        self.inner.with(py, f)
    }

    /// As [`PyLandlord::with`], for calls whose result answers a holder: a durable landlord
    /// returns only once the records behind the result are durable (group commit). `long`
    /// runs an in-memory landlord detached too (big batches: other threads run meanwhile).
    #[inline]
    fn answer<T: Send>(
        &self,
        py: Python<'_>,
        long: bool,
        f: impl FnOnce(&mut Landlord<Res>) -> T + Send,
    ) -> PyResult<T> {
        self.inner.answer(py, long, f)
    }

    /// The store of a durable landlord.
    fn store(&self) -> Option<&Store<Landlord<Res>>> {
        self.inner.store()
    }

    /// A resource as this landlord keeps it: any object in memory; bytes (or a str, as UTF-8)
    /// in a durable landlord, which writes it to disk.
    fn resource(&self, resource: &Bound<'_, PyAny>) -> PyResult<Res> {
        if self.store().is_none() {
            return Ok(Res::Obj(Held::new(resource.clone().unbind())));
        }
        if let Ok(s) = resource.cast::<pyo3::types::PyString>() {
            return Ok(Res::Bytes(s.to_cow()?.as_bytes().to_vec()));
        }
        match bytes_arg(resource, "resource") {
            Ok(b) => Ok(Res::Bytes(b.into_owned())),
            Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "a durable landlord keeps its resources on disk: they must be bytes or str, got {} \
                 (encode it first, e.g. with pickle.dumps or json.dumps)",
                crate::convert::type_name(resource)
            ))),
        }
    }

    fn new_with(landlord: Landlord<Res>, policy: PyPolicy) -> Self {
        Self::with_backend(Backend::Memory(Guarded::new(landlord)), policy)
    }

    fn with_backend(inner: Backend, policy: PyPolicy) -> Self {
        PyLandlord { inner, policy, last_duration: std::sync::Mutex::new(None) }
    }

    fn expired_to_py(py: Python<'_>, all: Vec<leasehold::Expired<Res>>) -> Vec<PyExpired> {
        all.into_iter()
            .map(|e| PyExpired {
                cookie: e.cookie,
                expiration: e.expiration,
                resource: e.resource.into_py(py),
            })
            .collect()
    }

    /// `d` as a Python int, shared with the previous call when it is the same.
    #[inline]
    fn duration_obj<'py>(&self, py: Python<'py>, d: i64) -> Bound<'py, PyAny> {
        let Ok(mut slot) = self.last_duration.try_lock() else {
            return pyo3::types::PyInt::new(py, d).into_any(); // another thread is at it: no waiting
        };
        if let Some((v, o)) = &*slot {
            if *v == d {
                return o.bind(py).clone();
            }
        }
        let o = pyo3::types::PyInt::new(py, d).into_any();
        let old = slot.replace((d, o.clone().unbind()));
        drop(slot);
        drop(old); // an int: no finalizer, and released after the lock anyway
        o
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

/// A landlord's configuration from keyword `settings` whose names are `names`: seed (32 bytes;
/// from `os.urandom` when not given; zeros when `names` has no "seed", for a restore), grace,
/// expiry_budget, limits; `rest` takes any other.
pub fn landlord_config(
    py: Python<'_>,
    id: LandlordId,
    settings: Option<&Bound<'_, PyDict>>,
    names: &[&str],
    mut rest: impl FnMut(&mut LandlordConfig, &str, &Bound<'_, PyAny>) -> PyResult<()>,
) -> PyResult<LandlordConfig> {
    let seed = match settings.map(|s| s.get_item("seed")).transpose()?.flatten() {
        _ if !names.contains(&"seed") => [0; 32],
        given => seed_arg(py, given.as_ref().filter(|v| !v.is_none()))?,
    };
    let mut c = LandlordConfig::new(id, seed);
    read_settings(settings, names, |k, v| {
        match k {
            "seed" => {}
            "grace" => c = c.clone().with_grace(duration_arg(v, k)?),
            "expiry_budget" => match usize_arg(v, k)? {
                0 => return Err(PyValueError::new_err("expiry_budget must be at least 1")),
                b => c.expiry_budget = b,
            },
            "limits" => c.limits = v.extract::<PyRef<'_, PyLimits>>()?.0,
            _ => rest(&mut c, k, v)?,
        }
        Ok(())
    })?;
    Ok(c)
}

/// The keyword settings of `Landlord(id, policy, **settings)`.
const SETTINGS: [&str; 4] = ["seed", "grace", "expiry_budget", "limits"];

#[pymethods]
impl PyLandlord {
    /// A landlord with id `id` granting by `policy`. `seed` (32 bytes) makes cookies
    /// reproducible; without it the cookies come from `os.urandom`.
    #[new]
    #[pyo3(signature = (id, policy, **settings))]
    fn new(
        py: Python<'_>,
        id: Ll,
        policy: PyRef<'_, PyPolicy>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let config = landlord_config(py, id.0, settings, &SETTINGS, |_, _, _| Ok(()))?;
        let built = policy.0.build().py(py)?;
        Ok(PyLandlord::new_with(Landlord::new(config, built), policy.clone()))
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |l| l.id().0)
    }
    #[getter]
    fn grace(&self, py: Python<'_>) -> PyResult<i64> {
        self.with(py, |l| l.config().grace)
    }
    #[getter]
    fn expiry_budget(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |l| l.config().expiry_budget)
    }
    #[getter]
    fn limits(&self, py: Python<'_>) -> PyResult<PyLimits> {
        self.with(py, |l| PyLimits(l.config().limits))
    }
    #[getter]
    fn policy(&self) -> PyPolicy {
        self.policy.clone()
    }

    /// Grants a lease on `resource` (any object; bytes or str for a durable landlord) for at
    /// most `duration`.
    fn grant(
        &self,
        py: Python<'_>,
        resource: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<PyGrant> {
        let d = duration_arg(duration, "duration")?;
        let now = i64_arg(now, "now")?;
        let res = self.resource(resource)?;
        let g = self.answer(py, false, |l| l.grant(res, d, now))?.py(py)?;
        Ok(PyGrant { cookie: g.cookie, duration: g.duration, expiration: g.expiration })
    }

    /// Renews a lease for at most `duration` from `now`; returns the granted duration.
    fn renew<'py>(
        &self,
        py: Python<'py>,
        cookie: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = cookie_arg(cookie)?;
        let d = duration_arg(duration, "duration")?;
        let now = i64_arg(now, "now")?;
        let granted = self.answer(py, false, |l| l.renew(c, d, now))?.py(py)?;
        Ok(self.duration_obj(py, granted))
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
        let r = self.answer(py, false, |l| l.cancel(c, now))?.py(py)?;
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
        let long = items.len() >= DETACH_BATCH;
        let results = self.answer(py, long, |l| l.renew_all(&items, now))?;
        durations_list(py, results)
    }

    /// Cancels many leases. Returns one result per cookie, in order: the resource, or a
    /// `LeaseError` instance (never raised) for that lease.
    fn cancel_all<'py>(
        &self,
        py: Python<'py>,
        cookies: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let cs = cookies_arg(cookies)?;
        let now = i64_arg(now, "now")?;
        let long = cs.len() >= DETACH_BATCH;
        let results = self.answer(py, long, |l| l.cancel_all(&cs, now))?;
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
        cookie: Ck,
        now: Now,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let found = self.with(py, |l| l.get(cookie.0, now.0).map(|(e, r)| (e, r.clone())))?;
        match found {
            Some((e, r)) => Ok(Some(PyTuple::new(
                py,
                [e.into_pyobject(py)?.into_any(), r.into_py(py).into_bound(py)],
            )?)),
            None => Ok(None),
        }
    }

    /// The holder's view of a lease still honoured at `now` (expiration on the landlord's clock).
    fn lease(&self, py: Python<'_>, cookie: Ck, now: Now) -> PyResult<Option<PyLease>> {
        Ok(self.with(py, |l| l.lease(cookie.0, now.0))?.map(PyLease))
    }

    /// Every lease held, as (cookie, expiration, resource) tuples, in no particular order.
    fn leases<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows: Vec<(leasehold::Cookie, i64, Res)> =
            self.with(py, |l| l.iter().map(|(c, e, r)| (c, e, r.clone())).collect())?;
        let rows: Vec<(String, i64, Py<PyAny>)> =
            rows.into_iter().map(|(c, e, r)| (cookie_str(c), e, r.into_py(py))).collect();
        PyList::new(py, rows)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.leases(py)?.into_any().try_iter()?.into_any())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |l| l.len())
    }

    /// When to call `handle_timeout` next; None if nothing will expire.
    fn poll_timeout(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |l| l.poll_timeout())
    }

    /// Advances expiry to `now`; expired leases are then handed out by `poll_expired`.
    fn handle_timeout(&self, py: Python<'_>, now: Now) -> PyResult<()> {
        self.with(py, |l| l.handle_timeout(now.0))
    }

    /// The next expired lease found by `handle_timeout`, or None. A durable landlord
    /// journals it as handed out and returns it once that is durable.
    fn poll_expired(&self, py: Python<'_>) -> PyResult<Option<PyExpired>> {
        let e = self.answer(py, false, |l| l.poll_expired())?;
        Ok(Self::expired_to_py(py, e.into_iter().collect()).pop())
    }

    /// Every expired lease found so far (`poll_expired` until None). A durable landlord
    /// returns them once what it journaled (that they were handed out, the time) is durable.
    fn drain_expired(&self, py: Python<'_>) -> PyResult<Vec<PyExpired>> {
        let all = self.answer(py, false, |l| std::iter::from_fn(|| l.poll_expired()).collect())?;
        Ok(Self::expired_to_py(py, all))
    }

    /// `drain_expired` without waiting for the disk: the expired leases and the journal record
    /// to wait for (`wait_durable`) before acting on them. For hosts that wait elsewhere (the
    /// asyncio driver syncs off its loop); an in-memory landlord gives 0.
    fn take_expired(&self, py: Python<'_>) -> PyResult<(Vec<PyExpired>, u64)> {
        let (all, seq) =
            self.inner.take(py, |l| std::iter::from_fn(|| l.poll_expired()).collect::<Vec<_>>())?;
        Ok((Self::expired_to_py(py, all), seq))
    }

    /// Answers one `Request` with a `Reply`.
    fn handle_request(
        &self,
        py: Python<'_>,
        request: PyRef<'_, PyRequest>,
        now: Now,
    ) -> PyResult<PyReply> {
        let req = &request.0;
        Ok(PyReply(self.answer(py, false, |l| l.handle_request(req, now.0))?))
    }

    /// Decodes a request message, answers it and returns the encoded reply (same encoding).
    /// Undecodable input gets an error reply, never an exception.
    fn handle_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        encoding: Enc,
        now: Now,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let data = bytes_arg(data, "data")?;
        let long = data.len() >= DETACH_BYTES;
        let out = self.answer(py, long, |l| l.handle_bytes(&data, encoding.0, now.0))?;
        Ok(PyBytes::new(py, &out))
    }

    /// `handle_bytes` without waiting for the disk: the reply message and the journal record
    /// it depends on. A durable landlord's reply may leave only once `wait_durable(seq)` has
    /// returned (or `durable_seq >= seq`); an in-memory landlord gives 0.
    fn answer_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        encoding: Enc,
        now: Now,
    ) -> PyResult<(Bound<'py, PyBytes>, u64)> {
        let data = bytes_arg(data, "data")?;
        let (out, seq) = self.inner.take(py, |l| l.handle_bytes(&data, encoding.0, now.0))?;
        Ok((PyBytes::new(py, &out), seq))
    }

    /// Opens the durable landlord kept in the directory `data_dir`, creating the directory
    /// and a new store (with `id`, `seed`, `grace`, ...) if there is none, or recovering what
    /// is there: the snapshot, then every log record after it. A torn tail (the last write,
    /// cut short by a crash: never acknowledged) is dropped; damage (a flipped byte, a gap, a
    /// missing snapshot once the log no longer starts at record 1) raises `DecodeError` naming
    /// the file and offset, and leaves the directory as it was. A directory another process has
    /// open raises `StoreError`. An existing store keeps the id, seed and settings it was
    /// created with; `policy` is code, not data: give it every time.
    ///
    /// Time spent down does not count: the landlord goes on from its last journaled time at
    /// `now`, so every lease keeps the time it had left.
    ///
    /// Every call that answers a holder (grant, renew, cancel, the batches, `handle_request`,
    /// `handle_bytes`, `poll_expired`, `drain_expired`) returns only once the records behind
    /// its answer are durable; threads answering at the same time share one write and one
    /// sync (group commit), done with the GIL released. Resources must be bytes (a str is kept
    /// as its UTF-8 bytes); they come back as bytes.
    #[staticmethod]
    #[pyo3(signature = (data_dir, id, policy, now, **settings))]
    fn open(
        py: Python<'_>,
        data_dir: &Bound<'_, PyAny>,
        id: Ll,
        policy: PyRef<'_, PyPolicy>,
        now: Now,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let path = path_arg(data_dir)?;
        let mut store = StoreConfig::default();
        let names =
            [&SETTINGS[..], &["journal_clock_interval", "segment_bytes", "min_compact_bytes"]];
        let config = landlord_config(py, id.0, settings, &names.concat(), |c, k, v| {
            match k {
                "journal_clock_interval" => c.journal_clock_interval = duration_arg(v, k)?,
                "segment_bytes" => store.segment_bytes = u64_arg(v, k)?,
                _ => store.min_compact_bytes = u64_arg(v, k)?,
            }
            Ok(())
        })?;
        policy.0.build().py(py)?;
        let spec = policy.0.clone();
        let args =
            OpenArgs { path, store, now: now.0, holds: ("leases", |l: &Landlord<Res>| l.len()) };
        let st = Store::open(py, args, move |snapshot| {
            let built = spec.build()?;
            match snapshot {
                Some(bytes) => Landlord::from_snapshot_bytes(bytes, built),
                None => {
                    let mut ll = Landlord::new(config, built);
                    ll.enable_journal();
                    Ok(ll)
                }
            }
        })?;
        Ok(PyLandlord::with_backend(Backend::Durable(Box::new(st)), policy.clone()))
    }

    /// Everything the landlord holds at `now`, as JSON text, so that a restart loses nothing.
    ///
    /// Resources must become bytes: `bytes` resources (and those granted over the wire) are
    /// written as they are; any other object needs `encode(resource) -> bytes` (for example
    /// `pickle.dumps`). The text contains the cookie secret: store it like a key.
    #[pyo3(signature = (now, encode = None))]
    fn snapshot<'py>(
        &self,
        py: Python<'py>,
        now: Now,
        encode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyString>> {
        let snap = self.with(py, |l| l.snapshot(now.0))?;
        let to_bytes = |r: Res| -> PyResult<HexRes> {
            match r {
                Res::Bytes(b) => Ok(HexRes(b)),
                Res::Obj(o) => {
                    let o = o.into_inner().into_bound(py);
                    let out = match encode {
                        Some(f) => f.call1((&o,))?,
                        None => o,
                    };
                    match out.cast::<PyBytes>() {
                        Ok(b) => Ok(HexRes(b.as_bytes().to_vec())),
                        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                            "a snapshot needs bytes resources; got {} (pass encode=, e.g. pickle.dumps)",
                            crate::convert::type_name(&out)
                        ))),
                    }
                }
            }
        };
        let out = map_resources(snap, to_bytes)?;
        let text = serde_json::to_string(&out)
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("snapshot: {e}")))?;
        Ok(pyo3::types::PyString::new(py, &text))
    }

    /// Rebuilds a landlord from `snapshot()` text at `now`, with `policy` (policies are given
    /// again). Each lease keeps its cookie and the time it had left. `decode(bytes) -> resource`
    /// turns resources back into objects; without it they come back as `bytes`.
    #[staticmethod]
    #[pyo3(signature = (snapshot, policy, now, decode = None))]
    fn restore(
        py: Python<'_>,
        snapshot: &Bound<'_, PyAny>,
        policy: PyRef<'_, PyPolicy>,
        now: Now,
        decode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let text = crate::convert::text_arg(snapshot, "snapshot")?;
        if text.len() > MAX_SNAPSHOT_TEXT {
            return Err(crate::errors::to_py(
                py,
                &leasehold::LeaseError::Decode("snapshot text is over 1 GiB".into()),
            ));
        }
        let snap: leasehold::LandlordSnapshot<HexRes> =
            serde_json::from_str(&text).map_err(|e| {
                crate::errors::to_py(
                    py,
                    &leasehold::LeaseError::Decode(format!("bad landlord snapshot: {e}")),
                )
            })?;
        let from_bytes = |h: HexRes| -> PyResult<Res> {
            match decode {
                Some(f) => Ok(Res::Obj(Held::new(f.call1((PyBytes::new(py, &h.0),))?.unbind()))),
                None => Ok(Res::Bytes(h.0)),
            }
        };
        let back = map_resources(snap, from_bytes)?;
        let built = policy.0.build().py(py)?;
        let ll = Landlord::restore(back, built, now.0).py(py)?;
        Ok(PyLandlord::new_with(ll, policy.clone()))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let (id, n) = self.with(py, |l| (l.id().0, l.len()))?;
        Ok(match self.store() {
            Some(s) => format!("Landlord(id={id}, leases={n}, data_dir={:?})", s.path()),
            None => format!("Landlord(id={id}, leases={n})"),
        })
    }
}

/// `snap` with each resource (held and expired) turned by `f`.
fn map_resources<A, B>(
    snap: leasehold::LandlordSnapshot<A>,
    mut f: impl FnMut(A) -> PyResult<B>,
) -> PyResult<leasehold::LandlordSnapshot<B>> {
    use leasehold::landlord::SnapshotLease;
    let mut each = |v: Vec<SnapshotLease<A>>| -> PyResult<Vec<SnapshotLease<B>>> {
        let turn = |l: SnapshotLease<A>| {
            Ok(SnapshotLease { cookie: l.cookie, remaining: l.remaining, resource: f(l.resource)? })
        };
        v.into_iter().map(turn).collect()
    };
    let (leases, expired) = (each(snap.leases)?, each(snap.expired)?);
    let (version, config, taken_at, rng) = (snap.version, snap.config, snap.taken_at, snap.rng);
    Ok(leasehold::LandlordSnapshot {
        version,
        config,
        taken_at,
        rng,
        slots: snap.slots,
        free: snap.free,
        leases,
        expired,
    })
}
