//! The write vocabulary: everything the manager persists, as [`Write`] values, and how
//! each becomes SQL. The thread that commits them in batches is `group_commit`.

use super::pilots::{upsert_pilot, PilotCredential};
use super::task_ends::EndSequences;
use super::task_states::state_code;
use crate::queue::Change;
use hetpilot_protocol::pilots::PilotRecord;
use hetpilot_protocol::protocol::{Outcome, RegisterRequest, TaskState};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::{AgentId, AppId};
use rusqlite::{params, Transaction};
use std::sync::Arc;

/// One unit of persistence; a batch of these is committed in one transaction.
#[derive(Debug)]
pub enum Write {
    Changes(Vec<Change>),
    Submit {
        app: AppId,
        owner: String,
        spec: Arc<AppSpec>,
        now_ms: u64,
    },
    User {
        name: String,
        token_hash: String,
        admin: bool,
        now_ms: u64,
    },
    AgentToken {
        token_hash: String,
        platform: String,
        expires_ms: u64,
        created_by: String,
        now_ms: u64,
        /// The source ranges its registrations must come from (`SourceRanges`' text).
        register_from: Option<String>,
    },
    /// A registration token is revoked.
    RevokeAgentToken {
        token_hash: String,
    },
    Agent {
        agent: AgentId,
        credential_hash: String,
        /// The hash of the key the agent registered with, if it sent one.
        registration_key_hash: Option<String>,
        request: RegisterRequest,
        slots: u32,
        now_ms: u64,
    },
    /// An agent's credential is replaced (its registration was tried again).
    AgentCredential {
        agent: AgentId,
        credential_hash: String,
    },
    /// A pilot's record, inserted or replaced; see [`super::pilots`].
    Pilot {
        record: PilotRecord,
        credential: Option<PilotCredential>,
    },
    /// Ended applications are forgotten; see [`super::forget`].
    Forget {
        apps: Vec<AppId>,
        carried: Vec<crate::control::CarriedUsage>,
        /// The half-life fairshare charges decay with, seconds (None: no decay).
        half_life: Option<f64>,
    },
}

pub fn outcome_str(o: Outcome) -> &'static str {
    match o {
        Outcome::Success => "success",
        Outcome::Failed => "failed",
        Outcome::Signaled => "signaled",
        Outcome::TimedOut => "timed_out",
        Outcome::SpawnError => "spawn_error",
    }
}

pub fn outcome_from_str(s: &str) -> Option<Outcome> {
    [
        Outcome::Success,
        Outcome::Failed,
        Outcome::Signaled,
        Outcome::TimedOut,
        Outcome::SpawnError,
    ]
    .into_iter()
    .find(|o| outcome_str(*o) == s)
}

/// The spec as stored in `apps.spec`: everything but the task inputs, which live in `tasks`.
pub fn stored_spec(spec: &AppSpec) -> AppSpec {
    let tasks = match &spec.tasks {
        TaskSource::Lines(_) => TaskSource::Lines(Vec::new()),
        TaskSource::Array { start, end } => TaskSource::Array {
            start: *start,
            end: *end,
        },
        TaskSource::Params(_) => TaskSource::Params(Vec::new()),
    };
    AppSpec {
        tasks,
        ..spec.clone()
    }
}

impl Write {
    /// Applies this write in `tx`; task ends take their numbers from `ends`.
    pub fn apply(&self, tx: &Transaction<'_>, ends: &mut EndSequences) -> rusqlite::Result<()> {
        match self {
            Write::Changes(changes) => {
                for c in changes {
                    apply_change(tx, c, ends)?;
                }
            }
            Write::Submit {
                app,
                owner,
                spec,
                now_ms,
            } => submit(tx, *app, owner, spec, *now_ms)?,
            Write::User {
                name,
                token_hash,
                admin,
                now_ms,
            } => {
                tx.execute(
                    "INSERT INTO users (name, token_hash, is_admin, created_ms) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT(name) DO UPDATE SET token_hash = excluded.token_hash",
                    params![name, token_hash, admin, *now_ms as i64],
                )?;
            }
            Write::AgentToken {
                token_hash,
                platform,
                expires_ms,
                created_by,
                now_ms,
                register_from,
            } => {
                tx.execute(
                    "INSERT INTO agent_tokens
                     (token_hash, platform, expires_ms, created_by, created_ms, register_from)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        token_hash,
                        platform,
                        *expires_ms as i64,
                        created_by,
                        *now_ms as i64,
                        register_from
                    ],
                )?;
            }
            Write::RevokeAgentToken { token_hash } => {
                tx.execute(
                    "DELETE FROM agent_tokens WHERE token_hash = ?1",
                    params![token_hash],
                )?;
            }
            Write::Agent {
                agent,
                credential_hash,
                registration_key_hash,
                request: r,
                slots,
                now_ms,
            } => {
                tx.execute(
                    "INSERT INTO agents (id, credential_hash, platform, hostname, cores, memory_mb, slots,
                        batch_job_id, walltime_end, registered_ms, state, zero_work, resources,
                        registration_key_hash)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'active', ?11, ?12, ?13)",
                    params![
                        agent.0 as i64,
                        credential_hash,
                        r.platform,
                        r.hostname,
                        r.cores,
                        r.memory_mb as i64,
                        slots,
                        r.batch_job_id,
                        r.walltime_end.map(|w| w as i64),
                        *now_ms as i64,
                        r.zero_work,
                        (!r.resources.is_empty()).then(|| {
                            serde_json::to_string(&r.resources).expect("offers serialize")
                        }),
                        registration_key_hash,
                    ],
                )?;
            }
            Write::AgentCredential {
                agent,
                credential_hash,
            } => {
                tx.execute(
                    "UPDATE agents SET credential_hash = ?2 WHERE id = ?1",
                    params![agent.0 as i64, credential_hash],
                )?;
            }
            Write::Pilot { record, credential } => upsert_pilot(tx, record, credential.as_ref())?,
            Write::Forget {
                apps,
                carried,
                half_life,
            } => {
                super::forget::forget(tx, apps, carried, *half_life)?;
                ends.forget(apps);
            }
        }
        Ok(())
    }
}

