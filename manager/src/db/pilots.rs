//! The `pilots` table: one row per pilot, replaced whole on every change, and read back at
//! start so a restarted manager keeps following its pilots' batch jobs. A pilot's
//! registration credential (its SHA-256 only) is kept until the pilot ends (once the agents
//! of all its nodes registered it admits only their own retried registrations, for a
//! while: see `hetpilot_core::control::pilot_groups`); its group (`members`: each agent and its node,
//! JSON) is kept with it.

use super::skip::{col, col_opt_u64, col_u64, each_row, SkippedRow};
use hetpilot_protocol::pilots::{PilotMember, PilotRecord, PilotState};
use rusqlite::{params, Connection, Transaction};

/// A pilot's registration credential: only its hash, and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PilotCredential {
    pub hash: String,
    pub expires_ms: u64,
}

pub struct StoredPilot {
    pub record: PilotRecord,
    /// Kept while the pilot is not final.
    pub credential: Option<PilotCredential>,
}

fn opt(v: Option<u64>) -> Option<i64> {
    v.map(|v| v as i64)
}

/// Inserts or replaces a pilot's row. The credential is set when given, kept while the
/// pilot is not final, and erased once it is.
pub fn upsert_pilot(
    tx: &Transaction<'_>,
    r: &PilotRecord,
    credential: Option<&PilotCredential>,
) -> rusqlite::Result<()> {
    let members = serde_json::to_string(&r.members)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    tx.prepare_cached(
        "INSERT INTO pilots (name, platform, batch_job_id, state, reason, submitted_ms,
            job_started_ms, registered_ms, ended_ms, agent_id, walltime_end_ms,
            credential_hash, credential_expires_ms, user, dir_removed_ms, nodes, members)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?17, ?18)
         ON CONFLICT(name) DO UPDATE SET batch_job_id = excluded.batch_job_id,
            state = excluded.state, reason = excluded.reason,
            job_started_ms = excluded.job_started_ms, registered_ms = excluded.registered_ms,
            ended_ms = excluded.ended_ms, agent_id = excluded.agent_id,
            walltime_end_ms = excluded.walltime_end_ms,
            dir_removed_ms = excluded.dir_removed_ms,
            nodes = excluded.nodes, members = excluded.members,
            credential_hash = CASE WHEN ?16
                THEN COALESCE(excluded.credential_hash, credential_hash) END,
            credential_expires_ms = CASE WHEN ?16
                THEN COALESCE(excluded.credential_expires_ms, credential_expires_ms) END",
    )?
    .execute(params![
        r.name,
        r.platform,
        r.batch_job_id,
        r.state.as_str(),
        r.reason,
        r.submitted_ms as i64,
        opt(r.job_started_ms),
        opt(r.registered_ms),
        opt(r.ended_ms),
        opt(r.agent),
        opt(r.walltime_end_ms),
        credential.map(|c| c.hash.as_str()),
        credential.map(|c| c.expires_ms as i64),
        r.user,
        opt(r.dir_removed_ms),
        !r.state.is_final(),
        i64::from(r.nodes),
        members,
    ])?;
    Ok(())
}

