//! The wire protocol: `Limits`, `Request` and `Reply`, in JSON and binary.

use leasehold::wire::{Outcome, WireError};
use leasehold::{Encoding, Limits, Reply, ReplyBody, Request, RequestBody};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::convert::{
    bytes_arg, cookie_arg, cookie_str, duration_arg, encoding_arg, usize_arg, Ck, Dur, Id, Ll,
};
use crate::errors::{from_instance, to_instance};

/// Bounds enforced when decoding messages.
#[pyclass(frozen, module = "leasehold._native", name = "Limits")]
#[derive(Clone, Copy)]
pub struct PyLimits(pub Limits);

#[pymethods]
impl PyLimits {
    #[new]
    #[pyo3(signature = (max_message_bytes = None, max_batch = None, max_resource_bytes = None))]
    fn new(
        max_message_bytes: Option<&Bound<'_, PyAny>>,
        max_batch: Option<&Bound<'_, PyAny>>,
        max_resource_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = Limits::default();
        if let Some(v) = max_message_bytes {
            l.max_message_bytes = usize_arg(v, "max_message_bytes")?;
        }
        if let Some(v) = max_batch {
            l.max_batch = usize_arg(v, "max_batch")?;
        }
        if let Some(v) = max_resource_bytes {
            l.max_resource_bytes = usize_arg(v, "max_resource_bytes")?;
        }
        Ok(PyLimits(l))
    }
    #[getter]
    fn max_message_bytes(&self) -> usize {
        self.0.max_message_bytes
    }
    #[getter]
    fn max_batch(&self) -> usize {
        self.0.max_batch
    }
    #[getter]
    fn max_resource_bytes(&self) -> usize {
        self.0.max_resource_bytes
    }
    fn __repr__(&self) -> String {
        format!(
            "Limits(max_message_bytes={}, max_batch={}, max_resource_bytes={})",
            self.0.max_message_bytes, self.0.max_batch, self.0.max_resource_bytes
        )
    }
}

pub fn limits_or_default(limits: Option<PyRef<'_, PyLimits>>) -> Limits {
    limits.map(|l| l.0).unwrap_or_default()
}

/// A request to a landlord; `id` is echoed in the reply.
#[pyclass(frozen, module = "leasehold._native", name = "Request")]
#[derive(Clone)]
pub struct PyRequest(pub Request);

/// `read` of each item of any iterable (a list is read by index, without an iterator).
#[inline]
fn list_arg<T>(
    obj: &Bound<'_, PyAny>,
    read: impl Fn(&Bound<'_, PyAny>) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    if let Ok(list) = obj.cast_exact::<PyList>() {
        let mut out = Vec::with_capacity(list.len());
        for i in 0..list.len() {
            out.push(read(&list.get_item(i)?)?);
        }
        return Ok(out);
    }
    obj.try_iter()?.map(|item| read(&item?)).collect()
}

/// Cookies from any iterable.
pub fn cookies_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<leasehold::Cookie>> {
    list_arg(obj, cookie_arg)
}

#[inline]
fn item_arg(item: &Bound<'_, PyAny>) -> PyResult<(leasehold::Cookie, i64)> {
    let t = item.cast::<PyTuple>().ok().filter(|t| t.len() == 2).ok_or_else(|| {
        pyo3::exceptions::PyTypeError::new_err("each item must be a (cookie, duration) tuple")
    })?;
    // Tuples are immutable: the borrowed items live as long as `t`.
    let (c, d) = (t.get_borrowed_item(0)?, t.get_borrowed_item(1)?);
    Ok((cookie_arg(&c)?, duration_arg(&d, "duration")?))
}

/// (cookie, duration) pairs from any iterable of 2-tuples.
pub fn items_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(leasehold::Cookie, i64)>> {
    list_arg(obj, item_arg)
}

