//! Event metrics: counters and histograms updated on the manager's request paths.

use hetpilot_protocol::protocol::{Outcome, TaskResult};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PlatformLabel {
    pub platform: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CompletionLabels {
    pub platform: String,
    /// `success`, `failed`, `signaled`, `timed_out`, `spawn_error`.
    pub outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The route's pattern (`/v1/agents/{agent}/pull`), `unmatched` for others.
    pub route: String,
    pub method: &'static str,
    pub status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    pub route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PlanLabel {
    /// `het-hps` (a staging plan), `round` (a whole scheduling round), or one of its
    /// steps: `two-level` (both levels and the lease plan), `tlpa`, `demand`.
    pub planner: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// 100 µs .. ~50 s.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.5, 15))
}

/// 1 ms .. ~5 h.
fn wall_time() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 3.0, 16))
}

/// 1 s .. ~18 days.
fn queue_wait() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 3.0, 14))
}

/// The event metrics and the registry that exposes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    leased: Family<PlatformLabel, Counter>,
    completed: Family<CompletionLabels, Counter>,
    lease_latency: Histograms<PlatformLabel>,
    wall: Histograms<PlatformLabel>,
    /// Staging bytes per platform: fetched, cached, stored (only reports with files
    /// touch them), and planned (predicted by the Het-HPS plans installed); exposed at
    /// scrape time.
    staging_bytes: Mutex<BTreeMap<String, [u64; 4]>>,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: Histograms<RouteLabel>,
    store_commit: Histogram,
    planning: Histograms<PlanLabel>,
    pilot_start_wait: Histograms<PlatformLabel>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("hetpilot");
        let m = Metrics {
            leased: Family::default(),
            completed: Family::default(),
            lease_latency: Family::new_with_constructor(latency),
            wall: Family::new_with_constructor(wall_time),
            staging_bytes: Mutex::default(),
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(latency),
            store_commit: latency(),
            planning: Family::new_with_constructor(latency),
            pilot_start_wait: Family::new_with_constructor(queue_wait),
            registry: Registry::default(),
        };
        registry.register(
            "tasks_leased",
            "Tasks leased to agents (dispatch), by platform",
            m.leased.clone(),
        );
        registry.register(
            "tasks_completed",
            "Task attempts reported ended, by platform and outcome",
            m.completed.clone(),
        );
        registry.register(
            "lease_latency_seconds",
            "From an agent's pull to its answer carrying tasks (waiting and commit included)",
            m.lease_latency.clone(),
        );
        registry.register(
            "task_wall_seconds",
            "Wall-clock time of reported task runs, by platform",
            m.wall.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests answered, by route pattern, method and status",
            m.http_requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer HTTP requests, by route pattern (long polls included)",
            m.http_duration.clone(),
        );
        registry.register(
            "store_commit_seconds",
            "Time for leases and results to be committed in SQLite (queueing included)",
            m.store_commit.clone(),
        );
        registry.register(
            "planning_seconds",
            "Time to compute a scheduling round or a Het-HPS staging plan",
            m.planning.clone(),
        );
        registry.register(
            "pilot_start_wait_seconds",
            "Batch-queue wait of pilots whose job started (submission to start), by platform",
            m.pilot_start_wait.clone(),
        );
        Metrics { registry, ..m }
    }
}

/// What one agent report adds to the metrics, counted before its results are consumed
/// and applied once they are committed.
#[derive(Debug, Default)]
pub struct ReportSummary {
    outcomes: [u64; 5],
    wall_s: Vec<f64>,
    fetched: u64,
    cached: u64,
    stored: u64,
}

const OUTCOMES: [&str; 5] = ["success", "failed", "signaled", "timed_out", "spawn_error"];

