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
use std::sync::Mutex;

use leasehold::event::{EventRegistration, EventSource};
use leasehold::{Encoding, LandlordId, Lease, LeaseError, Limits};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyMapping, PyModule, PySet,
    PyString, PyTuple,
};
use pythonize::{pythonize_custom, PythonizeNamedMappingType, PythonizeTypes};
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::Serialize;

use crate::convert::{bytes_arg, cookie_arg, encoding_arg};
use crate::errors::{self, IntoPyResult};
use crate::event::registration;
use crate::lease::PyLease;

static RECORD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static DICT_NEW: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
/// The record class of each Rust name met so far (checked once by `leasehold._data.record`).
static CLASSES: Mutex<Vec<(&'static str, Py<PyAny>)>> = Mutex::new(Vec::new());

/// Structs as records of `leasehold._data`. The first value of each Rust name goes through
/// `record()` (which checks the declared fields); its class is then kept here, and every later
/// record is made with one call (`dict.__new__(cls)`) and filled in place. `Lease` and
/// `EventRegistration` become the native classes users pass to a `RenewalManager`.
pub struct Records;

fn class_of(py: Python<'_>, name: &'static str) -> Option<Py<PyAny>> {
    let classes = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
    classes.iter().find(|(n, _)| *n == name).map(|(_, c)| c.clone_ref(py))
}

/// A landlord id as the data form writes it (16 hex digits).
fn landlord_hex(v: &Bound<'_, PyAny>) -> PyResult<LandlordId> {
    let text = v.extract::<String>()?;
    u64::from_str_radix(&text, 16)
        .map(LandlordId)
        .map_err(|_| PyTypeError::new_err(format!("bad landlord id {text:?}")))
}

fn native<'py>(name: &str, f: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = f.py();
    let get =
        |k: &str| f.get_item(k)?.ok_or_else(|| PyTypeError::new_err(format!("{name}: no {k}")));
    Ok(Some(match name {
        "Lease" => {
            let l = Lease::new(
                landlord_hex(&get("landlord")?)?,
                cookie_arg(&get("cookie")?)?,
                get("expiration")?.extract()?,
            );
            Bound::new(py, PyLease(l))?.into_any()
        }
        "EventRegistration" => {
            let source = get("source")?;
            let source = EventSource {
                service: landlord_hex(&source.get_item("service")?)?,
                object: source.get_item("object")?.extract()?,
            };
            let lease = get("lease")?.cast::<PyLease>()?.get().0;
            let (event_id, sequence) = (get("event_id")?.extract()?, get("sequence")?.extract()?);
            let r = EventRegistration { event_id, source, lease, sequence };
            Bound::new(py, registration(r))?.into_any()
        }
        _ => return Ok(None),
    }))
}

impl PythonizeNamedMappingType for Records {
    type Builder<'py> = (&'static str, Bound<'py, PyDict>, bool);

    fn builder<'py>(
        py: Python<'py>,
        _len: usize,
        name: &'static str,
    ) -> PyResult<Self::Builder<'py>> {
        if let Some(cls) = class_of(py, name) {
            let new = DICT_NEW.get_or_try_init(py, || {
                py.get_type::<PyDict>().getattr("__new__").map(Bound::unbind)
            })?;
            let made = new.bind(py).call1((cls,))?.cast_into::<PyDict>()?;
            return Ok((name, made, true));
        }
        Ok((name, PyDict::new(py), false))
    }

    fn push_field<'py>(
        builder: &mut Self::Builder<'py>,
        name: Bound<'py, PyString>,
        value: Bound<'py, PyAny>,
    ) -> PyResult<()> {
        // `PyDict_SetItem`: fills a record in place (its Python `__setitem__` refuses).
        builder.1.set_item(name, value)
    }

    fn finish<'py>(builder: Self::Builder<'py>) -> PyResult<Bound<'py, PyMapping>> {
        let (name, fields, made) = builder;
        let py = fields.py();
        let made = if made {
            fields.into_any()
        } else if let Some(obj) = native(name, &fields)? {
            obj
        } else {
            let make = RECORD.get_or_try_init(py, || {
                py.import("leasehold._data")?.getattr("record").map(Bound::unbind)
            })?;
            let r = make.bind(py).call1((name, fields))?;
            let mut classes = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
            if !classes.iter().any(|(n, _)| *n == name) {
                classes.push((name, r.get_type().into_any().unbind()));
            }
            r
        };
        // SAFETY: a record is a `collections.abc.Mapping`; a native `Lease` is not, but
        // pythonize only ever turns this result back into `PyAny` (`into_any`) or stores it
        // as a field value: no mapping method is called on it.
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

/// A core struct as a plain `dict` (no record): what `stats()`, `config` and `rtt()` give.
pub fn plain<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyDict>> {
    Ok(pythonize::pythonize(py, value)?.cast_into::<PyDict>()?)
}