fn submit(
    tx: &Transaction<'_>,
    app: AppId,
    owner: &str,
    spec: &AppSpec,
    now_ms: u64,
) -> rusqlite::Result<()> {
    let stored = serde_json::to_string(&stored_spec(spec)).expect("specs serialize");
    tx.execute(
        "INSERT INTO apps (id, owner, name, spec, submitted_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![app.0 as i64, owner, spec.name, stored, now_ms as i64],
    )?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO tasks (app_id, idx, input, state, attempt) VALUES (?1, ?2, ?3, ?4, 0)",
    )?;
    let waiting = state_code(TaskState::Waiting);
    let id = app.0 as i64;
    match &spec.tasks {
        TaskSource::Lines(lines) => {
            for (i, line) in lines.iter().enumerate() {
                insert.execute(params![id, i as i64, line, waiting])?;
            }
        }
        TaskSource::Array { .. } => {
            for i in 0..spec.tasks.len() {
                insert.execute(params![id, i as i64, Option::<String>::None, waiting])?;
            }
        }
        TaskSource::Params(sets) => {
            for (i, set) in sets.iter().enumerate() {
                let json = serde_json::to_string(set).expect("maps serialize");
                insert.execute(params![id, i as i64, json, waiting])?;
            }
        }
    }
    Ok(())
}

