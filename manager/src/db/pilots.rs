//! The `pilots` table: one row per pilot, replaced whole on every change, and read back at
//! start so a restarted manager keeps following its pilots' batch jobs. A queued pilot's
//! registration credential (its SHA-256 only) is kept until its agent registers.

use super::skip::{col, col_opt_u64, col_u64, each_row, SkippedRow};
use hetpilot_protocol::pilots::{PilotRecord, PilotState};
use rusqlite::{params, Connection, Transaction};

/// A pilot's registration credential: only its hash, and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PilotCredential {
    pub hash: String,
    pub expires_ms: u64,
}

pub struct StoredPilot {
    pub record: PilotRecord,
    /// Still usable (the pilot is queued and its agent has not registered).
    pub credential: Option<PilotCredential>,
}

fn opt(v: Option<u64>) -> Option<i64> {
    v.map(|v| v as i64)
}

/// Inserts or replaces a pilot's row. The credential is set when given, kept while the
/// pilot is queued, and erased once it is not.
pub fn upsert_pilot(
    tx: &Transaction<'_>,
    r: &PilotRecord,
    credential: Option<&PilotCredential>,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO pilots (name, platform, batch_job_id, state, reason, submitted_ms,
            job_started_ms, registered_ms, ended_ms, agent_id, walltime_end_ms,
            credential_hash, credential_expires_ms, user, dir_removed_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
         ON CONFLICT(name) DO UPDATE SET batch_job_id = excluded.batch_job_id,
            state = excluded.state, reason = excluded.reason,
            job_started_ms = excluded.job_started_ms, registered_ms = excluded.registered_ms,
            ended_ms = excluded.ended_ms, agent_id = excluded.agent_id,
            walltime_end_ms = excluded.walltime_end_ms,
            dir_removed_ms = excluded.dir_removed_ms,
            credential_hash = CASE WHEN excluded.state = 'queued'
                THEN COALESCE(excluded.credential_hash, credential_hash) END,
            credential_expires_ms = CASE WHEN excluded.state = 'queued'
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
            credential_expires_ms, user, dir_removed_ms
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
                agent: col_opt_u64(r, 9)?,
                walltime_end_ms: col_opt_u64(r, 10)?,
                user: col(r, 13)?,
                dir_removed_ms: col_opt_u64(r, 14)?,
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
        }
    }

    #[test]
    fn a_pilot_round_trips_and_loses_its_credential_once_registered() {
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
        assert_eq!(loaded[0].credential, Some(cred), "kept while queued");

        r.state = PilotState::Running;
        r.agent = Some(7);
        r.registered_ms = Some(10);
        let tx = conn.transaction().unwrap();
        upsert_pilot(&tx, &r, None).unwrap();
        tx.commit().unwrap();
        let loaded = load_pilots(&conn, &mut Vec::new()).unwrap();
        assert_eq!(loaded[0].record, r);
        assert_eq!(loaded[0].credential, None, "erased once registered");
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
