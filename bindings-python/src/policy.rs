//! `Policy`: any built-in grant policy, as data (core's `PolicySpec`).

use leasehold::policy::{AdaptiveConfig, PolicySpec};
use leasehold::LeaseError;
use pyo3::prelude::*;

use crate::convert::{duration_arg, text_arg, u64_arg, usize_arg};
use crate::errors::{to_py, IntoPyResult};

/// A grant policy. Build one with the static constructors; it is checked when built.
#[pyclass(frozen, module = "leasehold._native", name = "Policy")]
#[derive(Clone)]
pub struct PyPolicy(pub PolicySpec);

/// Deepest nesting of capacity policies accepted (each level is one more recursion in core).
const MAX_NESTING: usize = 32;

fn depth(spec: &PolicySpec) -> usize {
    let mut d = 1;
    let mut s = spec;
    while let PolicySpec::Capacity { inner, .. } = s {
        d += 1;
        s = inner;
    }
    d
}

fn checked(py: Python<'_>, spec: PolicySpec) -> PyResult<PyPolicy> {
    if depth(&spec) > MAX_NESTING {
        return Err(to_py(
            py,
            &LeaseError::InvalidArgument(format!("policies nest at most {MAX_NESTING} deep")),
        ));
    }
    spec.build().py(py)?;
    Ok(PyPolicy(spec))
}

fn f64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!("{what} must be a number")));
    }
    obj.extract::<f64>()
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("{what} must be a number")))
}

#[pymethods]
impl PyPolicy {
    /// Every request gets `duration` (or less, if less was asked).
    #[staticmethod]
    fn fixed(py: Python<'_>, duration: &Bound<'_, PyAny>) -> PyResult<Self> {
        checked(py, PolicySpec::Fixed { duration: duration_arg(duration, "duration")? })
    }

    /// ANY gets `default`; anything else min(request, `max`) (LeaseDurationPolicy).
    #[staticmethod]
    fn bounded(
        py: Python<'_>,
        max: &Bound<'_, PyAny>,
        default: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        checked(
            py,
            PolicySpec::Bounded {
                max: duration_arg(max, "max")?,
                default: duration_arg(default, "default")?,
            },
        )
    }

    /// Denies new leases once `max_leases` are live; durations come from `inner`.
    #[staticmethod]
    fn capacity(
        py: Python<'_>,
        max_leases: &Bound<'_, PyAny>,
        inner: PyRef<'_, PyPolicy>,
    ) -> PyResult<Self> {
        checked(
            py,
            PolicySpec::Capacity {
                max_leases: usize_arg(max_leases, "max_leases")?,
                inner: Box::new(inner.0.clone()),
            },
        )
    }

    /// Offers fall linearly from `max` (empty) to `min` (at `capacity` leases); beyond capacity, denied.
    #[staticmethod]
    fn resource_aware(
        py: Python<'_>,
        capacity: &Bound<'_, PyAny>,
        max: &Bound<'_, PyAny>,
        min: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        checked(
            py,
            PolicySpec::ResourceAware {
                capacity: usize_arg(capacity, "capacity")?,
                max: duration_arg(max, "max")?,
                min: duration_arg(min, "min")?,
            },
        )
    }

    /// The adaptive policy: L_G = N / G, denied above L_MAX, clamped to L_MIN, budget shared by N_D grantors.
    #[staticmethod]
    #[pyo3(signature = (renewals_per_second, min, max, grantors = None))]
    fn adaptive(
        py: Python<'_>,
        renewals_per_second: &Bound<'_, PyAny>,
        min: &Bound<'_, PyAny>,
        max: &Bound<'_, PyAny>,
        grantors: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let grantors = match grantors {
            Some(g) => u32::try_from(u64_arg(g, "grantors")?)
                .map_err(|_| pyo3::exceptions::PyValueError::new_err("grantors is too large"))?,
            None => 1,
        };
        checked(
            py,
            PolicySpec::Adaptive(AdaptiveConfig {
                renewals_per_second: f64_arg(renewals_per_second, "renewals_per_second")?,
                min: duration_arg(min, "min")?,
                max: duration_arg(max, "max")?,
                grantors,
            }),
        )
    }

    /// The adaptive policy with G from a bandwidth budget: G = B / (S_R + S_G).
    #[staticmethod]
    #[pyo3(signature = (bytes_per_second, request_size, grant_size, min, max, grantors = None))]
    fn adaptive_from_bandwidth(
        py: Python<'_>,
        bytes_per_second: &Bound<'_, PyAny>,
        request_size: &Bound<'_, PyAny>,
        grant_size: &Bound<'_, PyAny>,
        min: &Bound<'_, PyAny>,
        max: &Bound<'_, PyAny>,
        grantors: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut c = AdaptiveConfig::from_bandwidth(
            f64_arg(bytes_per_second, "bytes_per_second")?,
            f64_arg(request_size, "request_size")?,
            f64_arg(grant_size, "grant_size")?,
            duration_arg(min, "min")?,
            duration_arg(max, "max")?,
        )
        .py(py)?;
        if let Some(g) = grantors {
            c.grantors = u32::try_from(u64_arg(g, "grantors")?)
                .map_err(|_| pyo3::exceptions::PyValueError::new_err("grantors is too large"))?;
        }
        checked(py, PolicySpec::Adaptive(c))
    }

    /// Reads a policy from its JSON form (`{"kind":"bounded","max":60000,"default":30000}`).
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Self> {
        let text = text_arg(text, "policy JSON")?;
        if text.len() > 64 * 1024 {
            return Err(to_py(py, &LeaseError::Decode("policy JSON is longer than 64 KiB".into())));
        }
        let spec: PolicySpec = serde_json::from_str(&text)
            .map_err(|e| to_py(py, &LeaseError::Decode(format!("policy JSON: {e}"))))?;
        checked(py, spec)
    }

    /// The JSON form of the policy.
    fn to_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }

    /// Which policy: "fixed", "bounded", "capacity", "resource_aware" or "adaptive".
    #[getter]
    fn kind(&self) -> &'static str {
        match self.0 {
            PolicySpec::Fixed { .. } => "fixed",
            PolicySpec::Bounded { .. } => "bounded",
            PolicySpec::Capacity { .. } => "capacity",
            PolicySpec::ResourceAware { .. } => "resource_aware",
            PolicySpec::Adaptive(_) => "adaptive",
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<PyPolicy>() {
            Ok(o) => {
                Ok(pyo3::types::PyBool::new(py, self.0 == o.get().0).to_owned().into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    fn __repr__(&self) -> String {
        format!("Policy.from_json('{}')", self.to_json())
    }
}
