//! The web dashboard at `/ui`: one page, its script and its style sheet, embedded in the
//! binary (no CDN: clusters are often offline). The assets hold no data: the page asks
//! for a token, keeps it in the tab's `sessionStorage` (never in a URL, a cookie or a
//! log) and reads the same authenticated `/v1` API as the CLI, so a user sees their own
//! applications and an admin everything. Charts are SVG drawn by the page's own script.
//! A strict Content-Security-Policy allows only these assets and same-origin requests.

use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::http::HeaderName;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

const INDEX: &str = include_str!("index.html");
const SCRIPT: &str = include_str!("app.js");
const STYLE: &str = include_str!("style.css");

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; \
    frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, content_type),
            (CONTENT_SECURITY_POLICY, POLICY),
            (CACHE_CONTROL, "no-cache"),
            (HeaderName::from_static("x-content-type-options"), "nosniff"),
            (HeaderName::from_static("referrer-policy"), "no-referrer"),
        ],
        body,
    )
        .into_response()
}

/// The dashboard's routes (no token needed: the assets hold no data).
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route(
            "/ui/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/ui/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}
