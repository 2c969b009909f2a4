//! Pilots as control-plane events: the group rules of a pilot's one credential with an
//! explicit clock, the hold on a group's leases, what each event changes, and a journal of
//! pilot events that a replay reproduces (and a tampered one it catches).

use super::simulation::{replay, ReplayError};
use super::*;
use crate::test_apps::{agent_join, array_app, control_settings, control_with};
use hetpilot_protocol::pilots::PilotState;

const WINDOW_MS: u64 = 1_000;

fn control() -> (ControlSettings, Control) {
    let settings = control_settings();
    let mut c = control_with(&settings, Vec::new());
    // As the manager does at start-up: the window first, then the journal (which says it).
    c.set_pilot_window(WINDOW_MS);
    c.start_journal(&settings);
    (settings, c)
}

fn created(c: &mut Control, pilot: &str, nodes: u32, now_ms: u64) -> PilotOutcome {
    c.pilot(
        PilotEvent::Created {
            pilot: pilot.into(),
            platform: "p".into(),
            user: None,
            nodes,
        },
        now_ms,
    )
    .unwrap()
}

fn claim(c: &mut Control, host: &str, now_ms: u64) -> Result<PilotOutcome, PilotRefused> {
    c.pilot(
        PilotEvent::Claimed {
            pilot: "p-p1".into(),
            hostname: host.into(),
        },
        now_ms,
    )
}

fn register(
    c: &mut Control,
    agent: u64,
    host: &str,
    now_ms: u64,
) -> Result<PilotOutcome, PilotRefused> {
    c.pilot(
        PilotEvent::Registered {
            pilot: "p-p1".into(),
            agent,
            hostname: host.into(),
            walltime_end_s: Some(9),
        },
        now_ms,
    )
}

fn join(c: &mut Control, agent: u64, host: &str, now_ms: u64) {
    let join = AgentJoin {
        hostname: host.into(),
        ..agent_join(AgentId(agent), "p", 1)
    };
    c.agent_joined(join, now_ms);
}

#[test]
fn a_two_node_group_admits_one_agent_per_node_is_held_until_whole_then_closes() {
    let (_, mut c) = control();
    let made = created(&mut c, "p-p1", 2, 100);
    let record = made.changed.unwrap();
    assert_eq!(
        (record.state, record.reason.as_str()),
        (PilotState::Queued, "submitting")
    );
    assert_eq!(record.submitted_ms, 100);
    assert!(
        c.take_effects().pilots.is_empty(),
        "an arrival: its record was committed before"
    );

    assert_eq!(
        claim(&mut c, "n1", 200).unwrap().credential,
        CredentialFate::Kept
    );
    assert_eq!(
        claim(&mut c, "n1", 201),
        Err(PilotRefused::NodeTaken {
            pilot: "p-p1".into(),
            hostname: "n1".into()
        })
    );
    let first = register(&mut c, 7, "n1", 250).unwrap();
    let r = first.changed.clone().unwrap();
    assert_eq!(
        (r.state, r.agent, r.registered_ms, r.walltime_end_ms),
        (PilotState::Running, Some(7), Some(250), Some(9_000))
    );
    assert_eq!(first.queue_wait_ms, Some(150), "its first sign of life");
    assert_eq!(
        c.take_effects().pilots,
        [first.changed.clone().unwrap()],
        "the registration's record, to persist"
    );
    assert!(!first.whole);
    join(&mut c, 7, "n1", 250);
    let spec = array_app("a", 4);
    let template = spec.validate().unwrap();
    c.submit(AppId(1), "u".into(), spec, template, 250);
    assert!(c.held_for_its_group(AgentId(7), 300));
    assert!(c.lease(AgentId(7), 1, 300).unwrap().tasks.is_empty());

    // The second node's agent: the last admission closes the credential by the window.
    assert_eq!(
        claim(&mut c, "n2", 400).unwrap().credential,
        CredentialFate::ExpiresBy(250 + WINDOW_MS)
    );
    assert!(matches!(
        claim(&mut c, "n3", 401),
        Err(PilotRefused::NoLongerWaiting(_))
    ));
    let second = register(&mut c, 8, "n2", 450).unwrap();
    assert!(second.whole);
    assert_eq!(second.queue_wait_ms, None, "once");
    assert!(
        c.take_effects().wake.work,
        "a whole group's agents may take tasks"
    );
    assert!(!c.held_for_its_group(AgentId(7), 450));
    assert_eq!(c.lease(AgentId(7), 1, 450).unwrap().tasks.len(), 1);
    assert_eq!(c.pilot_of(AgentId(8)), Some("p-p1"));
}

