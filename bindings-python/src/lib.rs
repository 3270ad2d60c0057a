//! Python binding of leasehold: the native module `leasehold._native`.
//!
//! It converts and nothing more: Python values into core types, core errors into the exception
//! classes of `leasehold._errors`, and back. Every rule of leasing stays in the core.

mod convert;
mod errors;
mod landlord;
mod lease;
mod policy;
mod wire;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FOREVER", leasehold::FOREVER)?;
    m.add("ANY", leasehold::ANY)?;
    m.add("DURATION", leasehold::SerialFormat::Duration as i32)?;
    m.add("ABSOLUTE", leasehold::SerialFormat::Absolute as i32)?;
    m.add("SERIAL_VERSION", leasehold::serial::SERIAL_VERSION)?;
    m.add("WIRE_VERSION", leasehold::wire::WIRE_VERSION)?;
    m.add("LEASE_BINARY_LEN", leasehold::serial::LEASE_BINARY_LEN)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<lease::PyLease>()?;
    m.add_class::<policy::PyPolicy>()?;
    m.add_class::<landlord::PyLandlord>()?;
    m.add_class::<landlord::PyGrant>()?;
    m.add_class::<landlord::PyExpired>()?;
    m.add_class::<wire::PyLimits>()?;
    m.add_class::<wire::PyRequest>()?;
    m.add_class::<wire::PyReply>()?;
    m.add_function(wrap_pyfunction!(errors::is_definite_code, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_from_code, m)?)?;
    Ok(())
}
