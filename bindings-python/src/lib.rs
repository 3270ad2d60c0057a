//! Python binding of leasehold: the native module `leasehold._native`.
//!
//! It converts and nothing more: Python values into core types, core errors into the exception
//! classes of `leasehold._errors`, and back. Every rule of leasing stays in the core.

mod convert;
mod coord;
mod data;
mod discovery;
mod errors;
mod event;
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

/// Adds classes and functions to the module.
macro_rules! add {
    ($m:ident, classes: $($c:ty),*; functions: $($f:path),*) => {
        $($m.add_class::<$c>()?;)*
        $($m.add_function(wrap_pyfunction!($f, $m)?)?;)*
    };
}

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
    m.add("ANNOUNCEMENT_MAX_BYTES", leasehold::discovery::wire::ANNOUNCEMENT_MAX_BYTES)?;
    add!(m, classes:
        lease::PyLease, policy::PyPolicy, landlord::PyLandlord, landlord::PyGrant,
        landlord::PyExpired, wire::PyLimits, wire::PyRequest, wire::PyReply,
        holder::PyLeaseMap, holder::PyRenewalManager, holder::PyRenewalEvent, holder::PyTransmit,
        service::PyRenewalService, service::PyRenewalSet, event::PyEventRegistration, event::PyGapTracker,
        inverted::PyPoller, inverted::PyPollListener, inverted::PyListenerTransmit,
        inverted::PyListenerEvent, discovery::PyDiscoveryMachine, coord::PyFenceMachine;
    functions:
        errors::is_definite_code, errors::error_from_code, holder::lease_from_reply,
        holder::py_local_expiration, inverted::inverted_bandwidth,
        inverted::expected_detection, discovery::announcement_encode,
        discovery::announcement_decode, data::normalize, data::encode_message,
        data::decode_message);
    Ok(())
}
