//! The lookup discovery service (`DiscoveryService`) and its registrations
//! (`DiscoveryRegistration`), on the shared layers: `sansio` (timer, lease requests, the
//! lock), `store` (in memory or in a directory, reply after durable) and `wire` (messages).
//! What is left here is the service's own interface, converted.

use std::iter::from_fn;

use leasehold::discovery::wire::{DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest};
use leasehold::discovery::{
    DeliveryFailure, DiscoveryConfig, DiscoveryService, DiscoverySnapshot, RegistrationId,
    RemoteDiscoveryEvent, UnicastRequest,
};
use leasehold::wire::WireError;
use leasehold::{Encoding, LeaseError, Reply, ReplyBody, Request, RequestBody};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFrozenSet, PyString};

use crate::convert::{
    bytes_arg, cookie_arg, duration_arg, encoding_arg, i64_arg, landlord_arg, text_arg, u64_arg,
    usize_arg,
};
use crate::discovery_wire::{
    groups_arg, groups_py, listener_arg, locators_arg, locators_py, names_arg, registrar_arg,
    unicast_result_arg, PyAnnouncement, PyDiscoveryEvent, PyDiscoveryReply, PyDiscoveryRequest,
    PyEventReply, PyRegistrar, PyUnicastRequest,
};
use crate::errors::{from_instance, IntoPyResult};
use crate::guard::Guarded;
use crate::landlord::seed_arg;
use crate::lease::PyLease;
use crate::policy::PyPolicy;
use crate::sansio::{answer_methods, answers, stored_component, timed, timer_methods, Component};
use crate::service::{registration, PyEventRegistration};
use crate::store::{durable_methods, path_arg, store_config, Backend, OpenArgs, Store, Stored};
use crate::wire::PyLimits;

timed!(DiscoveryService);
answers!(DiscoveryService);

/// The lookup discovery service (seed 003, LD): registrations leased by the service's own
/// landlord, each with groups, locators and the registrars discovered for it; fed announcements,
/// unicast results and unreachable reports by the host; handing out discovered and discarded
/// events (`poll_event`, answered with `delivered` / `delivery_failed`) and unicast discoveries
/// to make (`poll_transmit`). Sans-I/O: drive it with `leasehold.threaded.DiscoveryDriver` or
/// `leasehold.aio.DiscoveryDriver`. Registration leases are renewed and cancelled with the
/// landlord protocol (`handle_request` / `handle_bytes`); `DiscoveryService.open` keeps it in a
/// directory.
#[pyclass(frozen, module = "leasehold._native", name = "DiscoveryService")]
pub struct PyDiscoveryService {
    inner: Backend<DiscoveryService>,
}

impl Stored for PyDiscoveryService {
    type State = DiscoveryService;
    fn backend(&self) -> &Backend<DiscoveryService> {
        &self.inner
    }
}

stored_component!(PyDiscoveryService);
timer_methods!(PyDiscoveryService);
answer_methods!(PyDiscoveryService);
durable_methods!(PyDiscoveryService);

/// Durations from a list of int ms (or timedeltas).
fn schedule_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    let mut out = Vec::new();
    for d in obj
        .try_iter()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a list of durations")))?
    {
        out.push(duration_arg(&d?, what)?);
    }
    Ok(out)
}

