//! Recovery: rebuilds the live state (applications, tasks, agents, credentials) from the
//! database when the manager starts, so nothing acknowledged is lost across a crash.

use super::skip::{col, col_opt_u64, col_u64, each_row, SkippedRow};
use super::task_states::{state_code, state_from_code};
use crate::queue::{AgentEntry, AgentState, AppEntry, Member, TaskInputs, TaskSlot};
use crate::source_ranges::SourceRanges;
use hetpilot_protocol::protocol::{TaskAttempt, TaskState};
use hetpilot_protocol::resources::{ResourceGrant, ResourceOffer};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::template::{Inputs, Template};
use hetpilot_protocol::{AgentId, AppId, TaskRef};
use rusqlite::{params, Connection};
use std::collections::{BTreeMap, HashMap};

pub struct StoredAgent {
    pub entry: AgentEntry,
    pub credential_hash: String,
    /// The hash of the key it registered with, if it sent one.
    pub registration_key_hash: Option<String>,
    pub active: bool,
}

pub struct StoredUser {
    pub name: String,
    pub token_hash: String,
    pub admin: bool,
}

pub struct StoredAgentToken {
    pub token_hash: String,
    pub platform: String,
    pub expires_ms: u64,
    pub created_by: String,
    pub created_ms: u64,
    pub register_from: Option<SourceRanges>,
}

pub struct Loaded {
    pub apps: Vec<AppEntry>,
    pub agents: Vec<StoredAgent>,
    pub users: Vec<StoredUser>,
    pub agent_tokens: Vec<StoredAgentToken>,
    pub pilots: Vec<super::StoredPilot>,
    pub next_app: u64,
    pub next_agent: u64,
    /// What each leased or running task's current attempt was granted besides cores.
    pub grants: HashMap<TaskRef, ResourceGrant>,
    /// The agents of each leased or running parallel task's current attempt.
    pub groups: Vec<(TaskAttempt, Vec<Member>)>,
    /// Rows that could not be read back and were left out (see `skip`).
    pub skipped: Vec<SkippedRow>,
}

/// Loads everything; `now_ms` becomes every active agent's last-seen time, so agents get
/// a full lease timeout to reconnect after a manager restart.
pub fn load(conn: &Connection, now_ms: u64) -> rusqlite::Result<Loaded> {
    let mut skipped = Vec::new();
    let users = each_row(
        &mut conn.prepare("SELECT name, token_hash, is_admin FROM users")?,
        [],
        "users",
        &mut skipped,
        |r| {
            Ok(StoredUser {
                name: col(r, 0)?,
                token_hash: col(r, 1)?,
                admin: col(r, 2)?,
            })
        },
    )?;
    let agent_tokens = each_row(
        &mut conn.prepare(
            "SELECT token_hash, platform, expires_ms, created_by, created_ms, register_from
             FROM agent_tokens WHERE expires_ms > ?1",
        )?,
        params![now_ms.min(i64::MAX as u64) as i64],
        "agent_tokens",
        &mut skipped,
        |r| {
            Ok(StoredAgentToken {
                token_hash: col(r, 0)?,
                platform: col(r, 1)?,
                expires_ms: col_u64(r, 2)?,
                created_by: col(r, 3)?,
                created_ms: col_opt_u64(r, 4)?.unwrap_or(0),
                // A token whose ranges cannot be read back is skipped: never one that
                // registers from anywhere.
                register_from: col::<Option<String>>(r, 5)?
                    .map(|text| SourceRanges::parse_list(&text))
                    .transpose()
                    .map_err(|e| format!("column `register_from`: {e}"))?,
            })
        },
    )?;
    let agents = load_agents(conn, now_ms, &mut skipped)?;
    let apps = load_apps(conn, now_ms, &mut skipped)?;
    let pilots = super::pilots::load_pilots(conn, &mut skipped)?;
    let grants = load_grants(conn, &mut skipped)?;
    let groups = load_groups(conn, &mut skipped)?;
    let next_app = conn.query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM apps", [], |r| {
        r.get::<_, i64>(0)
    })?;
    // Forgotten applications' ids are never given again.
    let next_app = u64::try_from(next_app)
        .unwrap_or(1)
        .max(super::forget::next_app(conn)?);
    let next_agent = conn.query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM agents", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(Loaded {
        apps,
        agents,
        users,
        agent_tokens,
        pilots,
        next_app: next_app.max(1),
        next_agent: u64::try_from(next_agent).unwrap_or(1).max(1),
        grants,
        groups,
        skipped,
    })
}

