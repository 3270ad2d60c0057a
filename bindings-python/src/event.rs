//! The events of the core's `event` module, shared by the discovery and renewal services:
//! `EventRegistration` (what registering for events gives back) and `GapTracker` (the
//! receiver's ordering of events).

use leasehold::event::{Delivery, EventRegistration, GapTracker};
use pyo3::prelude::*;

use crate::convert::u64_arg;
use crate::guard::Guarded;
use crate::lease::PyLease;

/// What a client gets back when it registers for events (Jini `EventRegistration`).
#[pyclass(frozen, module = "leasehold._native", name = "EventRegistration")]
pub struct PyEventRegistration {
    /// The id every event of this registration carries.
    #[pyo3(get)]
    event_id: u64,
    /// The service that sends the events (its landlord id).
    #[pyo3(get)]
    source_service: u64,
    /// The object inside the service (the set's number).
    #[pyo3(get)]
    source_object: u64,
    /// The lease that covers the registration.
    #[pyo3(get)]
    lease: PyLease,
    /// The sequence number of the last event sent before registering.
    #[pyo3(get)]
    sequence: u64,
}

#[pymethods]
impl PyEventRegistration {
    #[new]
    fn new(
        event_id: u64,
        source_service: u64,
        source_object: u64,
        lease: PyRef<'_, PyLease>,
        sequence: u64,
    ) -> Self {
        PyEventRegistration {
            event_id,
            source_service,
            source_object,
            lease: PyLease(lease.0),
            sequence,
        }
    }
    fn __repr__(&self) -> String {
        format!(
            "EventRegistration(event_id={}, source=({}, {}), sequence={}, lease={})",
            self.event_id,
            self.source_service,
            self.source_object,
            self.sequence,
            self.lease.repr()
        )
    }
}

pub fn registration(r: EventRegistration) -> PyEventRegistration {
    PyEventRegistration {
        event_id: r.event_id,
        source_service: r.source.service.0,
        source_object: r.source.object,
        lease: PyLease(r.lease),
        sequence: r.sequence,
    }
}

/// The receiver side of events: classifies each event as "first", "in_order", "gap" or "stale".
#[pyclass(frozen, module = "leasehold._native", name = "GapTracker")]
pub struct PyGapTracker(Guarded<GapTracker>);

#[pymethods]
impl PyGapTracker {
    #[new]
    fn new() -> Self {
        PyGapTracker(Guarded::new(GapTracker::new()))
    }
    /// Sets the last sequence number seen for `event_id` (from `EventRegistration.sequence`).
    fn expect(
        &self,
        py: Python<'_>,
        event_id: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let id = u64_arg(event_id, "event_id")?;
        let seq = u64_arg(sequence, "sequence")?;
        self.0.with(py, |m| m.expect(id, seq))?;
        Ok(())
    }
    /// Classifies an event: returns (kind, missed), kind one of "first", "in_order", "gap",
    /// "stale"; `missed` is the most events a gap can have lost (0 otherwise).
    fn observe(
        &self,
        py: Python<'_>,
        event_id: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
    ) -> PyResult<(&'static str, u64)> {
        let id = u64_arg(event_id, "event_id")?;
        let seq = u64_arg(sequence, "sequence")?;
        Ok(match self.0.with(py, |m| m.observe(id, seq))? {
            Delivery::First => ("first", 0),
            Delivery::InOrder => ("in_order", 0),
            Delivery::Gap { missed } => ("gap", missed),
            Delivery::Stale => ("stale", 0),
        })
    }
    /// The last sequence number recorded for `event_id`.
    fn last(&self, py: Python<'_>, event_id: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
        let id = u64_arg(event_id, "event_id")?;
        self.0.with(py, |m| m.last(id))
    }
    /// Stops tracking `event_id`.
    fn forget(&self, py: Python<'_>, event_id: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = u64_arg(event_id, "event_id")?;
        self.0.with(py, |m| m.forget(id))?;
        Ok(())
    }
}
