//! Data across the boundary, written once: any core value with a serde description to Python
//! and back (pythonize), and any wire message between its encodings and its JSON object form.
//!
//! To Python, a serde struct becomes a record of `leasehold._data` named after the Rust type
//! (attribute and key access, frozen, compared by value; a class declared there with the same
//! name is used, so its fields are typed and checked against Rust by the tests); maps become
//! dicts, sequences lists, bytes `bytes`, `None` None. From Python, any mapping or record is
//! read by field name. A value the description refuses raises `TypeError` (wrong type, unknown
//! or missing field) or `InvalidArgumentError` (a bad value), never a panic.

use leasehold::machine::Message;
use leasehold::{Encoding, LeaseError, Limits};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyMapping, PyModule, PyString};
use pythonize::{depythonize, pythonize_custom, PythonizeNamedMappingType, PythonizeTypes};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::convert::{bytes_arg, encoding_arg};
use crate::errors::{self, IntoPyResult};

static RECORD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Structs as records of `leasehold._data`.
pub struct Records;

impl PythonizeNamedMappingType for Records {
    type Builder<'py> = (&'static str, Bound<'py, PyDict>);

    fn builder<'py>(
        py: Python<'py>,
        _len: usize,
        name: &'static str,
    ) -> PyResult<Self::Builder<'py>> {
        Ok((name, PyDict::new(py)))
    }

    fn push_field<'py>(
        builder: &mut Self::Builder<'py>,
        name: Bound<'py, PyString>,
        value: Bound<'py, PyAny>,
    ) -> PyResult<()> {
        builder.1.set_item(name, value)
    }

    fn finish<'py>(builder: Self::Builder<'py>) -> PyResult<Bound<'py, PyMapping>> {
        let (name, fields) = builder;
        let py = fields.py();
        let make = RECORD.get_or_try_init(py, || {
            py.import("leasehold._data")?.getattr("record").map(Bound::unbind)
        })?;
        let made = make.bind(py).call1((name, fields))?;
        // SAFETY: a record is a `collections.abc.Mapping`; a factory's object (a native
        // `Lease`) is not, but pythonize only ever turns this result back into `PyAny`
        // (`into_any`) or stores it as a field value: no mapping method is called on it.
        Ok(unsafe { made.cast_into_unchecked::<PyMapping>() })
    }
}

struct Types;

impl PythonizeTypes for Types {
    type Map = PyDict;
    type NamedMap = Records;
    type List = PyList;
}

/// `value` as Python data.
pub fn to_py<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    pythonize_custom::<Types, _>(py, value).map_err(PyErr::from)
}

/// A core value from Python data; see the module docs for the errors.
pub fn from_py<T: DeserializeOwned>(obj: &Bound<'_, PyAny>) -> PyResult<T> {
    depythonize(obj).map_err(|e| {
        let text = e.to_string();
        const TYPE: [&str; 7] = [
            "invalid type",
            "unexpected type",
            "unsupported type",
            "expected",
            "unknown field",
            "missing field",
            "unknown variant",
        ];
        if TYPE.iter().any(|t| text.starts_with(t)) {
            PyTypeError::new_err(text)
        } else {
            errors::to_py(obj.py(), &LeaseError::InvalidArgument(text))
        }
    })
}

/// Re-encodes message `M` from `data` (bytes in `from`, or its JSON object form when `from` is
/// None) to `to` (bytes; None: the JSON object form), checked against `limits`.
pub fn message<'py, M: Message>(
    py: Python<'py>,
    data: &Bound<'_, PyAny>,
    from: Option<Encoding>,
    to: Option<Encoding>,
    limits: &Limits,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = match from {
        Some(_) => bytes_arg(data, "data")?.into_owned(),
        None => json(py)?.call_method1("dumps", (data,))?.extract::<String>()?.into_bytes(),
    };
    let m = M::decode(&bytes, from.unwrap_or(Encoding::Json), limits).py(py)?;
    match to {
        Some(enc) => Ok(PyBytes::new(py, &m.encode(enc)).into_any()),
        None => json(py)?.call_method1("loads", (PyBytes::new(py, &m.encode(Encoding::Json)),)),
    }
}

fn json(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("json")
}

/// `encode(kind, message, encoding="binary")` and `decode(kind, data, encoding="binary",
/// limits=None)` for every wire message: its JSON object form to bytes and back.
#[pyfunction]
#[pyo3(signature = (kind, message, encoding = None))]
pub fn encode_message<'py>(
    py: Python<'py>,
    kind: &str,
    message: &Bound<'_, PyAny>,
    encoding: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let to = encoding.map(encoding_arg).transpose()?.unwrap_or(Encoding::Binary);
    dispatch(py, kind, message, None, Some(to), &Limits::default())
}

/// See [`encode_message`].
#[pyfunction]
#[pyo3(signature = (kind, data, encoding = None, limits = None))]
pub fn decode_message<'py>(
    py: Python<'py>,
    kind: &str,
    data: &Bound<'_, PyAny>,
    encoding: Option<&Bound<'_, PyAny>>,
    limits: Option<PyRef<'_, crate::wire::PyLimits>>,
) -> PyResult<Bound<'py, PyAny>> {
    let from = encoding.map(encoding_arg).transpose()?.unwrap_or(Encoding::Binary);
    let limits = limits.map(|l| l.0).unwrap_or_default();
    dispatch(py, kind, data, Some(from), None, &limits)
}

fn dispatch<'py>(
    py: Python<'py>,
    kind: &str,
    data: &Bound<'_, PyAny>,
    from: Option<Encoding>,
    to: Option<Encoding>,
    limits: &Limits,
) -> PyResult<Bound<'py, PyAny>> {
    use leasehold::discovery::wire as dw;
    match kind {
        "DiscoveryRequest" => message::<dw::DiscoveryRequest>(py, data, from, to, limits),
        "DiscoveryReply" => message::<dw::DiscoveryReply>(py, data, from, to, limits),
        "DiscoveryEvent" => message::<leasehold::RemoteDiscoveryEvent>(py, data, from, to, limits),
        "EventReply" => message::<dw::EventReply>(py, data, from, to, limits),
        "CoordRequest" => message::<leasehold::coord::CoordRequest>(py, data, from, to, limits),
        "CoordReply" => message::<leasehold::coord::CoordReply>(py, data, from, to, limits),
        other => Err(PyTypeError::new_err(format!("no message kind {other:?}"))),
    }
}
