//! A wide task behind a stream of 1-core tasks on one 8-slot agent: with reservations
//! (the default) it starts once the runs its agent held when it arrived have ended, while
//! the stream goes on; with `[scheduler] reservations = false` it waits until the
//! stream runs dry.

use hetpilot_e2e::{free_port, wait_until, Manager};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

/// Tasks of the 1-core stream.
const STREAM: i64 = 240;

/// A manager with quick rounds; reservations are on unless turned off.
fn start(dir: &Path, reservations: bool) -> Manager {
    let config = dir.join("hetpilot.toml");
    let off = if reservations {
        ""
    } else {
        "reservations = false\n"
    };
    std::fs::write(
        &config,
        format!("[[platforms]]\nname = \"local\"\n[scheduler]\ninterval_ms = 100\n{off}"),
    )
    .unwrap();
    Manager::start_with(
        dir,
        free_port(),
        30.0,
        &[],
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    )
}

fn count(m: &Manager, sql: &str, params: impl rusqlite::Params) -> i64 {
    m.db().query_row(sql, params, |r| r.get(0)).unwrap()
}

/// Runs the stream with an 8-core task submitted once it flows; returns how many stream
/// tasks were leased after the wide one.
fn stream_leased_after_the_wide_task(reservations: bool) -> i64 {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), reservations);
    let _agent = m.agent("local", 8, &[]);
    let stream = m.submit(json!({
        "name": "stream", "command": "sleep 0.1", "timeout_secs": 5,
        "tasks": {"array": {"start": 0, "end": STREAM - 1}},
    }));
    wait_until("the stream to flow", LONG, || {
        let done = count(
            &m,
            "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND outcome = 'success'",
            [stream as i64],
        );
        (done >= 16).then_some(())
    });
    let wide = m.submit(json!({
        "name": "wide", "command": "true", "cores": 8, "timeout_secs": 5,
        "tasks": {"array": {"start": 0, "end": 0}},
    }));
    let summary = m.wait_finished(wide, LONG);
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    m.wait_finished(stream, LONG);
    let wide_leased: i64 = count(
        &m,
        "SELECT MIN(leased_ms) FROM attempts WHERE app_id = ?1",
        [wide as i64],
    );
    let after = count(
        &m,
        "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND leased_ms > ?2",
        [stream as i64, wide_leased],
    );
    let submitted: i64 = count(
        &m,
        "SELECT submitted_ms FROM apps WHERE id = ?1",
        [wide as i64],
    );
    eprintln!(
        "reservations = {reservations}: the 8-core task waited {} ms; {after} of {STREAM} \
         stream tasks were leased after it",
        wide_leased - submitted
    );
    after
}

#[test]
fn a_wide_task_starts_while_the_stream_goes_on() {
    let after = stream_leased_after_the_wide_task(true);
    assert!(
        after >= STREAM / 3,
        "the 8-core task waited for the 1-core stream: only {after} of {STREAM} stream \
         tasks were leased after it"
    );
}

#[test]
fn without_reservations_a_wide_task_waits_for_the_stream_to_run_dry() {
    let after = stream_leased_after_the_wide_task(false);
    assert!(
        after <= 16,
        "{after} stream tasks were leased after the 8-core task"
    );
}

/// Seven 1-core runs on an 8-slot agent, whose pull for its one free slot then waits (the
/// manager holds it open 20 s); an 8-core task comes: once the seven end, it is leased to
/// that pull, which asked for one slot, without waiting the pull out. Returns how long
/// after the last of the seven ended it was leased (ms).
fn wide_lease_after_the_slots_freed(reservations: bool) -> i64 {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), reservations);
    let _agent = m.agent("local", 8, &[]);
    let seven = m.submit(json!({
        "name": "seven", "command": "sleep 1", "timeout_secs": 5,
        "tasks": {"array": {"start": 0, "end": 6}},
    }));
    wait_until("the seven to run", LONG, || {
        let n = count(
            &m,
            "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND started_ms IS NOT NULL",
            [seven as i64],
        );
        (n == 7).then_some(())
    });
    let wide = m.submit(json!({
        "name": "wide", "command": "true", "cores": 8,
        "tasks": {"array": {"start": 0, "end": 0}},
    }));
    let summary = m.wait_finished(wide, LONG);
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    let freed = count(
        &m,
        "SELECT MAX(ended_ms) FROM attempts WHERE app_id = ?1",
        [seven as i64],
    );
    let leased = count(
        &m,
        "SELECT MIN(leased_ms) FROM attempts WHERE app_id = ?1",
        [wide as i64],
    );
    leased - freed
}

#[test]
fn a_wide_task_does_not_wait_out_a_pull_parked_before_the_slots_freed() {
    for reservations in [true, false] {
        let late = wide_lease_after_the_slots_freed(reservations);
        // A pull waits up to 20 s for work; the runs' report ends the wait.
        assert!(
            late < 10_000,
            "reservations = {reservations}: leased {late} ms after the slots freed"
        );
    }
}
