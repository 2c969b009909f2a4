//! A slice of a real parallel-job trace replayed live on the lab's Slurm pilots, placed by
//! the live TLPA allocator: 45 SDSC-SP2 jobs scaled to the lab (`bench-tools/trace_lab.py
//! slice` wrote `data/sdsc_sp2_lab_slice.swf`: processors / 16, runtimes / 60 within
//! 1..20 s, submits compressed to an offered load of 0.7) over two platforms of different
//! sizes, `lab-debug` (one 8-CPU node) and `lab-small` (one pilot over two 2-CPU nodes).
//! Each job is its own application of one `procs` task sleeping its runtime, submitted at
//! its submit time. Checked: every job ran once, on one platform, with all its processors
//! on that platform's agents of one batch job, no agent over-committed, and a job that the
//! last round seen before its lease placed (`GET /v1/schedule`'s `placed_on`, from the
//! configured allocator) ran on that platform, and nothing stays held at the end. It writes
//! `trace_lab/jobs.csv` and `trace_lab/agents.log` under the target directory for
//! `bench-tools/trace_lab.py compare`; timings are reported, not asserted.

use hetpilot_e2e::lab::{self, configure};
use hetpilot_e2e::{bin_dir, free_port, wait_until, Manager};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The scaled slice all three runs read (live lab, `simulate live`, `simulate alloc`).
const SLICE: &str = include_str!("data/sdsc_sp2_lab_slice.swf");

/// The platforms, their slots and the lab nodes their pilots run on.
const PLATFORMS: [(&str, u32, &[&str]); 2] =
    [("lab-debug", 8, &["n1"]), ("lab-small", 4, &["n2", "n3"])];

/// The scheduler under test: the live TLPA allocator at the simulators' depth.
const SCHEDULER: &str = "[scheduler]\nallocator = \"tlpa\"\ntlpa_depth = 8\n";

/// Headroom of a job's declared timeout over its runtime.
const TIMEOUT_MARGIN_S: u64 = 30;

/// One job of the slice (SWF fields 1, 2, 4 and 8).
struct TraceJob {
    id: u64,
    submit_s: u64,
    runtime_s: u64,
    procs: u32,
}

fn read_slice() -> Vec<TraceJob> {
    SLICE
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| {
            // Unknown fields are -1; the ones read here are known.
            let f: Vec<i64> = l
                .split_whitespace()
                .map(|x| x.parse().expect("the slice holds whole numbers"))
                .collect();
            let field = |k: usize| u64::try_from(f[k]).expect("a known field");
            TraceJob {
                id: field(0),
                submit_s: field(1),
                runtime_s: field(3),
                procs: u32::try_from(field(7)).unwrap(),
            }
        })
        .collect()
}

/// A manager over the two platforms, each at most one pilot (lab-small's of two nodes),
/// kept while idle for the whole run, with the TLPA allocator.
fn start_manager(dir: &Path) -> Manager {
    let one_pilot = |name: &str, extra: &str| {
        let shipped = std::fs::read_to_string(lab::shipped_profile(name)).unwrap();
        let profile = shipped
            .replace("max_running = 2", "max_running = 1")
            .replace("max_running = 1", &format!("max_running = 1{extra}"))
            .replace("max_queued = 2", "max_queued = 1");
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, profile).unwrap();
        path
    };
    let debug = one_pilot("lab-debug", "");
    let small = one_pilot("lab-small", "\nnodes_per_pilot = 2");
    let env = configure(
        dir,
        &[("lab-debug", &debug), ("lab-small", &small)],
        "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 1\n\
         backoff_max_secs = 2\nidle_timeout_secs = 900",
    );
    let config = dir.join("manager.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{SCHEDULER}{text}")).unwrap();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Manager::start_with(dir, free_port(), 120.0, &[], &env)
}

