//! Read-only queries (task details, attempt history, per-platform statistics) on a
//! connection of their own, so reads never wait behind the writer's transactions.

use super::schema::connect;
use super::task_states::state_from_code;
use super::write_ops::outcome_from_str;
use crate::control::StoredAttempt;
use hetpilot_protocol::protocol::{
    AgentTokenInfo, AttemptRecord, Measurements, PlatformStats, TaskInfo, TaskState,
};
use hetpilot_protocol::{AgentId, AppId, TaskRef};
use rusqlite::{params, Connection, OptionalExtension, Row};
use std::path::Path;
use std::sync::Mutex;

pub struct Reader {
    conn: Mutex<Connection>,
}

const ATTEMPT_COLUMNS: &str = "a.attempt, a.agent_id, COALESCE(ag.platform, ''), COALESCE(ag.hostname, ''),
    a.outcome, a.exit_code, a.signal, a.started_ms, a.ended_ms, a.wall_ms, a.user_cpu_ms, a.sys_cpu_ms,
    a.max_rss_kb, a.co_runners, a.stdout_path, a.stderr_path, a.output_tail, a.error, a.resources, a.hosts, a.variant, a.device_co_runners";

fn attempt_from_row(r: &Row<'_>, at: usize) -> rusqlite::Result<AttemptRecord> {
    let outcome: Option<String> = r.get(at + 4)?;
    let outcome = outcome.as_deref().and_then(outcome_from_str);
    let measurements = match outcome {
        None => None,
        Some(_) => Some(Measurements {
            started_at_ms: r.get::<_, Option<i64>>(at + 7)?.unwrap_or(0) as u64,
            ended_at_ms: r.get::<_, Option<i64>>(at + 8)?.unwrap_or(0) as u64,
            wall_ms: r.get::<_, Option<f64>>(at + 9)?.unwrap_or(0.0),
            user_cpu_ms: r.get::<_, Option<f64>>(at + 10)?.unwrap_or(0.0),
            sys_cpu_ms: r.get::<_, Option<f64>>(at + 11)?.unwrap_or(0.0),
            max_rss_kb: r.get::<_, Option<i64>>(at + 12)?.unwrap_or(0) as u64,
            co_runners: r
                .get::<_, Option<String>>(at + 13)?
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default(),
            device_co_runners: r
                .get::<_, Option<String>>(at + 21)?
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default(),
        }),
    };
    Ok(AttemptRecord {
        attempt: r.get(at)?,
        agent: AgentId(r.get::<_, i64>(at + 1)? as u64),
        platform: r.get(at + 2)?,
        host: r.get(at + 3)?,
        outcome,
        exit_code: r.get(at + 5)?,
        signal: r.get(at + 6)?,
        measurements,
        stdout_path: r.get(at + 14)?,
        stderr_path: r.get(at + 15)?,
        output_tail: r.get(at + 16)?,
        error: r.get(at + 17)?,
        // A grant the manager itself wrote; one it cannot read shows as none rather than
        // hiding the attempt.
        resources: r
            .get::<_, Option<String>>(at + 18)?
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
        // A parallel run's members as the manager stored them (agent, host, slots).
        hosts: r
            .get::<_, Option<String>>(at + 19)?
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
        variant: r.get(at + 20)?,
    })
}

impl Reader {
    pub fn open(path: &Path) -> rusqlite::Result<Reader> {
        Ok(Reader {
            conn: Mutex::new(connect(path)?),
        })
    }

    pub(super) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The agent that ran `attempt` of `task`, if that attempt was ever leased.
    pub fn attempt_owner(
        &self,
        task: TaskRef,
        attempt: u32,
    ) -> rusqlite::Result<Option<StoredAttempt>> {
        self.conn()
            .prepare_cached("SELECT agent_id, outcome IS NOT NULL, leased_ms FROM attempts WHERE app_id = ?1 AND idx = ?2 AND attempt = ?3")?
            .query_row(params![task.app.0 as i64, task.index as i64, attempt], |r| {
                Ok(StoredAttempt {
                    agent: AgentId(r.get::<_, i64>(0)? as u64),
                    recorded: r.get(1)?,
                    leased_ms: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                })
            })
            .optional()
    }

    /// Registration tokens still valid at `now_ms`, newest first.
    pub fn agent_tokens(&self, now_ms: u64) -> rusqlite::Result<Vec<AgentTokenInfo>> {
        self.conn()
            .prepare_cached(
                "SELECT token_hash, platform, created_by, COALESCE(created_ms, 0), expires_ms,
                        register_from
                 FROM agent_tokens WHERE expires_ms > ?1 ORDER BY created_ms DESC, token_hash",
            )?
            .query_map(params![now_ms.min(i64::MAX as u64) as i64], |r| {
                let hash: String = r.get(0)?;
                Ok(AgentTokenInfo {
                    id: token_id(&hash),
                    platform: r.get(1)?,
                    created_by: r.get(2)?,
                    created_at_ms: r.get::<_, i64>(3)?.max(0) as u64,
                    expires_at_ms: r.get::<_, i64>(4)?.max(0) as u64,
                    register_from: r
                        .get::<_, Option<String>>(5)?
                        .map(|text| text.split(',').map(String::from).collect()),
                })
            })?
            .collect()
    }

