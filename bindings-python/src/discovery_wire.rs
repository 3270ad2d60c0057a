//! The values and wire messages of lookup discovery: `Registrar`, `Announcement`,
//! `UnicastRequest`, `UnicastResponse`, `DiscoveryEvent`, and the messages `DiscoveryRequest`,
//! `DiscoveryReply` and `EventReply` (each with the shared `encode`/`decode`/`==`/`repr` of
//! `wire::message_methods!`). Conversions only: the formats and their checks are the core's.

use std::collections::BTreeSet;

use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody, EventReply,
    EventReplyBody,
};
use leasehold::discovery::{
    Announcement, DiscoveryChange, Groups, Locator, Registrar, RegistrarId, RemoteDiscoveryEvent,
    UnicastRequest, UnicastResponse,
};
use leasehold::event::EventSource;
use leasehold::wire::WireError;
use leasehold::{LeaseError, ReplyBody};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFrozenSet, PyInt, PyString};

use crate::convert::{
    bytes_arg, cookie_arg, cookie_str, duration_arg, i64_arg, landlord_arg, type_name, u64_arg,
};
use crate::errors::{from_instance, to_instance, to_py, IntoPyResult};
use crate::holder::ppm_arg;
use crate::lease::PyLease;
use crate::wire::{message_methods, py_message, PyMessage};

// ---------- arguments ----------

fn invalid(py: Python<'_>, message: String) -> PyErr {
    to_py(py, &LeaseError::InvalidArgument(message))
}

/// A registrar id: 32 hex digits, its 16 bytes (big-endian), the 128-bit int, or a `Registrar`.
pub fn registrar_arg(obj: &Bound<'_, PyAny>) -> PyResult<RegistrarId> {
    let py = obj.py();
    if let Ok(r) = obj.cast::<PyRegistrar>() {
        return Ok(r.get().0.id);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return s.to_cow()?.parse::<RegistrarId>().map_err(|e| invalid(py, e.detail()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return <[u8; 16]>::try_from(b.as_bytes())
            .map(|a| RegistrarId(u128::from_be_bytes(a)))
            .map_err(|_| {
                invalid(
                    py,
                    format!("a registrar id as bytes is 16 bytes, got {}", b.as_bytes().len()),
                )
            });
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<pyo3::types::PyBool>() {
        return obj
            .extract::<u128>()
            .map(RegistrarId)
            .map_err(|_| invalid(py, "a registrar id as an int is 0 to 2**128 - 1".into()));
    }
    Err(PyTypeError::new_err(format!(
        "registrar must be a str of 32 hex digits, 16 bytes, an int or a Registrar, got {}",
        type_name(obj)
    )))
}

/// Items of an iterable that is not itself a str or bytes (a single name is a common slip).
fn items<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an iterable of str, not a single {} (wrap one name in a list)",
            type_name(obj)
        )));
    }
    let it = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!("{what} must be an iterable of str, got {}", type_name(obj)))
    })?;
    it.collect()
}

fn str_item(item: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let s = item.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!("each of {what} must be a str, got {}", type_name(item)))
    })?;
    Ok(s.to_cow()?.into_owned())
}

/// Group names: an iterable of str (a name may be "", the public group; never None).
pub fn names_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    items(obj, what)?.iter().map(|i| str_item(i, what)).collect()
}

/// The groups a registration wants: None for all groups (`ALL_GROUPS`), else an iterable of
/// names (empty: `NO_GROUPS`).
pub fn groups_arg(obj: &Bound<'_, PyAny>) -> PyResult<Groups> {
    if obj.is_none() {
        return Ok(Groups::All);
    }
    Ok(Groups::Only(names_arg(obj, "groups")?.into_iter().collect()))
}

/// One locator: `"host:port"` or `"[v6]:port"`.
pub fn locator_arg(obj: &Bound<'_, PyAny>) -> PyResult<Locator> {
    let s = str_item(obj, "locator")?;
    s.parse::<Locator>().py(obj.py())
}

/// Locators: an iterable of `"host:port"` strings.
pub fn locators_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Locator>> {
    items(obj, "locators")?
        .iter()
        .map(|i| str_item(i, "locators")?.parse::<Locator>().py(obj.py()))
        .collect()
}