/// A service's configuration from the constructor's arguments; unset settings keep the core's
/// defaults, an unknown one is a `TypeError`.
fn discovery_config(
    py: Python<'_>,
    id: &Bound<'_, PyAny>,
    seed: [u8; 32],
    lease_policy: Option<PyRef<'_, PyPolicy>>,
    grace: Option<&Bound<'_, PyAny>>,
    limits: Option<PyRef<'_, PyLimits>>,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<DiscoveryConfig> {
    let mut c = DiscoveryConfig::new(landlord_arg(id)?, seed);
    if let Some(p) = lease_policy {
        c.lease_policy = p.0.clone();
    }
    if let Some(g) = grace {
        c.landlord = c.landlord.clone().with_grace(duration_arg(g, "grace")?);
    }
    if let Some(l) = limits {
        c.landlord.limits = l.0;
    }
    if let Some(settings) = settings {
        for (k, v) in settings.iter() {
            let k: String = k.extract()?;
            if v.is_none() {
                continue;
            }
            match k.as_str() {
                "event_retry" => c.event_retry = schedule_arg(&v, &k)?,
                "delivery_timeout" => c.delivery_timeout = duration_arg(&v, &k)?,
                "unicast_retry" => c.unicast_retry = schedule_arg(&v, &k)?,
                "unicast_timeout" => c.unicast_timeout = duration_arg(&v, &k)?,
                "max_registrars" => c.max_registrars = usize_arg(&v, &k)?,
                "max_announcement_ttl" => c.max_announcement_ttl = duration_arg(&v, &k)?,
                "restore_jump" => c.restore_jump = u64_arg(&v, &k)?,
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "unknown discovery service setting {k:?}"
                    )))
                }
            }
        }
    }
    // Checked here too, so that a bad setting fails before a store is created.
    DiscoveryService::new(c.clone()).py(py)?;
    Ok(c)
}

/// Answers a discovery request; a registration made by it gets `listener` (the host's
/// business: where its events go), in the same step. Should the listener be refused, the
/// registration is cancelled again and the reply is that error.
fn discovery_reply(
    s: &mut DiscoveryService,
    req: &DiscoveryRequest,
    now: i64,
    listener: Option<Vec<u8>>,
) -> DiscoveryReply {
    let mut reply = s.handle_discovery(req, now);
    if let (Some(l), DiscoveryReplyBody::Registered { registration, cookie, .. }) =
        (listener, &reply.body)
    {
        if let Err(e) = s.set_listener(RegistrationId(*registration), l, now) {
            let cancel = Request { id: 0, body: RequestBody::Cancel { cookie: *cookie } };
            s.handle_request(&cancel, now);
            reply.body = DiscoveryReplyBody::Error(WireError::from(&e));
        }
    }
    reply
}

/// The events due at `now`, each with its registration's listener.
fn events_due(s: &mut DiscoveryService, now: i64) -> Vec<(RemoteDiscoveryEvent, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(e) = s.poll_event(now) {
        let l = s.listener(RegistrationId(e.source.object)).unwrap_or_default().to_vec();
        out.push((e, l));
    }
    out
}

fn events_py(all: Vec<(RemoteDiscoveryEvent, Vec<u8>)>) -> Vec<PyDiscoveryEvent> {
    all.into_iter().map(|(event, listener)| PyDiscoveryEvent { event, listener }).collect()
}

fn probes_py(all: Vec<UnicastRequest>) -> Vec<PyUnicastRequest> {
    all.into_iter().map(PyUnicastRequest).collect()
}

impl PyDiscoveryService {
    fn handle(slf: &Bound<'_, Self>, id: RegistrationId) -> PyDiscoveryRegistration {
        PyDiscoveryRegistration { service: slf.clone().unbind(), id: id.0 }
    }
}

#[pymethods]
impl PyDiscoveryService {
    /// A service whose registration leases carry landlord id `id`. `seed` (32 bytes) makes the
    /// cookies reproducible (default: `os.urandom`); `lease_policy` decides registration lease
    /// durations (default: at most 30 minutes, 30 minutes for ANY). Settings: `event_retry`,
    /// `unicast_retry` (lists of waits), `delivery_timeout`, `unicast_timeout`,
    /// `max_registrars`, `max_announcement_ttl`, `restore_jump`.
    #[new]
    #[pyo3(signature = (id, *, seed = None, lease_policy = None, grace = None, limits = None, **settings))]
    fn new(
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        seed: Option<&Bound<'_, PyAny>>,
        lease_policy: Option<PyRef<'_, PyPolicy>>,
        grace: Option<&Bound<'_, PyAny>>,
        limits: Option<PyRef<'_, PyLimits>>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let seed = seed_arg(py, seed)?;
        let c = discovery_config(py, id, seed, lease_policy, grace, limits, settings)?;
        let svc = DiscoveryService::new(c).py(py)?;
        Ok(PyDiscoveryService { inner: Backend::Memory(Guarded::new(svc)) })
    }

