//! Recovery: rebuilds the live state (applications, tasks, agents, credentials) from the
//! database when the manager starts, so nothing acknowledged is lost across a crash.

use super::schema::state_from_code;
use crate::queue::{AgentEntry, AgentState, AppEntry, TaskInputs, TaskSlot};
use hetpilot_shared::protocol::TaskState;
use hetpilot_shared::spec::{AppSpec, TaskSource};
use hetpilot_shared::template::{Inputs, Template};
use hetpilot_shared::{AgentId, AppId};
use rusqlite::{params, Connection};
use std::collections::BTreeMap;

pub struct StoredAgent {
    pub entry: AgentEntry,
    pub credential_hash: String,
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
}

pub struct Loaded {
    pub apps: Vec<AppEntry>,
    pub agents: Vec<StoredAgent>,
    pub users: Vec<StoredUser>,
    pub agent_tokens: Vec<StoredAgentToken>,
    pub pilots: Vec<super::StoredPilot>,
    pub next_app: u64,
    pub next_agent: u64,
}

/// Loads everything; `now_ms` becomes every active agent's last-seen time, so agents get
/// a full lease timeout to reconnect after a manager restart.
pub fn load(conn: &Connection, now_ms: u64) -> rusqlite::Result<Loaded> {
    let users = conn
        .prepare("SELECT name, token_hash, is_admin FROM users")?
        .query_map([], |r| {
            Ok(StoredUser {
                name: r.get(0)?,
                token_hash: r.get(1)?,
                admin: r.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let agent_tokens = conn
        .prepare("SELECT token_hash, platform, expires_ms FROM agent_tokens WHERE expires_ms > ?1")?
        .query_map(params![now_ms as i64], |r| {
            Ok(StoredAgentToken {
                token_hash: r.get(0)?,
                platform: r.get(1)?,
                expires_ms: r.get::<_, i64>(2)? as u64,
            })
        })?
        .collect::<Result<_, _>>()?;
    let agents = load_agents(conn, now_ms)?;
    let apps = load_apps(conn)?;
    let pilots = super::pilots::load_pilots(conn)?;
    let next_app = conn.query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM apps", [], |r| {
        r.get::<_, i64>(0)
    })? as u64;
    let next_agent = conn.query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM agents", [], |r| {
        r.get::<_, i64>(0)
    })? as u64;
    Ok(Loaded {
        apps,
        agents,
        users,
        agent_tokens,
        pilots,
        next_app,
        next_agent,
    })
}

fn load_agents(conn: &Connection, now_ms: u64) -> rusqlite::Result<Vec<StoredAgent>> {
    let mut stmt = conn.prepare(
        "SELECT id, credential_hash, platform, hostname, slots, batch_job_id, registered_ms, state FROM agents",
    )?;
    let rows = stmt.query_map([], |r| {
        let state: String = r.get(7)?;
        let mut entry = AgentEntry::new(
            AgentId(r.get::<_, i64>(0)? as u64),
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get::<_, i64>(6)? as u64,
        );
        entry.batch_job_id = r.get(5)?;
        entry.last_seen_ms = now_ms;
        let active = state == "active" || state == "draining";
        entry.state = match state.as_str() {
            "active" => AgentState::Active,
            "draining" => AgentState::Draining,
            "lost" => AgentState::Lost,
            _ => AgentState::Ended,
        };
        Ok(StoredAgent {
            entry,
            credential_hash: r.get(1)?,
            active,
        })
    })?;
    rows.collect()
}

fn load_apps(conn: &Connection) -> rusqlite::Result<Vec<AppEntry>> {
    let mut apps = Vec::new();
    let mut stmt =
        conn.prepare("SELECT id, owner, spec, submitted_ms, cancelled FROM apps ORDER BY id")?;
    let rows: Vec<(i64, String, String, i64, bool)> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut tasks = conn.prepare(
        "SELECT idx, input, state, attempt, agent_id FROM tasks WHERE app_id = ?1 ORDER BY idx",
    )?;
    for (id, owner, spec_json, submitted_ms, cancelled) in rows {
        let bad =
            |what: String| rusqlite::Error::InvalidColumnName(format!("application {id}: {what}"));
        let spec: AppSpec = serde_json::from_str(&spec_json)
            .map_err(|e| bad(format!("stored spec unreadable: {e}")))?;
        let mut lines: Vec<Box<str>> = Vec::new();
        let mut params: Vec<BTreeMap<String, String>> = Vec::new();
        let mut slots = Vec::new();
        let mut rows = tasks.query(params![id])?;
        while let Some(r) = rows.next()? {
            let input: Option<String> = r.get(1)?;
            match (&spec.tasks, input) {
                (TaskSource::Lines(_), Some(line)) => lines.push(line.into_boxed_str()),
                (TaskSource::Params(_), Some(json)) => params.push(
                    serde_json::from_str(&json)
                        .map_err(|e| bad(format!("task parameters: {e}")))?,
                ),
                _ => {}
            }
            let state = state_from_code(r.get(2)?).unwrap_or(TaskState::Waiting);
            // Tasks leased but never started before a crash stay with their agent: it was told.
            slots.push(TaskSlot {
                state,
                attempt: r.get(3)?,
                agent: r.get::<_, Option<i64>>(4)?.map(|a| AgentId(a as u64)),
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
        let template = Template::parse(&spec.command, &kinds).map_err(|e| bad(e.to_string()))?;
        let mut app = AppEntry::restore(
            AppId(id as u64),
            owner,
            spec,
            template,
            inputs,
            submitted_ms as u64,
            slots,
        );
        app.cancelled = cancelled;
        apps.push(app);
    }
    Ok(apps)
}
