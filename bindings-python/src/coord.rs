//! Coordination in Python: the native `FenceMachine` (the core's `Fence` driven as data over
//! the `Machine` trait) and the coordination messages (`CoordRequest`, `CoordReply`: two lines
//! in `data.rs`'s message dispatcher). The recipes (`lock`, `elect`) are Python over the HTTP
//! `Cluster` (`python/leasehold/coord.py`): they carry messages and never decide anything.

use leasehold::coord::Fence;
use leasehold::machine::Machine;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::data::{from_py, to_py};
use crate::errors::IntoPyResult;
use crate::guard::Guarded;

/// The native fence (see `leasehold.Fence` for the class users call): a part in memory with
/// no timer, transmissions or events, so it needs none of the durable machinery.
#[pyclass(frozen, module = "leasehold._native", name = "FenceMachine")]
pub struct PyFenceMachine(Guarded<Fence>);

fn options(py: Python<'_>, o: Option<&Bound<'_, PyDict>>) -> PyResult<<Fence as Machine>::Options> {
    from_py(o.cloned().unwrap_or_else(|| PyDict::new(py)).as_any())
}

#[pymethods]
impl PyFenceMachine {
    /// A fence; the settings as keyword arguments (`highest`).
    #[new]
    #[pyo3(signature = (**options))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let f = <Fence as Machine>::create(self::options(py, options)?, [0; 32]).py(py)?;
        Ok(PyFenceMachine(Guarded::new(f)))
    }

    /// A fence from `snapshot()` text.
    #[staticmethod]
    fn restore(py: Python<'_>, snapshot: &Bound<'_, PyString>) -> PyResult<Self> {
        let text = snapshot.to_cow()?.into_owned();
        let f = <Fence as Machine>::restore(Default::default(), &text, 0).py(py)?;
        Ok(PyFenceMachine(Guarded::new(f)))
    }

    /// The fence as JSON text (`{"highest": "7"}`).
    fn snapshot(&self, py: Python<'_>) -> PyResult<String> {
        self.0.with(py, |f| Machine::snapshot(f, 0))
    }

    /// Carries out one call (data, tagged by `op`) and returns its answer (data).
    fn handle<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let input = from_py(input)?;
        let out = self.0.with(py, |f| f.handle(input, 0))?.py(py)?;
        to_py(py, &out)
    }
}