fn load_agents(
    conn: &Connection,
    now_ms: u64,
    skipped: &mut Vec<SkippedRow>,
) -> rusqlite::Result<Vec<StoredAgent>> {
    let mut stmt = conn.prepare(
        "SELECT id, credential_hash, platform, hostname, slots, batch_job_id, registered_ms, state, cores,
            resources, registration_key_hash
         FROM agents",
    )?;
    each_row(&mut stmt, [], "agents", skipped, |r| {
        let state: String = col(r, 7)?;
        let slots: u32 = col(r, 4)?;
        let mut entry = AgentEntry::new(
            AgentId(col_u64(r, 0)?),
            col(r, 2)?,
            col(r, 3)?,
            slots,
            col_u64(r, 6)?,
        );
        entry.batch_job_id = col(r, 5)?;
        if let Some(offer) = col::<Option<String>>(r, 9)? {
            let offer: ResourceOffer =
                serde_json::from_str(&offer).map_err(|e| format!("column `resources`: {e}"))?;
            entry = entry.with_resources(offer);
        }
        entry.cores = col::<u32>(r, 8).unwrap_or(slots).max(slots);
        entry.last_seen_ms = now_ms;
        let active = state == "active" || state == "draining";
        entry.state = match state.as_str() {
            "active" => AgentState::Active,
            "draining" => AgentState::Draining,
            "lost" => AgentState::Lost,
            _ => AgentState::Ended,
        };
        entry.drain_ordered = entry.state == AgentState::Draining;
        Ok(StoredAgent {
            entry,
            credential_hash: col(r, 1)?,
            registration_key_hash: col(r, 10)?,
            active,
        })
    })
}

/// What the current attempt of each leased or running task was granted.
fn load_grants(
    conn: &Connection,
    skipped: &mut Vec<SkippedRow>,
) -> rusqlite::Result<HashMap<TaskRef, ResourceGrant>> {
    let mut stmt = conn.prepare(
        "SELECT a.app_id, a.idx, a.resources FROM attempts a
         JOIN tasks t ON t.app_id = a.app_id AND t.idx = a.idx AND t.attempt = a.attempt
         WHERE a.resources IS NOT NULL AND t.state IN (?1, ?2)",
    )?;
    let held = params![
        state_code(TaskState::Leased),
        state_code(TaskState::Running)
    ];
    let rows = each_row(&mut stmt, held, "attempts", skipped, |r| {
        let task = TaskRef {
            app: AppId(col_u64(r, 0)?),
            index: col_u64(r, 1)?,
        };
        let grant: String = col(r, 2)?;
        let grant: ResourceGrant =
            serde_json::from_str(&grant).map_err(|e| format!("column `resources`: {e}"))?;
        Ok((task, grant))
    })?;
    Ok(rows.into_iter().collect())
}

/// The agents of each leased or running parallel task's current attempt.
fn load_groups(
    conn: &Connection,
    skipped: &mut Vec<SkippedRow>,
) -> rusqlite::Result<Vec<(TaskAttempt, Vec<Member>)>> {
    let mut stmt = conn.prepare(
        "SELECT a.app_id, a.idx, a.attempt, a.hosts FROM attempts a
         JOIN tasks t ON t.app_id = a.app_id AND t.idx = a.idx AND t.attempt = a.attempt
         WHERE a.hosts IS NOT NULL AND t.state IN (?1, ?2)",
    )?;
    let held = params![
        state_code(TaskState::Leased),
        state_code(TaskState::Running)
    ];
    each_row(&mut stmt, held, "attempts", skipped, |r| {
        let at = TaskAttempt {
            task: TaskRef {
                app: AppId(col_u64(r, 0)?),
                index: col_u64(r, 1)?,
            },
            attempt: col(r, 2)?,
        };
        let hosts: String = col(r, 3)?;
        let members: Vec<Member> =
            serde_json::from_str(&hosts).map_err(|e| format!("column `hosts`: {e}"))?;
        Ok((at, members))
    })
}

/// An application's row, before its tasks are read.
struct AppRow {
    id: u64,
    owner: String,
    spec: AppSpec,
    submitted_ms: u64,
    cancelled: bool,
    ended_ms: Option<u64>,
}

