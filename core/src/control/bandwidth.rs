//! Measured transfer bandwidths, so the live staging model (which refines
//! the profile's bandwidths from measured transfers) plans with what the links really deliver
//! instead of the profile's numbers. Agents report, with each run, the bytes and
//! milliseconds they spent fetching from or storing to each endpoint (`manager`,
//! `http://host:port`, `sftp://host:port`, `store:NAME`); the manager keeps, per platform
//! × endpoint, the last [`WINDOW`] transfers big enough to measure a rate, and estimates
//! the bandwidth as their bytes over their seconds (a throughput, not a mean of rates, so
//! one slow small transfer does not dominate). Rebuilt from `attempt_staging` at start-up.

use hetpilot_protocol::files::Transfer;
use hetpilot_protocol::views::BandwidthRow;
use std::collections::{BTreeMap, VecDeque};

/// Transfers kept per platform × endpoint: recent enough to follow a link that changed,
/// many enough that one congested transfer moves the estimate by ~1/64.
pub(crate) const WINDOW: usize = 64;
/// Transfers smaller than this are dominated by latency, not bandwidth: left out.
pub(crate) const MIN_BYTES: u64 = 64 * 1024;

const MIB: f64 = 1024.0 * 1024.0;

/// The last transfers between one platform and one endpoint.
#[derive(Debug, Default)]
struct Window {
    samples: VecDeque<(u64, f64)>,
    bytes: u64,
    seconds: f64,
    /// Every transfer ever counted (the window keeps only the last [`WINDOW`]).
    total: u64,
}

impl Window {
    fn add(&mut self, bytes: u64, seconds: f64) {
        self.samples.push_back((bytes, seconds));
        self.bytes += bytes;
        self.seconds += seconds;
        self.total += 1;
        if self.samples.len() > WINDOW {
            let (b, s) = self.samples.pop_front().expect("longer than the window");
            self.bytes -= b;
            self.seconds -= s;
        }
    }

    /// Bytes per second over the window.
    fn rate(&self) -> f64 {
        self.bytes as f64 / self.seconds
    }
}

/// Measured bandwidths per platform × endpoint.
#[derive(Debug, Default)]
pub(crate) struct Bandwidths {
    windows: BTreeMap<(String, String), Window>,
}

impl Bandwidths {
    /// Counts one run's transfers with one endpoint, made by an agent of `platform`.
    pub(crate) fn add(&mut self, platform: &str, t: &Transfer) {
        let seconds = t.ms / 1000.0;
        if t.bytes < MIN_BYTES || !(seconds.is_finite() && seconds > 0.0) {
            return;
        }
        self.windows
            .entry((platform.to_string(), t.endpoint.clone()))
            .or_default()
            .add(t.bytes, seconds);
    }

    /// The measured bandwidth (bytes/s) between `platform` and `endpoint`.
    #[cfg(test)]
    pub(crate) fn between(&self, platform: &str, endpoint: &str) -> Option<f64> {
        self.windows
            .get(&(platform.to_string(), endpoint.to_string()))
            .map(Window::rate)
    }

    /// The measured bandwidth (bytes/s) of `platform`'s transfers with every endpoint in
    /// `endpoints` together, weighting each window by what it moved.
    pub(crate) fn link(&self, platform: &str, endpoints: &[&str]) -> Option<f64> {
        let (bytes, seconds) = endpoints
            .iter()
            .filter_map(|e| self.windows.get(&(platform.to_string(), e.to_string())))
            .fold((0u64, 0.0), |(b, s), w| (b + w.bytes, s + w.seconds));
        (seconds > 0.0).then(|| bytes as f64 / seconds)
    }

    /// The fastest rate any platform measured from `endpoint` (bytes/s): the endpoint's
    /// own I/O bandwidth is at least that.
    pub(crate) fn fastest_from(&self, endpoint: &str) -> Option<f64> {
        self.windows
            .iter()
            .filter(|((_, e), _)| e == endpoint)
            .map(|(_, w)| w.rate())
            .max_by(f64::total_cmp)
    }

    /// One row per platform × endpoint, for `hetpilot bandwidths`.
    pub(crate) fn rows(&self) -> Vec<BandwidthRow> {
        self.windows
            .iter()
            .map(|((platform, endpoint), w)| BandwidthRow {
                platform: platform.clone(),
                endpoint: endpoint.clone(),
                transfers: w.total,
                window_bytes: w.bytes,
                mib_per_s: w.rate() / MIB,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(endpoint: &str, bytes: u64, ms: f64) -> Transfer {
        Transfer {
            endpoint: endpoint.into(),
            bytes,
            ms,
            mib_per_s: 0.0,
        }
    }

    #[test]
    fn estimate_is_bytes_over_seconds_and_ignores_unmeasurable_transfers() {
        let mut b = Bandwidths::default();
        b.add("fast", &transfer("manager", 10 << 20, 100.0));
        b.add("fast", &transfer("manager", 30 << 20, 100.0));
        b.add("fast", &transfer("manager", 1024, 0.001));
        b.add("fast", &transfer("manager", 1 << 20, 0.0));
        let rate = b.between("fast", "manager").unwrap();
        assert!((rate / MIB - 200.0).abs() < 1e-9, "{}", rate / MIB);
        assert_eq!(b.rows()[0].transfers, 2);
        assert_eq!(b.between("slow", "manager"), None);
        assert_eq!(b.between("fast", "store:s"), None);
    }

    #[test]
    fn window_forgets_old_transfers() {
        let mut b = Bandwidths::default();
        for _ in 0..WINDOW {
            b.add("p", &transfer("manager", 1 << 20, 1000.0));
        }
        assert!((b.between("p", "manager").unwrap() / MIB - 1.0).abs() < 1e-9);
        for _ in 0..WINDOW {
            b.add("p", &transfer("manager", 8 << 20, 1000.0));
        }
        assert!((b.between("p", "manager").unwrap() / MIB - 8.0).abs() < 1e-9);
        assert_eq!(b.rows()[0].transfers, 2 * WINDOW as u64);
    }

    #[test]
    fn link_pools_endpoints_and_storage_takes_the_fastest_platform() {
        let mut b = Bandwidths::default();
        b.add("p", &transfer("manager", 4 << 20, 1000.0));
        b.add("p", &transfer("store:s", 12 << 20, 1000.0));
        b.add("q", &transfer("manager", 40 << 20, 1000.0));
        let link = b.link("p", &["manager", "store:s"]).unwrap();
        assert!((link / MIB - 8.0).abs() < 1e-9);
        assert_eq!(b.link("p", &["sftp://h:22"]), None);
        assert!((b.fastest_from("manager").unwrap() / MIB - 40.0).abs() < 1e-9);
    }
}
