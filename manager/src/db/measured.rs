//! What online profiling, fairshare accounting and the bandwidth estimates rebuild at
//! start-up: every recorded run with its measurements and transfers, the resources of the
//! applications and agents involved, and the usage carried over from forgotten
//! applications.

use super::skip::{col, col_u64, each_row};
use super::write_ops::outcome_from_str;
use crate::control::{AgentResources, AppResources, Measured, Run};
use hetpilot_protocol::protocol::Outcome;
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId};
use rusqlite::Connection;

/// Reads every application, agent and recorded run.
pub fn measured(conn: &Connection) -> rusqlite::Result<Measured> {
    // Rows recovery already reported as unreadable are left out here too.
    let mut skipped = Vec::new();
    let apps = each_row(
        &mut conn.prepare("SELECT id, owner, spec FROM apps ORDER BY id")?,
        [],
        "apps",
        &mut skipped,
        |r| {
            let spec: AppSpec = serde_json::from_str(&col::<String>(r, 2)?)
                .map_err(|e| format!("stored spec: {e}"))?;
            Ok(AppResources {
                app: AppId(col_u64(r, 0)?),
                owner: col(r, 1)?,
                cores: spec.cores,
                memory_mb: spec.memory_mb,
            })
        },
    )?;
    let agents = each_row(
        &mut conn.prepare("SELECT id, platform, slots, memory_mb FROM agents ORDER BY id")?,
        [],
        "agents",
        &mut skipped,
        |r| {
            Ok(AgentResources {
                agent: AgentId(col_u64(r, 0)?),
                platform: col(r, 1)?,
                slots: col(r, 2)?,
                memory_mb: col_u64(r, 3)?,
            })
        },
    )?;
    let runs = each_row(
        &mut conn.prepare(
            "SELECT a.app_id, a.agent_id, a.outcome, COALESCE(a.wall_ms, 0),
                    COALESCE(a.started_ms, 0), a.co_runners, s.transfers, a.variant,
                    a.resources, a.device_co_runners
             FROM attempts a LEFT JOIN attempt_staging s
               ON s.app_id = a.app_id AND s.idx = a.idx AND s.attempt = a.attempt
             WHERE a.outcome IS NOT NULL ORDER BY a.ended_ms",
        )?,
        [],
        "attempts",
        &mut skipped,
        |r| {
            let outcome: String = col(r, 2)?;
            let wall_ms: f64 = col(r, 3)?;
            if !(wall_ms.is_finite() && wall_ms >= 0.0) {
                return Err(format!("wall_ms {wall_ms} is not a duration"));
            }
            Ok(Run {
                app: AppId(col_u64(r, 0)?),
                agent: AgentId(col_u64(r, 1)?),
                outcome: outcome_from_str(&outcome).unwrap_or(Outcome::Failed),
                wall_ms,
                started_ms: col_u64(r, 4)?,
                co_runners: col::<Option<String>>(r, 5)?
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or_default(),
                transfers: col::<Option<String>>(r, 6)?
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or_default(),
                variant: col(r, 7)?,
                device_co_runners: device_co_runners(
                    col::<Option<String>>(r, 8)?.as_deref(),
                    col::<Option<String>>(r, 9)?.as_deref(),
                ),
            })
        },
    )?;
    let carried = super::forget::carried(conn, &mut skipped)?;
    // Co-runners that were forgotten are nothing a profile can ask about any more.
    let known: std::collections::HashSet<AppId> = apps.iter().map(|a| a.app).collect();
    let mut runs = runs;
    for run in &mut runs {
        run.co_runners.retain(|a| known.contains(a));
        if let Some(device) = &mut run.device_co_runners {
            device.retain(|a| known.contains(a));
        }
    }
    for row in &skipped {
        tracing::warn!(%row, "a stored measurement was left out of the profiles");
    }
    Ok(Measured {
        apps,
        agents,
        runs,
        carried,
    })
}

/// A stored run's device co-runners: the list recorded (none: it had the device alone)
/// when its grant (`resources`) held a fraction of a GPU, else `None`.
fn device_co_runners(grant: Option<&str>, recorded: Option<&str>) -> Option<Vec<AppId>> {
    let grant: hetpilot_protocol::resources::ResourceGrant = serde_json::from_str(grant?).ok()?;
    grant.fractional_gpus().next()?;
    Some(
        recorded
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default(),
    )
}
