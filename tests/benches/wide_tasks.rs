//! Wide tasks behind a stream of 1-core tasks, with EASY reservations and without, on a
//! release build: `cargo build --release --bins && cargo bench -p hetpilot-e2e --bench
//! wide_tasks` (`-- tiny` for a quick check of the bench itself, on any build:
//! `cargo build --bins && cargo test -p hetpilot-e2e --bench wide_tasks -- tiny`).
//!
//! Settings (fixed before any run; `tiny` in brackets):
//! - one manager (`[scheduler] interval_ms = 100`), two local agents of 8 slots each
//!   (16 slots);
//! - the stream: one application of N = 400 [48] 1-core tasks `sleep 0.5` [`sleep 0.2`],
//!   `timeout_secs` T = 3, submitted at once;
//! - K = 2 wide tasks, each its own application of one 8-core task `sleep 2`
//!   [`sleep 0.5`], `timeout_secs` 10, submitted when 25 % and when 50 % of the stream
//!   has ended (the count of its successful runs in the store);
//! - each run with `[scheduler] reservations = true`, then `false`, on a fresh manager and
//!   fresh agents; R = 3 [1] repetitions, medians.
//!
//! Measured, from the manager's store (its clock) and its log:
//! - each wide task's wait, from its submit to its lease and to its start (the agent's
//!   start of the run), and its EASY bound: the start its reservation expected when it
//!   was made (the `shadow_ms` of the manager's `reserved for a wide task` debug line)
//!   minus its submit. The expected end of a run is its `timeout_secs`, or twice its
//!   application's mean run on the platform after three runs, whichever is smaller, so T
//!   also bounds the wait for the runs held when it arrived. Beside it: how many stream
//!   tasks were leased between its submit and its lease, and its start minus the stream's
//!   last end (without reservations it waits at least until the stream runs dry);
//! - the stream's makespan (its first lease to its last end) and throughput (N / makespan);
//! - the whole run's makespan (first lease to last end, stream and wide tasks) and the
//!   slot-seconds left idle in it (16 × makespan − Σ cores × run time), which is what
//!   holding slots for a reservation costs, besides the wide tasks' own work.
//!
//! Tasks spanning several nodes are not built yet: only wide tasks on one node are measured.

use hetpilot_e2e::{free_port, wait_until, Manager};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(300);
const AGENTS: u32 = 2;
const SLOTS: u32 = 8;
const WIDE_CORES: u32 = 8;
/// The stream tasks' `timeout_secs`.
const STREAM_TIMEOUT_SECS: u64 = 3;
const WIDE_TIMEOUT_SECS: u64 = 10;
/// When each wide task is submitted: this share of the stream has ended.
const WIDE_AT_PERCENT: [i64; 2] = [25, 50];

/// The sizes of one run.
struct Size {
    stream_tasks: i64,
    stream_sleep: &'static str,
    wide_sleep: &'static str,
    repetitions: usize,
}

const FULL: Size = Size {
    stream_tasks: 400,
    stream_sleep: "0.5",
    wide_sleep: "2",
    repetitions: 3,
};

const TINY: Size = Size {
    stream_tasks: 48,
    stream_sleep: "0.2",
    wide_sleep: "0.5",
    repetitions: 1,
};

/// One wide task's figures, in seconds.
struct Wide {
    /// The share of the stream that had ended when it was submitted (percent).
    submitted_at_percent: i64,
    /// From its submit to its run's start on the agent.
    wait: f64,
    /// From its submit to its lease (when the manager gave it to an agent).
    lease_wait: f64,
    /// Its reservation's expected start minus its submit (none without reservations).
    easy_bound: Option<f64>,
    /// Stream tasks leased after its submit and before its lease.
    overtaken_by: i64,
    /// Its start minus the stream's last end (negative: it started while the stream ran).
    start_after_stream: f64,
}

