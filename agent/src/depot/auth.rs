//! Who may touch a path on the depot: a request carries `Authorization: Bearer TOKEN`, a
//! grant the manager signed for this depot (see `hetpilot_transport::store_grant`). Missing,
//! malformed, forged or expired grants get 401; a valid grant for another owner than the
//! path's first component gets 403. Tokens are never logged.

use super::DepotError;
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use hetpilot_transport::store_grant::StoreSecret;
use std::time::{SystemTime, UNIX_EPOCH};

/// Checks that the request's grant opens `owner`'s files on the depot named `depot`.
pub fn authorize(
    secret: &StoreSecret,
    depot: &str,
    headers: &HeaderMap,
    owner: &str,
) -> Result<(), DepotError> {
    let unauthorized = |message: String| DepotError {
        status: StatusCode::UNAUTHORIZED,
        message,
    };
    let token = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(|| {
            unauthorized("this store needs `Authorization: Bearer GRANT` (agents get grants from the manager)".into())
        })?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let granted = secret.verify(depot, token, now).map_err(|e| {
        unauthorized(format!(
            "grant refused by store `{depot}`: {e} (the manager's `[[storage]]` entry must \
             have this store's name and secret)"
        ))
    })?;
    if granted != owner {
        return Err(DepotError {
            status: StatusCode::FORBIDDEN,
            message: format!("this grant opens {granted}'s files, not {owner}'s"),
        });
    }
    Ok(())
}