/// Brings both pilots up before the trace, so it does not measure the batch queue's start
/// of the first pilots: a `procs = 8` task only lab-debug holds and a `nodes = 2` task
/// only lab-small's 2-node pilot holds (pilot demand asks for each on the platform that
/// can hold it), each waiting for a file that appears once each platform's pilot
/// registered all its agents; they then end, leaving no process behind. Returns how long
/// it took.
fn warm_up(m: &Manager, dir: &Path) -> Duration {
    let started = Instant::now();
    let go = dir.join("warm-up-go");
    let command = format!(
        "sh -c 'while [ ! -e {} ]; do sleep 0.2; done'",
        go.display()
    );
    let apps = [("procs", 8), ("nodes", 2)].map(|(field, size)| {
        m.submit(serde_json::json!({
            "name": format!("warm-up-{field}"),
            "command": command,
            field: size,
            "timeout_secs": 600, "tasks": {"array": {"start": 0, "end": 0}},
        }))
    });
    wait_until("a pilot on each platform", Duration::from_secs(300), || {
        let db = m.db();
        let agents = |platform: &str| -> u32 {
            db.query_row(
                "SELECT COUNT(*) FROM agents WHERE platform = ?1 AND ended_ms IS NULL",
                [platform],
                |r| r.get(0),
            )
            .unwrap_or(0)
        };
        PLATFORMS
            .iter()
            .all(|(name, _, nodes)| agents(name) as usize >= nodes.len())
            .then_some(())
    });
    std::fs::write(&go, "").unwrap();
    for app in apps {
        let summary = m.wait_finished(app, Duration::from_secs(120));
        assert_eq!(summary["counts"]["done"], 1, "warm-up: {summary}");
    }
    started.elapsed()
}

/// What the rounds' allocator was seen deciding for each application (`GET
/// /v1/schedule`, polled until finished): (round number, round time in unix ms, the
/// platform it placed the application on, if any), once per round.
type Placements = HashMap<u64, Vec<(u64, i64, Option<String>)>>;

/// Every round seen (number, when it began, when it took effect: unix ms), in order. The
/// watcher polls, so it may miss a round that a later one replaced quickly; the numbers
/// tell (consecutive: none missed).
type RoundsSeen = Vec<(u64, i64, i64)>;

/// The agents listing (`GET /v1/agents`: applications, free slots, member holds,
/// reservations) each time it
/// changed, with the unix ms it was seen at: what the platforms held through the run.
type AgentLog = Vec<(i64, Value)>;