impl ReportSummary {
    /// The results a report recorded (its duplicates left out).
    pub fn of<'a>(recorded: impl Iterator<Item = &'a TaskResult>) -> Self {
        let mut s = ReportSummary::default();
        for r in recorded {
            let i = match r.outcome {
                Outcome::Success => 0,
                Outcome::Failed => 1,
                Outcome::Signaled => 2,
                Outcome::TimedOut => 3,
                Outcome::SpawnError => 4,
            };
            s.outcomes[i] += 1;
            let wall = r.measurements.wall_ms / 1000.0;
            if wall.is_finite() && wall >= 0.0 {
                s.wall_s.push(wall);
            }
            if let Some(st) = &r.staging {
                s.fetched = s.fetched.saturating_add(st.bytes_fetched);
                s.cached = s.cached.saturating_add(st.bytes_cached);
                s.stored = s.stored.saturating_add(st.bytes_uploaded);
            }
        }
        s
    }
}

impl Metrics {
    /// Writes every event metric (without the closing `# EOF`).
    pub fn encode(&self, out: &mut String) -> std::fmt::Result {
        prometheus_client::encoding::text::encode_registry(out, &self.registry)
    }

    /// A pull answered with `tasks` leases, `waited` after it arrived.
    pub fn leased(&self, platform: &str, tasks: usize, waited: Duration) {
        let label = PlatformLabel {
            platform: platform.to_string(),
        };
        self.leased.get_or_create(&label).inc_by(tasks as u64);
        self.lease_latency
            .get_or_create(&label)
            .observe(waited.as_secs_f64());
    }

    /// A pilot's batch job started `waited` after it was submitted.
    pub fn pilot_started(&self, platform: &str, waited: Duration) {
        let label = PlatformLabel {
            platform: platform.to_string(),
        };
        self.pilot_start_wait
            .get_or_create(&label)
            .observe(waited.as_secs_f64());
    }

    /// A report's results were committed.
    pub fn reported(&self, platform: &str, summary: &ReportSummary) {
        for (n, outcome) in summary.outcomes.iter().zip(OUTCOMES) {
            if *n > 0 {
                let label = CompletionLabels {
                    platform: platform.to_string(),
                    outcome,
                };
                self.completed.get_or_create(&label).inc_by(*n);
            }
        }
        if !summary.wall_s.is_empty() {
            let wall = self.wall.get_or_create(&PlatformLabel {
                platform: platform.to_string(),
            });
            for w in &summary.wall_s {
                wall.observe(*w);
            }
        }
        if summary.fetched + summary.cached + summary.stored > 0 {
            let mut map = self.staging_bytes.lock().unwrap_or_else(|p| p.into_inner());
            let row = map.entry(platform.to_string()).or_default();
            for (total, add) in
                row.iter_mut()
                    .zip([summary.fetched, summary.cached, summary.stored])
            {
                *total = total.saturating_add(add);
            }
        }
    }

    /// A Het-HPS plan was installed that predicts `bytes` of staging per platform.
    pub fn staging_planned(&self, bytes: &[(String, u64)]) {
        let mut map = self.staging_bytes.lock().unwrap_or_else(|p| p.into_inner());
        for (platform, b) in bytes {
            let row = map.entry(platform.clone()).or_default();
            row[3] = row[3].saturating_add(*b);
        }
    }

    /// Bytes of task staging on each platform: fetched, cached, stored (moved), and
    /// planned (predicted by Het-HPS plans).
    pub fn staging_totals(&self) -> BTreeMap<String, [u64; 4]> {
        self.staging_bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// An HTTP request was answered.
    pub fn http(&self, route: &str, method: &'static str, status: u16, took: Duration) {
        let labels = HttpLabels {
            route: route.to_string(),
            method,
            status,
        };
        self.http_requests.get_or_create(&labels).inc();
        self.http_duration
            .get_or_create(&RouteLabel {
                route: labels.route,
            })
            .observe(took.as_secs_f64());
    }

    /// Leases or results were committed after `took`.
    pub fn store_commit(&self, took: Duration) {
        self.store_commit.observe(took.as_secs_f64());
    }

    /// A scheduling round (`round`) or a staging plan (`het-hps`) took `took`.
    pub fn planned(&self, planner: &'static str, took: Duration) {
        self.planning
            .get_or_create(&PlanLabel { planner })
            .observe(took.as_secs_f64());
    }
}
