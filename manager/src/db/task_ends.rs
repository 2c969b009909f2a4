//! The order tasks ended in, as the event stream's cursor (`GET /v1/apps/{app}/events`).
//!
//! Each task that reaches a final state is given its application's next *end sequence*
//! (`tasks.end_seq`) in the very `UPDATE` that records the state, by the writer thread,
//! so the sequence follows commit order: a reader that sees an end sees every earlier
//! one. The numbers grow within an application and survive restarts (the writer takes up
//! from the highest stored one); they need not be consecutive. A partial index on
//! `(app_id, end_seq)` lets a reader page through one application's ends in order.

use super::read::Reader;
use super::task_states::state_from_code;
use super::write_ops::outcome_from_str;
use hetpilot_protocol::events::TaskEnd;
use hetpilot_protocol::protocol::TaskState;
use hetpilot_protocol::{AgentId, AppId, TaskRef};
use rusqlite::{params, Transaction};
use std::collections::HashMap;

/// The last end sequence the writer gave each application it wrote an end of since it
/// started (the others are read from the index when first needed).
#[derive(Debug, Default)]
pub struct EndSequences {
    last: HashMap<AppId, u64>,
}

impl EndSequences {
    /// The next end sequence of `app`.
    pub(super) fn next(&mut self, tx: &Transaction<'_>, app: AppId) -> rusqlite::Result<i64> {
        self.reserve(tx, app, 1)
    }

    /// The first of `count` end sequences of `app` set aside at once (a cancellation
    /// numbers its tasks' ends `first + index`).
    pub(super) fn reserve(
        &mut self,
        tx: &Transaction<'_>,
        app: AppId,
        count: u64,
    ) -> rusqlite::Result<i64> {
        let last = match self.last.get(&app) {
            Some(last) => *last,
            None => stored_last(tx, app)?,
        };
        let first = last.saturating_add(1);
        self.last.insert(app, last.saturating_add(count.max(1)));
        Ok(i64::try_from(first).unwrap_or(i64::MAX))
    }

    /// Forgets what it knows of `apps` (they left the store).
    pub(super) fn forget(&mut self, apps: &[AppId]) {
        for app in apps {
            self.last.remove(app);
        }
    }
}

fn stored_last(tx: &Transaction<'_>, app: AppId) -> rusqlite::Result<u64> {
    let last: Option<i64> = tx
        .prepare_cached("SELECT MAX(end_seq) FROM tasks WHERE app_id = ?1 AND end_seq IS NOT NULL")?
        .query_row(params![app_key(app)], |r| r.get(0))?;
    Ok(last.and_then(|l| u64::try_from(l).ok()).unwrap_or(0))
}

/// An application id as stored (past `i64::MAX`: matches no row).
fn app_key(app: AppId) -> i64 {
    i64::try_from(app.0).unwrap_or(i64::MAX)
}

