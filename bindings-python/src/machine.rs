//! One Python class per sans-I/O part, written once over the core's
//! [`leasehold::machine::Machine`]: `machine_class!(PyIt, CoreType, "ItMachine")` makes the
//! native class with the constructor (`**options` as data), `open` (kept in a directory),
//! `restore`/`snapshot`, `handle(input, now)` (every call of the part, as data), the timer,
//! `poll_transmit`, `poll_event`, `take_due` and the durable methods. The user-facing class in
//! `python/leasehold/` names the calls (a table of ops) and stays idiomatic.
//!
//! The lock discipline of [`crate::guard`] holds: arguments become core values before the lock
//! is taken, answers become Python objects after it is released; nothing under the lock runs
//! Python code.

use leasehold::machine::{Machine, Stored as CoreStored};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyList, PyString};

use crate::convert::Now;
use crate::data::{from_py, to_py};
use crate::errors::IntoPyResult;
use crate::guard::Guarded;
use crate::landlord::seed_arg;
use crate::store::{path_arg, store_config, Backend, OpenArgs, Store};

/// The options of a call: a dict of settings (None and absent are the same).
fn options<M: Machine>(py: Python<'_>, o: Option<&Bound<'_, PyDict>>) -> PyResult<M::Options> {
    let d = PyDict::new(py);
    if let Some(o) = o {
        for (k, v) in o.iter() {
            if !v.is_none() {
                d.set_item(k, v)?;
            }
        }
    }
    from_py(d.as_any())
}

/// Keyword settings as the data an options struct reads: ints, bools, bytes and text as they
/// are, dicts read the same way, None left out; any other value sends them all through
/// `leasehold._machine.settings`
/// (`timedelta` as ms, `Policy` and `Limits` as their data, dicts within too).
pub fn settings<'py>(
    py: Python<'py>,
    s: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    static SETTINGS: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    let d = PyDict::new(py);
    for (k, v) in s.into_iter().flat_map(|s| s.iter()) {
        if v.is_instance_of::<PyInt>()
            || v.is_instance_of::<PyBytes>()
            || v.is_instance_of::<PyString>()
        {
            d.set_item(k, v)?;
        } else if let Ok(inner) = v.cast::<PyDict>() {
            d.set_item(k, settings(py, Some(inner))?)?;
        } else if !v.is_none() {
            let f = SETTINGS.import(py, "leasehold._machine", "settings")?;
            return Ok(f.call((), s)?.cast_into::<PyDict>()?);
        }
    }
    Ok(d)
}

/// A new part in memory.
pub fn create<M: Machine + Send>(
    py: Python<'_>,
    o: Option<&Bound<'_, PyDict>>,
) -> PyResult<Backend<M>> {
    let m = M::create(options::<M>(py, o)?, seed_arg(py, None)?).py(py)?;
    Ok(Backend::Memory(Guarded::new(m)))
}

/// A part rebuilt from `snapshot()` text.
pub fn restore<M: Machine + Send>(
    py: Python<'_>,
    snapshot: &Bound<'_, PyAny>,
    now: Now,
    o: Option<&Bound<'_, PyDict>>,
) -> PyResult<Backend<M>> {
    let text = snapshot.cast::<PyString>()?.to_cow()?.into_owned();
    let m = M::restore(options::<M>(py, o)?, &text, now.0).py(py)?;
    Ok(Backend::Memory(Guarded::new(m)))
}