fn load_apps(
    conn: &Connection,
    now_ms: u64,
    skipped: &mut Vec<SkippedRow>,
) -> rusqlite::Result<Vec<AppEntry>> {
    let mut apps = Vec::new();
    let mut stmt = conn.prepare(
        "SELECT id, owner, spec, submitted_ms, cancelled, ended_ms FROM apps ORDER BY id",
    )?;
    let rows: Vec<AppRow> = each_row(&mut stmt, [], "apps", skipped, |r| {
        let spec: String = col(r, 2)?;
        let spec: AppSpec =
            serde_json::from_str(&spec).map_err(|e| format!("stored spec unreadable: {e}"))?;
        Ok(AppRow {
            id: col_u64(r, 0)?,
            owner: col(r, 1)?,
            spec,
            submitted_ms: col_u64(r, 3)?,
            cancelled: col(r, 4)?,
            // An unreadable end time is found again below, like a missing one.
            ended_ms: col_opt_u64(r, 5).ok().flatten(),
        })
    })?;
    let mut tasks = conn.prepare(
        "SELECT t.idx, t.input, t.state, t.attempt, t.agent_id, t.lost_attempts,
                CASE WHEN t.state IN (1, 2) THEN (SELECT a.variant FROM attempts a
                    WHERE a.app_id = t.app_id AND a.idx = t.idx AND a.attempt = t.attempt) END
         FROM tasks t WHERE t.app_id = ?1 ORDER BY t.idx",
    )?;
    let mut last_run = conn.prepare("SELECT MAX(ended_ms) FROM attempts WHERE app_id = ?1")?;
    for row in rows {
        let (id, submitted_ms, cancelled, stored_end) =
            (row.id, row.submitted_ms, row.cancelled, row.ended_ms);
        match load_app(&mut tasks, id, row.owner, row.spec, submitted_ms)? {
            Ok(mut app) => {
                app.cancelled = cancelled;
                if app.has_ended() {
                    // Stored by an earlier version without end times: its last run's end,
                    // else its submission. Never in the future, so the retention sweep
                    // reaches it.
                    let ended = match stored_end {
                        Some(t) => t,
                        None => last_run
                            .query_row(params![id as i64], |r| r.get::<_, Option<i64>>(0))?
                            .and_then(|t| u64::try_from(t).ok())
                            .unwrap_or(submitted_ms)
                            .max(submitted_ms),
                    };
                    app.ended_ms = Some(ended.min(now_ms));
                }
                apps.push(app);
            }
            Err(problem) => skipped.push(SkippedRow {
                table: "apps",
                key: id.to_string(),
                problem,
            }),
        }
    }
    Ok(apps)
}

/// One application with its tasks; the inner error is a problem of its stored rows.
fn load_app(
    tasks: &mut rusqlite::Statement<'_>,
    id: u64,
    owner: String,
    spec: AppSpec,
    submitted_ms: u64,
) -> rusqlite::Result<Result<AppEntry, String>> {
    let mut lines: Vec<Box<str>> = Vec::new();
    let mut params: Vec<BTreeMap<String, String>> = Vec::new();
    let mut slots = Vec::new();
    let Ok(key) = i64::try_from(id) else {
        return Ok(Err(format!("id {id} out of range")));
    };
    let mut rows = tasks.query(params![key])?;
    while let Some(r) = rows.next()? {
        let index: u64 = match col_u64(r, 0) {
            Ok(i) => i,
            Err(e) => return Ok(Err(format!("a task: {e}"))),
        };
        if index != slots.len() as u64 {
            return Ok(Err(format!(
                "task {index} stored where task {} was expected",
                slots.len()
            )));
        }
        let input: Option<String> = r.get(1)?;
        match (&spec.tasks, input) {
            (TaskSource::Lines(_), Some(line)) => lines.push(line.into_boxed_str()),
            (TaskSource::Params(_), Some(json)) => match serde_json::from_str(&json) {
                Ok(p) => params.push(p),
                Err(e) => return Ok(Err(format!("task {index} parameters: {e}"))),
            },
            (TaskSource::Lines(_) | TaskSource::Params(_), None) => {
                return Ok(Err(format!("task {index}: its input is missing")))
            }
            (TaskSource::Array { .. }, _) => {}
        }
        // A code no release wrote is never taken for a state: a done task read as waiting
        // would run again.
        let state = match col::<i64>(r, 2) {
            Ok(code) => match state_from_code(code) {
                Some(state) => state,
                None => {
                    return Ok(Err(format!(
                        "task {index}: state code {code} is no task state"
                    )))
                }
            },
            Err(e) => return Ok(Err(format!("task {index}: {e}"))),
        };
        let (attempt, agent, lost) = match (col(r, 3), col_opt_u64(r, 4), col::<u32>(r, 5)) {
            (Ok(attempt), Ok(agent), Ok(lost)) => (attempt, agent.map(AgentId), lost),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                return Ok(Err(format!("task {index}: {e}")))
            }
        };
        // A held task keeps the variant its lease chose (its cores and GPUs stay held).
        let variant = match col::<Option<String>>(r, 6) {
            Ok(name) => name.and_then(|n| spec.variants.iter().position(|v| v.name == n)),
            Err(e) => return Ok(Err(format!("task {index}: {e}"))),
        };
        // Tasks leased but never started before a crash stay with their agent: it was told.
        slots.push(TaskSlot {
            state,
            attempt,
            lost: lost.min(attempt),
            agent,
            variant: variant.and_then(|v| u8::try_from(v).ok()),
        });
    }
    let (inputs, kinds) = match &spec.tasks {
        TaskSource::Lines(_) => (TaskInputs::Lines(lines), Inputs::Lines),
        TaskSource::Array { start, .. } => (TaskInputs::Array { start: *start }, Inputs::Array),
        TaskSource::Params(_) => {
            let kinds = Inputs::of_params(&params);
            (TaskInputs::Params(params), kinds)
        }
    };
    let template = match Template::parse(&spec.command, &kinds) {
        Ok(t) => t,
        Err(e) => return Ok(Err(e.to_string())),
    };
    Ok(AppEntry::restore(
        AppId(id),
        owner,
        spec,
        template,
        inputs,
        submitted_ms,
        slots,
    ))
}