#[test]
fn past_its_window_a_group_admits_no_one_and_its_agents_are_free() {
    let (_, mut c) = control();
    let _ = created(&mut c, "p-p1", 2, 0);
    let _ = claim(&mut c, "n1", 10).unwrap();
    let _ = register(&mut c, 7, "n1", 10).unwrap();
    assert!(c.held_for_its_group(AgentId(7), 10 + WINDOW_MS - 1));
    assert!(!c.held_for_its_group(AgentId(7), 10 + WINDOW_MS));
    assert_eq!(
        claim(&mut c, "n2", 10 + WINDOW_MS),
        Err(PilotRefused::NoLongerWaiting("p-p1".into()))
    );
    // A restart: the stored credential answers retries only until the window closes.
    assert_eq!(c.pilot_credential_until("p-p1", 60_000, 20), Some(60_000));
    assert_eq!(
        c.pilot_credential_until("p-p1", 60_000, 10 + WINDOW_MS),
        None
    );
}

#[test]
fn a_pilot_that_ended_refuses_its_agent_and_stays_ended() {
    let (_, mut c) = control();
    let _ = created(&mut c, "p-p1", 1, 0);
    let _ = claim(&mut c, "n1", 5).unwrap();
    let failed = c
        .pilot(
            PilotEvent::Moved {
                pilot: "p-p1".into(),
                from: PilotState::Queued,
                to: PilotState::Failed,
                reason: "no agent registered in time".into(),
            },
            8,
        )
        .unwrap();
    assert_eq!(failed.credential, CredentialFate::Revoked);
    assert_eq!(failed.changed.unwrap().ended_ms, Some(8));
    assert_eq!(
        register(&mut c, 7, "n1", 9),
        Err(PilotRefused::NoLongerWaiting("p-p1".into()))
    );
    let r = c.pilot_record("p-p1").unwrap();
    assert_eq!((r.state, r.agent), (PilotState::Failed, None));
    // A move from a state it is no longer in changes nothing.
    let stale = c
        .pilot(
            PilotEvent::Moved {
                pilot: "p-p1".into(),
                from: PilotState::Queued,
                to: PilotState::Cancelled,
                reason: "shutdown".into(),
            },
            10,
        )
        .unwrap();
    assert_eq!(stale, PilotOutcome::default());
    // A late submission failure does not undo a registration either.
    let _ = created(&mut c, "p-p2", 1, 20);
    let _ = c
        .pilot(
            PilotEvent::Registered {
                pilot: "p-p2".into(),
                agent: 9,
                hostname: "n".into(),
                walltime_end_s: None,
            },
            21,
        )
        .unwrap();
    let late = c
        .pilot(
            PilotEvent::SubmissionFailed {
                pilot: "p-p2".into(),
                error: "timed out".into(),
            },
            22,
        )
        .unwrap();
    assert_eq!(late.changed, None);
    assert_eq!(c.pilot_record("p-p2").unwrap().state, PilotState::Running);
}