/// A part kept in the directory `data_dir`: created with `options` if there is none, else
/// recovered and given `options` again (journaled).
pub fn open<M: CoreStored + Send>(
    py: Python<'_>,
    data_dir: &Bound<'_, PyAny>,
    now: Now,
    store: (Option<&Bound<'_, PyAny>>, Option<&Bound<'_, PyAny>>),
    o: Option<&Bound<'_, PyDict>>,
) -> PyResult<Backend<M>> {
    let path = path_arg(data_dir)?;
    let (fresh, again) = (options::<M>(py, o)?, options::<M>(py, o)?);
    let seed = seed_arg(py, None)?;
    let store = store_config(store.0, store.1)?;
    let holds: (&'static str, fn(&M) -> usize) = (M::HOLDS, M::held);
    let st = Store::open(py, OpenArgs { path, store, now: now.0, holds }, move |snapshot| {
        M::from_store(snapshot, fresh, seed)
    })?;
    st.answer(py, move |s| s.reconfigure(again))?.py(py)?;
    Ok(Backend::Durable(Box::new(st)))
}

/// `handle(input, now)`: the part's answer, once it may leave (durable, for a stored part
/// whose answer leaves the process).
pub fn handle<'py, M: CoreStored + Send>(
    b: &Backend<M>,
    py: Python<'py>,
    input: &Bound<'_, PyAny>,
    now: Now,
) -> PyResult<Bound<'py, PyAny>> {
    let input: M::Input = from_py(input)?;
    let out = if M::leaves(&input) {
        b.answer(py, false, |s| s.handle(input, now.0))
    } else {
        b.with(py, |s| s.handle(input, now.0))
    };
    to_py(py, &out?.py(py)?)
}

/// `handle_nowait(input, now)`: the answer and the journal record it depends on, without
/// waiting for the disk (send it once `wait_durable(seq)` returned).
pub fn handle_nowait<'py, M: CoreStored + Send>(
    b: &Backend<M>,
    py: Python<'py>,
    input: &Bound<'_, PyAny>,
    now: Now,
) -> PyResult<(Bound<'py, PyAny>, u64)> {
    let input: M::Input = from_py(input)?;
    let (out, seq) = b.take(py, |s| s.handle(input, now.0))?;
    Ok((to_py(py, &out.py(py)?)?, seq))
}

/// `take_due(now)`: `handle_timeout(now)`, then every transmission and every event due, and
/// the journal record they depend on (act on them once it is durable).
pub fn take_due<'py, M: CoreStored + Send>(
    b: &Backend<M>,
    py: Python<'py>,
    now: Now,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>, u64)> {
    let ((out, events), seq) = b.take(py, |s| {
        s.handle_timeout(now.0);
        let out: Vec<_> = std::iter::from_fn(|| s.poll_transmit(now.0)).collect();
        (out, std::iter::from_fn(|| s.poll_event(now.0)).collect::<Vec<_>>())
    })?;
    let list = |v: Vec<Bound<'py, PyAny>>| PyList::new(py, v);
    let out = list(out.iter().map(|t| to_py(py, t)).collect::<PyResult<_>>()?)?;
    Ok((out, list(events.iter().map(|e| to_py(py, e)).collect::<PyResult<_>>()?)?, seq))
}

