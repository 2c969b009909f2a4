//! Rate limits on submits (per user) and agent registrations (per platform, or per pilot
//! for a pilot's own token): a GCRA limiter (governor) keyed by the authenticated caller,
//! answering 429 with `Retry-After` once a key's burst is spent.

use super::error::ApiError;
use crate::service::Principal;
use axum::extract::{Request, State};
use axum::http::header::RETRY_AFTER;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use hetpilot_protocol::error_code::ErrorCode;
use std::num::NonZeroU32;
use std::sync::Arc;

/// Keys kept before idle ones are dropped.
const KEYS_KEPT: usize = 4096;

/// One limited kind of call.
pub struct RateLimit {
    what: &'static str,
    limiter: DefaultKeyedRateLimiter<String>,
}

impl RateLimit {
    /// `burst` calls at once per key, refilled at `per_minute`; zero counts as one.
    pub fn new(what: &'static str, burst: u32, per_minute: u32) -> Arc<RateLimit> {
        let one = |n: u32| NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::per_minute(one(per_minute)).allow_burst(one(burst));
        Arc::new(RateLimit {
            what,
            limiter: DefaultKeyedRateLimiter::keyed(quota),
        })
    }
}

/// The key a caller's budgets (rates, large-body slots) are kept under.
pub(super) fn key(who: Option<&Principal>) -> String {
    match who {
        Some(Principal::User { name, .. }) => format!("user {name}"),
        Some(Principal::AgentRegistration { platform, .. }) => format!("platform {platform}"),
        Some(Principal::PilotRegistration {
            platform, pilot, ..
        }) => format!("pilot {platform}/{pilot}"),
        Some(Principal::Agent(id)) => format!("agent {id}"),
        None => String::new(),
    }
}

/// Passes a request on while its caller's budget lasts; 429 with `Retry-After` otherwise.
pub async fn limit(State(rate): State<Arc<RateLimit>>, req: Request, next: Next) -> Response {
    let key = key(req.extensions().get::<Principal>());
    if rate.limiter.len() > KEYS_KEPT {
        rate.limiter.retain_recent();
    }
    match rate.limiter.check_key(&key) {
        Ok(()) => next.run(req).await,
        Err(not_until) => {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let mut resp = ApiError::new(
                ErrorCode::RateLimited,
                format!("too many {} from {key}: try again in {secs} s", rate.what),
            )
            .into_response();
            resp.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(secs.max(1)));
            resp
        }
    }
}
