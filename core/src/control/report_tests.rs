//! Reports decided inside the control plane: current, late and duplicate results, foreign
//! ones refused whole, a lease that ends between the look-up and the decision, clamping,
//! and a journal whose classification a replay checks.

use super::*;
use crate::control::journal::{Entry, Input, Output};
use crate::control::simulation::{replay, ReplayError};
use crate::control::{AgentJoin, Measured};
use crate::test_apps::{agent_join, array_app, control_settings};
use hetpilot_protocol::protocol::{Measurements, TaskAttempt};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::AppId;

const AGENT: AgentId = AgentId(7);
const OTHER: AgentId = AgentId(8);
const APP: AppId = AppId(1);

/// A journaling control plane with one application of `n` tasks and one 4-slot agent,
/// which leased every task it could at 1,000 ms.
fn leased(n: u64) -> (Control, Vec<TaskAttempt>) {
    let settings = control_settings();
    let mut c = Control::new(&settings, Measured::default()).unwrap();
    c.start_journal(&settings);
    let spec = AppSpec {
        tasks: TaskSource::Array {
            start: 0,
            end: n - 1,
        },
        ..array_app("a", 1)
    };
    let template = spec.validate().unwrap();
    c.submit(APP, "alice".into(), spec, template, 0);
    for agent in [AGENT, OTHER] {
        let join = AgentJoin {
            hostname: format!("h{}", agent.0),
            ..agent_join(agent, "p", 4)
        };
        c.agent_joined(join, 0);
    }
    let batch = c.lease(AGENT, 4, 1_000).unwrap();
    let leased = batch
        .tasks
        .iter()
        .map(|t| TaskAttempt {
            task: t.task,
            attempt: t.attempt,
        })
        .collect();
    (c, leased)
}

fn success(at: TaskAttempt, wall_ms: f64) -> TaskResult {
    let m = Measurements {
        wall_ms,
        user_cpu_ms: wall_ms,
        ..Measurements::default()
    };
    TaskResult::without_output(at, Outcome::Success, m, None)
}

fn classes(answer: Result<ReportAnswer, ReportError>) -> Vec<ResultClass> {
    match answer {
        Ok(ReportAnswer::Recorded { classes, .. }) => classes,
        other => panic!("{other:?}"),
    }
}

fn stored(agent: AgentId, recorded: bool) -> Option<StoredAttempt> {
    Some(StoredAttempt {
        agent,
        recorded,
        leased_ms: 1_000,
    })
}

