//! Unit tests of the reconciler's decisions, one situation each.

use super::*;

const MIN: u64 = 60_000;

fn caps() -> Caps {
    Caps {
        max_queued: 2,
        max_running: 4,
        cores_per_pilot: 4,
    }
}

fn policy() -> Policy {
    Policy {
        register_timeout_ms: 2 * MIN,
        replace_lead_ms: 5 * MIN,
        backoff_base_ms: 1000,
        backoff_max_ms: 60_000,
        idle_timeout_ms: MIN,
    }
}

fn pilot<'a>(name: &'a str, state: PilotState, job: Option<&'a JobState>) -> PilotView<'a> {
    PilotView {
        name,
        state,
        job,
        submitted_ms: 0,
        job_started_ms: None,
        walltime_end_ms: None,
        agent_idle: false,
        idle_since_ms: None,
        draining: false,
        agent_lost: false,
        agent_live: false,
        drain_ordered: false,
        awaiting_exit_since: None,
    }
}

fn input<'a>(now_ms: u64, demand_cores: u64, pilots: &'a [PilotView<'a>]) -> Input<'a> {
    Input {
        now_ms,
        demand_cores,
        caps: caps(),
        policy: policy(),
        backoff: Backoff::default(),
        pilots,
    }
}

fn states(d: &Decisions) -> Vec<(&str, PilotState)> {
    d.transitions
        .iter()
        .map(|t| (t.pilot.as_str(), t.state))
        .collect()
}

#[test]
fn no_demand_no_pilots_does_nothing() {
    assert_eq!(decide(&input(0, 0, &[])), Decisions::default());
}

#[test]
fn one_waiting_task_asks_for_one_pilot() {
    assert_eq!(decide(&input(0, 1, &[])).submit, 1);
}

#[test]
fn demand_is_rounded_up_to_pilots_and_capped_by_max_queued() {
    // 9 cores → 3 pilots of 4 cores, but only 2 may wait in the queue at once.
    assert_eq!(decide(&input(0, 9, &[])).submit, 2);
    let q = JobState::Queued;
    let pilots = [pilot("a", PilotState::Queued, Some(&q))];
    assert_eq!(decide(&input(0, 9, &pilots)).submit, 1);
}

#[test]
fn max_running_caps_the_total() {
    let r = JobState::Running;
    let pilots: Vec<PilotView> = ["a", "b", "c"]
        .iter()
        .map(|n| pilot(n, PilotState::Running, Some(&r)))
        .collect();
    // 100 cores wanted; 4 pilots at most, 3 running: one more.
    assert_eq!(decide(&input(0, 100, &pilots)).submit, 1);
    let four: Vec<PilotView> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| pilot(n, PilotState::Running, Some(&r)))
        .collect();
    assert_eq!(decide(&input(0, 100, &four)).submit, 0);
}

#[test]
fn a_job_running_before_its_agent_registers_is_noted_then_timed_out() {
    let r = JobState::Running;
    let mut p = pilot("a", PilotState::Queued, Some(&r));
    let d = decide(&input(10 * MIN, 4, std::slice::from_ref(&p)));
    assert_eq!(d.job_started, vec!["a".to_string()]);
    assert!(d.transitions.is_empty());
    assert_eq!(d.submit, 0, "the starting pilot covers the demand");

    p.job_started_ms = Some(10 * MIN);
    let d = decide(&input(12 * MIN - 1, 4, std::slice::from_ref(&p)));
    assert!(d.transitions.is_empty() && d.cancel.is_empty());

    let d = decide(&input(12 * MIN, 4, std::slice::from_ref(&p)));
    assert_eq!(states(&d), vec![("a", PilotState::Failed)]);
    assert!(d.transitions[0]
        .reason
        .contains("without its agent registering"));
    assert_eq!(d.cancel, vec!["a".to_string()]);
    assert!(d.back_off);
    assert_eq!(
        d.submit, 0,
        "a failure backs off instead of resubmitting at once"
    );
}

