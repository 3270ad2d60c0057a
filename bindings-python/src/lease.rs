//! `Lease`: the holder's view of a lease, with its serial formats.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use leasehold::{Lease, SerialFormat};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{
    bytes_arg, cookie_arg, cookie_str, i64_arg, landlord_arg, serial_format_arg, text_arg, Now,
};
use crate::errors::IntoPyResult;

/// A lease as its holder sees it: landlord, cookie, expiration on the holder's clock, serial format.
#[pyclass(frozen, module = "leasehold._native", name = "Lease")]
#[derive(Clone)]
pub struct PyLease(pub Lease);

#[pymethods]
impl PyLease {
    #[new]
    #[pyo3(signature = (landlord, cookie, expiration, serial_format = None))]
    fn new(
        landlord: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        expiration: &Bound<'_, PyAny>,
        serial_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut lease = Lease::new(
            landlord_arg(landlord)?,
            cookie_arg(cookie)?,
            i64_arg(expiration, "expiration")?,
        );
        if let Some(f) = serial_format {
            lease.set_serial_format(serial_format_arg(f)?);
        }
        Ok(PyLease(lease))
    }

    /// A lease granted `granted` ms by the reply to a request sent at `sent_at`.
    #[staticmethod]
    fn from_grant(
        landlord: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        sent_at: &Bound<'_, PyAny>,
        granted: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        Ok(PyLease(Lease::from_grant(
            landlord_arg(landlord)?,
            cookie_arg(cookie)?,
            i64_arg(sent_at, "sent_at")?,
            crate::convert::duration_arg(granted, "granted")?,
        )))
    }

    #[getter]
    fn landlord(&self) -> u64 {
        self.0.landlord().0
    }
    #[getter]
    fn cookie(&self) -> String {
        cookie_str(self.0.cookie())
    }
    #[getter]
    fn expiration(&self) -> i64 {
        self.0.expiration()
    }
    #[getter]
    fn serial_format(&self) -> i32 {
        self.0.serial_format() as i32
    }

    fn remaining(&self, now: Now) -> PyResult<i64> {
        Ok(self.0.remaining(now.0))
    }
    fn is_expired(&self, now: Now) -> PyResult<bool> {
        Ok(self.0.is_expired(now.0))
    }
    fn can_batch(&self, other: PyRef<'_, PyLease>) -> bool {
        self.0.can_batch(&other.0)
    }
    fn with_serial_format(&self, serial_format: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyLease(self.0.with_serial_format(serial_format_arg(serial_format)?)))
    }
    fn with_expiration(&self, expiration: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut l = self.0;
        l.set_expiration(i64_arg(expiration, "expiration")?);
        Ok(PyLease(l))
    }

    fn to_json(&self, now: Now) -> PyResult<String> {
        Ok(self.0.to_json(now.0))
    }
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &Bound<'_, PyAny>, now: Now) -> PyResult<Self> {
        let text = text_arg(text, "lease JSON")?;
        Lease::from_json(&text, now.0).py(py).map(PyLease)
    }
    fn to_bytes<'py>(&self, py: Python<'py>, now: Now) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.0.to_bytes(now.0)))
    }
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>, now: Now) -> PyResult<Self> {
        let data = bytes_arg(data, "lease bytes")?;
        Lease::from_bytes(&data, now.0).py(py).map(PyLease)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<PyLease>() {
            Ok(o) => {
                Ok(pyo3::types::PyBool::new(py, self.0 == o.get().0).to_owned().into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    fn __hash__(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.0.hash(&mut h);
        h.finish()
    }
    fn __repr__(&self) -> String {
        self.repr()
    }
}

impl PyLease {
    /// The Python repr.
    pub fn repr(&self) -> String {
        format!(
            "Lease(landlord={}, cookie='{}', expiration={}, serial_format={})",
            self.0.landlord().0,
            self.0.cookie(),
            self.0.expiration(),
            match self.0.serial_format() {
                SerialFormat::Duration => "DURATION",
                SerialFormat::Absolute => "ABSOLUTE",
            }
        )
    }
}