    /// Opens the durable service kept in the directory `data_dir`, creating it (with `id`,
    /// `seed`, `grace`, `limits`) if there is none, or recovering what is there (snapshot, then
    /// the log; a torn tail is dropped, damage raises `DecodeError`). An existing store keeps
    /// its id, seed, grace and limits; the other settings (`lease_policy`, retries, time-outs)
    /// are code: they are applied again on every open (journaled), defaults for those not
    /// given. Time spent down does not count. Every call whose result leaves the process (a
    /// registration, a reply, an event, a unicast discovery) returns once it is durable.
    #[staticmethod]
    #[pyo3(signature = (data_dir, id, now, *, seed = None, lease_policy = None, grace = None,
        limits = None, segment_bytes = None, min_compact_bytes = None, **settings))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        data_dir: &Bound<'_, PyAny>,
        id: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
        seed: Option<&Bound<'_, PyAny>>,
        lease_policy: Option<PyRef<'_, PyPolicy>>,
        grace: Option<&Bound<'_, PyAny>>,
        limits: Option<PyRef<'_, PyLimits>>,
        segment_bytes: Option<&Bound<'_, PyAny>>,
        min_compact_bytes: Option<&Bound<'_, PyAny>>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let path = path_arg(data_dir)?;
        let seed = seed_arg(py, seed)?;
        let fresh = discovery_config(py, id, seed, lease_policy, grace, limits, settings)?;
        let store = store_config(segment_bytes, min_compact_bytes)?;
        let now = i64_arg(now, "now")?;
        let wanted = fresh.clone();
        let count: fn(&DiscoveryService) -> usize = |s| s.registrations().len();
        let holds = ("registrations", count);
        let st =
            Store::open(
                py,
                OpenArgs { path, store, now, holds },
                move |snapshot| match snapshot {
                    Some(bytes) => DiscoveryService::from_snapshot_bytes(bytes),
                    None => {
                        let mut svc = DiscoveryService::new(fresh)?;
                        svc.enable_journal();
                        Ok(svc)
                    }
                },
            )?;
        st.answer(py, move |s| s.reconfigure(wanted))?.py(py)?;
        Ok(PyDiscoveryService { inner: Backend::Durable(Box::new(st)) })
    }

    /// Rebuilds a service from `snapshot` (JSON from `snapshot()`) at `now`; the settings are
    /// given again as for the constructor (the id must match the snapshot's; its seed is the
    /// snapshot's).
    #[staticmethod]
    #[pyo3(signature = (snapshot, now, id, *, lease_policy = None, grace = None, limits = None, **settings))]
    #[allow(clippy::too_many_arguments)]
    fn restore(
        py: Python<'_>,
        snapshot: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
        id: &Bound<'_, PyAny>,
        lease_policy: Option<PyRef<'_, PyPolicy>>,
        grace: Option<&Bound<'_, PyAny>>,
        limits: Option<PyRef<'_, PyLimits>>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let text = text_arg(snapshot, "snapshot")?;
        let now = i64_arg(now, "now")?;
        let snap = DiscoverySnapshot::from_json(&text).py(py)?;
        let c = discovery_config(py, id, [0; 32], lease_policy, grace, limits, settings)?;
        let svc = DiscoveryService::restore(c, snap, now).py(py)?;
        Ok(PyDiscoveryService { inner: Backend::Memory(Guarded::new(svc)) })
    }

    /// Everything the service holds at `now`, as JSON text (it contains the cookie secret).
    fn snapshot<'py>(
        &self,
        py: Python<'py>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyString>> {
        let now = i64_arg(now, "now")?;
        let text = self.answer(py, |s| {
            s.handle_timeout(now);
            s.snapshot().to_json()
        })?;
        Ok(PyString::new(py, &text))
    }

    /// The id of the service's landlord: every registration lease and event source carries it.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |s| s.id().0)
    }

    /// The service's time on the host's clock: the latest `now` it was given (None before the
    /// first call).
    #[getter]
    fn now(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        Ok(Some(self.with(py, |s| s.now())?).filter(|&t| t != i64::MIN))
    }

    /// Registers a client (Jini `register`): the groups it wants (None for all groups, an
    /// empty set for none), its locators (`"host:port"`), the handback its events carry, and
    /// the lease duration it asks for (positive, FOREVER or ANY). `listener` (bytes or str,
    /// optional) is kept with the registration: each of its events carries it, for the host
    /// to deliver to. Returns the registration and its event registration (event id, source,
    /// lease, and the sequence number the first event follows).
    #[pyo3(signature = (groups, locators, handback, lease_duration, now, *, listener = None))]
    #[allow(clippy::too_many_arguments)]
    fn register(
        slf: &Bound<'_, Self>,
        groups: &Bound<'_, PyAny>,
        locators: &Bound<'_, PyAny>,
        handback: &Bound<'_, PyAny>,
        lease_duration: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
        listener: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(PyDiscoveryRegistration, PyEventRegistration)> {
        let py = slf.py();
        let groups = groups_arg(groups)?;
        let locators = locators_arg(locators)?;
        let handback = bytes_arg(handback, "handback")?.into_owned();
        let d = duration_arg(lease_duration, "lease_duration")?;
        let now = i64_arg(now, "now")?;
        let listener = listener.map(listener_arg).transpose()?;
        let r = slf.get().answer(py, move |s| {
            let r = s.register(groups, locators, handback, d, now)?;
            if let Some(l) = listener {
                if let Err(e) = s.set_listener(r.id, l, now) {
                    let cancel =
                        Request { id: 0, body: RequestBody::Cancel { cookie: r.lease.cookie() } };
                    s.handle_request(&cancel, now);
                    return Err(e);
                }
            }
            Ok(r)
        })?;
        let r = r.py(py)?;
        Ok((Self::handle(slf, r.id), registration(r.event)))
    }

    /// The handle of registration `id` (whether or not it is still alive).
    fn registration(
        slf: &Bound<'_, Self>,
        id: &Bound<'_, PyAny>,
    ) -> PyResult<PyDiscoveryRegistration> {
        Ok(Self::handle(slf, RegistrationId(u64_arg(id, "registration id")?)))
    }

    /// The live registrations, in id order (as of the last call).
    fn registrations(slf: &Bound<'_, Self>) -> PyResult<Vec<PyDiscoveryRegistration>> {
        let ids = slf.get().with(slf.py(), |s| s.registrations())?;
        Ok(ids.into_iter().map(|id| Self::handle(slf, id)).collect())
    }

    /// The registration whose lease has `cookie`, if it is live at `now`.
    fn registration_of(
        slf: &Bound<'_, Self>,
        cookie: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyDiscoveryRegistration>> {
        let cookie = cookie_arg(cookie)?;
        let now = i64_arg(now, "now")?;
        let id = slf.get().answer(slf.py(), |s| s.registration_of(cookie, now))?;
        Ok(id.map(|id| Self::handle(slf, id)))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |s| s.registrations().len())
    }

    /// The registrars in the service's own discovered set, in id order.
    fn discovered(&self, py: Python<'_>) -> PyResult<Vec<PyRegistrar>> {
        Ok(self.with(py, |s| s.discovered())?.into_iter().map(PyRegistrar).collect())
    }

    /// What the service knows of a registrar, or None.
    fn registrar(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<Option<PyRegistrar>> {
        let id = registrar_arg(id)?;
        Ok(self.with(py, |s| s.registrar(id))?.map(PyRegistrar))
    }

    // ---- what the host hears ----

    /// A multicast announcement the host received (a stale one is ignored). A bad one raises
    /// `InvalidArgumentError`; one from a new registrar beyond `max_registrars`,
    /// `LeaseDeniedError`.
    fn handle_announcement(
        &self,
        py: Python<'_>,
        announcement: PyRef<'_, PyAnnouncement>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        let a = &announcement.0;
        self.with(py, |s| s.handle_announcement(a, now))?.py(py)
    }

    /// An announcement datagram the host received; undecodable bytes raise `DecodeError` and
    /// change nothing.
    fn handle_datagram(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        let data = bytes_arg(data, "data")?;
        self.with(py, |s| s.handle_datagram(&data, now))?.py(py)
    }

    /// The answer to unicast discovery `request_id` (from `poll_transmit`): a
    /// `UnicastResponse` or `Announcement` for the registrar found, or a `LeaseError` saying
    /// why none was (retried after a back-off). Returns whether the request was still awaited.
    fn handle_unicast(
        &self,
        py: Python<'_>,
        request_id: &Bound<'_, PyAny>,
        result: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let id = u64_arg(request_id, "request_id")?;
        let result = unicast_result_arg(result)?;
        let now = i64_arg(now, "now")?;
        self.with(py, |s| s.handle_unicast(id, result, now))
    }

    /// The host found `registrar` unreachable: a passive communication discard (only
    /// registrations that wanted it by group discard it). Returns whether it was known.
    fn registrar_unreachable(
        &self,
        py: Python<'_>,
        registrar: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let id = registrar_arg(registrar)?;
        let now = i64_arg(now, "now")?;
        self.with(py, |s| s.registrar_unreachable(id, now))
    }

    // ---- what the host must do ----

    /// The next unicast discovery to make, or None.
    fn poll_transmit(
        &self,
        py: Python<'_>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyUnicastRequest>> {
        let now = i64_arg(now, "now")?;
        Ok(self.answer(py, |s| s.poll_transmit(now))?.map(PyUnicastRequest))
    }

    /// The next event to deliver to its registration's listener (`event.listener`), or None.
    /// Report the outcome with `delivered`, `delivery_failed`, `unknown_event` or
    /// `handle_event_reply`; the registration's next event waits until then.
    fn poll_event(
        &self,
        py: Python<'_>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyDiscoveryEvent>> {
        let now = i64_arg(now, "now")?;
        // Exactly one: every event poll_event hands out is in flight until reported, so taking
        // more than the one returned would strand the rest until their delivery time-out.
        let e = self.answer(py, |s| {
            let e = s.poll_event(now)?;
            let l = s.listener(RegistrationId(e.source.object)).unwrap_or_default().to_vec();
            Some((e, l))
        })?;
        Ok(events_py(e.into_iter().collect()).pop())
    }

    /// Every event due (`poll_event` until None).
    fn drain_events(
        &self,
        py: Python<'_>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<PyDiscoveryEvent>> {
        let now = i64_arg(now, "now")?;
        Ok(events_py(self.answer(py, |s| events_due(s, now))?))
    }

    /// One step of a host, without waiting for the disk: `handle_timeout(now)`, then every
    /// unicast discovery and every event due, and the journal record they depend on (0 in
    /// memory): act on them once `wait_durable(seq)` returned (the drivers do this).
    fn take_due(
        &self,
        py: Python<'_>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<(Vec<PyUnicastRequest>, Vec<PyDiscoveryEvent>, u64)> {
        let now = i64_arg(now, "now")?;
        let ((probes, events), seq) = self.inner.take(py, |s| {
            s.handle_timeout(now);
            let probes: Vec<_> = from_fn(|| s.poll_transmit(now)).collect();
            (probes, events_due(s, now))
        })?;
        Ok((probes_py(probes), events_py(events), seq))
    }

    /// Event `(event_id, sequence)` reached its listener. Returns whether it was the event
    /// awaited (a late or repeated report is ignored).
    fn delivered(
        &self,
        py: Python<'_>,
        event_id: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let (id, seq) = (u64_arg(event_id, "event_id")?, u64_arg(sequence, "sequence")?);
        let now = i64_arg(now, "now")?;
        self.with(py, |s| s.delivered(id, seq, now))
    }

    /// Event `(event_id, sequence)` could not be delivered: `error` is a `LeaseError`. An
    /// `IndefiniteError` sends it again after a back-off (until the registration's lease ends);
    /// any other error is a broken listener and cancels the registration. Returns whether it
    /// was the event awaited.
    fn delivery_failed(
        &self,
        py: Python<'_>,
        event_id: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
        error: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let (id, seq) = (u64_arg(event_id, "event_id")?, u64_arg(sequence, "sequence")?);
        let failure = failure_of(&from_instance(error)?);
        let now = i64_arg(now, "now")?;
        self.with(py, |s| s.delivery_failed(id, seq, failure, now))
    }

    /// The listener of event `(event_id, sequence)` does not know it (Jini
    /// `UnknownEventException`): the registration is cancelled. Returns whether it was the
    /// event awaited.
    fn unknown_event(
        &self,
        py: Python<'_>,
        event_id: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let (id, seq) = (u64_arg(event_id, "event_id")?, u64_arg(sequence, "sequence")?);
        let now = i64_arg(now, "now")?;
        self.with(py, |s| s.delivery_failed(id, seq, DeliveryFailure::UnknownEvent, now))
    }

    /// A listener's `EventReply` to an event: `delivered` or a failure as it says. Returns
    /// whether it answered the event awaited.
    fn handle_event_reply(
        &self,
        py: Python<'_>,
        reply: PyRef<'_, PyEventReply>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let now = i64_arg(now, "now")?;
        let r = &reply.0;
        self.with(py, |s| s.handle_event_reply(r, now))
    }

    // ---- the discovery protocol ----

    /// Answers a `DiscoveryRequest` (registrations are named by their lease cookie; a gone one
    /// answers an unknown-lease error). A registration it makes gets `listener`.
    #[pyo3(signature = (request, now, *, listener = None))]
    fn handle_discovery(
        &self,
        py: Python<'_>,
        request: PyRef<'_, PyDiscoveryRequest>,
        now: &Bound<'_, PyAny>,
        listener: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyDiscoveryReply> {
        let now = i64_arg(now, "now")?;
        let listener = listener.map(listener_arg).transpose()?;
        let req = &request.0;
        Ok(PyDiscoveryReply(self.answer(py, |s| discovery_reply(s, req, now, listener))?))
    }

    /// Decodes a discovery request message, answers it and returns the encoded reply (same
    /// encoding); undecodable input gets an error reply, never an exception. A registration it
    /// makes gets `listener`.
    #[pyo3(signature = (data, encoding, now, *, listener = None))]
    fn handle_discovery_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        encoding: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
        listener: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let (enc, now, data) =
            (encoding_arg(encoding)?, i64_arg(now, "now")?, bytes_arg(data, "data")?);
        let listener = listener.map(listener_arg).transpose()?;
        let out = self.answer(py, |s| discovery_bytes(s, &data, enc, now, listener))?;
        Ok(PyBytes::new(py, &out))
    }

    /// `handle_discovery_bytes` without waiting for the disk: the reply message and the journal
    /// record it depends on (send it once `wait_durable(seq)` returned; 0 in memory).
    #[pyo3(signature = (data, encoding, now, *, listener = None))]
    fn answer_discovery_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        encoding: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
        listener: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Bound<'py, PyBytes>, u64)> {
        let (enc, now, data) =
            (encoding_arg(encoding)?, i64_arg(now, "now")?, bytes_arg(data, "data")?);
        let listener = listener.map(listener_arg).transpose()?;
        let (out, seq) = self.inner.take(py, |s| discovery_bytes(s, &data, enc, now, listener))?;
        Ok((PyBytes::new(py, &out), seq))
    }

    /// `handle_bytes` (registration lease renew and cancel) without waiting for the disk: the
    /// reply message and the journal record it depends on.
    fn answer_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        encoding: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<(Bound<'py, PyBytes>, u64)> {
        let (enc, now, data) =
            (encoding_arg(encoding)?, i64_arg(now, "now")?, bytes_arg(data, "data")?);
        let (out, seq) = self.inner.take(py, |s| s.handle_bytes(&data, enc, now))?;
        Ok((PyBytes::new(py, &out), seq))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let durable = self.inner.store().is_some();
        self.with(py, |s| {
            format!(
                "DiscoveryService(id={}, registrations={}, discovered={}{})",
                s.id().0,
                s.registrations().len(),
                s.discovered().len(),
                if durable { ", durable" } else { "" }
            )
        })
    }
}