/// One run's figures.
struct Run {
    wide: Vec<Wide>,
    stream_makespan: f64,
    stream_throughput: f64,
    makespan: f64,
    idle_slot_secs: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn max(v: impl IntoIterator<Item = f64>) -> f64 {
    v.into_iter().fold(f64::MIN, f64::max)
}

/// A manager with quick rounds, reservations on or off, and the reservations' debug lines
/// in its log.
fn start(dir: &Path, reservations: bool) -> Manager {
    let config = dir.join("hetpilot.toml");
    std::fs::write(
        &config,
        format!(
            "[[platforms]]\nname = \"local\"\n[scheduler]\ninterval_ms = 100\n\
             reservations = {reservations}\n"
        ),
    )
    .unwrap();
    Manager::start_with(
        dir,
        free_port(),
        30.0,
        &[],
        &[
            ("HETPILOT_CONFIG", config.to_str().unwrap()),
            ("RUST_LOG", "info,hetpilot_core::queue::reservations=debug"),
        ],
    )
}

fn count(m: &Manager, sql: &str, params: impl rusqlite::Params) -> i64 {
    m.db().query_row(sql, params, |r| r.get(0)).unwrap()
}

/// The expected start (unix ms) of each application's first reservation, from the
/// manager's log lines `reserved for a wide task app=A agent=G shadow_ms=Some(MS) cores=C`.
fn reservation_starts(dir: &Path) -> Vec<(u64, u64)> {
    let log = std::fs::read_to_string(dir.join("manager.log")).unwrap();
    let mut starts: Vec<(u64, u64)> = Vec::new();
    for line in log
        .lines()
        .filter(|l| l.contains("reserved for a wide task"))
    {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .map(str::to_string)
        };
        let app = field("app=").and_then(|a| a.parse().ok());
        let shadow = field("shadow_ms=Some(").and_then(|s| s.trim_end_matches(')').parse().ok());
        if let (Some(app), Some(shadow)) = (app, shadow) {
            if !starts.iter().any(|(a, _)| *a == app) {
                starts.push((app, shadow));
            }
        }
    }
    starts
}