/// The native class of a part: see the module docs.
macro_rules! machine_class {
    ($cls:ident, $t:ty, $name:literal) => {
        #[doc = concat!("The native `", stringify!($t), "` (see `leasehold` for the class users call).")]
        #[pyo3::pyclass(frozen, module = "leasehold._native", name = $name)]
        pub struct $cls(pub $crate::store::Backend<$t>);

        impl $crate::store::Stored for $cls {
            type State = $t;
            fn backend(&self) -> &$crate::store::Backend<$t> {
                &self.0
            }
        }

        $crate::store::durable_methods!($cls);

        #[pyo3::pymethods]
        impl $cls {
            /// A new part; the settings as keyword arguments (data).
            #[new]
            #[pyo3(signature = (**options))]
            fn new(py: Python<'_>, options: Option<&Bound<'_, pyo3::types::PyDict>>) -> PyResult<Self> {
                $crate::machine::create(py, options).map($cls)
            }
            /// Opens (or creates) the part kept in `data_dir`, resumed at `now`.
            #[staticmethod]
            #[pyo3(signature = (data_dir, now, *, segment_bytes = None, min_compact_bytes = None, **options))]
            fn open(
                py: Python<'_>,
                data_dir: &Bound<'_, PyAny>,
                now: $crate::convert::Now,
                segment_bytes: Option<&Bound<'_, PyAny>>,
                min_compact_bytes: Option<&Bound<'_, PyAny>>,
                options: Option<&Bound<'_, pyo3::types::PyDict>>,
            ) -> PyResult<Self> {
                let store = (segment_bytes, min_compact_bytes);
                $crate::machine::open(py, data_dir, now, store, options).map($cls)
            }
            /// Rebuilds a part from `snapshot()` text at `now`, with its settings.
            #[staticmethod]
            #[pyo3(signature = (snapshot, now, **options))]
            fn restore(
                py: Python<'_>,
                snapshot: &Bound<'_, PyAny>,
                now: $crate::convert::Now,
                options: Option<&Bound<'_, pyo3::types::PyDict>>,
            ) -> PyResult<Self> {
                $crate::machine::restore(py, snapshot, now, options).map($cls)
            }
            /// Everything it holds at `now`, as JSON text (it holds secrets).
            fn snapshot(&self, py: Python<'_>, now: $crate::convert::Now) -> PyResult<String> {
                self.0.answer(py, false, |s| leasehold::machine::Machine::snapshot(s, now.0))
            }
            /// Carries out one call (data, tagged by `op`) and returns its answer (data).
            fn handle<'py>(
                &self,
                py: Python<'py>,
                input: &Bound<'_, PyAny>,
                now: $crate::convert::Now,
            ) -> PyResult<Bound<'py, PyAny>> {
                $crate::machine::handle(&self.0, py, input, now)
            }
            /// `handle` without waiting for the disk: the answer and the record it depends on.
            fn handle_nowait<'py>(
                &self,
                py: Python<'py>,
                input: &Bound<'_, PyAny>,
                now: $crate::convert::Now,
            ) -> PyResult<(Bound<'py, PyAny>, u64)> {
                $crate::machine::handle_nowait(&self.0, py, input, now)
            }
            /// When to call `handle_timeout` next (ms), or None.
            fn poll_timeout(&self, py: Python<'_>) -> PyResult<Option<i64>> {
                self.0.with(py, |s| leasehold::machine::Machine::poll_timeout(s))
            }
            /// Advances the part to `now`.
            fn handle_timeout(&self, py: Python<'_>, now: $crate::convert::Now) -> PyResult<()> {
                self.0.with(py, |s| leasehold::machine::Machine::handle_timeout(s, now.0))
            }
            /// The next transmission (data), or None; it leaves once durable.
            fn poll_transmit<'py>(
                &self,
                py: Python<'py>,
                now: $crate::convert::Now,
            ) -> PyResult<Option<Bound<'py, PyAny>>> {
                let t = self.0.answer(py, false, |s| leasehold::machine::Machine::poll_transmit(s, now.0))?;
                t.map(|t| $crate::data::to_py(py, &t)).transpose()
            }
            /// The next event (data), or None; it leaves once durable.
            fn poll_event<'py>(
                &self,
                py: Python<'py>,
                now: $crate::convert::Now,
            ) -> PyResult<Option<Bound<'py, PyAny>>> {
                let e = self.0.answer(py, false, |s| leasehold::machine::Machine::poll_event(s, now.0))?;
                e.map(|e| $crate::data::to_py(py, &e)).transpose()
            }
            /// `handle_timeout(now)`, then every transmission and event due, and the journal
            /// record they depend on: `(transmits, events, seq)`.
            fn take_due<'py>(
                &self,
                py: Python<'py>,
                now: $crate::convert::Now,
            ) -> PyResult<(Bound<'py, pyo3::types::PyList>, Bound<'py, pyo3::types::PyList>, u64)> {
                $crate::machine::take_due(&self.0, py, now)
            }
        }
    };
}
pub(crate) use machine_class;