fn apply_change(
    tx: &Transaction<'_>,
    change: &Change,
    ends: &mut EndSequences,
) -> rusqlite::Result<()> {
    match change {
        Change::Leased {
            at,
            agent,
            now_ms,
            resources,
            variant,
        } => {
            tx.prepare_cached("UPDATE tasks SET state = ?3, attempt = ?4, agent_id = ?5 WHERE app_id = ?1 AND idx = ?2")?
                .execute(params![
                    at.task.app.0 as i64,
                    at.task.index as i64,
                    state_code(TaskState::Leased),
                    at.attempt,
                    agent.0 as i64
                ])?;
            let grant = (!resources.is_empty())
                .then(|| serde_json::to_string(resources).expect("grants serialize"));
            tx.prepare_cached(
                "INSERT OR IGNORE INTO attempts (app_id, idx, attempt, agent_id, leased_ms, resources, variant) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![at.task.app.0 as i64, at.task.index as i64, at.attempt, agent.0 as i64, *now_ms as i64, grant, variant])?;
        }
        Change::GroupLeased { at, members } => {
            let members = serde_json::to_string(members).expect("group members serialize");
            tx.prepare_cached(
                "UPDATE attempts SET hosts = ?4 WHERE app_id = ?1 AND idx = ?2 AND attempt = ?3",
            )?
            .execute(params![
                at.task.app.0 as i64,
                at.task.index as i64,
                at.attempt,
                members
            ])?;
        }
        Change::Started { at, now_ms } => {
            tx.prepare_cached("UPDATE tasks SET state = ?4 WHERE app_id = ?1 AND idx = ?2 AND attempt = ?3 AND state = ?5")?
                .execute(params![
                    at.task.app.0 as i64,
                    at.task.index as i64,
                    at.attempt,
                    state_code(TaskState::Running),
                    state_code(TaskState::Leased)
                ])?;
            tx.prepare_cached("UPDATE attempts SET started_ms = ?4 WHERE app_id = ?1 AND idx = ?2 AND attempt = ?3")?
                .execute(params![at.task.app.0 as i64, at.task.index as i64, at.attempt, *now_ms as i64])?;
        }
        Change::TaskState {
            task,
            state,
            attempt,
            agent,
        } if state.is_final() => {
            // An end keeps the place it was first given in the event stream.
            tx.prepare_cached("UPDATE tasks SET state = ?3, attempt = ?4, agent_id = ?5, end_seq = COALESCE(end_seq, ?6) WHERE app_id = ?1 AND idx = ?2")?
                .execute(params![
                    task.app.0 as i64,
                    task.index as i64,
                    state_code(*state),
                    attempt,
                    agent.map(|a| a.0 as i64),
                    ends.next(tx, task.app)?
                ])?;
        }
        Change::TaskState {
            task,
            state,
            attempt,
            agent,
        } => {
            tx.prepare_cached("UPDATE tasks SET state = ?3, attempt = ?4, agent_id = ?5 WHERE app_id = ?1 AND idx = ?2")?
                .execute(params![
                    task.app.0 as i64,
                    task.index as i64,
                    state_code(*state),
                    attempt,
                    agent.map(|a| a.0 as i64)
                ])?;
        }
        Change::Result { result: r } => {
            let m = &r.measurements;
            let co = serde_json::to_string(&m.co_runners).expect("ids serialize");
            let device_co = serde_json::to_string(&m.device_co_runners).expect("ids serialize");
            tx.prepare_cached(
                "UPDATE attempts SET started_ms = COALESCE(started_ms, ?4), ended_ms = ?5, outcome = ?6,
                    exit_code = ?7, signal = ?8, wall_ms = ?9, user_cpu_ms = ?10, sys_cpu_ms = ?11,
                    max_rss_kb = ?12, co_runners = ?13, stdout_path = ?14, stderr_path = ?15,
                    output_tail = ?16, error = ?17, device_co_runners = ?18
                 WHERE app_id = ?1 AND idx = ?2 AND attempt = ?3",
            )?
            .execute(params![
                r.task.app.0 as i64,
                r.task.index as i64,
                r.attempt,
                m.started_at_ms as i64,
                m.ended_at_ms as i64,
                outcome_str(r.outcome),
                r.exit_code,
                r.signal,
                m.wall_ms,
                m.user_cpu_ms,
                m.sys_cpu_ms,
                m.max_rss_kb as i64,
                co,
                r.stdout_path,
                r.stderr_path,
                r.output_tail,
                r.error,
                device_co
            ])?;
            super::staging::record(tx, r)?;
        }
        Change::AttemptLost { at, now_ms, reason } => {
            let ended = tx.prepare_cached(
                "UPDATE attempts SET ended_ms = ?4, error = ?5 WHERE app_id = ?1 AND idx = ?2 AND attempt = ?3 AND outcome IS NULL",
            )?
            .execute(params![at.task.app.0 as i64, at.task.index as i64, at.attempt, *now_ms as i64, reason])?;
            if ended > 0 {
                tx.prepare_cached(
                    "UPDATE tasks SET lost_attempts = lost_attempts + 1 WHERE app_id = ?1 AND idx = ?2",
                )?
                .execute(params![at.task.app.0 as i64, at.task.index as i64])?;
            }
        }
        Change::AgentEnded {
            agent,
            state,
            now_ms,
        } => {
            tx.prepare_cached("UPDATE agents SET state = ?2, ended_ms = ?3 WHERE id = ?1")?
                .execute(params![agent.0 as i64, state, *now_ms as i64])?;
        }
        Change::AppCancelled { app } => {
            tx.execute(
                "UPDATE apps SET cancelled = 1 WHERE id = ?1",
                params![app.0 as i64],
            )?;
            // Each task cancelled now ends at `first + index` in the event stream.
            let tasks: i64 = tx.query_row(
                "SELECT COALESCE(MAX(idx), -1) + 1 FROM tasks WHERE app_id = ?1",
                params![app.0 as i64],
                |r| r.get(0),
            )?;
            let first = ends.reserve(tx, *app, u64::try_from(tasks).unwrap_or(0))?;
            tx.execute(
                "UPDATE tasks SET state = ?2, end_seq = COALESCE(end_seq, ?5 + idx)
                 WHERE app_id = ?1 AND state NOT IN (?3, ?4, ?2)",
                params![
                    app.0 as i64,
                    state_code(TaskState::Cancelled),
                    state_code(TaskState::Done),
                    state_code(TaskState::Failed),
                    first
                ],
            )?;
        }
        Change::AppEnded { app, now_ms } => {
            tx.prepare_cached("UPDATE apps SET ended_ms = ?2 WHERE id = ?1")?
                .execute(params![app.0 as i64, *now_ms as i64])?;
        }
    }
    Ok(())
}