/// A listener as the service keeps it: bytes, or a str (kept as UTF-8).
pub fn listener_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    Ok(bytes_arg(obj, "listener")?.into_owned())
}

// ---------- values out ----------

/// Names as a frozenset of str.
pub fn names_py<'py, 'a>(
    py: Python<'py>,
    names: impl IntoIterator<Item = &'a String>,
) -> PyResult<Bound<'py, PyFrozenSet>> {
    PyFrozenSet::new(py, names.into_iter().map(String::as_str))
}

/// Groups: None for all groups, else a frozenset of names.
pub fn groups_py<'py>(py: Python<'py>, g: &Groups) -> PyResult<Option<Bound<'py, PyFrozenSet>>> {
    g.names().map(|n| names_py(py, n)).transpose()
}

/// Locators as a frozenset of `"host:port"`.
pub fn locators_py<'py, 'a>(
    py: Python<'py>,
    ls: impl IntoIterator<Item = &'a Locator>,
) -> PyResult<Bound<'py, PyFrozenSet>> {
    PyFrozenSet::new(py, ls.into_iter().map(|l| l.to_string()))
}

fn eq_result(py: Python<'_>, same: Option<bool>) -> Py<PyAny> {
    match same {
        Some(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any().unbind(),
        None => py.NotImplemented(),
    }
}

// ---------- Registrar ----------

/// A lookup service (registrar) as the discovery service knows it: its id, the groups it is a
/// member of, and the locators it was found at.
#[pyclass(frozen, module = "leasehold._native", name = "Registrar")]
#[derive(Clone)]
pub struct PyRegistrar(pub Registrar);

#[pymethods]
impl PyRegistrar {
    #[new]
    #[pyo3(signature = (id, groups, locators))]
    fn new(
        id: &Bound<'_, PyAny>,
        groups: &Bound<'_, PyAny>,
        locators: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let groups: BTreeSet<String> = names_arg(groups, "groups")?.into_iter().collect();
        Groups::Only(groups.clone()).check(usize::MAX).py(id.py())?;
        Ok(PyRegistrar(Registrar {
            id: registrar_arg(id)?,
            groups,
            locators: locators_arg(locators)?.into_iter().collect(),
        }))
    }
    /// Its id: 32 hex digits.
    #[getter]
    fn id(&self) -> String {
        self.0.id.to_string()
    }
    /// The groups it is a member of.
    #[getter]
    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        names_py(py, &self.0.groups)
    }
    /// Where it was found (`"host:port"`).
    #[getter]
    fn locators<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        locators_py(py, &self.0.locators)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> Py<PyAny> {
        let same = other.cast::<PyRegistrar>().ok().map(|o| o.get().0 == self.0);
        eq_result(other.py(), same)
    }
    fn __hash__(&self) -> u64 {
        (self.0.id.0 as u64) ^ ((self.0.id.0 >> 64) as u64)
    }
    fn __repr__(&self) -> String {
        let groups: Vec<&String> = self.0.groups.iter().collect();
        let locators: Vec<String> = self.0.locators.iter().map(|l| l.to_string()).collect();
        format!("Registrar(id='{}', groups={groups:?}, locators={locators:?})", self.0.id)
    }
}

fn registrars_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Registrar>> {
    let mut out = Vec::new();
    for r in obj.try_iter()? {
        let r = r?;
        let r = r.cast::<PyRegistrar>().map_err(|_| {
            PyTypeError::new_err(format!(
                "registrars must be Registrar objects, got {}",
                type_name(&r)
            ))
        })?;
        out.push(r.get().0.clone());
    }
    Ok(out)
}

fn registrars_py(rs: &[Registrar]) -> Vec<PyRegistrar> {
    rs.iter().cloned().map(PyRegistrar).collect()
}

// ---------- Announcement ----------

/// A registrar's multicast announcement: its id, groups and locator, a sequence number that
/// grows with every announcement (a stale one is ignored) and a ttl (how long it counts as
/// present without another one, in ms). `encode()` gives the datagram, `decode()` reads one.
#[pyclass(frozen, module = "leasehold._native", name = "Announcement")]
#[derive(Clone)]
pub struct PyAnnouncement(pub Announcement);

