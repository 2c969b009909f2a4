//! Tests of the simulated world's timing: a task that ends on a round's tick frees its
//! slots for what waits, and an agent with slots left after a lease asks again at once
//! (as a live agent does).

use super::scenario::Scenario;
use super::world::{simulate, SimError};

/// One agent of 2 slots; `first` (2 cores, `first_s` seconds) then `second` (2 cores,
/// 1 s), both submitted at 0; rounds every second.
fn two_wide_tasks(first_s: f64) -> Scenario {
    let text = format!(
        r#"
        seed = 1
        [scheduler]
        interval_ms = 1000
        [[platform]]
        name = "p"
        slots = 2
        agents_at_ms = [0]
        [[app]]
        name = "first"
        tasks = 1
        cores = 2
        runtime_s = {{ p = {first_s} }}
        [[app]]
        name = "second"
        tasks = 1
        cores = 2
        runtime_s = {{ p = 1.0 }}
        "#
    );
    toml::from_str(&text).unwrap()
}

#[test]
fn a_task_ending_on_a_round_tick_after_a_long_run_is_not_taken_for_a_stuck_world() {
    // The first task ends at 20 s exactly, on a round's tick, more than ten rounds after
    // anything last happened: the second runs after it.
    let out = match simulate(&two_wide_tasks(20.0)) {
        Ok(out) => out,
        Err(SimError::Stuck(app)) => panic!("taken for stuck: {app} never ran"),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(out.finished_ms.get("first"), Some(&20_000));
    let second = out.finished_ms.get("second").copied();
    assert!(
        second.is_some_and(|ms| (21_000..22_000).contains(&ms)),
        "{out:?}"
    );
}

#[test]
fn an_agent_with_slots_left_after_a_lease_asks_again_at_once() {
    // Two runs of a 4-processor parallel task fit one agent of 8 slots together; each
    // lease gives one run (its reservation's), so the agent must ask twice at once.
    let scenario: Scenario = toml::from_str(
        r#"
        [[platform]]
        name = "p"
        slots = 8
        agents_at_ms = [0]
        [[app]]
        name = "mpi"
        tasks = 2
        procs = 4
        runtime_s = { p = 10.0 }
        "#,
    )
    .unwrap();
    let out = simulate(&scenario).unwrap();
    assert_eq!(out.runs["mpi"]["p"], 2);
    assert_eq!(out.finished_ms.get("mpi"), Some(&10_000), "{out:?}");
}
