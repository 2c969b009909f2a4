//! The `/v1` HTTP API (axum): routes, authentication, limits, and error bodies. Every
//! route but `GET /v1/health` needs a bearer token, checked before any body is read.
//! Bodies are limited per route (`[limits]`): small for most, larger for submits and agents'
//! results, a per-file limit for file uploads; a body must arrive whole within a deadline
//! (file uploads aside); submits are rate limited per user and read a few at a time, a few
//! per user; agent registrations are rate limited per platform. Long polls end with 401
//! when their token is revoked; task-event streams (`events`) end then too, and one user
//! holds at most `limits.max_event_streams_per_user` of them open. Every answer says `X-Content-Type-Options: nosniff`.
//! `GET /metrics` (Prometheus) and the dashboard at `/ui` are served beside the API
//! (`metrics`, `ui`).

mod agents;
mod auth;
mod body_deadline;
mod dashboard_views;
mod error;
mod event_format;
mod events;
mod extract;
mod files;
mod large_bodies;
mod long_poll;
mod metrics;
mod metrics_resources;
mod metrics_state;
mod openapi;
#[cfg(test)]
mod openapi_tests;
mod pages;
mod pilots;
mod rate;
mod scheduling_views;
mod task_outputs;
mod ui;
mod users;
mod workflows;

pub use error::ApiError;
pub use openapi::{document as openapi_document, ApiDoc};

use crate::service::Manager;
use crate::workflow::FileKind;
use axum::extract::DefaultBodyLimit;
use axum::http::header::X_CONTENT_TYPE_OPTIONS;
use axum::http::HeaderValue;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;
use hetpilot_transport::serve::ServeLimits;
use hetpilot_transport::tls::ServerConfig;
use large_bodies::LargeBodySlots;
use rate::RateLimit;
use std::convert::Infallible;
use std::sync::Arc;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;

pub fn router(manager: Arc<Manager>) -> Router {
    let limits = &manager.settings.limits;
    let submit_rate = RateLimit::new("submits", limits.submit_burst, limits.submits_per_minute);
    let register_rate = RateLimit::new(
        "registrations",
        limits.register_burst,
        limits.registrations_per_minute,
    );
    let submit_slots =
        LargeBodySlots::new(limits.max_large_requests, limits.large_requests_per_user());
    let submit = post::<_, _, Arc<Manager>>(users::submit)
        .layer::<_, Infallible>(DefaultBodyLimit::max(limits.submit_bytes()))
        .layer(from_fn_with_state(submit_slots.clone(), large_bodies::hold))
        .layer(from_fn_with_state(submit_rate.clone(), rate::limit));
    // A workflow document is submitted under the same rate and large-body slots as an
    // application; its body may be the WfCommons bound (a DAX is held to its own).
    let document_bytes = limits
        .submit_bytes()
        .saturating_mul(FileKind::WfCommons.per_submit() as usize);
    let submit_workflow = post::<_, _, Arc<Manager>>(workflows::submit)
        .layer::<_, Infallible>(DefaultBodyLimit::max(document_bytes))
        .layer(from_fn_with_state(submit_slots.clone(), large_bodies::hold))
        .layer(from_fn_with_state(submit_rate.clone(), rate::limit));
    let workflow_inputs = post::<_, _, Arc<Manager>>(workflows::inputs)
        .layer::<_, Infallible>(DefaultBodyLimit::max(document_bytes))
        .layer(from_fn_with_state(submit_slots.clone(), large_bodies::hold));
    let register = post::<_, _, Arc<Manager>>(agents::register)
        .layer::<_, Infallible>(from_fn_with_state(register_rate, rate::limit));
    let results = post::<_, _, Arc<Manager>>(agents::results)
        .layer::<_, Infallible>(DefaultBodyLimit::max(limits.results_bytes()));
    let long_poll = || from_fn_with_state(manager.clone(), long_poll::end_on_revocation);
    let show = get::<_, _, Arc<Manager>>(users::show).layer::<_, Infallible>(long_poll());
    let pull = post::<_, _, Arc<Manager>>(agents::pull).layer::<_, Infallible>(long_poll());
    Router::new()
        .route("/v1/apps", submit.get(users::list))
        .route("/v1/workflows", submit_workflow)
        .route("/v1/workflows/inputs", workflow_inputs)
        .route("/v1/apps/{app}", show)
        .route("/v1/apps/{app}/report", get(users::report))
        .route("/v1/apps/{app}/tasks", get(users::tasks))
        .route("/v1/apps/{app}/events", get(events::events))
        .route("/v1/apps/{app}/cancel", post(users::cancel))
        .route("/v1/apps/{app}/forget", post(users::forget))
        .route("/v1/admin/purge", post(users::purge))
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
        .route("/v1/agents", register.get(agents::list))
        .route("/v1/agents/{agent}/pull", pull)
        .route("/v1/agents/{agent}/results", results)
        .route("/v1/agents/{agent}/heartbeat", post(agents::heartbeat))
        .route("/v1/agents/{agent}/deregister", post(agents::deregister))
        .route("/v1/agents/{agent}/drain", post(agents::drain))
        .route("/v1/schedule", get(scheduling_views::schedule))
        .route("/v1/usage", get(scheduling_views::usage))
        .route("/v1/bandwidths", get(scheduling_views::bandwidths))
        .route("/v1/pilots", get(pilots::list))
        .route("/v1/platforms", get(pilots::platforms))
        .route("/v1/platforms/reload", post(pilots::reload_platforms))
        .route("/v1/whoami", get(dashboard_views::whoami))
        .route("/v1/affinity", get(dashboard_views::affinity))
        .route("/v1/staging", get(dashboard_views::staging))
        .route("/v1/history", get(dashboard_views::history))
        .layer(DefaultBodyLimit::max(limits.body_bytes()))
        .layer(from_fn_with_state(
            limits.body_deadline(),
            body_deadline::limit,
        ))
        .with_state(manager.clone())
        // Staging: the file service streams bodies up to its per-file limit.
        .merge(files::router(manager.clone()))
        // Task outputs agents send on request, up to `max_output_mib`.
        .merge(task_outputs::router(manager.clone()))
        .layer(from_fn_with_state(manager.clone(), auth::authenticate))
        .route("/v1/health", get(openapi::health))
        // The API's description, served without a token (see `openapi`).
        .route("/v1/openapi.json", get(openapi::description))
        // `/metrics` and the dashboard's assets check tokens their own way (see each).
        .route(
            "/metrics",
            get(metrics::exposition).with_state(metrics::MetricsAccess::new(manager.clone())),
        )
        .merge(ui::router())
        .layer(from_fn_with_state(manager.clone(), metrics::track))
        .layer(RequestBodyTimeoutLayer::new(limits.body_timeout()))
        .layer(SetResponseHeaderLayer::if_not_present(
            X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
}

/// Serves the API on `listener` (HTTPS if `tls` is given) until `shutdown` resolves.
pub async fn serve(
    manager: Arc<Manager>,
    listener: tokio::net::TcpListener,
    tls: Option<Arc<ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    manager.spawn_sweeper();
    manager.spawn_scheduler();
    manager.spawn_staging_planner();
    manager.spawn_history();
    manager.spawn_retention();
    let limits = &manager.settings.limits;
    let serve_limits = ServeLimits {
        header_read_timeout: limits.header_read_timeout(),
        max_connections: limits.max_connections,
        max_connections_per_ip: limits.max_connections_per_ip,
        tls,
    };
    hetpilot_transport::serve::serve(listener, router(manager), serve_limits, shutdown).await
}