#[pymethods]
impl PyAnnouncement {
    #[new]
    #[pyo3(signature = (registrar, groups, locator, sequence, ttl))]
    fn new(
        registrar: &Bound<'_, PyAny>,
        groups: &Bound<'_, PyAny>,
        locator: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        Ok(PyAnnouncement(Announcement {
            registrar: registrar_arg(registrar)?,
            groups: names_arg(groups, "groups")?.into_iter().collect(),
            locator: locator_arg(locator)?,
            sequence: u64_arg(sequence, "sequence")?,
            ttl: duration_arg(ttl, "ttl")?,
        }))
    }
    /// The announcement datagram (at most `ANNOUNCEMENT_MAX_BYTES`); a ttl outside 1 to
    /// 2**32 - 1 ms, a group name over 255 bytes or a datagram too big is an
    /// `InvalidArgumentError`.
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.0.encode().py(py)?))
    }
    /// Reads an announcement datagram; anything malformed raises `DecodeError`.
    #[staticmethod]
    fn decode(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let data = bytes_arg(data, "data")?;
        Announcement::decode(&data).py(py).map(PyAnnouncement)
    }
    #[getter]
    fn registrar(&self) -> String {
        self.0.registrar.to_string()
    }
    #[getter]
    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        names_py(py, &self.0.groups)
    }
    #[getter]
    fn locator(&self) -> String {
        self.0.locator.to_string()
    }
    #[getter]
    fn sequence(&self) -> u64 {
        self.0.sequence
    }
    #[getter]
    fn ttl(&self) -> i64 {
        self.0.ttl
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> Py<PyAny> {
        let same = other.cast::<PyAnnouncement>().ok().map(|o| o.get().0 == self.0);
        eq_result(other.py(), same)
    }
    fn __repr__(&self) -> String {
        let groups: Vec<&String> = self.0.groups.iter().collect();
        format!(
            "Announcement(registrar='{}', groups={groups:?}, locator='{}', sequence={}, ttl={})",
            self.0.registrar, self.0.locator, self.0.sequence, self.0.ttl
        )
    }
}

// ---------- unicast discovery ----------

/// A unicast discovery the host must make: contact the lookup service at `locator` and answer
/// with `DiscoveryService.handle_unicast(id, ...)`.
#[pyclass(frozen, module = "leasehold._native", name = "UnicastRequest")]
pub struct PyUnicastRequest(pub UnicastRequest);

#[pymethods]
impl PyUnicastRequest {
    /// Quote it in the answer.
    #[getter]
    fn id(&self) -> u64 {
        self.0.id
    }
    /// Whom to contact, `"host:port"`.
    #[getter]
    fn locator(&self) -> String {
        self.0.locator.to_string()
    }
    /// The locator's host (an IPv6 literal without brackets).
    #[getter]
    fn host(&self) -> &str {
        self.0.locator.host()
    }
    /// The locator's port.
    #[getter]
    fn port(&self) -> u16 {
        self.0.locator.port()
    }
    fn __repr__(&self) -> String {
        format!("UnicastRequest(id={}, locator='{}')", self.0.id, self.0.locator)
    }
}

/// What unicast discovery of a locator found: the lookup service there and its groups.
#[pyclass(frozen, module = "leasehold._native", name = "UnicastResponse")]
pub struct PyUnicastResponse(pub UnicastResponse);

#[pymethods]
impl PyUnicastResponse {
    #[new]
    fn new(registrar: &Bound<'_, PyAny>, groups: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyUnicastResponse(UnicastResponse {
            registrar: registrar_arg(registrar)?,
            groups: names_arg(groups, "groups")?.into_iter().collect(),
        }))
    }
    #[getter]
    fn registrar(&self) -> String {
        self.0.registrar.to_string()
    }
    #[getter]
    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        names_py(py, &self.0.groups)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> Py<PyAny> {
        let same = other.cast::<PyUnicastResponse>().ok().map(|o| o.get().0 == self.0);
        eq_result(other.py(), same)
    }
    fn __repr__(&self) -> String {
        let groups: Vec<&String> = self.0.groups.iter().collect();
        format!("UnicastResponse(registrar='{}', groups={groups:?})", self.0.registrar)
    }
}