struct PlacementWatch {
    seen: Arc<Mutex<Placements>>,
    rounds: Arc<Mutex<RoundsSeen>>,
    agents: Arc<Mutex<AgentLog>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PlacementWatch {
    fn start(m: &Manager) -> Self {
        let (http, admin) = (m.http(), m.admin.clone());
        let seen: Arc<Mutex<Placements>> = Arc::default();
        let rounds: Arc<Mutex<RoundsSeen>> = Arc::default();
        let agents: Arc<Mutex<AgentLog>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (s, r, log, halt) = (seen.clone(), rounds.clone(), agents.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                let (status, listing) = http.get("/v1/agents", &admin);
                assert_eq!(status, 200, "{listing}");
                let held: Vec<Value> = listing
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| {
                        serde_json::json!({"id": a["id"], "platform": a["platform"],
                            "apps": a["apps"], "free_slots": a["free_slots"],
                            "member_of": a["member_of"], "reserved_slots": a["reserved_slots"],
                            "reserved_idle_slots": a["reserved_idle_slots"]})
                    })
                    .collect();
                let held = Value::from(held);
                let mut log = log.lock().unwrap();
                if log.last().is_none_or(|(_, last)| *last != held) {
                    log.push((unix_ms(), held));
                }
                drop(log);
                let (status, view) = http.get("/v1/schedule", &admin);
                assert_eq!(status, 200, "{view}");
                let at = view["at_ms"].as_i64().unwrap_or(0);
                let round = view["round"].as_u64().unwrap_or(0);
                let effective = view["effective_ms"].as_i64().unwrap_or(0);
                {
                    let mut seen_rounds = r.lock().unwrap();
                    if round > 0 && seen_rounds.last().is_none_or(|l| l.0 != round) {
                        seen_rounds.push((round, at, effective));
                    }
                }
                for a in view["apps"].as_array().into_iter().flatten() {
                    let Some(app) = a["app"].as_u64() else {
                        continue;
                    };
                    let mut seen = s.lock().unwrap();
                    let rounds = seen.entry(app).or_default();
                    if rounds.last().is_none_or(|r| r.0 != round) {
                        rounds.push((round, at, a["placed_on"].as_str().map(str::to_string)));
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        PlacementWatch {
            seen,
            rounds,
            agents,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> (Placements, RoundsSeen, AgentLog) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        (
            std::mem::take(&mut self.seen.lock().unwrap()),
            std::mem::take(&mut self.rounds.lock().unwrap()),
            std::mem::take(&mut self.agents.lock().unwrap()),
        )
    }
}

/// What the last round before a job's lease decided for it.
enum Decision {
    /// The allocator placed it on this platform.
    Placed(String),
    /// It fitted nowhere then: it waited on an EASY reservation.
    Waited,
    /// A round the watcher did not see may have run around the lease: what decided the
    /// lease is not known.
    RoundMissed,
    /// The lease came in the millisecond a round took effect: it followed that round or
    /// the one before, which decided differently.
    RoundUnderWay,
}

/// What the round in effect at the lease at `leased_ms` decided for `app`: the last round
/// that took effect at or before it. Known when the watcher saw that round and the next
/// (numbered consecutively: none took effect unseen in between). A lease in the very
/// millisecond its round took effect may have come just before it: then the round before
/// must be known too and have decided alike. `None` when the round did not list the
/// application.
fn decision(app: u64, leased_ms: i64, rounds: &RoundsSeen, seen: &Placements) -> Option<Decision> {
    let i = rounds.iter().rposition(|r| r.2 <= leased_ms)?;
    let n = rounds[i].0;
    if rounds.get(i + 1).is_none_or(|r| r.0 != n + 1) {
        return Some(Decision::RoundMissed);
    }
    let decided = |round: u64| {
        let rounds = seen.get(&app)?;
        rounds.iter().find(|r| r.0 == round).map(|r| r.2.clone())
    };
    let last = decided(n);
    if rounds[i].2 == leased_ms {
        if !(i > 0 && rounds[i - 1].0 + 1 == n) {
            return Some(Decision::RoundMissed);
        }
        if last != decided(n - 1) {
            return Some(Decision::RoundUnderWay);
        }
    }
    Some(match last? {
        Some(p) => Decision::Placed(p),
        None => Decision::Waited,
    })
}

/// One agent of a run: id, platform, host, batch job, slots held.
#[derive(Debug)]
struct Member {
    agent: i64,
    platform: String,
    host: String,
    batch_job: Option<String>,
    slots: u32,
}

/// A job's one run, as the store recorded it (unix ms).
#[derive(Debug)]
struct Run {
    submitted_ms: i64,
    leased_ms: i64,
    started_ms: i64,
    ended_ms: i64,
    members: Vec<Member>,
}

/// The run of `app`: asserts it ran exactly once, exited 0, and lists its members.
fn read_run(m: &Manager, app: u64) -> Run {
    let db = m.db();
    let submitted_ms: i64 = db
        .query_row(
            "SELECT submitted_ms FROM apps WHERE id = ?1",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    let mut q = db
        .prepare(
            "SELECT agent_id, leased_ms, started_ms, ended_ms, exit_code, hosts \
             FROM attempts WHERE app_id = ?1",
        )
        .unwrap();
    type Row = (
        i64,
        i64,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<String>,
    );
    let rows: Vec<Row> = q
        .query_map([app as i64], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows.len(),
        1,
        "app {app} ran {} times: {rows:?}",
        rows.len()
    );
    let (head, leased_ms, started, ended, exit, hosts) = rows.into_iter().next().unwrap();
    assert_eq!(exit, Some(0), "app {app}");
    let hosts: Value =
        serde_json::from_str(&hosts.expect("a parallel run records its hosts")).unwrap();
    let members: Vec<Member> = hosts
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let agent = h["agent"].as_i64().unwrap();
            let (platform, host, batch_job) = db
                .query_row(
                    "SELECT platform, hostname, batch_job_id FROM agents WHERE id = ?1",
                    [agent],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            assert_eq!(h["host"], host, "app {app}: the run names its agent's host");
            Member {
                agent,
                platform,
                host,
                batch_job,
                slots: u32::try_from(h["slots"].as_u64().unwrap()).unwrap(),
            }
        })
        .collect();
    assert_eq!(members[0].agent, head, "app {app}: started on the head");
    Run {
        submitted_ms,
        leased_ms,
        started_ms: started.unwrap(),
        ended_ms: ended.unwrap(),
        members,
    }
}

/// Asserts `run` holds all of `job`'s processors on agents of one platform's one batch
/// job, on that platform's lab nodes; returns the platform.
fn check_placement(job: &TraceJob, run: &Run) -> String {
    let platform = run.members[0].platform.clone();
    let slots: u32 = run.members.iter().map(|m| m.slots).sum();
    assert_eq!(slots, job.procs, "job {}: {:?}", job.id, run.members);
    let (_, size, nodes) = PLATFORMS
        .iter()
        .find(|(name, ..)| *name == platform)
        .unwrap_or_else(|| panic!("job {} ran on {platform}", job.id));
    assert!(job.procs <= *size, "job {} on {platform}", job.id);
    for member in &run.members {
        assert_eq!(
            member.platform, platform,
            "job {}: {:?}",
            job.id, run.members
        );
        assert_eq!(member.batch_job, run.members[0].batch_job, "job {}", job.id);
        assert!(
            member.batch_job.is_some() && nodes.contains(&member.host.as_str()),
            "job {}: {member:?}",
            job.id
        );
    }
    platform
}

/// Asserts no agent ever held more slots than it has: at each lease, the runs leased on
/// the agent and not yet ended.
fn assert_no_agent_over_committed(m: &Manager, runs: &[Run]) {
    let db = m.db();
    let mut held: BTreeMap<i64, Vec<(i64, i64, u32)>> = BTreeMap::new();
    for run in runs {
        for member in &run.members {
            held.entry(member.agent)
                .or_default()
                .push((run.leased_ms, run.ended_ms, member.slots));
        }
    }
    for (agent, spans) in held {
        let slots: u32 = db
            .query_row("SELECT slots FROM agents WHERE id = ?1", [agent], |r| {
                r.get(0)
            })
            .unwrap();
        for &(at, ..) in &spans {
            let busy: u32 = spans
                .iter()
                .filter(|(from, to, _)| *from <= at && at < *to)
                .map(|s| s.2)
                .sum();
            assert!(
                busy <= slots,
                "agent {agent}: {busy} of {slots} slots at {at}"
            );
        }
    }
}

/// The active agents still holding slots or member holds, after waiting a while for the
/// last reports to land (empty: none).
fn wait_for_free_agents(m: &Manager) -> Vec<Value> {
    let busy = || -> Vec<Value> {
        let (status, listing) = m.http().get("/v1/agents", &m.admin);
        assert_eq!(status, 200, "{listing}");
        listing
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| {
                a["state"] == "active"
                    && (a["free_slots"] != a["slots"] || !a["member_of"].is_null())
            })
            .cloned()
            .collect()
    };
    hetpilot_e2e::poll_until(Duration::from_secs(30), || {
        let held = busy();
        held.is_empty().then_some(())
    })
    .map_or_else(busy, |()| Vec::new())
}

/// Writes the agents' log (seconds from the first submission, one listing a line).
fn write_agent_log(log: &AgentLog, t0_ms: i64) {
    let text: String = log
        .iter()
        .map(|(at, agents)| format!("{:.3} {agents}\n", (at - t0_ms) as f64 / 1000.0))
        .collect();
    let dir = bin_dir().parent().unwrap().join("trace_lab");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("agents.log"), text).unwrap();
}

fn unix_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Writes the per-job CSV (seconds from the first submission) for the comparison.
fn write_csv(
    jobs: &[TraceJob],
    apps: &[u64],
    runs: &[Run],
    platforms: &[String],
    decided: &[Option<Decision>],
    rounds: &Placements,
    t0_ms: i64,
) -> std::path::PathBuf {
    let s = |ms: i64| format!("{:.3}", (ms - t0_ms) as f64 / 1000.0);
    let mut csv = String::from(
        "job,procs,runtime_s,submit_s,lease_s,start_s,end_s,platform,hosts,decision,rounds\n",
    );
    let rows = jobs.iter().zip(apps).zip(runs).zip(platforms).zip(decided);
    for ((((job, app), run), platform), decided) in rows {
        let seen: Vec<String> = rounds
            .get(app)
            .into_iter()
            .flatten()
            .map(|(n, at, p)| format!("{n}@{}:{}", s(*at), p.as_deref().unwrap_or("-")))
            .collect();
        let hosts: Vec<String> = run
            .members
            .iter()
            .map(|m| format!("{}:{}", m.host, m.slots))
            .collect();
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{platform},{},{},{}\n",
            job.id,
            job.procs,
            job.runtime_s,
            s(run.submitted_ms),
            s(run.leased_ms),
            s(run.started_ms),
            s(run.ended_ms),
            hosts.join(" "),
            match decided {
                Some(Decision::Placed(p)) => p.as_str(),
                Some(Decision::Waited) => "waited",
                Some(Decision::RoundMissed) => "round-missed",
                Some(Decision::RoundUnderWay) => "round-under-way",
                None => "unseen",
            },
            seen.join(" "),
        ));
    }
    let dir = bin_dir().parent().unwrap().join("trace_lab");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jobs.csv");
    std::fs::write(&path, csv).unwrap();
    path
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn an_sdsc_sp2_slice_runs_live_on_two_lab_platforms_placed_by_tlpa() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let jobs = read_slice();
    assert_eq!(jobs.len(), 45);
    let m = start_manager(dir.path());
    let warm = warm_up(&m, dir.path());
    let watch = PlacementWatch::start(&m);
    let t0 = Instant::now();
    let t0_ms = unix_ms();
    let mut apps = Vec::new();
    for job in &jobs {
        let at = t0 + Duration::from_secs(job.submit_s);
        // Paced by the trace's submit times, not waiting on anything.
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        apps.push(m.submit(serde_json::json!({
            "name": format!("sdsc-sp2-{}", job.id),
            "command": format!("sleep {}", job.runtime_s),
            "procs": job.procs,
            "timeout_secs": job.runtime_s + TIMEOUT_MARGIN_S,
            "tasks": {"array": {"start": 0, "end": 0}},
        })));
    }
    for (job, &app) in jobs.iter().zip(&apps) {
        let summary = m.wait_finished(app, Duration::from_secs(300));
        assert_eq!(summary["counts"]["done"], 1, "job {}: {summary}", job.id);
    }
    let (placements, rounds_seen, agent_log) = watch.finish();
    write_agent_log(&agent_log, t0_ms);
    // Nothing stays held once every run has ended: no slot, no member hold.
    let leaked = wait_for_free_agents(&m);
    assert!(leaked.is_empty(), "slots still held: {leaked:?}");
    let runs: Vec<Run> = apps.iter().map(|&app| read_run(&m, app)).collect();
    let platforms: Vec<String> = jobs
        .iter()
        .zip(&runs)
        .map(|(job, run)| check_placement(job, run))
        .collect();
    assert_no_agent_over_committed(&m, &runs);
    // The decision of the last round before the job was leased: a platform, or none (the
    // job could start nowhere then, so it waited on an EASY reservation).
    let decided: Vec<Option<Decision>> = apps
        .iter()
        .zip(&runs)
        .map(|(app, run)| decision(*app, run.leased_ms, &rounds_seen, &placements))
        .collect();
    let csv = write_csv(
        &jobs,
        &apps,
        &runs,
        &platforms,
        &decided,
        &placements,
        t0_ms,
    );
    for ((job, platform), decided) in jobs.iter().zip(&platforms).zip(&decided) {
        if let Some(Decision::Placed(p)) = decided {
            assert_eq!(
                p, platform,
                "job {}: placed on {p}, ran on {platform}",
                job.id
            );
        }
    }
    let placed = decided
        .iter()
        .filter(|d| matches!(d, Some(Decision::Placed(_))))
        .count();
    let waited = decided
        .iter()
        .filter(|d| matches!(d, Some(Decision::Waited)))
        .count();
    let missed = decided
        .iter()
        .filter(|d| matches!(d, Some(Decision::RoundMissed)))
        .count();
    let under_way = decided
        .iter()
        .filter(|d| matches!(d, Some(Decision::RoundUnderWay)))
        .count();
    let n = runs.len() as f64;
    let mean = |f: &dyn Fn(&Run) -> i64| runs.iter().map(|r| f(r) as f64).sum::<f64>() / n / 1e3;
    let mut per_platform: BTreeMap<&str, u32> = BTreeMap::new();
    for p in &platforms {
        *per_platform.entry(p).or_default() += 1;
    }
    eprintln!(
        "warm-up {:.1} s; trace {:.1} s; {} jobs, mean turnaround {:.2} s, mean wait {:.2} s; \
         per platform {per_platform:?}; last round before the lease: placed {placed}, \
         waited {waited}, a round missed {missed}, a round under way {under_way}, unseen {}; \
         CSV {}",
        warm.as_secs_f64(),
        t0.elapsed().as_secs_f64(),
        runs.len(),
        mean(&|r| r.ended_ms - r.submitted_ms),
        mean(&|r| r.started_ms - r.submitted_ms),
        runs.len() - placed - waited - missed - under_way,
        csv.display()
    );
    assert!(placed > 0, "no placement by the allocator was seen");
}
