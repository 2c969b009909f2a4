//! What online profiling, fairshare accounting and the bandwidth estimates rebuild at
//! start-up: every recorded run with its measurements and transfers, and the resources of
//! the applications and agents involved.

use super::write::outcome_from_str;
use hetpilot_shared::files::Transfer;
use hetpilot_shared::protocol::Outcome;
use hetpilot_shared::spec::AppSpec;
use hetpilot_shared::{AgentId, AppId};
use rusqlite::Connection;

/// An application's owner and what each of its tasks reserves.
#[derive(Debug, Clone, PartialEq)]
pub struct AppResources {
    pub app: AppId,
    pub owner: String,
    pub cores: u32,
    pub memory_mb: u64,
}

/// An agent's platform and node.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentResources {
    pub agent: AgentId,
    pub platform: String,
    pub slots: u32,
    pub memory_mb: u64,
}

/// One run that reported a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub app: AppId,
    pub agent: AgentId,
    pub outcome: Outcome,
    pub wall_ms: f64,
    pub started_ms: u64,
    pub co_runners: Vec<AppId>,
    /// Measured transfers per endpoint (none when the task has no files).
    pub transfers: Vec<Transfer>,
}

#[derive(Debug, Default)]
pub struct Measured {
    pub apps: Vec<AppResources>,
    pub agents: Vec<AgentResources>,
    /// In the order they ended.
    pub runs: Vec<Run>,
}

/// Reads every application, agent and recorded run.
pub fn measured(conn: &Connection) -> rusqlite::Result<Measured> {
    let mut apps = Vec::new();
    let mut stmt = conn.prepare("SELECT id, owner, spec FROM apps ORDER BY id")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let spec: AppSpec = serde_json::from_str(&r.get::<_, String>(2)?).map_err(|e| {
            rusqlite::Error::InvalidColumnName(format!("application {id}: stored spec: {e}"))
        })?;
        apps.push(AppResources {
            app: AppId(id as u64),
            owner: r.get(1)?,
            cores: spec.cores,
            memory_mb: spec.memory_mb,
        });
    }
    let agents = conn
        .prepare("SELECT id, platform, slots, memory_mb FROM agents ORDER BY id")?
        .query_map([], |r| {
            Ok(AgentResources {
                agent: AgentId(r.get::<_, i64>(0)? as u64),
                platform: r.get(1)?,
                slots: r.get(2)?,
                memory_mb: r.get::<_, i64>(3)? as u64,
            })
        })?
        .collect::<Result<_, _>>()?;
    let runs = conn
        .prepare(
            "SELECT a.app_id, a.agent_id, a.outcome, COALESCE(a.wall_ms, 0),
                    COALESCE(a.started_ms, 0), a.co_runners, s.transfers
             FROM attempts a LEFT JOIN attempt_staging s
               ON s.app_id = a.app_id AND s.idx = a.idx AND s.attempt = a.attempt
             WHERE a.outcome IS NOT NULL ORDER BY a.ended_ms",
        )?
        .query_map([], |r| {
            let outcome: String = r.get(2)?;
            Ok(Run {
                app: AppId(r.get::<_, i64>(0)? as u64),
                agent: AgentId(r.get::<_, i64>(1)? as u64),
                outcome: outcome_from_str(&outcome).unwrap_or(Outcome::Failed),
                wall_ms: r.get(3)?,
                started_ms: r.get::<_, i64>(4)? as u64,
                co_runners: r
                    .get::<_, Option<String>>(5)?
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or_default(),
                transfers: r
                    .get::<_, Option<String>>(6)?
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or_default(),
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(Measured { apps, agents, runs })
}