#[test]
fn a_missing_agent_binary_fails_fast_with_a_clear_reason() {
    let e = JobState::Ended {
        exit_code: Some(EXIT_AGENT_MISSING),
        reason: "COMPLETED".into(),
    };
    let pilots = [pilot("a", PilotState::Queued, Some(&e))];
    let d = decide(&input(MIN, 4, &pilots));
    assert_eq!(states(&d), vec![("a", PilotState::Failed)]);
    assert!(
        d.transitions[0].reason.contains("agent binary is missing"),
        "{}",
        d.transitions[0].reason
    );
    assert!(d.back_off);
    assert_eq!(d.submit, 0);
}

#[test]
fn endings_depend_on_whether_the_agent_registered() {
    let e = JobState::Ended {
        exit_code: Some(0),
        reason: String::new(),
    };
    let v = JobState::Vanished;
    let drained = |name, job| PilotView {
        drain_ordered: true,
        ..pilot(name, PilotState::Running, Some(job))
    };
    let pilots = [
        drained("reg-ended", &e),
        pilot("unreg-ended", PilotState::Queued, Some(&e)),
        drained("reg-gone", &v),
        pilot("unreg-gone", PilotState::Queued, Some(&v)),
    ];
    let d = decide(&input(MIN, 0, &pilots));
    assert_eq!(
        states(&d),
        vec![
            ("reg-ended", PilotState::Ended),
            ("unreg-ended", PilotState::Failed),
            ("reg-gone", PilotState::Ended),
            ("unreg-gone", PilotState::Failed),
        ]
    );
    assert!(d.transitions[1]
        .reason
        .contains("before its agent registered"));
    assert!(d.transitions[3].reason.contains("vanished"));
    assert!(d.back_off);
    assert!(d.cancel.is_empty(), "ended jobs need no cancel");
}

#[test]
fn an_ended_registered_pilot_is_replaced_while_work_waits() {
    let e = JobState::Ended {
        exit_code: Some(0),
        reason: String::new(),
    };
    let pilots = [PilotView {
        drain_ordered: true,
        ..pilot("a", PilotState::Running, Some(&e))
    }];
    let d = decide(&input(MIN, 4, &pilots));
    assert_eq!(states(&d), vec![("a", PilotState::Ended)]);
    assert!(!d.back_off);
    assert_eq!(d.submit, 1);
}

/// A registered pilot's job ending while its agent was not asked to leave (`scancel`, a
/// node failure): its live agent is released at once, even while Slurm still shows the
/// job COMPLETING; the pilot fails with the batch system's reason once it has one, is
/// replaced, and is no sign of a broken platform. An end at the walltime is an end.
#[test]
fn a_registered_pilots_job_ending_unasked_fails_it_and_releases_its_agent_at_once() {
    let completing = JobState::Ending {
        reason: "COMPLETING".into(),
    };
    let cancelled = JobState::Ended {
        exit_code: Some(143),
        reason: "CANCELLED".into(),
    };
    let live = |job| PilotView {
        agent_live: true,
        ..pilot("a", PilotState::Running, Some(job))
    };
    let first = [live(&completing)];
    let d = decide(&input(MIN, 4, &first));
    assert_eq!(d.release, ["a"], "released while the job completes");
    assert_eq!(d.await_exit, ["a"]);
    assert!(d.transitions.is_empty());
    assert_eq!(d.submit, 1, "no longer capacity");

    // Still completing a cycle later (Slurm's kill wait): still waiting for why.
    let still = [PilotView {
        awaiting_exit_since: Some(MIN),
        agent_live: false,
        ..live(&completing)
    }];
    let d = decide(&input(MIN + 1_000, 4, &still));
    assert!(d.transitions.is_empty(), "{:?}", d.transitions);
    assert_eq!(d.await_exit, ["a"]);
    assert!(d.release.is_empty(), "released once");

    let then = [PilotView {
        awaiting_exit_since: Some(MIN),
        agent_live: false,
        ..live(&cancelled)
    }];
    let d = decide(&input(MIN, 4, &then));
    assert_eq!(states(&d), vec![("a", PilotState::Failed)]);
    assert_eq!(
        d.transitions[0].reason,
        "batch job ended without the manager asking (exit 143: CANCELLED)"
    );
    assert_eq!(d.killed, ["a"]);
    assert!(d.release.is_empty(), "its agent is gone already");
    assert!(!d.back_off);
    assert_eq!(d.submit, 1);

    let at_walltime = [PilotView {
        walltime_end_ms: Some(MIN + 1000),
        ..live(&cancelled)
    }];
    let d = decide(&input(MIN, 4, &at_walltime));
    assert_eq!(states(&d), vec![("a", PilotState::Ended)]);
    assert!(d.killed.is_empty());
    assert_eq!(d.release, ["a"]);
}