/// A unicast result from Python: a `UnicastResponse`, an `Announcement` (a lookup service may
/// answer with its datagram), or a `LeaseError` saying why none was found.
pub fn unicast_result_arg(
    obj: &Bound<'_, PyAny>,
) -> PyResult<std::result::Result<UnicastResponse, LeaseError>> {
    if let Ok(r) = obj.cast::<PyUnicastResponse>() {
        return Ok(Ok(r.get().0.clone()));
    }
    if let Ok(a) = obj.cast::<PyAnnouncement>() {
        return Ok(Ok(UnicastResponse::from(&a.get().0)));
    }
    from_instance(obj).map(Err).map_err(|_| {
        PyTypeError::new_err(format!(
            "a unicast result is a UnicastResponse, an Announcement or a LeaseError, got {}",
            type_name(obj)
        ))
    })
}

// ---------- events ----------

/// A discovery event (Jini `RemoteDiscoveryEvent`): registrars discovered or discarded for a
/// registration, with its event id, source, strictly increasing sequence number and the
/// handback exactly as registered. It is also the wire message sent to the registration's
/// listener (`encode`/`decode`). `listener` says where the host delivers it (what was given
/// with `register` or `set_listener`; b"" if nothing was; not part of the message).
#[pyclass(frozen, module = "leasehold._native", name = "DiscoveryEvent")]
pub struct PyDiscoveryEvent {
    pub event: RemoteDiscoveryEvent,
    pub listener: Vec<u8>,
}

impl PyMessage for PyDiscoveryEvent {
    type Core = RemoteDiscoveryEvent;
    const NAME: &'static str = "DiscoveryEvent";
    fn core(&self) -> &RemoteDiscoveryEvent {
        &self.event
    }
    fn from_core(event: RemoteDiscoveryEvent) -> Self {
        PyDiscoveryEvent { event, listener: Vec::new() }
    }
}
crate::wire::wire_message!(RemoteDiscoveryEvent);
message_methods!(PyDiscoveryEvent);

#[pymethods]
impl PyDiscoveryEvent {
    #[new]
    #[pyo3(signature = (event_id, source_service, source_object, sequence, handback, discarded, registrars))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        event_id: &Bound<'_, PyAny>,
        source_service: &Bound<'_, PyAny>,
        source_object: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
        handback: &Bound<'_, PyAny>,
        discarded: bool,
        registrars: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let registrars = registrars_arg(registrars)?;
        if registrars.is_empty() {
            return Err(invalid(
                event_id.py(),
                "a discovery event names at least one registrar".into(),
            ));
        }
        Ok(PyDiscoveryEvent {
            event: RemoteDiscoveryEvent {
                event_id: u64_arg(event_id, "event_id")?,
                source: EventSource {
                    service: landlord_arg(source_service)?,
                    object: u64_arg(source_object, "source_object")?,
                },
                sequence: u64_arg(sequence, "sequence")?,
                handback: bytes_arg(handback, "handback")?.into_owned(),
                kind: DiscoveryChange { discarded, registrars },
            },
            listener: Vec::new(),
        })
    }
    #[getter]
    fn event_id(&self) -> u64 {
        self.event.event_id
    }
    /// The service that sent it (its landlord id).
    #[getter]
    fn source_service(&self) -> u64 {
        self.event.source.service.0
    }
    /// The registration it is for (its number).
    #[getter]
    fn source_object(&self) -> u64 {
        self.event.source.object
    }
    #[getter]
    fn sequence(&self) -> u64 {
        self.event.sequence
    }
    /// The registration's handback, exactly as registered.
    #[getter]
    fn handback<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.event.handback)
    }
    /// True for a discarded event, False for a discovered one (`isDiscarded`).
    #[getter]
    fn discarded(&self) -> bool {
        self.event.is_discarded()
    }
    /// The registrars discovered or discarded, in id order, each as known when the event was made.
    #[getter]
    fn registrars(&self) -> Vec<PyRegistrar> {
        registrars_py(self.event.registrars())
    }
    /// Each registrar's groups, by id (`getGroups`).
    #[getter]
    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (id, g) in self.event.groups() {
            d.set_item(id.to_string(), names_py(py, g)?)?;
        }
        Ok(d)
    }
    /// Where the host delivers it (b"" when nothing was set, or for a decoded message).
    #[getter]
    fn listener<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.listener)
    }
}