#[test]
fn a_journal_of_pilot_events_replays_and_a_tampered_outcome_is_caught() {
    let (_, mut c) = control();
    let _ = created(&mut c, "p-p1", 2, 0);
    for (event, now) in [
        (
            PilotEvent::Submitted {
                pilot: "p-p1".into(),
                batch_job_id: "42".into(),
            },
            1,
        ),
        (
            PilotEvent::JobStarted {
                pilot: "p-p1".into(),
            },
            5,
        ),
    ] {
        let _ = c.pilot(event, now).unwrap();
    }
    let _ = claim(&mut c, "n1", 6).unwrap();
    let _ = register(&mut c, 7, "n1", 7).unwrap();
    join(&mut c, 7, "n1", 7);
    let _ = c.lease(AgentId(7), 1, 8);
    assert!(claim(&mut c, "n1", 9).is_err());
    let _ = c
        .pilot(
            PilotEvent::Moved {
                pilot: "p-p1".into(),
                from: PilotState::Running,
                to: PilotState::Ended,
                reason: "its batch job ended".into(),
            },
            20,
        )
        .unwrap();
    let journal = c.take_journal();
    let summary = replay(journal.clone()).unwrap();
    assert_eq!(summary.pilot_events, 7);

    // The live manager's record said the job started at another time.
    let mut tampered = journal;
    let at = tampered
        .iter()
        .position(|e| {
            matches!(
                &e.input,
                Input::Pilot {
                    event: PilotEvent::JobStarted { .. },
                    ..
                }
            )
        })
        .unwrap();
    if let Some(Output::Pilot(o)) = &mut tampered[at].output {
        o.changed.as_mut().unwrap().job_started_ms = Some(4);
    }
    match replay(tampered) {
        Err(ReplayError::Departed { line, input, .. }) => {
            assert_eq!((line, input.as_str()), (at + 1, "pilot"));
        }
        other => panic!("{other:?}"),
    }
}

/// A hand-written journal is input: pilot events about unknown pilots, a pilot of no
/// nodes, a walltime at the end of `u64`, a name made again and a move to its own state
/// replay without a panic, each decided as the live manager would.
#[test]
fn hostile_pilot_events_in_a_journal_replay_without_a_panic() {
    let long = "p".repeat(300);
    let lines = [
        serde_json::json!({"input": "open", "restored": false, "settings": control_settings()}),
        serde_json::json!({"input": "pilot_window", "window_ms": u64::MAX}),
        serde_json::json!({"input": "pilot", "now_ms": u64::MAX, "event":
            {"event": "registered", "pilot": "nobody", "agent": u64::MAX, "hostname": "..",
             "walltime_end_s": u64::MAX}}),
        serde_json::json!({"input": "pilot", "now_ms": 0, "event":
            {"event": "created", "pilot": long, "platform": "\u{0}", "user": null, "nodes": 0}}),
        serde_json::json!({"input": "pilot", "now_ms": 1, "event":
            {"event": "claimed", "pilot": long, "hostname": "n"}}),
        serde_json::json!({"input": "pilot", "now_ms": 2, "event":
            {"event": "created", "pilot": "p-p1", "platform": "p", "user": null,
             "nodes": u32::MAX}}),
        serde_json::json!({"input": "pilot", "now_ms": 3, "event":
            {"event": "created", "pilot": "p-p1", "platform": "p", "user": null, "nodes": 1}}),
        serde_json::json!({"input": "pilot", "now_ms": u64::MAX, "event":
            {"event": "registered", "pilot": "p-p1", "agent": 1, "hostname": "n",
             "walltime_end_s": u64::MAX}}),
        serde_json::json!({"input": "pilot", "now_ms": 4, "event":
            {"event": "moved", "pilot": "p-p1", "from": "running", "to": "running",
             "reason": ""}}),
        serde_json::json!({"input": "pilot", "now_ms": 5, "event":
            {"event": "dir_removed", "pilot": "gone"}}),
    ];
    let entries: Vec<journal::Entry> = lines
        .into_iter()
        .map(|l| serde_json::from_value(l).unwrap())
        .collect();
    let summary = replay(entries).unwrap();
    assert_eq!(summary.pilot_events, 8);

    // Decided as live: no agent on a pilot of no nodes, the walltime saturated.
    let (_, mut c) = control();
    let _ = created(&mut c, "p-p1", 0, 0);
    assert_eq!(
        claim(&mut c, "n", 1),
        Err(PilotRefused::NoLongerWaiting("p-p1".into()))
    );
    let _ = created(&mut c, "p-p1", 1, 2);
    let r = c
        .pilot(
            PilotEvent::Registered {
                pilot: "p-p1".into(),
                agent: 1,
                hostname: "n".into(),
                walltime_end_s: Some(u64::MAX),
            },
            3,
        )
        .unwrap()
        .changed
        .unwrap();
    assert_eq!(r.walltime_end_ms, Some(u64::MAX), "saturated, not wrapped");
    assert_eq!(
        register(&mut c, 2, "n", 4),
        Err(PilotRefused::NoLongerWaiting("p-p1".into())),
        "whole: no second agent"
    );
}