#[test]
fn pilots_near_their_walltime_are_replaced_ahead_of_time() {
    let r = JobState::Running;
    let mut p = pilot("a", PilotState::Running, Some(&r));
    p.walltime_end_ms = Some(60 * MIN);
    let d = decide(&input(54 * MIN, 4, std::slice::from_ref(&p)));
    assert_eq!(d.submit, 0, "6 minutes left > 5 minutes lead");
    let d = decide(&input(55 * MIN, 4, std::slice::from_ref(&p)));
    assert_eq!(d.submit, 1, "5 minutes left: replace it");
    assert!(d.transitions.is_empty(), "the old pilot keeps running");
}

#[test]
fn no_demand_cancels_queued_pilots_and_drains_agents_idle_past_the_timeout() {
    let q = JobState::Queued;
    let r = JobState::Running;
    let idle_for = |name, since| PilotView {
        agent_idle: true,
        idle_since_ms: Some(since),
        ..pilot(name, PilotState::Running, Some(&r))
    };
    let busy = pilot("busy", PilotState::Running, Some(&r));
    let drained = PilotView {
        draining: true,
        ..idle_for("drained", 0)
    };
    let pilots = [
        pilot("waiting", PilotState::Queued, Some(&q)),
        idle_for("idle", 0),
        idle_for("briefly", MIN + 1),
        busy,
        drained,
    ];
    let d = decide(&input(MIN, 0, &pilots));
    assert_eq!(states(&d), vec![("waiting", PilotState::Cancelled)]);
    assert_eq!(d.cancel, vec!["waiting".to_string()]);
    assert_eq!(d.drain, vec!["idle".to_string()], "idle for a minute");
    assert_eq!(d.submit, 0);
    // A moment later the briefly idle one is kept still; its minute passed, it goes.
    let d = decide(&input(2 * MIN, 0, &pilots[2..3]));
    assert!(d.drain.is_empty());
    let d = decide(&input(2 * MIN + 1, 0, &pilots[2..3]));
    assert_eq!(d.drain, vec!["briefly".to_string()]);
}

#[test]
fn surplus_cancels_the_newest_queued_pilots_only() {
    let q = JobState::Queued;
    let r = JobState::Running;
    let mut old = pilot("old", PilotState::Queued, Some(&q));
    old.submitted_ms = 1;
    let mut new = pilot("new", PilotState::Queued, Some(&q));
    new.submitted_ms = 2;
    let running = pilot("run", PilotState::Running, Some(&r));
    // 4 cores: one pilot is enough; the running one stays, both queued are surplus.
    let pilots = [old.clone(), new.clone(), running];
    let d = decide(&input(MIN, 4, &pilots));
    assert_eq!(
        d.cancel,
        vec!["new".to_string(), "old".to_string()],
        "newest first"
    );
    // 8 cores: two pilots; only the newest queued one goes.
    let d = decide(&input(MIN, 8, &pilots));
    assert_eq!(d.cancel, vec!["new".to_string()]);
    assert_eq!(states(&d), vec![("new", PilotState::Cancelled)]);
}

#[test]
fn backoff_blocks_submissions_until_it_expires() {
    let mut i = input(10_000, 4, &[]);
    i.backoff = Backoff {
        failures: 1,
        retry_at_ms: 10_001,
    };
    assert_eq!(decide(&i).submit, 0);
    i.now_ms = 10_001;
    assert_eq!(decide(&i).submit, 1);
}

#[test]
fn backoff_grows_exponentially_up_to_its_maximum() {
    let p = policy();
    let b1 = Backoff::default().failed(0, &p);
    assert_eq!((b1.failures, b1.retry_at_ms), (1, 1000));
    let b2 = b1.failed(0, &p);
    assert_eq!(b2.retry_at_ms, 2000);
    let b3 = b2.failed(0, &p);
    assert_eq!(b3.retry_at_ms, 4000);
    let mut b = b3;
    for _ in 0..100 {
        b = b.failed(0, &p);
    }
    assert_eq!(b.retry_at_ms, 60_000, "capped");
    assert!(b.waiting(59_999) && !b.waiting(60_000));
}

