//! Core errors as Python exceptions, and back.
//!
//! The exception classes live in `leasehold/_errors.py` (so `InvalidArgumentError` and
//! `DecodeError` can derive from both `LeaseError` and `ValueError`); this module maps each
//! [`LeaseError`] onto its class by its stable code.

use leasehold::{ErrorCode, LeaseError};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};

use crate::convert::cookie_str;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    ERRORS
        .get_or_try_init(py, || py.import("leasehold._errors").map(Bound::unbind))
        .map(|m| m.bind(py))
}

fn class_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::UnknownLease => "UnknownLeaseError",
        ErrorCode::LeaseDenied => "LeaseDeniedError",
        ErrorCode::LeaseMap => "LeaseMapError",
        ErrorCode::InvalidArgument => "InvalidArgumentError",
        ErrorCode::Decode => "DecodeError",
        ErrorCode::Indefinite => "IndefiniteError",
        ErrorCode::Ok => "LeaseError",
    }
}

/// The exception instance for `e` (per-lease results carry these without raising them).
pub fn to_instance<'py>(py: Python<'py>, e: &LeaseError) -> PyResult<Bound<'py, PyAny>> {
    let m = module(py)?;
    let cls = m.getattr(class_name(e.code()))?;
    let message = e.to_string();
    let detail = e.detail();
    match e {
        LeaseError::LeaseMap(failures) => {
            let d = PyDict::new(py);
            for f in failures {
                d.set_item(cookie_str(f.cookie), to_instance(py, &f.error)?)?;
            }
            cls.call1((message, detail, d))
        }
        _ => cls.call1((message, detail)),
    }
}

/// `e` as a raisable Python error.
pub fn to_py(py: Python<'_>, e: &LeaseError) -> PyErr {
    match to_instance(py, e) {
        Ok(inst) => PyErr::from_value(inst),
        Err(err) => err,
    }
}

/// Converts core results into Python results.
pub trait IntoPyResult<T> {
    /// The result with a Python exception for the error.
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, LeaseError> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, &e))
    }
}

/// A core error from a Python `LeaseError` instance (what a host reports as a failure).
pub fn from_instance(obj: &Bound<'_, PyAny>) -> PyResult<LeaseError> {
    let py = obj.py();
    let base = module(py)?.getattr("LeaseError")?;
    if !obj.is_instance(&base)? {
        return Err(PyTypeError::new_err(format!(
            "expected a leasehold.LeaseError, got {}",
            crate::convert::type_name(obj)
        )));
    }
    let code: i32 = obj.getattr("code")?.extract()?;
    let detail: String = obj.getattr("detail")?.extract()?;
    Ok(LeaseError::from_code(code, &detail))
}

/// Whether an error code is definite (retrying cannot help): everything but INDEFINITE.
#[pyfunction]
pub fn is_definite_code(code: i32) -> bool {
    LeaseError::from_code(code, "").is_definite()
}

/// The exception instance for a stable error code and its detail message (as on the wire).
/// Unknown codes give a `DecodeError`, as the core reads them.
#[pyfunction]
pub fn error_from_code<'py>(
    py: Python<'py>,
    code: i32,
    detail: &str,
) -> PyResult<Bound<'py, PyAny>> {
    to_instance(py, &LeaseError::from_code(code, detail))
}