fn one_run(size: &Size, reservations: bool) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), reservations);
    let _agents: Vec<_> = (0..AGENTS).map(|_| m.agent("local", SLOTS, &[])).collect();
    wait_until("the agents to register", LONG, || {
        let (_, v) = m.http().get("/v1/agents", &m.admin);
        (v.as_array()?.len() == AGENTS as usize).then_some(())
    });
    let n = size.stream_tasks;
    let stream = m.submit(json!({
        "name": "stream", "command": format!("sleep {}", size.stream_sleep),
        "timeout_secs": STREAM_TIMEOUT_SECS,
        "tasks": {"array": {"start": 0, "end": n - 1}},
    }));
    let mut wide_apps = Vec::new();
    for percent in WIDE_AT_PERCENT {
        wait_until("the stream to reach a wide task's point", LONG, || {
            let done = count(
                &m,
                "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND outcome = 'success'",
                [stream as i64],
            );
            (done * 100 >= n * percent).then_some(())
        });
        let app = m.submit(json!({
            "name": format!("wide-at-{percent}"), "command": format!("sleep {}", size.wide_sleep),
            "cores": WIDE_CORES, "timeout_secs": WIDE_TIMEOUT_SECS,
            "tasks": {"array": {"start": 0, "end": 0}},
        }));
        wide_apps.push((percent, app));
    }
    let summary = m.wait_finished(stream, LONG);
    assert_eq!(summary["counts"]["done"], n, "{summary}");
    for (_, app) in &wide_apps {
        let summary = m.wait_finished(*app, LONG);
        assert_eq!(summary["counts"]["done"], 1, "{summary}");
    }
    let reserved = reservation_starts(dir.path());
    let db = m.db();
    let (stream_first, stream_last): (i64, i64) = db
        .query_row(
            "SELECT MIN(leased_ms), MAX(ended_ms) FROM attempts WHERE app_id = ?1",
            [stream as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let wide = wide_apps
        .iter()
        .map(|&(percent, app)| {
            let (submitted, leased, started): (i64, i64, i64) = db
                .query_row(
                    "SELECT a.submitted_ms, MIN(t.leased_ms), MIN(t.started_ms) FROM apps a \
                     JOIN attempts t ON t.app_id = a.id WHERE a.id = ?1",
                    [app as i64],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            let overtaken_by = count(
                &m,
                "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND leased_ms > ?2 \
                 AND leased_ms < ?3",
                [stream as i64, submitted, leased],
            );
            let easy_bound = reserved
                .iter()
                .find(|(a, _)| *a == app)
                .map(|(_, shadow)| (*shadow as f64 - submitted as f64) / 1000.0);
            Wide {
                submitted_at_percent: percent,
                wait: (started - submitted) as f64 / 1000.0,
                lease_wait: (leased - submitted) as f64 / 1000.0,
                easy_bound,
                overtaken_by,
                start_after_stream: (started - stream_last) as f64 / 1000.0,
            }
        })
        .collect();
    let wide_ids: Vec<String> = wide_apps.iter().map(|(_, a)| a.to_string()).collect();
    let (first, last, busy_slot_ms): (i64, i64, f64) = db
        .query_row(
            &format!(
                "SELECT MIN(leased_ms), MAX(ended_ms), \
                 SUM((ended_ms - started_ms) * CASE WHEN app_id IN ({}) THEN {WIDE_CORES} \
                 ELSE 1 END) FROM attempts",
                wide_ids.join(",")
            ),
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let stream_makespan = (stream_last - stream_first) as f64 / 1000.0;
    let makespan = (last - first) as f64 / 1000.0;
    Run {
        wide,
        stream_makespan,
        stream_throughput: n as f64 / stream_makespan,
        makespan,
        idle_slot_secs: f64::from(AGENTS * SLOTS) * makespan - busy_slot_ms / 1000.0,
    }
}

/// "x of y" wide tasks within their EASY bound by `wait`, saying how many had none.
fn within_bound(wide: &[&Wide], wait: fn(&Wide) -> f64) -> String {
    let bounded: Vec<&&Wide> = wide.iter().filter(|w| w.easy_bound.is_some()).collect();
    let within = bounded
        .iter()
        .filter(|w| w.easy_bound.is_some_and(|b| wait(w) <= b))
        .count();
    match (bounded.len(), wide.len() - bounded.len()) {
        (0, _) => "no reservation".to_string(),
        (b, 0) => format!("{within} of {b}"),
        (b, none) => format!("{within} of {b} ({none} without a reservation)"),
    }
}

fn main() {
    let tiny = std::env::args().skip(1).any(|a| a == "tiny");
    let size = if tiny { TINY } else { FULL };
    let mut rows = Vec::new();
    let mut wide_rows = Vec::new();
    for reservations in [true, false] {
        let on = if reservations { "on" } else { "off" };
        let runs: Vec<Run> = (0..size.repetitions)
            .map(|rep| {
                let run = one_run(&size, reservations);
                for w in &run.wide {
                    eprintln!(
                        "reservations {on}, run {rep}: the wide task submitted at {}% waited \
                         {:.3} s to its lease, {:.3} s to its start (EASY bound {:?} s), {} \
                         stream tasks leased ahead of it; stream makespan {:.2} s",
                        w.submitted_at_percent,
                        w.lease_wait,
                        w.wait,
                        w.easy_bound,
                        w.overtaken_by,
                        run.stream_makespan
                    );
                }
                run
            })
            .collect();
        let wide: Vec<&Wide> = runs.iter().flat_map(|r| &r.wide).collect();
        let waits = || wide.iter().map(|w| w.wait);
        let over_timeout = waits().filter(|w| *w > STREAM_TIMEOUT_SECS as f64).count();
        let pick = |f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
        rows.push(format!(
            "| {on} | {:.2} | {:.2} | {} | {} | {over_timeout} of {} | {:.2} | {:.1} | {:.2} | \
             {:.1} |",
            median(waits().collect()),
            max(waits()),
            within_bound(&wide, |w| w.lease_wait),
            within_bound(&wide, |w| w.wait),
            wide.len(),
            pick(|r| r.stream_makespan),
            pick(|r| r.stream_throughput),
            pick(|r| r.makespan),
            pick(|r| r.idle_slot_secs),
        ));
        for (k, percent) in WIDE_AT_PERCENT.iter().enumerate() {
            let of =
                |f: fn(&Wide) -> f64| -> Vec<f64> { runs.iter().map(|r| f(&r.wide[k])).collect() };
            let bounds: Vec<f64> = runs.iter().filter_map(|r| r.wide[k].easy_bound).collect();
            wide_rows.push(format!(
                "| {on} | {percent} % | {:.2} | {:.2} | {} | {:.0} | {:.2} |",
                median(of(|w| w.wait)),
                max(of(|w| w.wait)),
                if bounds.is_empty() {
                    "—".to_string()
                } else {
                    format!("{:.2}", median(bounds))
                },
                median(of(|w| w.overtaken_by as f64)),
                median(of(|w| w.start_after_stream)),
            ));
        }
    }
    println!(
        "\n{} × 1-core `sleep {}` (timeout T = {STREAM_TIMEOUT_SECS} s) and {} × \
         {WIDE_CORES}-core `sleep {}` on {AGENTS} local agents of {SLOTS} slots; {} \
         repetitions, medians\n",
        size.stream_tasks,
        size.stream_sleep,
        WIDE_AT_PERCENT.len(),
        size.wide_sleep,
        size.repetitions
    );
    println!(
        "| reservations | wide wait, median (s) | wide wait, max (s) | leased by their EASY \
         bound | started by their EASY bound | waited longer than T | stream makespan (s) | \
         stream throughput (tasks/s) | whole makespan (s) | idle slot-seconds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    println!(
        "\n| reservations | wide task submitted when the stream had ended | wait, median (s) \
         | wait, max (s) | EASY bound, median (s) | 1-core tasks leased ahead of it, median \
         | its start − the stream's last end, median (s) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in wide_rows {
        println!("{r}");
    }
}