#[test]
fn final_pilots_are_ignored() {
    let e = JobState::Ended {
        exit_code: Some(127),
        reason: String::new(),
    };
    let pilots = [pilot("old", PilotState::Failed, Some(&e))];
    let d = decide(&input(MIN, 4, &pilots));
    assert!(d.transitions.is_empty());
    assert_eq!(d.submit, 1);
}

#[test]
fn a_held_or_unpolled_pilot_still_counts_as_capacity() {
    let h = JobState::Held;
    let pilots = [
        pilot("held", PilotState::Queued, Some(&h)),
        pilot("new", PilotState::Queued, None),
    ];
    let d = decide(&input(MIN, 8, &pilots));
    assert_eq!(d.submit, 0);
    assert!(d.transitions.is_empty());
}

#[test]
fn a_lost_agent_gets_its_still_running_job_cancelled_and_replaced() {
    let r = JobState::Running;
    let mut lost = pilot("lost", PilotState::Running, Some(&r));
    lost.agent_lost = true;
    let d = decide(&input(MIN, 4, std::slice::from_ref(&lost)));
    assert_eq!(states(&d), vec![("lost", PilotState::Ended)]);
    assert!(d.transitions[0].reason.contains("stopped answering"));
    assert_eq!(d.cancel, vec!["lost".to_string()]);
    assert_eq!(d.submit, 1, "its capacity is replaced");
    assert!(!d.back_off);
}

#[test]
fn a_job_ending_without_a_status_is_decided_on_its_final_state_or_after_the_wait() {
    let completing = JobState::Ending {
        reason: "COMPLETING".into(),
    };
    let missing = JobState::Ended {
        exit_code: Some(127),
        reason: "FAILED".into(),
    };
    let mut p = pilot("a", PilotState::Queued, Some(&completing));
    let d = decide(&input(MIN, 4, std::slice::from_ref(&p)));
    assert!(d.transitions.is_empty());
    assert_eq!(d.await_exit, vec!["a".to_string()]);
    assert_eq!(d.submit, 0, "still counted until decided");
    // Waited on while it completes, up to the limit.
    p.awaiting_exit_since = Some(MIN);
    let just_before = MIN + EXIT_WAIT_MS - 1;
    let d = decide(&input(just_before, 4, std::slice::from_ref(&p)));
    assert!(d.transitions.is_empty());
    assert_eq!(d.await_exit, vec!["a".to_string()]);
    // The final state, when it comes, says why.
    let ended = PilotView {
        job: Some(&missing),
        ..p.clone()
    };
    let d = decide(&input(just_before, 4, std::slice::from_ref(&ended)));
    assert_eq!(states(&d), vec![("a", PilotState::Failed)]);
    assert!(d.transitions[0].reason.contains("agent binary is missing"));
    // Past the limit, decided on what is known.
    let d = decide(&input(MIN + EXIT_WAIT_MS, 4, std::slice::from_ref(&p)));
    assert_eq!(states(&d), vec![("a", PilotState::Failed)]);
    assert!(d.transitions[0].reason.contains("COMPLETING"));
    assert!(d.await_exit.is_empty());
}

#[test]
fn a_job_that_ended_without_a_status_is_decided_one_cycle_later() {
    // A process that exited (the local and ssh adapters), PBS `C` without an exit status:
    // no final state is to come, so only one more poll is waited for.
    let exited = JobState::Ended {
        exit_code: None,
        reason: "process 42 on here has exited".into(),
    };
    let mut p = pilot("a", PilotState::Queued, Some(&exited));
    let d = decide(&input(MIN, 4, std::slice::from_ref(&p)));
    assert!(d.transitions.is_empty());
    assert_eq!(d.await_exit, vec!["a".to_string()]);
    p.awaiting_exit_since = Some(MIN);
    let d = decide(&input(MIN + 500, 4, std::slice::from_ref(&p)));
    assert_eq!(states(&d), vec![("a", PilotState::Failed)]);
    assert!(
        d.transitions[0].reason.contains("has exited"),
        "{:?}",
        d.transitions
    );
}
