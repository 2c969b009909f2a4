//! How `hetpilot status` and `hetpilot tasks` show workflows: blocked and ready tasks, the
//! live stretch estimate, and a task's workflow state.

use hetpilot_protocol::protocol::{AppSummary, TaskInfo, TaskState};

/// One line per workflow: blocked / ready / running / done and the stretch estimate.
pub fn print_progress(a: &AppSummary) {
    let Some(w) = &a.workflow else {
        return;
    };
    let c = a.counts;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let elapsed = now_ms.saturating_sub(a.submitted_at_ms) as f64 / 1000.0;
    let stretch = match w.stretch_estimate(elapsed) {
        Some(s) if !a.is_finished() => format!(
            "; stretch estimate {s:.2} (elapsed {elapsed:.0} s + remaining path {:.0} s over \
             critical path {:.0} s)",
            w.remaining_path_secs, w.critical_path_secs
        ),
        _ => format!("; critical path {:.0} s", w.critical_path_secs),
    };
    println!(
        "workflow {}: blocked {}, ready {}, leased {}, running {}, done {}, failed {}, \
         cancelled {}{stretch}",
        a.app, w.blocked, w.ready, c.leased, c.running, c.done, c.failed, c.cancelled
    );
}

/// A task's state as a workflow sees it: a waiting task is `blocked` or `ready`.
pub fn task_state(t: &TaskInfo) -> &'static str {
    match (&t.workflow, t.state) {
        (Some(w), TaskState::Waiting) if w.blocked => "blocked",
        (Some(_), TaskState::Waiting) => "ready",
        (_, s) => s.as_str(),
    }
}
