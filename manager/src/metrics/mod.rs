//! Prometheus metrics of the live manager (`GET /metrics`, see `server::metrics`).
//!
//! Two kinds. *Events* (tasks leased and completed, lease latency, task wall time,
//! staging bytes, HTTP requests, store commits, scheduling rounds and staging plans) are
//! counters and histograms updated where they happen: a few atomic additions per pull or
//! report, with labels bounded by platforms, outcomes and routes (never a task id), so
//! they cost the dispatch path nothing it would notice. *States* (tasks by state, agents,
//! pilots, fairness, fairshare, bandwidths) are read from the manager's views at scrape
//! time (`server::metrics_state`), so keeping them costs nothing between scrapes. This
//! module is a leaf: the service updates it, the server reads it.

mod events;

pub use events::{Metrics, ReportSummary};

/// The content type of the exposition (OpenMetrics text, which Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
