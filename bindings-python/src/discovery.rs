//! The lookup discovery service's native class (`machine_class!`), its announcement datagram,
//! and values read back through the core so that Python builds them as the core does.

use leasehold::discovery::{Announcement, DiscoveryService};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::bytes_arg;
use crate::data::{from_py, to_py};
use crate::errors::IntoPyResult;
use crate::machine::machine_class;

machine_class!(PyDiscoveryMachine, DiscoveryService, "DiscoveryMachine");

/// The datagram of an announcement (data form); a bad one raises `InvalidArgumentError`.
#[pyfunction]
pub fn announcement_encode<'py>(
    py: Python<'py>,
    announcement: &Bound<'_, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let a: Announcement = from_py(announcement)?;
    Ok(PyBytes::new(py, &a.encode().py(py)?))
}

/// An announcement datagram read (data form); anything malformed raises `DecodeError`.
#[pyfunction]
pub fn announcement_decode<'py>(
    py: Python<'py>,
    data: &Bound<'_, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &Announcement::decode(&bytes_arg(data, "data")?).py(py)?)
}