impl Reader {
    /// Up to `limit` of `app`'s task ends whose cursor is past `after`, in stream order.
    pub fn task_ends(&self, app: AppId, after: u64, limit: u64) -> rusqlite::Result<Vec<TaskEnd>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT t.end_seq, t.idx, t.state, t.attempt, a.outcome, a.exit_code, a.signal,
                    a.wall_ms, a.agent_id, ag.hostname, a.stdout_path, a.stderr_path, a.error
             FROM tasks t
             LEFT JOIN attempts a ON a.app_id = t.app_id AND a.idx = t.idx AND a.attempt = t.attempt
             LEFT JOIN agents ag ON ag.id = a.agent_id
             WHERE t.app_id = ?1 AND t.end_seq > ?2
             ORDER BY t.end_seq LIMIT ?3",
        )?;
        let rows = stmt.query_map(
            params![
                app_key(app),
                i64::try_from(after).unwrap_or(i64::MAX),
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            |r| {
                let outcome: Option<String> = r.get(4)?;
                Ok(TaskEnd {
                    cursor: u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                    task: TaskRef {
                        app,
                        index: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    },
                    state: state_from_code(r.get(2)?).unwrap_or(TaskState::Failed),
                    attempt: r.get(3)?,
                    outcome: outcome.as_deref().and_then(outcome_from_str),
                    exit_code: r.get(5)?,
                    signal: r.get(6)?,
                    wall_ms: r.get(7)?,
                    agent: r
                        .get::<_, Option<i64>>(8)?
                        .and_then(|a| u64::try_from(a).ok())
                        .map(AgentId),
                    host: r.get(9)?,
                    stdout_path: r.get(10)?,
                    stderr_path: r.get(11)?,
                    error: r.get(12)?,
                })
            },
        )?;
        rows.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Write;
    use crate::queue::Change;
    use hetpilot_protocol::spec::AppSpec;
    use rusqlite::Connection;
    use std::sync::Arc;

    fn apply(conn: &mut Connection, ends: &mut EndSequences, write: Write) {
        let tx = conn.transaction().unwrap();
        write.apply(&tx, ends).unwrap();
        tx.commit().unwrap();
    }

    fn ended(app: AppId, index: u64, state: TaskState) -> Write {
        Write::Changes(vec![Change::TaskState {
            task: TaskRef { app, index },
            state,
            attempt: 1,
            agent: None,
        }])
    }

    #[test]
    fn ends_are_numbered_in_commit_order_across_a_restart_and_a_cancellation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut conn = super::super::open(&path).unwrap();
        let app = AppId(1);
        let spec: AppSpec = serde_json::from_value(serde_json::json!({
            "name": "a", "command": "true", "tasks": {"array": {"start": 0, "end": 4}}
        }))
        .unwrap();
        let submit = Write::Submit {
            app,
            owner: "ann".into(),
            spec: Arc::new(spec),
            now_ms: 0,
        };
        let mut ends = EndSequences::default();
        apply(&mut conn, &mut ends, submit);
        apply(&mut conn, &mut ends, ended(app, 3, TaskState::Done));
        apply(&mut conn, &mut ends, ended(app, 0, TaskState::Failed));
        // A task back in the queue (a retry) is no end.
        apply(&mut conn, &mut ends, ended(app, 1, TaskState::Waiting));
        // A restarted writer takes up from the stored numbers.
        let mut restarted = EndSequences::default();
        apply(&mut conn, &mut restarted, ended(app, 1, TaskState::Done));
        apply(
            &mut conn,
            &mut restarted,
            Write::Changes(vec![Change::AppCancelled { app }]),
        );
        let reader = Reader::open(&path).unwrap();
        let order: Vec<(u64, TaskState)> = reader
            .task_ends(app, 0, 100)
            .unwrap()
            .iter()
            .map(|e| (e.task.index, e.state))
            .collect();
        assert_eq!(
            order,
            [
                (3, TaskState::Done),
                (0, TaskState::Failed),
                (1, TaskState::Done),
                (2, TaskState::Cancelled),
                (4, TaskState::Cancelled)
            ]
        );
        let all = reader.task_ends(app, 0, 100).unwrap();
        let past_second = reader.task_ends(app, all[1].cursor, 2).unwrap();
        assert_eq!(past_second, all[2..4], "a page starts past its cursor");
    }

    #[test]
    fn a_database_from_before_the_stream_numbers_its_stored_ends_in_task_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        // A database of schema version 8, the last before the stream.
        let conn = super::super::migrations::built_to(&path, 8);
        let done = super::super::task_states::state_code(TaskState::Done);
        conn.execute_batch(&format!(
            "INSERT INTO tasks (app_id, idx, state, attempt) VALUES (1, 0, {done}, 1), (1, 1, 0, 0),
                 (1, 2, {done}, 1);"
        ))
        .unwrap();
        drop(conn);
        super::super::open(&path).unwrap();
        let ends: Vec<(u64, u64)> = Reader::open(&path)
            .unwrap()
            .task_ends(AppId(1), 0, 10)
            .unwrap()
            .iter()
            .map(|e| (e.task.index, e.cursor))
            .collect();
        assert_eq!(ends, [(0, 1), (2, 3)]);
    }
}
