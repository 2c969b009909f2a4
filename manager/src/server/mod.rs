//! The `/v1` HTTP API (axum): routes, authentication, and error bodies. Every route but
//! `GET /v1/health` needs a bearer token.

mod agents;
mod error;
mod extract;
mod files;
mod live;
mod pilots;
mod users;

pub use error::ApiError;

use crate::service::Manager;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::{Json, Router};
use std::sync::Arc;

pub fn router(manager: Arc<Manager>) -> Router {
    let limit = (manager.settings.max_request_mib as usize).saturating_mul(1 << 20);
    Router::new()
        .route(
            "/v1/health",
            get(|| async { Json(serde_json::json!({ "status": "ok" })) }),
        )
        .route("/v1/apps", post(users::submit).get(users::list))
        .route("/v1/apps/{app}", get(users::show))
        .route("/v1/apps/{app}/report", get(users::report))
        .route("/v1/apps/{app}/tasks", get(users::tasks))
        .route("/v1/apps/{app}/cancel", post(users::cancel))
        .route("/v1/tasks/{task}", get(users::task))
        .route("/v1/users", post(users::create_user))
        .route(
            "/v1/agent-tokens",
            post(users::create_agent_token).get(users::list_agent_tokens),
        )
        .route(
            "/v1/agent-tokens/{id}/revoke",
            post(users::revoke_agent_token),
        )
        .route("/v1/admin/rotate-token", post(users::rotate_admin_token))
        .route("/v1/agents", post(agents::register).get(agents::list))
        .route("/v1/agents/{agent}/pull", post(agents::pull))
        .route("/v1/agents/{agent}/results", post(agents::results))
        .route("/v1/agents/{agent}/heartbeat", post(agents::heartbeat))
        .route("/v1/agents/{agent}/deregister", post(agents::deregister))
        .route("/v1/agents/{agent}/drain", post(agents::drain))
        .route("/v1/schedule", get(live::schedule))
        .route("/v1/usage", get(live::usage))
        .route("/v1/bandwidths", get(live::bandwidths))
        .route("/v1/pilots", get(pilots::list))
        .route("/v1/platforms", get(pilots::platforms))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(manager.clone())
        // Staging: the file service streams bodies of any size (no request limit).
        .merge(files::router(manager))
}

/// Serves the API on `listener` until `shutdown` resolves.
pub async fn serve(
    manager: Arc<Manager>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    manager.spawn_sweeper();
    manager.spawn_scheduler();
    axum::serve(listener, router(manager))
        .with_graceful_shutdown(shutdown)
        .await
}