#[pymethods]
impl PyRequest {
    /// A new lease on `resource` (bytes) for `duration`.
    #[staticmethod]
    fn grant(id: Id, resource: &Bound<'_, PyAny>, duration: Dur) -> PyResult<Self> {
        let resource = bytes_arg(resource, "resource")?.into_owned();
        Ok(PyRequest(Request {
            id: id.0,
            body: RequestBody::Grant { resource, duration: duration.0 },
        }))
    }
    /// Renews one lease.
    #[staticmethod]
    fn renew(id: Id, cookie: Ck, duration: Dur) -> Self {
        PyRequest(Request {
            id: id.0,
            body: RequestBody::Renew { cookie: cookie.0, duration: duration.0 },
        })
    }
    /// Cancels one lease.
    #[staticmethod]
    fn cancel(id: Id, cookie: Ck) -> Self {
        PyRequest(Request { id: id.0, body: RequestBody::Cancel { cookie: cookie.0 } })
    }
    /// Renews several leases: `items` are (cookie, duration) pairs.
    #[staticmethod]
    fn renew_all(id: Id, items: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyRequest(Request {
            id: id.0,
            body: RequestBody::RenewAll { items: items_arg(items)? },
        }))
    }
    /// Cancels several leases.
    #[staticmethod]
    fn cancel_all(id: Id, cookies: &Bound<'_, PyAny>) -> PyResult<Self> {
        let cookies = cookies_arg(cookies)?;
        Ok(PyRequest(Request { id: id.0, body: RequestBody::CancelAll { cookies } }))
    }

    #[getter]
    fn id(&self) -> u64 {
        self.0.id
    }
    /// "grant", "renew", "cancel", "renew_all" or "cancel_all".
    #[getter]
    fn op(&self) -> &'static str {
        match self.0.body {
            RequestBody::Grant { .. } => "grant",
            RequestBody::Renew { .. } => "renew",
            RequestBody::Cancel { .. } => "cancel",
            RequestBody::RenewAll { .. } => "renew_all",
            RequestBody::CancelAll { .. } => "cancel_all",
        }
    }
    #[getter]
    fn resource<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.0.body {
            RequestBody::Grant { resource, .. } => Some(PyBytes::new(py, resource)),
            _ => None,
        }
    }
    #[getter]
    fn duration(&self) -> Option<i64> {
        match &self.0.body {
            RequestBody::Grant { duration, .. } | RequestBody::Renew { duration, .. } => {
                Some(*duration)
            }
            _ => None,
        }
    }
    #[getter]
    fn cookie(&self) -> Option<String> {
        match &self.0.body {
            RequestBody::Renew { cookie, .. } | RequestBody::Cancel { cookie } => {
                Some(cookie_str(*cookie))
            }
            _ => None,
        }
    }
    #[getter]
    fn items(&self) -> Option<Vec<(String, i64)>> {
        match &self.0.body {
            RequestBody::RenewAll { items } => {
                Some(items.iter().map(|(c, d)| (cookie_str(*c), *d)).collect())
            }
            _ => None,
        }
    }
    #[getter]
    fn cookies(&self) -> Option<Vec<String>> {
        match &self.0.body {
            RequestBody::CancelAll { cookies } => {
                Some(cookies.iter().map(|c| cookie_str(*c)).collect())
            }
            _ => None,
        }
    }
}

/// A landlord's answer to a `Request`.
#[pyclass(frozen, module = "leasehold._native", name = "Reply")]
#[derive(Clone)]
pub struct PyReply(pub Reply);

fn outcome_err(py: Python<'_>, e: &WireError) -> PyResult<Py<PyAny>> {
    Ok(to_instance(py, &e.to_error())?.unbind())
}

fn wire_error(obj: &Bound<'_, PyAny>) -> PyResult<WireError> {
    Ok(WireError::from(&from_instance(obj)?))
}

fn reply(id: Id, landlord: Ll, body: ReplyBody) -> PyReply {
    PyReply(Reply { id: id.0, landlord: landlord.0, body })
}