fn discovery_bytes(
    s: &mut DiscoveryService,
    data: &[u8],
    enc: Encoding,
    now: i64,
    listener: Option<Vec<u8>>,
) -> Vec<u8> {
    let limits = s.config().landlord.limits;
    match DiscoveryRequest::decode(data, enc, &limits) {
        Ok(req) => discovery_reply(s, &req, now, listener).encode(enc),
        Err(_) => s.handle_discovery_bytes(data, enc, now),
    }
}

/// The failure a listener's error means: the core's reading of an event reply's error.
fn failure_of(e: &LeaseError) -> DeliveryFailure {
    leasehold::discovery::wire::EventReplyBody::Error(WireError::from(e))
        .failure()
        .unwrap_or_else(|| DeliveryFailure::Indefinite(e.to_string()))
}

/// A registration of a `DiscoveryService` (Jini `LookupDiscoveryRegistration`). Every method
/// raises `UnknownLeaseError` (no such object) once the registration's lease expired or was
/// cancelled.
#[pyclass(frozen, module = "leasehold._native", name = "DiscoveryRegistration")]
pub struct PyDiscoveryRegistration {
    service: Py<PyDiscoveryService>,
    /// The registration's number (its events' source object).
    #[pyo3(get)]
    id: u64,
}

impl PyDiscoveryRegistration {
    /// Runs `f` on the service for this registration; the result leaves once durable.
    fn call<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut DiscoveryService, RegistrationId) -> leasehold::Result<T> + Send,
    ) -> PyResult<T> {
        let id = RegistrationId(self.id);
        self.service.bind(py).get().answer(py, |s| f(s, id))?.py(py)
    }

    /// A lease request about this registration's lease, answered by the service.
    fn lease_request(
        &self,
        py: Python<'_>,
        now: i64,
        body: impl FnOnce(leasehold::Cookie) -> RequestBody + Send,
    ) -> PyResult<ReplyBody> {
        self.call(py, |s, id| {
            let cookie = s.lease(id, now)?.cookie();
            let reply: Reply = s.handle_request(&Request { id: 0, body: body(cookie) }, now);
            match reply.body {
                ReplyBody::Error(e) => Err(e.to_error()),
                other => Ok(other),
            }
        })
    }
}

