//! One bounded page of a listing route: `?limit=N` rows at most (1 to [`MAX_PAGE`],
//! default [`DEFAULT_PAGE`]; out of range is a 400 naming `limit`, never a silent clamp)
//! and `?after=CURSOR`, only the rows whose key orders after the cursor (the key of the
//! last row of the page before, as [`Listed::cursor`] writes it). A client that asks on
//! until a page comes back shorter than its limit has every row.

use crate::service::ServiceError;
use hetpilot_protocol::listing::Listed;
use serde::Deserialize;

/// Rows in a page when the request names no `limit`.
pub const DEFAULT_PAGE: u64 = 1000;
/// Most rows one request may ask for.
pub const MAX_PAGE: u64 = 100_000;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// At most this many rows (1 to 100000; default 1000).
    limit: Option<u64>,
    /// Only rows after this cursor (the last row's of the page before).
    after: Option<String>,
}

/// The page of `rows` that `q` asks for, in key order.
pub fn page<T: Listed>(mut rows: Vec<T>, q: &PageQuery) -> Result<Vec<T>, ServiceError> {
    let limit = q.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ServiceError::BadRequest(format!(
            "field `limit`: {limit} is not in 1-{MAX_PAGE}; page on with `after` (the cursor \
             of the last row of the page before)"
        )));
    }
    let after = match q.after.as_deref() {
        None => None,
        Some(text) => Some(T::parse_cursor(text).ok_or_else(|| {
            ServiceError::BadRequest(format!(
                "field `after`: `{}` is not a cursor of this listing",
                text.escape_debug()
            ))
        })?),
    };
    rows.sort_by_key(T::key);
    let start = match &after {
        None => 0,
        Some(after) => rows.partition_point(|r| r.key() <= *after),
    };
    // `limit` is at most MAX_PAGE, which fits a usize.
    let end = start.saturating_add(limit as usize).min(rows.len());
    rows.truncate(end);
    rows.drain(..start);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::views::UserUsage;

    fn user(name: &str) -> UserUsage {
        serde_json::from_value(serde_json::json!({
            "user": name, "usage": 0.0, "decayed_usage": 0.0, "priority": 1.0
        }))
        .unwrap()
    }

    fn q(limit: Option<u64>, after: Option<&str>) -> PageQuery {
        PageQuery {
            limit,
            after: after.map(String::from),
        }
    }

    fn names(rows: &[UserUsage]) -> Vec<&str> {
        rows.iter().map(|u| u.user.as_str()).collect()
    }

    #[test]
    fn pages_go_on_after_the_cursor_in_key_order_and_refuse_a_bad_limit() {
        let rows = || vec![user("c"), user("a"), user("d"), user("b")];
        assert_eq!(names(&page(rows(), &q(Some(2), None)).unwrap()), ["a", "b"]);
        assert_eq!(
            names(&page(rows(), &q(Some(2), Some("b"))).unwrap()),
            ["c", "d"]
        );
        assert_eq!(
            names(&page(rows(), &q(None, Some("bb"))).unwrap()),
            ["c", "d"]
        );
        assert!(page(rows(), &q(Some(2), Some("z"))).unwrap().is_empty());
        for bad in [0, MAX_PAGE + 1, u64::MAX] {
            let e = page(rows(), &q(Some(bad), None)).unwrap_err().to_string();
            assert!(e.contains("field `limit`"), "{e}");
        }
    }
}
