//! State metrics, read from the manager's views at scrape time: tasks by state, agents
//! and pilots by state, agents' GPUs and named counts used and free, pilots' batch-queue
//! waits, the allocation and its fairness, fairshare usage and priority, staging bytes and
//! measured bandwidths.

use super::metrics_resources;
use crate::control::allocation_fairness;
use crate::service::{now_ms, Manager, Principal, ServiceError};
use hetpilot_protocol::pilots::PilotState;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

/// At most this many applications get their own `hetpilot_tasks` series (the newest
/// unfinished ones); `hetpilot_user_tasks` counts every application.
pub const MAX_APP_SERIES: usize = 500;

/// The principal the scrape reads the views as: an admin no user can be named after
/// (user names are login names).
const SCRAPER: &str = "<metrics>";

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AppTaskLabels {
    app: String,
    user: String,
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UserStateLabels {
    user: String,
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlatformStateLabels {
    platform: String,
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlatformLabel {
    platform: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UserLabel {
    user: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AppPlatformLabels {
    app: String,
    user: String,
    platform: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StagingLabels {
    platform: String,
    /// `fetched`, `cached` (found in a node's cache) or `stored` (uploaded).
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BandwidthLabels {
    platform: String,
    endpoint: String,
}

/// Everything `GET /metrics` answers: the event metrics, then the state metrics.
pub fn exposition(manager: &Manager) -> Result<String, ServiceError> {
    let mut out = String::with_capacity(16 * 1024);
    let fmt_err = |_| ServiceError::BadRequest("metrics could not be encoded".into());
    manager.metrics.encode(&mut out).map_err(fmt_err)?;
    let registry = state_registry(manager)?;
    prometheus_client::encoding::text::encode_registry(&mut out, &registry).map_err(fmt_err)?;
    prometheus_client::encoding::text::encode_eof(&mut out).map_err(fmt_err)?;
    Ok(out)
}

fn state_registry(m: &Manager) -> Result<Registry, ServiceError> {
    let admin = Principal::User {
        name: SCRAPER.into(),
        admin: true,
    };
    let mut r = Registry::with_prefix("hetpilot");
    tasks(&mut r, m, &admin)?;
    agents_and_pilots(&mut r, m, &admin)?;
    allocation(&mut r, m, &admin)?;
    fairshare(&mut r, m, &admin)?;
    staging(&mut r, m, &admin)?;
    data_dir(&mut r, m);
    Ok(r)
}

fn data_dir(r: &mut Registry, m: &Manager) {
    let full: Gauge = Gauge::default();
    full.set(i64::from(m.data_dir_full()));
    r.register(
        "data_dir_full",
        "1 while the data directory has no room for a commit (new work is refused with 507)",
        full,
    );
}

fn tasks(r: &mut Registry, m: &Manager, admin: &Principal) -> Result<(), ServiceError> {
    let mut apps = m.list_apps(admin)?;
    let by_app: Family<AppTaskLabels, Gauge> = Family::default();
    let by_user: Family<UserStateLabels, Gauge> = Family::default();
    for a in &apps {
        for (state, n) in states(&a.counts) {
            let l = UserStateLabels {
                user: a.owner.clone(),
                state,
            };
            by_user.get_or_create(&l).inc_by(n as i64);
        }
    }
    apps.retain(|a| !a.is_finished());
    apps.sort_by_key(|a| std::cmp::Reverse(a.submitted_at_ms));
    for a in apps.iter().take(MAX_APP_SERIES) {
        for (state, n) in states(&a.counts) {
            let l = AppTaskLabels {
                app: a.app.to_string(),
                user: a.owner.clone(),
                state,
            };
            by_app.get_or_create(&l).set(n as i64);
        }
    }
    r.register(
        "tasks",
        "Tasks by state of each unfinished application (the newest 500)",
        by_app,
    );
    r.register(
        "user_tasks",
        "Tasks by state summed over each user's applications",
        by_user,
    );
    Ok(())
}

fn states(c: &hetpilot_protocol::protocol::StateCounts) -> [(&'static str, u64); 6] {
    [
        ("waiting", c.waiting),
        ("leased", c.leased),
        ("running", c.running),
        ("done", c.done),
        ("failed", c.failed),
        ("cancelled", c.cancelled),
    ]
}

fn agents_and_pilots(r: &mut Registry, m: &Manager, admin: &Principal) -> Result<(), ServiceError> {
    let agents: Family<PlatformStateLabels, Gauge> = Family::default();
    let slots: Family<PlatformLabel, Gauge> = Family::default();
    let reserved: Family<PlatformLabel, Gauge> = Family::default();
    let reserved_idle: Family<PlatformLabel, Gauge> = Family::default();
    let member_held: Family<PlatformLabel, Gauge> = Family::default();
    let listed = m.list_agents(admin)?;
    metrics_resources::register(r, &listed);
    for a in listed {
        let l = PlatformStateLabels {
            platform: a.platform.clone(),
            state: a.state.clone(),
        };
        agents.get_or_create(&l).inc();
        // The slots other agents keep for the parallel runs this one heads.
        let kept: u64 = a
            .group_leases
            .iter()
            .flat_map(|g| g.members.iter().skip(1))
            .map(|m| u64::from(m.slots))
            .sum();
        if kept > 0 {
            let l = PlatformLabel {
                platform: a.platform.clone(),
            };
            member_held
                .get_or_create(&l)
                .inc_by(i64::try_from(kept).unwrap_or(i64::MAX));
        }
        if a.state == "active" {
            let l = PlatformLabel {
                platform: a.platform,
            };
            slots.get_or_create(&l).inc_by(i64::from(a.slots));
            reserved
                .get_or_create(&l)
                .inc_by(i64::from(a.reserved_slots));
            reserved_idle
                .get_or_create(&l)
                .inc_by(i64::from(a.reserved_idle_slots));
        }
    }
    let pilots: Family<PlatformStateLabels, Gauge> = Family::default();
    let wait: Family<PlatformLabel, FloatGauge> = Family::default();
    let now = now_ms();
    let mut longest: BTreeMap<String, f64> = BTreeMap::new();
    for p in m.list_pilots(admin)? {
        let l = PlatformStateLabels {
            platform: p.platform.clone(),
            state: p.state.as_str().to_string(),
        };
        pilots.get_or_create(&l).inc();
        // The batch-queue wait: until the job started, or so far for a queued one.
        let waited = match (p.state, p.job_started_ms) {
            (_, Some(started)) => Some(started.saturating_sub(p.submitted_ms)),
            (PilotState::Queued, None) => Some(now.saturating_sub(p.submitted_ms)),
            _ => None,
        };
        if let (PilotState::Queued, Some(ms)) = (p.state, waited) {
            let e = longest.entry(p.platform.clone()).or_default();
            *e = e.max(ms as f64 / 1000.0);
        }
    }
    for (platform, s) in longest {
        wait.get_or_create(&PlatformLabel { platform }).set(s);
    }
    r.register("agents", "Agents by platform and state", agents);
    r.register("agent_slots", "Slots of active agents, by platform", slots);
    r.register(
        "agent_reserved_slots",
        "Slots active agents keep for wide tasks' reservations, by platform",
        reserved,
    );
    r.register(
        "agent_reserved_idle_slots",
        "Free slots of active agents held idle for wide tasks' reservations, by platform",
        reserved_idle,
    );
    r.register(
        "agent_parallel_member_slots",
        "Slots agents keep for parallel runs that another agent of their group lease runs, \
         by platform",
        member_held,
    );
    r.register("pilots", "Pilot batch jobs by platform and state", pilots);
    r.register(
        "pilot_queue_wait_seconds",
        "Longest batch-queue wait of a pilot still queued, by platform",
        wait,
    );
    Ok(())
}

fn allocation(r: &mut Registry, m: &Manager, admin: &Principal) -> Result<(), ServiceError> {
    let view = m.schedule(admin)?;
    let cores: Family<AppPlatformLabels, Gauge> = Family::default();
    for a in view.apps.iter().take(MAX_APP_SERIES) {
        for (p, c) in view.platforms.iter().zip(&a.cores) {
            let l = AppPlatformLabels {
                app: a.app.to_string(),
                user: a.owner.clone(),
                platform: p.name.clone(),
            };
            cores.get_or_create(&l).set(i64::from(*c));
        }
    }
    let speed: Family<PlatformLabel, FloatGauge> = Family::default();
    for p in &view.platforms {
        let l = PlatformLabel {
            platform: p.name.clone(),
        };
        speed.get_or_create(&l).set(p.speed);
    }
    r.register(
        "allocated_cores",
        "Cores the last scheduling round gave each application on each platform",
        cores,
    );
    r.register(
        "platform_speed",
        "Relative speed of each platform measured so far (1 = the reference)",
        speed,
    );
    if let Some(f) = allocation_fairness(&view) {
        let g = FloatGauge::default();
        g.set(f);
        r.register(
            "fairness",
            "1 - sigma/mu of the applications' throughputs normalized to Fastest-OneCore (two-level paper, Section 3), for the last round's allocation",
            g,
        );
    }
    let at = Gauge::<i64>::default();
    at.set((view.at_ms / 1000) as i64);
    r.register(
        "last_round_timestamp_seconds",
        "When the last scheduling round ran (unix seconds; 0: none yet)",
        at,
    );
    Ok(())
}

fn fairshare(r: &mut Registry, m: &Manager, admin: &Principal) -> Result<(), ServiceError> {
    let usage: Family<UserLabel, FloatGauge> = Family::default();
    let decayed: Family<UserLabel, FloatGauge> = Family::default();
    let priority: Family<UserLabel, FloatGauge> = Family::default();
    for u in m.usage(admin)? {
        // The scrape's own principal is not a user.
        if u.user == SCRAPER {
            continue;
        }
        let l = UserLabel { user: u.user };
        usage.get_or_create(&l).set(u.usage);
        decayed.get_or_create(&l).set(u.decayed_usage);
        priority.get_or_create(&l).set(u.priority);
    }
    r.register(
        "fairshare_usage",
        "Usage charged to each user (speed-normalized core-seconds times the multi-resource penalty)",
        usage,
    );
    r.register(
        "fairshare_decayed_usage",
        "Each user's usage with the half-life decay applied",
        decayed,
    );
    r.register(
        "fairshare_priority",
        "Each user's fairshare factor 2^(-U/S) in (0, 1]",
        priority,
    );
    Ok(())
}

fn staging(r: &mut Registry, m: &Manager, admin: &Principal) -> Result<(), ServiceError> {
    let bytes: Family<StagingLabels, Counter> = Family::default();
    for (platform, totals) in m.metrics.staging_totals() {
        for (kind, n) in ["fetched", "cached", "stored", "planned"]
            .into_iter()
            .zip(totals)
        {
            let l = StagingLabels {
                platform: platform.clone(),
                kind,
            };
            bytes.get_or_create(&l).inc_by(n);
        }
    }
    r.register(
        "staging_bytes",
        "Bytes of task files fetched, found in node caches and stored back, and predicted by Het-HPS plans (planned), by platform",
        bytes,
    );
    let bw: Family<BandwidthLabels, FloatGauge> = Family::default();
    for row in m.bandwidths(admin)? {
        let l = BandwidthLabels {
            platform: row.platform,
            endpoint: row.endpoint,
        };
        bw.get_or_create(&l).set(row.mib_per_s * 1024.0 * 1024.0);
    }
    r.register(
        "bandwidth_bytes_per_second",
        "Measured transfer bandwidth between each platform and storage endpoint",
        bw,
    );
    Ok(())
}