/// The results of a batch: `ok(r)` for each success, else a `LeaseError` instance.
fn results_arg<T>(
    results: &Bound<'_, PyAny>,
    ok: impl Fn(&Bound<'_, PyAny>) -> Option<PyResult<T>>,
) -> PyResult<Vec<Outcome<T>>> {
    list_arg(results, |r| match ok(r) {
        Some(v) => v.map(Outcome::Ok),
        None => wire_error(r).map(Outcome::Err),
    })
}

#[pymethods]
impl PyReply {
    /// A granted lease.
    #[staticmethod]
    fn granted(id: Id, landlord: Ll, cookie: Ck, duration: Dur) -> Self {
        reply(id, landlord, ReplyBody::Granted { cookie: cookie.0, duration: duration.0 })
    }
    /// A renewed lease.
    #[staticmethod]
    fn renewed(id: Id, landlord: Ll, duration: Dur) -> Self {
        reply(id, landlord, ReplyBody::Renewed { duration: duration.0 })
    }
    /// A cancelled lease.
    #[staticmethod]
    fn cancelled(id: Id, landlord: Ll) -> Self {
        reply(id, landlord, ReplyBody::Cancelled)
    }
    /// Per-lease results of a renew_all: a duration or a `LeaseError` each.
    #[staticmethod]
    fn renewed_all(id: Id, landlord: Ll, results: &Bound<'_, PyAny>) -> PyResult<Self> {
        let int = |r: &Bound<'_, PyAny>| {
            r.is_instance_of::<pyo3::types::PyInt>().then(|| duration_arg(r, "duration"))
        };
        Ok(reply(id, landlord, ReplyBody::RenewedAll { results: results_arg(results, int)? }))
    }
    /// Per-lease results of a cancel_all: None or a `LeaseError` each.
    #[staticmethod]
    fn cancelled_all(id: Id, landlord: Ll, results: &Bound<'_, PyAny>) -> PyResult<Self> {
        let none = |r: &Bound<'_, PyAny>| r.is_none().then_some(Ok(()));
        Ok(reply(id, landlord, ReplyBody::CancelledAll { results: results_arg(results, none)? }))
    }
    /// The whole request failed with `error` (a `LeaseError`).
    #[staticmethod]
    fn failure(id: Id, landlord: Ll, error: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(reply(id, landlord, ReplyBody::Error(wire_error(error)?)))
    }

    #[getter]
    fn id(&self) -> u64 {
        self.0.id
    }
    #[getter]
    fn landlord(&self) -> u64 {
        self.0.landlord.0
    }
    /// "granted", "renewed", "cancelled", "renewed_all", "cancelled_all" or "error".
    #[getter]
    fn op(&self) -> &'static str {
        match self.0.body {
            ReplyBody::Granted { .. } => "granted",
            ReplyBody::Renewed { .. } => "renewed",
            ReplyBody::Cancelled => "cancelled",
            ReplyBody::RenewedAll { .. } => "renewed_all",
            ReplyBody::CancelledAll { .. } => "cancelled_all",
            ReplyBody::Error(_) => "error",
        }
    }
    #[getter]
    fn cookie(&self) -> Option<String> {
        match &self.0.body {
            ReplyBody::Granted { cookie, .. } => Some(cookie_str(*cookie)),
            _ => None,
        }
    }
    #[getter]
    fn duration(&self) -> Option<i64> {
        match &self.0.body {
            ReplyBody::Granted { duration, .. } | ReplyBody::Renewed { duration } => {
                Some(*duration)
            }
            _ => None,
        }
    }
    /// Per-lease results of a batch: an int (renewed_all) or None (cancelled_all) per success,
    /// a `LeaseError` instance per failure.
    #[getter]
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        fn list<'py, T>(
            py: Python<'py>,
            results: &[Outcome<T>],
            ok: impl Fn(&T) -> Py<PyAny>,
        ) -> PyResult<Bound<'py, PyList>> {
            let each = |r: &Outcome<T>| match r {
                Outcome::Ok(v) => Ok(ok(v)),
                Outcome::Err(e) => outcome_err(py, e),
            };
            PyList::new(py, results.iter().map(each).collect::<PyResult<Vec<_>>>()?)
        }
        match &self.0.body {
            ReplyBody::RenewedAll { results } => {
                list(py, results, |d| pyo3::types::PyInt::new(py, *d).into_any().unbind()).map(Some)
            }
            ReplyBody::CancelledAll { results } => list(py, results, |_| py.None()).map(Some),
            _ => Ok(None),
        }
    }
    /// The error of an "error" reply, as a `LeaseError` instance.
    #[getter(error)]
    fn get_error(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.0.body {
            ReplyBody::Error(e) => Ok(Some(outcome_err(py, e)?)),
            _ => Ok(None),
        }
    }
}

// ---------- what every wire message class shares ----------

/// A core wire message: `encode(encoding)` and `decode(bytes, encoding, limits)`.
pub trait WireMessage: Sized + PartialEq + Send {
    /// Encodes.
    fn encode_to(&self, encoding: Encoding) -> Vec<u8>;
    /// Decodes, enforcing `limits`.
    fn decode_from(bytes: &[u8], encoding: Encoding, limits: &Limits) -> leasehold::Result<Self>;
}

