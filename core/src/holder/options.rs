//! A renewal manager's settings in the data form (see [`crate::machine`]): what a binding reads
//! from its host's options object and turns into a [`RenewalManagerConfig`].

use serde::Deserialize;

use super::RenewalManagerConfig;
use crate::error::Result;
use crate::time::Duration;

/// A renewal manager's settings (data form); each one not given keeps the default of
/// [`RenewalManagerConfig::default`]. Unknown names are refused.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(optional_fields))]
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerOptions {
    /// [`RenewalManagerConfig::batch_window`].
    #[serde(default)]
    pub batch_window: Option<Duration>,
    /// [`RenewalManagerConfig::batch_join_after`].
    #[serde(default)]
    pub batch_join_after: Option<f64>,
    /// [`RenewalManagerConfig::max_batch`].
    #[serde(default)]
    pub max_batch: Option<usize>,
    /// [`RenewalManagerConfig::initial_rtt`].
    #[serde(default)]
    pub initial_rtt: Option<Duration>,
    /// [`RenewalManagerConfig::min_rto`].
    #[serde(default)]
    pub min_rto: Option<Duration>,
    /// [`RenewalManagerConfig::max_rto`].
    #[serde(default)]
    pub max_rto: Option<Duration>,
    /// [`RenewalManagerConfig::attempts`].
    #[serde(default)]
    pub attempts: Option<u32>,
    /// [`RenewalManagerConfig::renew_divisor`].
    #[serde(default)]
    pub renew_divisor: Option<u32>,
    /// [`RenewalManagerConfig::max_retry_interval`].
    #[serde(default)]
    pub max_retry_interval: Option<Duration>,
    /// [`RenewalManagerConfig::max_clock_drift_ppm`].
    #[serde(default)]
    pub max_clock_drift_ppm: Option<u32>,
    /// [`RenewalManagerConfig::first_request_id`].
    #[serde(default)]
    pub first_request_id: Option<u64>,
    /// [`RenewalManagerConfig::report_renewals`].
    #[serde(default)]
    pub report_renewals: Option<bool>,
}

impl ManagerOptions {
    /// The configuration these settings make, checked.
    pub fn config(self) -> Result<RenewalManagerConfig> {
        let d = RenewalManagerConfig::default();
        let c = RenewalManagerConfig {
            batch_window: self.batch_window.unwrap_or(d.batch_window),
            batch_join_after: self.batch_join_after.unwrap_or(d.batch_join_after),
            max_batch: self.max_batch.unwrap_or(d.max_batch),
            initial_rtt: self.initial_rtt.unwrap_or(d.initial_rtt),
            min_rto: self.min_rto.unwrap_or(d.min_rto),
            max_rto: self.max_rto.unwrap_or(d.max_rto),
            attempts: self.attempts.unwrap_or(d.attempts),
            renew_divisor: self.renew_divisor.unwrap_or(d.renew_divisor),
            max_retry_interval: self.max_retry_interval.unwrap_or(d.max_retry_interval),
            max_clock_drift_ppm: self.max_clock_drift_ppm.unwrap_or(d.max_clock_drift_ppm),
            first_request_id: self.first_request_id.unwrap_or(d.first_request_id),
            report_renewals: self.report_renewals.unwrap_or(d.report_renewals),
        };
        c.validate()?;
        Ok(c)
    }
}
