//! Python binding of leasehold: the native module `leasehold._native`.
//!
//! It converts and nothing more: Python values into core types, core errors into the exception
//! classes of `leasehold._errors`, and back. Every rule of leasing stays in the core.

mod convert;
mod coord;
mod data;
mod discovery;
mod errors;
mod guard;
mod holder;
mod inverted;
mod landlord;
mod lease;
mod machine;
mod policy;
mod sansio;
mod service;
mod store;
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
    m.add_class::<holder::PyLeaseMap>()?;
    m.add_class::<holder::PyRenewalManager>()?;
    m.add_class::<holder::PyRenewalEvent>()?;
    m.add_class::<holder::PyTransmit>()?;
    m.add_function(wrap_pyfunction!(holder::lease_from_reply, m)?)?;
    m.add_function(wrap_pyfunction!(holder::py_local_expiration, m)?)?;
    m.add_class::<service::PyRenewalService>()?;
    m.add_class::<service::PyRenewalSet>()?;
    m.add_class::<service::PySetEvent>()?;
    m.add_class::<service::PyEventRegistration>()?;
    m.add_class::<service::PyGapTracker>()?;
    m.add_class::<inverted::PyPoller>()?;
    m.add_class::<inverted::PyPollListener>()?;
    m.add_class::<inverted::PyListenerTransmit>()?;
    m.add_class::<inverted::PyListenerEvent>()?;
    m.add_function(wrap_pyfunction!(inverted::inverted_bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(inverted::expected_detection, m)?)?;
    m.add("ANNOUNCEMENT_MAX_BYTES", leasehold::discovery::wire::ANNOUNCEMENT_MAX_BYTES)?;
    m.add_class::<discovery::PyDiscoveryMachine>()?;
    m.add_function(wrap_pyfunction!(discovery::announcement_encode, m)?)?;
    m.add_function(wrap_pyfunction!(discovery::announcement_decode, m)?)?;
    m.add_function(wrap_pyfunction!(data::normalize, m)?)?;
    m.add_class::<coord::PyFenceMachine>()?;
    m.add_function(wrap_pyfunction!(data::encode_message, m)?)?;
    m.add_function(wrap_pyfunction!(data::decode_message, m)?)?;
    Ok(())
}