/// Every pilot, oldest first.
pub fn load_pilots(
    conn: &Connection,
    skipped: &mut Vec<SkippedRow>,
) -> rusqlite::Result<Vec<StoredPilot>> {
    let mut stmt = conn.prepare(
        "SELECT name, platform, batch_job_id, state, reason, submitted_ms, job_started_ms,
            registered_ms, ended_ms, agent_id, walltime_end_ms, credential_hash,
            credential_expires_ms, user, dir_removed_ms, nodes, members
         FROM pilots ORDER BY submitted_ms, name",
    )?;
    each_row(&mut stmt, [], "pilots", skipped, |r| {
        let state: String = col(r, 3)?;
        let state = PilotState::parse(&state).ok_or_else(|| format!("unknown state `{state}`"))?;
        let hash: Option<String> = col(r, 11)?;
        let credential = match (hash, col_opt_u64(r, 12)?) {
            (Some(hash), Some(expires_ms)) => Some(PilotCredential { hash, expires_ms }),
            _ => None,
        };
        let agent = col_opt_u64(r, 9)?;
        let nodes = match col_opt_u64(r, 15)? {
            // Rows from before multi-node pilots: one node.
            None => 1,
            Some(n) => u32::try_from(n)
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("column `nodes`: {n} is not a node count"))?,
        };
        let members = match col::<Option<String>>(r, 16)? {
            Some(json) => serde_json::from_str::<Vec<PilotMember>>(&json)
                .map_err(|e| format!("column `members`: {e}"))?,
            // Rows from before groups: the one agent, its node unrecorded.
            None => agent
                .map(|agent| PilotMember {
                    agent,
                    hostname: String::new(),
                })
                .into_iter()
                .collect(),
        };
        Ok(StoredPilot {
            record: PilotRecord {
                name: col(r, 0)?,
                platform: col(r, 1)?,
                batch_job_id: col(r, 2)?,
                state,
                reason: col(r, 4)?,
                submitted_ms: col_u64(r, 5)?,
                job_started_ms: col_opt_u64(r, 6)?,
                registered_ms: col_opt_u64(r, 7)?,
                ended_ms: col_opt_u64(r, 8)?,
                agent,
                walltime_end_ms: col_opt_u64(r, 10)?,
                user: col(r, 13)?,
                dir_removed_ms: col_opt_u64(r, 14)?,
                nodes,
                members,
            },
            credential,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submitting() -> PilotRecord {
        PilotRecord {
            name: "lab-p1".into(),
            platform: "lab".into(),
            batch_job_id: None,
            state: PilotState::Queued,
            reason: "submitting".into(),
            submitted_ms: 5,
            job_started_ms: None,
            registered_ms: None,
            ended_ms: None,
            agent: None,
            walltime_end_ms: None,
            user: None,
            dir_removed_ms: None,
            nodes: 1,
            members: Vec::new(),
        }
    }

    #[test]
    fn a_pilot_round_trips_and_loses_its_credential_once_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(&dir.path().join("db")).unwrap();
        let mut r = submitting();
        let cred = PilotCredential {
            hash: "h".into(),
            expires_ms: 99,
        };
        let tx = conn.transaction().unwrap();
        upsert_pilot(&tx, &r, Some(&cred)).unwrap();
        r.batch_job_id = Some("42".into());
        upsert_pilot(&tx, &r, None).unwrap();
        tx.commit().unwrap();
        let loaded = load_pilots(&conn, &mut Vec::new()).unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].record, r);
        assert_eq!(
            loaded[0].credential,
            Some(cred.clone()),
            "kept while queued"
        );

        r.state = PilotState::Running;
        r.agent = Some(7);
        r.members.push(PilotMember {
            agent: 7,
            hostname: "n1".into(),
        });
        r.registered_ms = Some(10);
        let tx = conn.transaction().unwrap();
        upsert_pilot(&tx, &r, None).unwrap();
        tx.commit().unwrap();
        let loaded = load_pilots(&conn, &mut Vec::new()).unwrap();
        assert_eq!(loaded[0].record, r);
        assert_eq!(
            loaded[0].credential,
            Some(cred),
            "kept while running, for a registration tried again"
        );

        r.state = PilotState::Ended;
        let tx = conn.transaction().unwrap();
        upsert_pilot(&tx, &r, None).unwrap();
        tx.commit().unwrap();
        let loaded = load_pilots(&conn, &mut Vec::new()).unwrap();
        assert_eq!(loaded[0].record, r);
        assert_eq!(loaded[0].credential, None, "erased once ended");
    }

    /// A two-node pilot's group (each agent with its node) round-trips; its credential is
    /// kept while it runs and goes once it failed.
    #[test]
    fn a_multi_node_pilot_keeps_its_group_and_its_credential_until_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(&dir.path().join("db")).unwrap();
        let mut r = PilotRecord {
            nodes: 2,
            ..submitting()
        };
        let cred = PilotCredential {
            hash: "h".into(),
            expires_ms: 99,
        };
        let store = |conn: &mut Connection, r: &PilotRecord, c: Option<&PilotCredential>| {
            let tx = conn.transaction().unwrap();
            upsert_pilot(&tx, r, c).unwrap();
            tx.commit().unwrap();
            load_pilots(conn, &mut Vec::new()).unwrap().remove(0)
        };
        store(&mut conn, &r, Some(&cred));
        r.state = PilotState::Running;
        r.agent = Some(3);
        r.members.push(PilotMember {
            agent: 3,
            hostname: "n2".into(),
        });
        let loaded = store(&mut conn, &r, None);
        assert_eq!(loaded.record, r);
        assert_eq!(
            loaded.credential,
            Some(cred.clone()),
            "one node still to come"
        );
        r.members.push(PilotMember {
            agent: 4,
            hostname: "n3".into(),
        });
        let loaded = store(&mut conn, &r, None);
        assert_eq!(loaded.record, r);
        assert_eq!(
            loaded.credential,
            Some(cred),
            "the group is whole, still running"
        );
        r.state = PilotState::Failed;
        let loaded = store(&mut conn, &r, None);
        assert_eq!(loaded.record, r);
        assert_eq!(loaded.credential, None, "erased once failed");
    }

    /// A write is ordered when it is queued, not when its commit is awaited: the service
    /// queues under its locks and awaits outside them.
    #[tokio::test]
    async fn writes_land_in_the_order_they_were_queued_not_awaited() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let writer = crate::db::Writer::spawn(crate::db::open(&path).unwrap());
        let with_reason = |reason: &str| crate::db::Write::Pilot {
            record: PilotRecord {
                reason: reason.into(),
                ..submitting()
            },
            credential: None,
        };
        let earlier = writer.queue(with_reason("batch job running"));
        writer.commit(with_reason("registered")).await.unwrap();
        earlier.await.unwrap();
        let loaded = load_pilots(&crate::db::open(&path).unwrap(), &mut Vec::new()).unwrap();
        assert_eq!(loaded[0].record.reason, "registered");
    }
}