// ---------- EventReply ----------

/// A listener's answer to a discovery event: received, unknown event (the service cancels the
/// registration), or an error (an `IndefiniteError` is retried, any other cancels).
#[pyclass(frozen, module = "leasehold._native", name = "EventReply")]
pub struct PyEventReply(pub EventReply);

py_message!(PyEventReply, EventReply, "EventReply");
message_methods!(PyEventReply);

fn event_reply(
    event_id: &Bound<'_, PyAny>,
    sequence: &Bound<'_, PyAny>,
    body: EventReplyBody,
) -> PyResult<PyEventReply> {
    Ok(PyEventReply(EventReply {
        event_id: u64_arg(event_id, "event_id")?,
        sequence: u64_arg(sequence, "sequence")?,
        body,
    }))
}

#[pymethods]
impl PyEventReply {
    /// The event was received.
    #[staticmethod]
    fn received(event_id: &Bound<'_, PyAny>, sequence: &Bound<'_, PyAny>) -> PyResult<Self> {
        event_reply(event_id, sequence, EventReplyBody::Received)
    }
    /// The listener does not know this event id (Jini `UnknownEventException`).
    #[staticmethod]
    fn unknown_event(event_id: &Bound<'_, PyAny>, sequence: &Bound<'_, PyAny>) -> PyResult<Self> {
        event_reply(event_id, sequence, EventReplyBody::UnknownEvent)
    }
    /// The listener failed with `error` (a `LeaseError`).
    #[staticmethod]
    fn failure(
        event_id: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
        error: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let e = WireError::from(&from_instance(error)?);
        event_reply(event_id, sequence, EventReplyBody::Error(e))
    }
    #[getter]
    fn event_id(&self) -> u64 {
        self.0.event_id
    }
    #[getter]
    fn sequence(&self) -> u64 {
        self.0.sequence
    }
    /// "received", "unknown_event" or "error".
    #[getter]
    fn op(&self) -> &'static str {
        match self.0.body {
            EventReplyBody::Received => "received",
            EventReplyBody::UnknownEvent => "unknown_event",
            EventReplyBody::Error(_) => "error",
        }
    }
    /// The error of an "error" answer, as a `LeaseError` instance.
    #[getter]
    fn error(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.0.body {
            EventReplyBody::Error(e) => Ok(Some(to_instance(py, &e.to_error())?.unbind())),
            _ => Ok(None),
        }
    }
}

// ---------- DiscoveryRequest ----------

/// A request to a lookup discovery service: `register`, or an operation on a registration named
/// by its lease cookie. `id` is echoed in the reply.
#[pyclass(frozen, module = "leasehold._native", name = "DiscoveryRequest")]
pub struct PyDiscoveryRequest(pub DiscoveryRequest);

py_message!(PyDiscoveryRequest, DiscoveryRequest, "DiscoveryRequest");
message_methods!(PyDiscoveryRequest);

fn request(id: &Bound<'_, PyAny>, body: DiscoveryRequestBody) -> PyResult<PyDiscoveryRequest> {
    Ok(PyDiscoveryRequest(DiscoveryRequest { id: u64_arg(id, "id")?, body }))
}