/// [`WireMessage`] for a core type with inherent `encode` and `decode`.
macro_rules! wire_message {
    ($t:ty) => {
        impl $crate::wire::WireMessage for $t {
            fn encode_to(&self, encoding: leasehold::Encoding) -> Vec<u8> {
                <$t>::encode(self, encoding)
            }
            fn decode_from(
                bytes: &[u8],
                encoding: leasehold::Encoding,
                limits: &leasehold::Limits,
            ) -> leasehold::Result<Self> {
                <$t>::decode(bytes, encoding, limits)
            }
        }
    };
}
pub(crate) use wire_message;

/// The Python class of a wire message.
pub trait PyMessage: Sized {
    /// The core message.
    type Core: WireMessage;
    /// The class name, for `repr`.
    const NAME: &'static str;
    /// The message.
    fn core(&self) -> &Self::Core;
    /// The class for a decoded message.
    fn from_core(core: Self::Core) -> Self;

    /// `Name(<canonical JSON>)`.
    fn repr(&self) -> String {
        let text = self.core().encode_to(Encoding::Json);
        format!("{}({})", Self::NAME, String::from_utf8_lossy(&text))
    }
}

/// [`PyMessage`] for a pyclass `$cls(pub $core)`.
macro_rules! py_message {
    ($cls:ident, $core:ty, $name:literal) => {
        $crate::wire::wire_message!($core);
        impl $crate::wire::PyMessage for $cls {
            type Core = $core;
            const NAME: &'static str = $name;
            fn core(&self) -> &$core {
                &self.0
            }
            fn from_core(core: $core) -> Self {
                $cls(core)
            }
        }
    };
}

/// The encoding argument of `encode` and `decode`: binary when not given.
pub fn encoding_or_binary(encoding: Option<&Bound<'_, PyAny>>) -> PyResult<Encoding> {
    encoding.map_or(Ok(Encoding::Binary), encoding_arg)
}

/// `encode`, `decode`, `==` and `repr` of a wire message class (`$cls: PyMessage`).
macro_rules! message_methods {
    ($cls:ty) => {
        #[pyo3::pymethods]
        impl $cls {
            /// Encodes the message ("binary", the default, or "json").
            #[pyo3(signature = (encoding = None))]
            fn encode<'py>(
                &self,
                py: Python<'py>,
                encoding: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
                let enc = $crate::wire::encoding_or_binary(encoding)?;
                let core = $crate::wire::PyMessage::core(self);
                Ok(pyo3::types::PyBytes::new(py, &$crate::wire::WireMessage::encode_to(core, enc)))
            }
            /// Decodes a message ("binary", the default, or "json"), enforcing `limits`; anything
            /// malformed raises `DecodeError`.
            #[staticmethod]
            #[pyo3(signature = (data, encoding = None, limits = None))]
            fn decode(
                py: Python<'_>,
                data: &Bound<'_, PyAny>,
                encoding: Option<&Bound<'_, PyAny>>,
                limits: Option<PyRef<'_, $crate::wire::PyLimits>>,
            ) -> PyResult<Self> {
                use $crate::errors::IntoPyResult;
                let enc = $crate::wire::encoding_or_binary(encoding)?;
                let data = $crate::convert::bytes_arg(data, "data")?;
                let limits = $crate::wire::limits_or_default(limits);
                let core = <<$cls as $crate::wire::PyMessage>::Core as $crate::wire::WireMessage>::decode_from(
                    &data, enc, &limits,
                )
                .py(py)?;
                Ok(<$cls as $crate::wire::PyMessage>::from_core(core))
            }
            fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                let py = other.py();
                match other.cast::<$cls>() {
                    Ok(o) => {
                        let same = $crate::wire::PyMessage::core(self)
                            == $crate::wire::PyMessage::core(o.get());
                        Ok(pyo3::types::PyBool::new(py, same).to_owned().into_any().unbind())
                    }
                    Err(_) => Ok(py.NotImplemented()),
                }
            }
            fn __repr__(&self) -> String {
                $crate::wire::PyMessage::repr(self)
            }
        }
    };
}

py_message!(PyRequest, Request, "Request");
message_methods!(PyRequest);
py_message!(PyReply, Reply, "Reply");
message_methods!(PyReply);
