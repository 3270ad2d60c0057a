//! The wire protocol: `Limits`, `Request` and `Reply`, in JSON and binary.

use leasehold::wire::{Outcome, WireError};
use leasehold::{Encoding, Limits, Reply, ReplyBody, Request, RequestBody};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::convert::{
    bytes_arg, cookie_arg, cookie_str, duration_arg, encoding_arg, landlord_arg, u64_arg, usize_arg,
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

/// Cookies from any iterable (a list is read by index, without an iterator).
pub fn cookies_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<leasehold::Cookie>> {
    if let Ok(list) = obj.cast_exact::<PyList>() {
        let mut out = Vec::with_capacity(list.len());
        for i in 0..list.len() {
            out.push(cookie_arg(&list.get_item(i)?)?);
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for c in obj.try_iter()? {
        out.push(cookie_arg(&c?)?);
    }
    Ok(out)
}

#[inline]
fn item_arg(item: &Bound<'_, PyAny>) -> PyResult<(leasehold::Cookie, i64)> {
    let t = item.cast::<PyTuple>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("each item must be a (cookie, duration) tuple")
    })?;
    if t.len() != 2 {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "each item must be a (cookie, duration) tuple",
        ));
    }
    // Tuples are immutable: the borrowed items live as long as `t`.
    let (c, d) = (t.get_borrowed_item(0)?, t.get_borrowed_item(1)?);
    Ok((cookie_arg(&c)?, duration_arg(&d, "duration")?))
}

/// (cookie, duration) pairs from any iterable of 2-tuples (a list is read by index).
pub fn items_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(leasehold::Cookie, i64)>> {
    if let Ok(list) = obj.cast_exact::<PyList>() {
        let mut out = Vec::with_capacity(list.len());
        for i in 0..list.len() {
            out.push(item_arg(&list.get_item(i)?)?);
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        out.push(item_arg(&item?)?);
    }
    Ok(out)
}

#[pymethods]
impl PyRequest {
    /// A new lease on `resource` (bytes) for `duration`.
    #[staticmethod]
    fn grant(
        id: &Bound<'_, PyAny>,
        resource: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        Ok(PyRequest(Request {
            id: u64_arg(id, "id")?,
            body: RequestBody::Grant {
                resource: bytes_arg(resource, "resource")?.into_owned(),
                duration: duration_arg(duration, "duration")?,
            },
        }))
    }
    /// Renews one lease.
    #[staticmethod]
    fn renew(
        id: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        Ok(PyRequest(Request {
            id: u64_arg(id, "id")?,
            body: RequestBody::Renew {
                cookie: cookie_arg(cookie)?,
                duration: duration_arg(duration, "duration")?,
            },
        }))
    }
    /// Cancels one lease.
    #[staticmethod]
    fn cancel(id: &Bound<'_, PyAny>, cookie: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyRequest(Request {
            id: u64_arg(id, "id")?,
            body: RequestBody::Cancel { cookie: cookie_arg(cookie)? },
        }))
    }
    /// Renews several leases: `items` are (cookie, duration) pairs.
    #[staticmethod]
    fn renew_all(id: &Bound<'_, PyAny>, items: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyRequest(Request {
            id: u64_arg(id, "id")?,
            body: RequestBody::RenewAll { items: items_arg(items)? },
        }))
    }
    /// Cancels several leases.
    #[staticmethod]
    fn cancel_all(id: &Bound<'_, PyAny>, cookies: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyRequest(Request {
            id: u64_arg(id, "id")?,
            body: RequestBody::CancelAll { cookies: cookies_arg(cookies)? },
        }))
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

fn reply(id: &Bound<'_, PyAny>, landlord: &Bound<'_, PyAny>, body: ReplyBody) -> PyResult<PyReply> {
    Ok(PyReply(Reply { id: u64_arg(id, "id")?, landlord: landlord_arg(landlord)?, body }))
}

#[pymethods]
impl PyReply {
    /// A granted lease.
    #[staticmethod]
    fn granted(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        reply(
            id,
            landlord,
            ReplyBody::Granted {
                cookie: cookie_arg(cookie)?,
                duration: duration_arg(duration, "duration")?,
            },
        )
    }
    /// A renewed lease.
    #[staticmethod]
    fn renewed(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        reply(id, landlord, ReplyBody::Renewed { duration: duration_arg(duration, "duration")? })
    }
    /// A cancelled lease.
    #[staticmethod]
    fn cancelled(id: &Bound<'_, PyAny>, landlord: &Bound<'_, PyAny>) -> PyResult<Self> {
        reply(id, landlord, ReplyBody::Cancelled)
    }
    /// Per-lease results of a renew_all: a duration or a `LeaseError` each.
    #[staticmethod]
    fn renewed_all(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        results: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let mut out = Vec::new();
        for r in results.try_iter()? {
            let r = r?;
            out.push(if r.is_instance_of::<pyo3::types::PyInt>() {
                Outcome::Ok(duration_arg(&r, "duration")?)
            } else {
                Outcome::Err(wire_error(&r)?)
            });
        }
        reply(id, landlord, ReplyBody::RenewedAll { results: out })
    }
    /// Per-lease results of a cancel_all: None or a `LeaseError` each.
    #[staticmethod]
    fn cancelled_all(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        results: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let mut out = Vec::new();
        for r in results.try_iter()? {
            let r = r?;
            out.push(if r.is_none() { Outcome::Ok(()) } else { Outcome::Err(wire_error(&r)?) });
        }
        reply(id, landlord, ReplyBody::CancelledAll { results: out })
    }
    /// The whole request failed with `error` (a `LeaseError`).
    #[staticmethod]
    fn failure(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        error: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        reply(id, landlord, ReplyBody::Error(wire_error(error)?))
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
        let items: Vec<Py<PyAny>> = match &self.0.body {
            ReplyBody::RenewedAll { results } => results
                .iter()
                .map(|r| match r {
                    Outcome::Ok(d) => Ok(d.into_pyobject(py)?.into_any().unbind()),
                    Outcome::Err(e) => outcome_err(py, e),
                })
                .collect::<PyResult<_>>()?,
            ReplyBody::CancelledAll { results } => results
                .iter()
                .map(|r| match r {
                    Outcome::Ok(()) => Ok(py.None()),
                    Outcome::Err(e) => outcome_err(py, e),
                })
                .collect::<PyResult<_>>()?,
            _ => return Ok(None),
        };
        Ok(Some(PyList::new(py, items)?))
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
