//! Adding a column only where it is missing: the data directories written before the
//! schema had a version may hold any of the columns the early migrations add.

use rusqlite::Connection;

/// Adds `column` (SQL `declaration`) to `table` unless the table has it already.
pub fn add_column_if_missing(
    conn: &Connection,
    table: &str,
    column: &str,
    declaration: &str,
) -> rusqlite::Result<()> {
    let present = conn
        .prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?
        .exists([table, column])?;
    if !present {
        conn.execute_batch(&format!(
            "ALTER TABLE {table} ADD COLUMN {column} {declaration}"
        ))?;
    }
    Ok(())
}