/// A core value from Python data; see the module docs for the errors.
pub fn from_py<T: DeserializeOwned>(obj: &Bound<'_, PyAny>) -> PyResult<T> {
    T::deserialize(De(obj.clone())).map_err(|DeError(text)| {
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

/// Why Python data could not be read (serde's message).
#[derive(Debug)]
struct DeError(String);

impl std::fmt::Display for DeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for DeError {}
impl de::Error for DeError {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        DeError(msg.to_string())
    }
}
impl From<PyErr> for DeError {
    fn from(e: PyErr) -> Self {
        DeError(e.to_string())
    }
}

/// Reads Python data by its type, in C calls only. (pythonize's reader probes every mapping
/// for `__dataclass_fields__`, which costs an exception per dict on Python 3.11 and made an
/// input cost more than the core's work on it.)
struct De<'py>(Bound<'py, PyAny>);

impl<'de, 'py> de::Deserializer<'de> for De<'py> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let o = &self.0;
        if o.is_none() {
            v.visit_unit()
        } else if let Ok(b) = o.cast::<PyBool>() {
            v.visit_bool(b.is_true())
        } else if let Ok(i) = o.cast::<PyInt>() {
            if let Ok(n) = i.extract::<i64>() {
                v.visit_i64(n)
            } else if let Ok(n) = i.extract::<u64>() {
                v.visit_u64(n)
            } else {
                let n = i.extract::<u128>().map_err(|_| DeError("integer out of range".into()))?;
                v.visit_u128(n)
            }
        } else if let Ok(s) = o.cast::<PyString>() {
            v.visit_str(&s.to_cow()?)
        } else if let Ok(b) = o.cast::<PyBytes>() {
            v.visit_bytes(b.as_bytes())
        } else if let Ok(f) = o.cast::<PyFloat>() {
            v.visit_f64(f.value())
        } else if let Ok(d) = o.cast::<PyDict>() {
            let items = d.iter().map(|(k, x)| (De(k), De(x)));
            v.visit_map(de::value::MapDeserializer::new(items))
        } else if o.cast::<PyList>().is_ok()
            || o.cast::<PyTuple>().is_ok()
            || o.cast::<PyFrozenSet>().is_ok()
            || o.cast::<PySet>().is_ok()
        {
            let items: Vec<De<'py>> = o.try_iter()?.map(|x| x.map(De)).collect::<PyResult<_>>()?;
            v.visit_seq(de::value::SeqDeserializer::new(items.into_iter()))
        } else {
            Err(de::Error::custom(format!("unsupported type {}", crate::convert::type_name(o))))
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        if self.0.is_none() {
            v.visit_none()
        } else {
            v.visit_some(self)
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        match self.0.cast::<PyString>() {
            Ok(s) => v.visit_enum(s.to_cow()?.into_owned().into_deserializer()),
            Err(_) => self.deserialize_any(v),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

impl<'de, 'py> IntoDeserializer<'de, DeError> for De<'py> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
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
        "SetRequest" => message::<leasehold::service::wire::SetRequest>(py, data, from, to, limits),
        "SetReply" => message::<leasehold::service::wire::SetReply>(py, data, from, to, limits),
        "SetEvent" => {
            message::<leasehold::service::wire::SetEventMessage>(py, data, from, to, limits)
        }
        other => Err(PyTypeError::new_err(format!("no message kind {other:?}"))),
    }
}

/// `value` read as the core value `kind` and written back, checked and in the core's normal
/// form; `json="to"` writes it as its JSON text instead, `json="from"` reads `value` as JSON
/// text (a bad text raises `DecodeError`).
#[pyfunction]
#[pyo3(signature = (kind, value, json = None))]
pub fn normalize<'py>(
    py: Python<'py>,
    kind: &str,
    value: &Bound<'_, PyAny>,
    json: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    use leasehold::discovery::{Announcement, Registrar, UnicastResponse};
    use leasehold::inverted::{Admission, Confirm, Poll};
    match kind {
        "Announcement" => value_as::<Announcement>(py, value, json),
        "UnicastResponse" => value_as::<UnicastResponse>(py, value, json),
        "Registrar" => value_as::<Registrar>(py, value, json),
        "Poll" => value_as::<Poll>(py, value, json),
        "Admission" => value_as::<Admission>(py, value, json),
        "Confirm" => value_as::<Confirm>(py, value, json),
        other => Err(PyTypeError::new_err(format!("no value kind {other:?}"))),
    }
}

fn value_as<'py, T: Serialize + DeserializeOwned>(
    py: Python<'py>,
    value: &Bound<'_, PyAny>,
    json: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let bad = |e: String| errors::to_py(py, &LeaseError::Decode(e));
    match json {
        None => to_py(py, &from_py::<T>(value)?),
        Some("to") => {
            let text =
                serde_json::to_string(&from_py::<T>(value)?).map_err(|e| bad(e.to_string()))?;
            Ok(PyString::new(py, &text).into_any())
        }
        Some("from") => {
            let text = crate::convert::text_arg(value, "text")?;
            if text.len() > 4096 {
                return Err(bad("the JSON text is too long".into()));
            }
            to_py(py, &serde_json::from_str::<T>(&text).map_err(|e| bad(format!("JSON: {e}")))?)
        }
        Some(other) => {
            Err(PyTypeError::new_err(format!("json is \"to\" or \"from\", not {other:?}")))
        }
    }
}
