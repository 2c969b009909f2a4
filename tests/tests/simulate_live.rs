//! The live manager and `hetpilot simulate live` run the same control plane. A workload run
//! on real local agents with `hetpilot serve --journal` replays through a fresh control
//! plane lease for lease, round for round and pilot event for pilot event; simulated with
//! the runtimes the live run measured, it settles on the same allocation.

use hetpilot_e2e::lab::{configure, local_profile, wait_pilots_ended};
use hetpilot_e2e::{array_app, bin, free_port, Manager};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

fn simulate(args: &[&str]) -> Value {
    let out = Command::new(bin("hetpilot"))
        .args(["simulate", "live", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each allocation of both applications (names → cores on fast/slow), with how long it
/// held: from the journal's rounds (a round's clock is its `round_began`'s).
fn live_allocations(journal: &Path) -> Vec<(BTreeMap<String, Vec<u64>>, u64)> {
    let text = std::fs::read_to_string(journal).unwrap();
    let mut names = HashMap::new();
    let mut began = 0;
    let mut rounds = Vec::new();
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        match e["input"].as_str().unwrap() {
            "submit" => {
                names.insert(e["app"].as_u64().unwrap(), e["spec"]["name"].clone());
            }
            "round_began" => began = e["now_ms"].as_u64().unwrap(),
            "round_finished" => {
                let Some(alloc) = e["output"]["allocation"].as_array() else {
                    continue;
                };
                let apps: BTreeMap<String, Vec<u64>> = alloc
                    .iter()
                    .map(|pair| {
                        let name = names[&pair[0].as_u64().unwrap()].as_str().unwrap();
                        let cores = pair[1].as_array().unwrap();
                        (
                            name.to_string(),
                            cores.iter().map(|c| c.as_u64().unwrap()).collect(),
                        )
                    })
                    .collect();
                rounds.push((apps, began));
            }
            _ => {}
        }
    }
    held(rounds)
}

/// Allocations of both applications with how long each held (until the next round).
fn held(rounds: Vec<(BTreeMap<String, Vec<u64>>, u64)>) -> Vec<(BTreeMap<String, Vec<u64>>, u64)> {
    let mut out = Vec::new();
    for (k, (apps, at)) in rounds.iter().enumerate() {
        if apps.len() == 2 {
            let end = rounds.get(k + 1).map_or(*at, |r| r.1);
            out.push((apps.clone(), end.saturating_sub(*at)));
        }
    }
    out
}

/// The allocation that held longest in total.
fn longest(allocations: &[(BTreeMap<String, Vec<u64>>, u64)]) -> BTreeMap<String, Vec<u64>> {
    let mut total: BTreeMap<String, (u64, BTreeMap<String, Vec<u64>>)> = BTreeMap::new();
    for (a, ms) in allocations {
        total.entry(format!("{a:?}")).or_insert((0, a.clone())).0 += ms;
    }
    total
        .into_values()
        .max_by_key(|(ms, _)| *ms)
        .expect("an allocation of both applications")
        .1
}

#[test]
fn a_live_run_replays_decision_for_decision_and_simulates_to_the_same_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(
        &config,
        "[[platforms]]\nname = \"fast\"\n[[platforms]]\nname = \"slow\"\n\
         [scheduler]\ninterval_ms = 100\n",
    )
    .unwrap();
    let journal = dir.path().join("journal.jsonl");
    let mut m = Manager::start_with(
        dir.path(),
        free_port(),
        30.0,
        &["--journal", journal.to_str().unwrap()],
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let fast = m.agent("fast", 2, &[]);
    let slow = m.agent("slow", 2, &[]);
    // Tasks run in their agent's work directory: this marker makes "cpu" 6× slower there.
    std::fs::write(slow.work_dir.join("slow.marker"), "").unwrap();
    let io = m.submit(array_app("io", "sleep 0.2", 40));
    let cpu = m.submit(array_app(
        "cpu",
        "sh -c 'if [ -e slow.marker ]; then sleep 0.6; else sleep 0.1; fi'",
        60,
    ));
    m.wait_finished(io, LONG);
    m.wait_finished(cpu, LONG);
    // Killed, not stopped: the journal holds every decision made before the kill.
    m.kill();
    drop((fast, slow));

    // 1. The replay makes every decision the live manager made.
    let replayed = simulate(&["--replay", journal.to_str().unwrap()]);
    assert_eq!(replayed["identical"], true, "{replayed}");
    assert!(
        replayed["leased_tasks"].as_u64().unwrap() >= 100,
        "{replayed}"
    );
    assert!(replayed["rounds"].as_u64().unwrap() >= 1, "{replayed}");

    // 2. Simulated with the runtimes the live run measured, the same workload settles on
    //    the allocation the live run held longest, and runs cpu where it is fast.
    let live = longest(&live_allocations(&journal));
    assert_eq!(live["cpu"], [2, 0], "{live:?}");
    let sim = simulate(&["--from-journal", journal.to_str().unwrap()]);
    let mut rounds = Vec::new();
    for r in sim["allocations"].as_array().unwrap() {
        if r["platforms"] != serde_json::json!(["fast", "slow"]) {
            continue; // before both agents joined
        }
        let apps: BTreeMap<String, Vec<u64>> = r["apps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| {
                let cores = pair[1].as_array().unwrap();
                (
                    pair[0].as_str().unwrap().to_string(),
                    cores.iter().map(|c| c.as_u64().unwrap()).collect(),
                )
            })
            .collect();
        rounds.push((apps, r["at_ms"].as_u64().unwrap()));
    }
    let simulated = longest(&held(rounds));
    assert_eq!(simulated, live, "simulated {simulated:?}, live {live:?}");
    let runs = &sim["runs"]["cpu"];
    assert!(
        runs["fast"].as_u64().unwrap() >= 45,
        "the simulation ran cpu {runs}"
    );
    assert_eq!(
        runs["fast"].as_u64().unwrap() + runs["slow"].as_u64().unwrap_or(0),
        60
    );
}

#[test]
fn a_journal_that_is_not_one_is_refused_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.jsonl");
    std::fs::write(&journal, "{\"input\":\"expire\",\"now_ms\":5}\n").unwrap();
    let out = Command::new(bin("hetpilot"))
        .args(["simulate", "live", "--replay", journal.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not start with its `open` line"), "{err}");
    std::fs::write(&journal, "{\"input\":\"open\"}\nnot json at all}\n").unwrap();
    let out = Command::new(bin("hetpilot"))
        .args(["simulate", "live", "--replay", journal.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("j.jsonl:1: not a journal entry"), "{err}");
}

/// A manager that provisions its own pilots (the `local` adapter) journals every pilot
/// decision (made, submitted, its batch job started, its agent claimed and registered, its
/// end), and a replay reproduces each one, record for record, with the leases and rounds
/// around them.
#[test]
fn a_provisioned_run_replays_every_pilot_decision() {
    let dir = tempfile::tempdir().unwrap();
    let profile = local_profile(dir.path(), "here", 2, "max_queued = 1\nmax_running = 2");
    let env = configure(dir.path(), &[("here", &profile)], "interval_secs = 0.3");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let journal = dir.path().join("journal.jsonl");
    let mut m = Manager::start_with(
        dir.path(),
        free_port(),
        30.0,
        &["--journal", journal.to_str().unwrap()],
        &env,
    );
    let app = m.submit(array_app("provisioned", "sleep 0.2", 12));
    m.wait_finished(app, LONG);
    let ended = wait_pilots_ended(&m, LONG);
    m.kill();

    let text = std::fs::read_to_string(&journal).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["input"] == "pilot")
        .collect();
    let kinds = |kind: &str| {
        events
            .iter()
            .filter(|e| e["event"]["event"] == kind)
            .count()
    };
    assert_eq!(kinds("created"), ended.len(), "{ended:?}");
    let registered = ended.iter().filter(|p| p["agent"].is_u64()).count();
    assert!(registered >= 1, "{ended:?}");
    assert_eq!(kinds("registered"), registered, "{text}");
    assert!(
        kinds("moved") >= registered,
        "each registered pilot ended: {text}"
    );
    assert!(
        text.contains("\"input\":\"pilot_window\""),
        "the journal says the registration window"
    );

    let replayed = simulate(&["--replay", journal.to_str().unwrap()]);
    assert_eq!(replayed["identical"], true, "{replayed}");
    assert_eq!(
        replayed["pilot_events"].as_u64().unwrap(),
        events.len() as u64,
        "{replayed}"
    );
    assert!(
        replayed["leased_tasks"].as_u64().unwrap() >= 12,
        "{replayed}"
    );
}