#[pymethods]
impl PyDiscoveryRegistration {
    /// The registration's lease, as the service holds it (`getLease`).
    fn lease(&self, py: Python<'_>, now: &Bound<'_, PyAny>) -> PyResult<PyLease> {
        let now = i64_arg(now, "now")?;
        self.call(py, |s, id| s.lease(id, now)).map(PyLease)
    }
    /// Its event registration, with the sequence number of the last event made so far
    /// (`getEventRegistration`).
    fn event_registration(
        &self,
        py: Python<'_>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<PyEventRegistration> {
        let now = i64_arg(now, "now")?;
        self.call(py, |s, id| s.event_registration(id, now)).map(registration)
    }
    /// The registrars discovered for it and not discarded since, in id order (`getRegistrars`).
    fn registrars(&self, py: Python<'_>, now: &Bound<'_, PyAny>) -> PyResult<Vec<PyRegistrar>> {
        let now = i64_arg(now, "now")?;
        Ok(self.call(py, |s, id| s.registrars(id, now))?.into_iter().map(PyRegistrar).collect())
    }
    /// Its groups: a frozenset of names, or None for all groups (`getGroups`).
    fn groups<'py>(
        &self,
        py: Python<'py>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyFrozenSet>>> {
        let now = i64_arg(now, "now")?;
        let g = self.call(py, |s, id| s.groups(id, now))?;
        groups_py(py, &g)
    }
    /// Its locators (`getLocators`).
    fn locators<'py>(
        &self,
        py: Python<'py>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyFrozenSet>> {
        let now = i64_arg(now, "now")?;
        let ls = self.call(py, |s, id| s.locators(id, now))?;
        locators_py(py, &ls)
    }
    /// Adds groups (`addGroups`); a registration for all groups has no set to add to
    /// (`InvalidArgumentError`).
    fn add_groups(
        &self,
        py: Python<'_>,
        groups: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (g, now) = (names_arg(groups, "groups")?, i64_arg(now, "now")?);
        self.call(py, |s, id| s.add_groups(id, g, now))
    }
    /// Replaces the groups (`setGroups`): None for all groups, an empty set for none.
    fn set_groups(
        &self,
        py: Python<'_>,
        groups: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (g, now) = (groups_arg(groups)?, i64_arg(now, "now")?);
        self.call(py, |s, id| s.set_groups(id, g, now))
    }
    /// Removes groups (`removeGroups`); names it does not hold are ignored.
    fn remove_groups(
        &self,
        py: Python<'_>,
        groups: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (g, now) = (names_arg(groups, "groups")?, i64_arg(now, "now")?);
        self.call(py, |s, id| s.remove_groups(id, g, now))
    }
    /// Adds locators (`addLocators`).
    fn add_locators(
        &self,
        py: Python<'_>,
        locators: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (l, now) = (locators_arg(locators)?, i64_arg(now, "now")?);
        self.call(py, |s, id| s.add_locators(id, l, now))
    }
    /// Replaces the locators (`setLocators`).
    fn set_locators(
        &self,
        py: Python<'_>,
        locators: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (l, now) = (locators_arg(locators)?, i64_arg(now, "now")?);
        self.call(py, |s, id| s.set_locators(id, l, now))
    }
    /// Removes locators (`removeLocators`); locators it does not hold are ignored.
    fn remove_locators(
        &self,
        py: Python<'_>,
        locators: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (l, now) = (locators_arg(locators)?, i64_arg(now, "now")?);
        self.call(py, |s, id| s.remove_locators(id, l, now))
    }
    /// Discards a registrar (`discard`): a discarded event, and the registrar becomes eligible
    /// for rediscovery. One it does not hold is ignored.
    fn discard(
        &self,
        py: Python<'_>,
        registrar: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (g, now) = (registrar_arg(registrar)?, i64_arg(now, "now")?);
        self.call(py, |s, id| s.discard(id, g, now))
    }
    /// Sets where its events go (kept durably with it; each event carries it as `listener`).
    fn set_listener(
        &self,
        py: Python<'_>,
        listener: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (l, now) = (listener_arg(listener)?, i64_arg(now, "now")?);
        self.call(py, |s, id| s.set_listener(id, l, now))
    }
    /// Where its events go (b"" if never set); None once the registration is gone (as of the
    /// service's last call).
    fn listener<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let id = RegistrationId(self.id);
        let l = self.service.bind(py).get().with(py, |s| s.listener(id).map(<[u8]>::to_vec))?;
        Ok(l.map(|l| PyBytes::new(py, &l)))
    }
    /// Renews its lease for `duration` (the service's policy decides; it may grant less);
    /// returns the granted duration.
    fn renew(
        &self,
        py: Python<'_>,
        duration: &Bound<'_, PyAny>,
        now: &Bound<'_, PyAny>,
    ) -> PyResult<i64> {
        let (d, now) = (duration_arg(duration, "duration")?, i64_arg(now, "now")?);
        match self.lease_request(py, now, |cookie| RequestBody::Renew { cookie, duration: d })? {
            ReplyBody::Renewed { duration } => Ok(duration),
            other => Err(crate::errors::to_py(
                py,
                &LeaseError::Decode(format!("renew answered {other:?}")),
            )),
        }
    }
    /// Cancels its lease: the registration ends at once, without events.
    fn cancel(&self, py: Python<'_>, now: &Bound<'_, PyAny>) -> PyResult<()> {
        let now = i64_arg(now, "now")?;
        self.lease_request(py, now, |cookie| RequestBody::Cancel { cookie }).map(|_| ())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> Py<PyAny> {
        let py = other.py();
        match other.cast::<PyDiscoveryRegistration>() {
            Ok(o) => {
                let same = o.get().id == self.id && o.get().service.is(&self.service);
                pyo3::types::PyBool::new(py, same).to_owned().into_any().unbind()
            }
            Err(_) => py.NotImplemented(),
        }
    }
    fn __hash__(&self) -> u64 {
        self.id
    }
    fn __repr__(&self) -> String {
        format!("DiscoveryRegistration(id={})", self.id)
    }
}
