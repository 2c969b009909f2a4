//! Forgetting ended applications in the store: their rows leave every table (tasks,
//! attempts, staging figures, the application), what their runs cost their owners is
//! added to `usage_carried`, and the highest id ever given is remembered in `counters` so
//! that a restart never hands a forgotten application's id out again.

use super::skip::{col, each_row, SkippedRow};
use crate::control::CarriedUsage;
use crate::fairshare::UsageAccount;
use hetpilot_protocol::AppId;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// The counter of the next application id, at least one more than any id forgotten.
const NEXT_APP: &str = "next_app";
/// Ids above this are not plausible (2^53: ids stay exact as JSON numbers everywhere); a
/// stored counter past it is ignored.
const MAX_PLAUSIBLE_ID: i64 = 1 << 53;

/// Deletes `apps` with everything stored about them and carries `carried` into the
/// owners' stored usage (merged with `half_life` seconds, None: no decay).
pub fn forget(
    tx: &Transaction<'_>,
    apps: &[AppId],
    carried: &[CarriedUsage],
    half_life: Option<f64>,
) -> rusqlite::Result<()> {
    for app in apps {
        let Ok(id) = i64::try_from(app.0) else {
            continue;
        };
        for sql in [
            "DELETE FROM attempt_staging WHERE app_id = ?1",
            "DELETE FROM attempts WHERE app_id = ?1",
            "DELETE FROM tasks WHERE app_id = ?1",
            "DELETE FROM apps WHERE id = ?1",
        ] {
            tx.prepare_cached(sql)?.execute(params![id])?;
        }
        tx.prepare_cached(
            "INSERT INTO counters (name, value) VALUES (?1, ?2)
             ON CONFLICT(name) DO UPDATE SET value = MAX(value, excluded.value)",
        )?
        .execute(params![NEXT_APP, id.saturating_add(1)])?;
    }
    for c in carried {
        carry(tx, c, half_life)?;
    }
    Ok(())
}

fn carry(tx: &Transaction<'_>, c: &CarriedUsage, half_life: Option<f64>) -> rusqlite::Result<()> {
    let stored: Option<(f64, f64, f64)> = tx
        .prepare_cached("SELECT raw, decayed, at FROM usage_carried WHERE user = ?1")?
        .query_row(params![c.user], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let mut usage = stored.map_or_else(UsageAccount::default, |(raw, decayed, at)| UsageAccount {
        raw,
        decayed,
        at,
    });
    usage.merge(&c.usage, half_life);
    if ![usage.raw, usage.decayed, usage.at]
        .iter()
        .all(|v| v.is_finite())
    {
        tracing::warn!(user = %c.user, "carried usage is not finite; left as it was");
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT INTO usage_carried (user, raw, decayed, at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(user) DO UPDATE SET raw = excluded.raw, decayed = excluded.decayed,
            at = excluded.at",
    )?
    .execute(params![c.user, usage.raw, usage.decayed, usage.at])?;
    Ok(())
}

/// The next application id the counters promise (1 when none was ever forgotten, or the
/// stored counter cannot be believed).
pub fn next_app(conn: &Connection) -> rusqlite::Result<u64> {
    let value: Option<rusqlite::types::Value> = conn
        .query_row(
            "SELECT value FROM counters WHERE name = ?1",
            params![NEXT_APP],
            |r| r.get(0),
        )
        .optional()?;
    let next = match value {
        None => 1,
        Some(rusqlite::types::Value::Integer(v)) if (1..=MAX_PLAUSIBLE_ID).contains(&v) => v as u64,
        Some(other) => {
            tracing::error!(value = ?other, "the stored next application id is not plausible; ignored");
            1
        }
    };
    Ok(next)
}

/// The usage carried over per user; rows that cannot be read back are skipped.
pub fn carried(
    conn: &Connection,
    skipped: &mut Vec<SkippedRow>,
) -> rusqlite::Result<Vec<CarriedUsage>> {
    each_row(
        &mut conn.prepare("SELECT user, raw, decayed, at FROM usage_carried ORDER BY user")?,
        [],
        "usage_carried",
        skipped,
        |r| {
            let usage = UsageAccount {
                raw: col(r, 1)?,
                decayed: col(r, 2)?,
                at: col(r, 3)?,
            };
            if ![usage.raw, usage.decayed, usage.at]
                .iter()
                .all(|v| v.is_finite() && *v >= 0.0)
            {
                return Err(format!("usage {usage:?} is not a finite amount"));
            }
            Ok(CarriedUsage {
                user: col(r, 0)?,
                usage,
            })
        },
    )
}