#[pymethods]
impl PyDiscoveryRequest {
    /// A new registration: groups (None for all), locators, handback, lease duration.
    #[staticmethod]
    fn register(
        id: &Bound<'_, PyAny>,
        groups: &Bound<'_, PyAny>,
        locators: &Bound<'_, PyAny>,
        handback: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        request(
            id,
            DiscoveryRequestBody::Register {
                groups: groups_arg(groups)?,
                locators: locators_arg(locators)?,
                handback: bytes_arg(handback, "handback")?.into_owned(),
                duration: duration_arg(duration, "duration")?,
            },
        )
    }
    #[staticmethod]
    fn get_groups(id: &Bound<'_, PyAny>, cookie: &Bound<'_, PyAny>) -> PyResult<Self> {
        request(id, DiscoveryRequestBody::GetGroups { cookie: cookie_arg(cookie)? })
    }
    #[staticmethod]
    fn add_groups(
        id: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        groups: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let groups = names_arg(groups, "groups")?;
        request(id, DiscoveryRequestBody::AddGroups { cookie: cookie_arg(cookie)?, groups })
    }
    /// Replaces the groups (None for all groups).
    #[staticmethod]
    fn set_groups(
        id: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        groups: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let groups = groups_arg(groups)?;
        request(id, DiscoveryRequestBody::SetGroups { cookie: cookie_arg(cookie)?, groups })
    }
    #[staticmethod]
    fn remove_groups(
        id: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        groups: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let groups = names_arg(groups, "groups")?;
        request(id, DiscoveryRequestBody::RemoveGroups { cookie: cookie_arg(cookie)?, groups })
    }
    #[staticmethod]
    fn get_locators(id: &Bound<'_, PyAny>, cookie: &Bound<'_, PyAny>) -> PyResult<Self> {
        request(id, DiscoveryRequestBody::GetLocators { cookie: cookie_arg(cookie)? })
    }
    #[staticmethod]
    fn add_locators(
        id: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        locators: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let locators = locators_arg(locators)?;
        request(id, DiscoveryRequestBody::AddLocators { cookie: cookie_arg(cookie)?, locators })
    }
    #[staticmethod]
    fn set_locators(
        id: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        locators: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let locators = locators_arg(locators)?;
        request(id, DiscoveryRequestBody::SetLocators { cookie: cookie_arg(cookie)?, locators })
    }
    #[staticmethod]
    fn remove_locators(
        id: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        locators: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let locators = locators_arg(locators)?;
        request(id, DiscoveryRequestBody::RemoveLocators { cookie: cookie_arg(cookie)?, locators })
    }
    #[staticmethod]
    fn get_registrars(id: &Bound<'_, PyAny>, cookie: &Bound<'_, PyAny>) -> PyResult<Self> {
        request(id, DiscoveryRequestBody::GetRegistrars { cookie: cookie_arg(cookie)? })
    }
    #[staticmethod]
    fn discard(
        id: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        registrar: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let registrar = registrar_arg(registrar)?;
        request(id, DiscoveryRequestBody::Discard { cookie: cookie_arg(cookie)?, registrar })
    }

    #[getter]
    fn id(&self) -> u64 {
        self.0.id
    }
    /// The operation: "register", "get_groups", "add_groups", "set_groups", "remove_groups",
    /// "get_locators", "add_locators", "set_locators", "remove_locators", "get_registrars" or
    /// "discard".
    #[getter]
    fn op(&self) -> &'static str {
        use DiscoveryRequestBody as B;
        match self.0.body {
            B::Register { .. } => "register",
            B::GetGroups { .. } => "get_groups",
            B::AddGroups { .. } => "add_groups",
            B::SetGroups { .. } => "set_groups",
            B::RemoveGroups { .. } => "remove_groups",
            B::GetLocators { .. } => "get_locators",
            B::AddLocators { .. } => "add_locators",
            B::SetLocators { .. } => "set_locators",
            B::RemoveLocators { .. } => "remove_locators",
            B::GetRegistrars { .. } => "get_registrars",
            B::Discard { .. } => "discard",
        }
    }
    /// The registration's cookie (every op but register).
    #[getter]
    fn cookie(&self) -> Option<String> {
        use DiscoveryRequestBody as B;
        match &self.0.body {
            B::Register { .. } => None,
            B::GetGroups { cookie }
            | B::AddGroups { cookie, .. }
            | B::SetGroups { cookie, .. }
            | B::RemoveGroups { cookie, .. }
            | B::GetLocators { cookie }
            | B::AddLocators { cookie, .. }
            | B::SetLocators { cookie, .. }
            | B::RemoveLocators { cookie, .. }
            | B::GetRegistrars { cookie }
            | B::Discard { cookie, .. } => Some(cookie_str(*cookie)),
        }
    }
    /// The groups of register and the *_groups ops: a frozenset of names, or None (all groups,
    /// for register and set_groups; also for the ops that carry no groups).
    #[getter(groups)]
    fn groups_of<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyFrozenSet>>> {
        use DiscoveryRequestBody as B;
        match &self.0.body {
            B::Register { groups, .. } | B::SetGroups { groups, .. } => groups_py(py, groups),
            B::AddGroups { groups, .. } | B::RemoveGroups { groups, .. } => {
                names_py(py, groups).map(Some)
            }
            _ => Ok(None),
        }
    }
    /// The locators of register and the *_locators ops, in the order given.
    #[getter(locators)]
    fn locators_of(&self) -> Option<Vec<String>> {
        use DiscoveryRequestBody as B;
        match &self.0.body {
            B::Register { locators, .. }
            | B::AddLocators { locators, .. }
            | B::SetLocators { locators, .. }
            | B::RemoveLocators { locators, .. } => {
                Some(locators.iter().map(|l| l.to_string()).collect())
            }
            _ => None,
        }
    }
    /// The handback of register.
    #[getter]
    fn handback<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.0.body {
            DiscoveryRequestBody::Register { handback, .. } => Some(PyBytes::new(py, handback)),
            _ => None,
        }
    }
    /// The lease duration register asks for.
    #[getter]
    fn duration(&self) -> Option<i64> {
        match &self.0.body {
            DiscoveryRequestBody::Register { duration, .. } => Some(*duration),
            _ => None,
        }
    }
    /// The registrar of discard.
    #[getter]
    fn registrar(&self) -> Option<String> {
        match &self.0.body {
            DiscoveryRequestBody::Discard { registrar, .. } => Some(registrar.to_string()),
            _ => None,
        }
    }
}