/// The journal's report entries: their history and the decision recorded.
fn journaled_reports(c: &mut Control) -> Vec<(ReportHistory, Option<Output>)> {
    c.take_journal()
        .into_iter()
        .filter_map(|e| match e.input {
            Input::Report { history, .. } => Some((history, e.output)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_report_sent_twice_is_recorded_once_and_the_journal_says_so() {
    let (mut c, leased) = leased(2);
    let results: Vec<TaskResult> = leased.iter().map(|at| success(*at, 500.0)).collect();
    assert_eq!(c.history_wanted(AGENT, &results), Ok(vec![]));
    let first = c.record_report(AGENT, results.clone(), &ReportHistory::new(), 2_000);
    assert_eq!(classes(first), [ResultClass::Current, ResultClass::Current]);
    // Sent again: no longer current, so the store decides: recorded already.
    assert_eq!(c.history_wanted(AGENT, &results), Ok(vec![0, 1]));
    let history = ReportHistory::from([(0, stored(AGENT, true)), (1, stored(AGENT, true))]);
    let again = c.record_report(AGENT, results, &history, 2_100);
    assert_eq!(
        classes(again),
        [ResultClass::Duplicate, ResultClass::Duplicate]
    );
    let samples = c.policy.stats.samples(APP, "p");
    assert_eq!(samples, 2, "each run profiled once");
    let reports = journaled_reports(&mut c);
    assert_eq!(reports.len(), 2);
    assert_eq!(
        reports[1],
        (
            history,
            Some(Output::Recorded(vec![ResultClass::Duplicate; 2]))
        )
    );
}

#[test]
fn another_agents_attempt_refuses_the_whole_report_and_changes_nothing() {
    let (mut c, leased) = leased(2);
    let mine = success(leased[0], 500.0);
    let theirs = TaskAttempt {
        task: leased[1].task,
        attempt: leased[1].attempt + 1,
    };
    let results = vec![mine, success(theirs, 500.0)];
    assert_eq!(c.history_wanted(AGENT, &results), Ok(vec![1]));
    let history = ReportHistory::from([(1, stored(OTHER, false))]);
    let refused = c.record_report(AGENT, results, &history, 2_000);
    assert!(
        matches!(refused, Err(ReportError::Foreign { agent: AGENT, .. })),
        "{refused:?}"
    );
    assert_eq!(c.queues().agent(AGENT).unwrap().held.len(), 2, "still held");
    assert_eq!(c.policy.stats.samples(APP, "p"), 0, "nothing profiled");
    let reports = journaled_reports(&mut c);
    assert!(
        matches!(&reports[..], [(_, Some(Output::Refused(r)))] if r.contains("never leased")),
        "{reports:?}"
    );
    // An attempt the store never saw is foreign too.
    let unknown = vec![success(theirs, 1.0)];
    let refused = c.record_report(AGENT, unknown, &ReportHistory::from([(0, None)]), 2_000);
    assert!(matches!(refused, Err(ReportError::Foreign { .. })));
}

#[test]
fn a_lease_that_ends_after_the_look_up_asks_for_its_history_and_changes_nothing() {
    let (mut c, leased) = leased(1);
    let results = vec![success(leased[0], 500.0)];
    assert_eq!(c.history_wanted(AGENT, &results), Ok(vec![]));
    // Cancelled between the look-up and the decision: no longer the current lease.
    c.cancel(APP, 1_500);
    c.take_journal();
    match c.record_report(AGENT, results, &ReportHistory::new(), 2_000) {
        Ok(ReportAnswer::NeedsHistory { missing, results }) => {
            assert_eq!(missing, [0]);
            assert_eq!(results.len(), 1, "given back");
        }
        other => panic!("{other:?}"),
    }
    assert!(journaled_reports(&mut c).is_empty(), "nothing decided");
    // With its history, the run is recorded as a late result of this agent's lease.
    let results = vec![success(leased[0], 500.0)];
    let history = ReportHistory::from([(0, stored(AGENT, false))]);
    let late = c.record_report(AGENT, results, &history, 2_000);
    assert_eq!(classes(late), [ResultClass::Late]);
    assert_eq!(c.policy.stats.samples(APP, "p"), 1, "its run is profiled");
}

#[test]
fn a_result_claiming_more_than_its_lease_is_clamped_before_it_is_journaled() {
    let (mut c, leased) = leased(1);
    let claimed = success(leased[0], 1e12);
    match c.record_report(AGENT, vec![claimed], &ReportHistory::new(), 3_000) {
        Ok(ReportAnswer::Recorded { clamped, .. }) => assert_eq!(clamped, [leased[0].task]),
        other => panic!("{other:?}"),
    }
    let journal = c.take_journal();
    let wall = journal
        .iter()
        .find_map(|e| match &e.input {
            Input::Report { results, .. } => Some(results[0].measurements.wall_ms),
            _ => None,
        })
        .unwrap();
    assert_eq!(wall, 2_000.0 + LEASE_SLACK_MS, "the lease's age plus slack");
}

#[test]
fn a_replay_checks_each_reports_classification() {
    let (mut c, leased) = leased(2);
    let results: Vec<TaskResult> = leased.iter().map(|at| success(*at, 500.0)).collect();
    let _ = classes(c.record_report(AGENT, results.clone(), &ReportHistory::new(), 2_000));
    let history = ReportHistory::from([(0, stored(AGENT, true)), (1, stored(AGENT, true))]);
    let _ = classes(c.record_report(AGENT, results, &history, 2_100));
    let journal: Vec<Entry> = c.take_journal();
    assert!(replay(journal.clone()).is_ok());
    // A journal claiming the second report was recorded as new runs departs.
    let tampered: Vec<Entry> = journal
        .into_iter()
        .map(|mut e| {
            if e.output == Some(Output::Recorded(vec![ResultClass::Duplicate; 2])) {
                e.output = Some(Output::Recorded(vec![ResultClass::Late; 2]));
            }
            e
        })
        .collect();
    match replay(tampered) {
        Err(ReplayError::Departed { input, .. }) => assert_eq!(input, "report"),
        other => panic!("{other:?}"),
    }
}
