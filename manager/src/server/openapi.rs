//! The OpenAPI 3.1 description of `/v1`, generated from the handlers' `#[utoipa::path]`
//! annotations and the wire types' schemas (`hetpilot-protocol`'s `openapi` feature),
//! served at `GET /v1/openapi.json` and checked in as `docs/openapi.json`.
//!
//! The description is served without a token, like `/v1/health`: it is the document in
//! the repository, holds no data of any user or of this manager, and a client generator
//! needs it before anyone has issued it a token.

use super::{agents, dashboard_views, events, files, pilots, scheduling_views};
use super::{task_outputs, users, workflows};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "hetpilot",
        description = "The hetpilot manager's HTTP API. Every route but `/v1/health` and \
            `/v1/openapi.json` needs `Authorization: Bearer TOKEN`; errors answer \
            `{\"error\": \"...\"}` with a 4xx or 5xx status."
    ),
    paths(
        health, description,
        users::submit, users::list, users::show, users::report, users::tasks,
        users::cancel, users::forget, users::purge, users::task, users::create_user,
        users::create_agent_token, users::list_agent_tokens, users::revoke_agent_token,
        users::rotate_admin_token,
        events::events,
        workflows::submit, workflows::inputs,
        agents::register, agents::list, agents::pull, agents::results, agents::heartbeat,
        agents::deregister, agents::drain,
        scheduling_views::schedule, scheduling_views::usage, scheduling_views::bandwidths,
        pilots::list, pilots::platforms, pilots::reload_platforms,
        dashboard_views::whoami, dashboard_views::affinity, dashboard_views::staging,
        dashboard_views::history,
        files::list_user, files::get_user, files::put_user, files::delete_user,
        files::get_app, files::put_app, files::stats,
        task_outputs::read, task_outputs::store,
    ),
    // Schemas only the query parameters name (utoipa collects those of bodies itself).
    components(schemas(
        crate::service::WorkflowFormat, crate::service::ExternalInputs,
    )),
    modifiers(&BearerToken),
    security(("bearer" = []))
)]
pub struct ApiDoc;

/// Every route needs the bearer token unless its path says `security(())`.
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The description as served and checked in: pretty JSON and a final newline.
pub fn document() -> String {
    let mut text = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the description serializes");
    text.push('\n');
    text
}

#[utoipa::path(get, path = "/v1/health", tag = "meta", security(()),
    responses((status = 200, description = "`{\"status\": \"ok\"}` while the manager serves", body = Object)))]
pub(super) async fn health() -> impl IntoResponse {
    axum::Json(serde_json::json!({ "status": "ok" }))
}

#[utoipa::path(get, path = "/v1/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "This description (OpenAPI 3.1)", body = Object)))]
pub(super) async fn description() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], document())
}