// ---------- DiscoveryReply ----------

/// A lookup discovery service's answer to a `DiscoveryRequest`.
#[pyclass(frozen, module = "leasehold._native", name = "DiscoveryReply")]
pub struct PyDiscoveryReply(pub DiscoveryReply);

py_message!(PyDiscoveryReply, DiscoveryReply, "DiscoveryReply");
message_methods!(PyDiscoveryReply);

fn reply(
    id: &Bound<'_, PyAny>,
    landlord: &Bound<'_, PyAny>,
    body: DiscoveryReplyBody,
) -> PyResult<PyDiscoveryReply> {
    Ok(PyDiscoveryReply(DiscoveryReply {
        id: u64_arg(id, "id")?,
        landlord: landlord_arg(landlord)?,
        body,
    }))
}

#[pymethods]
impl PyDiscoveryReply {
    /// A registration was made.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn registered(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        registration: &Bound<'_, PyAny>,
        cookie: &Bound<'_, PyAny>,
        duration: &Bound<'_, PyAny>,
        event_id: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let body = DiscoveryReplyBody::Registered {
            registration: u64_arg(registration, "registration")?,
            cookie: cookie_arg(cookie)?,
            duration: duration_arg(duration, "duration")?,
            event_id: u64_arg(event_id, "event_id")?,
            sequence: u64_arg(sequence, "sequence")?,
        };
        reply(id, landlord, body)
    }
    /// The managed set of groups (None for all groups).
    #[staticmethod]
    fn with_groups(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        groups: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        reply(id, landlord, DiscoveryReplyBody::Groups { groups: groups_arg(groups)? })
    }
    /// The managed set of locators.
    #[staticmethod]
    fn with_locators(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        locators: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let locators = locators_arg(locators)?;
        reply(id, landlord, DiscoveryReplyBody::Locators { locators })
    }
    /// The registrars discovered for the registration (`Registrar` objects, in id order).
    #[staticmethod]
    fn with_registrars(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        registrars: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let registrars = registrars_arg(registrars)?;
        reply(id, landlord, DiscoveryReplyBody::Registrars { registrars })
    }
    /// A change was made (or there was nothing to change).
    #[staticmethod]
    fn done(id: &Bound<'_, PyAny>, landlord: &Bound<'_, PyAny>) -> PyResult<Self> {
        reply(id, landlord, DiscoveryReplyBody::Done)
    }
    /// The request failed with `error` (a `LeaseError`).
    #[staticmethod]
    fn failure(
        id: &Bound<'_, PyAny>,
        landlord: &Bound<'_, PyAny>,
        error: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let e = WireError::from(&from_instance(error)?);
        reply(id, landlord, DiscoveryReplyBody::Error(e))
    }

    #[getter]
    fn id(&self) -> u64 {
        self.0.id
    }
    /// The service's landlord id (the landlord of its registration leases).
    #[getter]
    fn landlord(&self) -> u64 {
        self.0.landlord.0
    }
    /// "registered", "groups", "locators", "registrars", "done" or "error".
    #[getter]
    fn op(&self) -> &'static str {
        use DiscoveryReplyBody as B;
        match self.0.body {
            B::Registered { .. } => "registered",
            B::Groups { .. } => "groups",
            B::Locators { .. } => "locators",
            B::Registrars { .. } => "registrars",
            B::Done => "done",
            B::Error(_) => "error",
        }
    }
    /// The registration's number (registered).
    #[getter]
    fn registration(&self) -> Option<u64> {
        match &self.0.body {
            DiscoveryReplyBody::Registered { registration, .. } => Some(*registration),
            _ => None,
        }
    }
    /// The registration's lease cookie (registered).
    #[getter]
    fn cookie(&self) -> Option<String> {
        match &self.0.body {
            DiscoveryReplyBody::Registered { cookie, .. } => Some(cookie_str(*cookie)),
            _ => None,
        }
    }
    /// The granted lease duration (registered).
    #[getter]
    fn duration(&self) -> Option<i64> {
        match &self.0.body {
            DiscoveryReplyBody::Registered { duration, .. } => Some(*duration),
            _ => None,
        }
    }
    /// The event id (registered).
    #[getter]
    fn event_id(&self) -> Option<u64> {
        match &self.0.body {
            DiscoveryReplyBody::Registered { event_id, .. } => Some(*event_id),
            _ => None,
        }
    }
    /// The sequence number the first event follows (registered).
    #[getter]
    fn sequence(&self) -> Option<u64> {
        match &self.0.body {
            DiscoveryReplyBody::Registered { sequence, .. } => Some(*sequence),
            _ => None,
        }
    }
    /// The groups of a "groups" answer: a frozenset, or None (all groups, or another op).
    #[getter]
    fn groups<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyFrozenSet>>> {
        match &self.0.body {
            DiscoveryReplyBody::Groups { groups } => groups_py(py, groups),
            _ => Ok(None),
        }
    }
    /// The locators of a "locators" answer, in order.
    #[getter]
    fn locators(&self) -> Option<Vec<String>> {
        match &self.0.body {
            DiscoveryReplyBody::Locators { locators } => {
                Some(locators.iter().map(|l| l.to_string()).collect())
            }
            _ => None,
        }
    }
    /// The registrars of a "registrars" answer, in id order.
    #[getter]
    fn registrars(&self) -> Option<Vec<PyRegistrar>> {
        match &self.0.body {
            DiscoveryReplyBody::Registrars { registrars } => Some(registrars_py(registrars)),
            _ => None,
        }
    }
    /// The error of an "error" answer, as a `LeaseError` instance.
    #[getter]
    fn error(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.0.body {
            DiscoveryReplyBody::Error(e) => Ok(Some(to_instance(py, &e.to_error())?.unbind())),
            _ => Ok(None),
        }
    }
    /// The registration's lease from a "registered" answer to a request sent at `sent_at`
    /// (holder's clock), as for a granted lease (`lease_from_reply`); an "error" answer raises
    /// its error, any other a `DecodeError`.
    #[pyo3(signature = (sent_at, max_drift_ppm = None))]
    fn lease(
        &self,
        py: Python<'_>,
        sent_at: &Bound<'_, PyAny>,
        max_drift_ppm: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyLease> {
        let sent_at = i64_arg(sent_at, "sent_at")?;
        let ppm = ppm_arg(max_drift_ppm)?;
        let body = match &self.0.body {
            DiscoveryReplyBody::Registered { cookie, duration, .. } => {
                ReplyBody::Granted { cookie: *cookie, duration: *duration }
            }
            DiscoveryReplyBody::Error(e) => ReplyBody::Error(e.clone()),
            _ => {
                return Err(to_py(
                    py,
                    &LeaseError::Decode(format!(
                        "a {} reply carries no lease (only registered does)",
                        self.op()
                    )),
                ))
            }
        };
        let granted = leasehold::Reply { id: self.0.id, landlord: self.0.landlord, body };
        leasehold::holder::lease_from_reply_with_drift(&granted, sent_at, ppm).py(py).map(PyLease)
    }
}