    /// Tasks of an application (optionally in one state) with their last attempt.
    pub fn tasks(
        &self,
        app: AppId,
        state: Option<TaskState>,
        limit: u64,
        offset: u64,
        after: Option<u64>,
    ) -> rusqlite::Result<Vec<TaskInfo>> {
        let conn = self.conn();
        let sql = format!(
            "SELECT t.idx, t.state, t.attempt, COALESCE(t.input, ''), {ATTEMPT_COLUMNS}, t.lost_attempts
             FROM tasks t
             LEFT JOIN attempts a ON a.app_id = t.app_id AND a.idx = t.idx AND a.attempt = t.attempt
             LEFT JOIN agents ag ON ag.id = a.agent_id
             WHERE t.app_id = ?1 AND (?2 IS NULL OR t.state = ?2) AND (?5 IS NULL OR t.idx > ?5)
             ORDER BY t.idx LIMIT ?3 OFFSET ?4"
        );
        let code = state.map(super::task_states::state_code);
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            // Past i64::MAX is past every row (a cast would wrap to a negative offset,
            // which SQLite reads as 0: the first page).
            params![
                i64::try_from(app.0).unwrap_or(i64::MAX),
                code,
                i64::try_from(limit).unwrap_or(i64::MAX),
                i64::try_from(offset).unwrap_or(i64::MAX),
                // Past i64::MAX: no task index is greater.
                after.map(|a| i64::try_from(a).unwrap_or(i64::MAX))
            ],
            |r| {
                let has_attempt = r.get::<_, Option<i64>>(5)?.is_some();
                let last_column = r.as_ref().column_count() - 1;
                Ok(TaskInfo {
                    task: TaskRef {
                        app,
                        index: r.get::<_, i64>(0)? as u64,
                    },
                    state: state_from_code(r.get(1)?).unwrap_or(TaskState::Waiting),
                    attempts: r.get(2)?,
                    lost_attempts: r.get(last_column)?,
                    input: r.get(3)?,
                    last: if has_attempt {
                        Some(attempt_from_row(r, 4)?)
                    } else {
                        None
                    },
                    workflow: None,
                })
            },
        )?;
        rows.collect()
    }

    /// Every attempt of one task, oldest first.
    pub fn attempts(&self, task: TaskRef) -> rusqlite::Result<Vec<AttemptRecord>> {
        let conn = self.conn();
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM attempts a LEFT JOIN agents ag ON ag.id = a.agent_id
             WHERE a.app_id = ?1 AND a.idx = ?2 ORDER BY a.attempt"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![task.app.0 as i64, task.index as i64], |r| {
            attempt_from_row(r, 0)
        })?;
        rows.collect()
    }

    /// Successful runs of an application, per platform.
    pub fn platform_stats(&self, app: AppId) -> rusqlite::Result<Vec<PlatformStats>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT ag.platform, COUNT(*), AVG(a.wall_ms), AVG(a.user_cpu_ms + a.sys_cpu_ms), AVG(a.max_rss_kb),
                    MIN(a.started_ms), MAX(a.ended_ms), SUM(ag.zero_work)
             FROM attempts a JOIN agents ag ON ag.id = a.agent_id
             WHERE a.app_id = ?1 AND a.outcome = 'success'
             GROUP BY ag.platform ORDER BY ag.platform",
        )?;
        let rows = stmt.query_map(params![app.0 as i64], |r| {
            let tasks = r.get::<_, i64>(1)? as u64;
            let first: i64 = r.get(5)?;
            let last: i64 = r.get(6)?;
            let span_min = ((last - first).max(1) as f64) / 60_000.0;
            Ok(PlatformStats {
                platform: r.get(0)?,
                tasks,
                mean_wall_ms: r.get(2)?,
                mean_cpu_ms: r.get(3)?,
                mean_max_rss_kb: r.get(4)?,
                throughput_per_min: tasks as f64 / span_min,
                zero_work_tasks: r.get::<_, i64>(7)? as u64,
            })
        })?;
        rows.collect()
    }

    /// First start and last end of an application's successful runs (unix ms).
    pub fn span(&self, app: AppId) -> rusqlite::Result<Option<(u64, u64)>> {
        self.conn()
            .prepare_cached("SELECT MIN(started_ms), MAX(ended_ms) FROM attempts WHERE app_id = ?1 AND outcome IS NOT NULL")?
            .query_row(params![app.0 as i64], |r| {
                let first: Option<i64> = r.get(0)?;
                let last: Option<i64> = r.get(1)?;
                Ok(first.zip(last).map(|(f, l)| (f as u64, l as u64)))
            })
    }
}

/// A registration token's id: the first 12 hex digits of its hash (what `token list`
/// shows and `token revoke` takes).
pub fn token_id(token_hash: &str) -> String {
    token_hash.chars().take(12).collect()
}
