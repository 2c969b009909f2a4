//! Start-up never dies on a stored row: rows that cannot be read back (a value out of
//! range, an unreadable spec, an unknown state) are skipped and reported, and the rest of
//! the state is recovered. Errors of the database itself (a missing table, a corrupt page)
//! still stop the start, since nothing could be trusted then.

use rusqlite::{Params, Row, Statement};

/// A row that recovery skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRow {
    pub table: &'static str,
    /// The row's first column (its key), as stored.
    pub key: String,
    pub problem: String,
}

impl std::fmt::Display for SkippedRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} row {}: {}", self.table, self.key, self.problem)
    }
}

/// Reads every row of `stmt` with `read`; a row `read` refuses is added to `skipped`.
pub fn each_row<T, P: Params>(
    stmt: &mut Statement<'_>,
    params: P,
    table: &'static str,
    skipped: &mut Vec<SkippedRow>,
    mut read: impl FnMut(&Row<'_>) -> Result<T, String>,
) -> rusqlite::Result<Vec<T>> {
    let mut out = Vec::new();
    let mut rows = stmt.query(params)?;
    while let Some(row) = rows.next()? {
        match read(row) {
            Ok(v) => out.push(v),
            Err(problem) => skipped.push(SkippedRow {
                table,
                key: key(row),
                problem,
            }),
        }
    }
    Ok(out)
}

fn key(row: &Row<'_>) -> String {
    use rusqlite::types::ValueRef;
    match row.get_ref(0) {
        Ok(ValueRef::Integer(i)) => i.to_string(),
        Ok(ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
        Ok(other) => format!("{other:?}"),
        Err(e) => format!("(unreadable key: {e})"),
    }
}

/// A column as a value of `T`, with an error naming the column.
pub fn col<T: rusqlite::types::FromSql>(row: &Row<'_>, i: usize) -> Result<T, String> {
    row.get(i).map_err(|e| {
        let name = row.as_ref().column_name(i).unwrap_or("?");
        format!("column `{name}`: {e}")
    })
}

/// A column that holds a count, id or time: a non-negative integer.
pub fn col_u64(row: &Row<'_>, i: usize) -> Result<u64, String> {
    col_opt_u64(row, i)?.ok_or_else(|| format!("column {i}: missing"))
}

/// Like [`col_u64`], NULL allowed.
pub fn col_opt_u64(row: &Row<'_>, i: usize) -> Result<Option<u64>, String> {
    match col::<Option<i64>>(row, i)? {
        None => Ok(None),
        Some(v) => u64::try_from(v).map(Some).map_err(|_| {
            let name = row.as_ref().column_name(i).unwrap_or("?");
            format!("column `{name}`: {v} is negative")
        }),
    }
}
