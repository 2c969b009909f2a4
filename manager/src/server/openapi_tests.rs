//! The description and the router agree: every `/v1` path the router declares is
//! described and every described path is routed, each with the same methods (found by
//! asking the router: a method it does not route answers 405, a path it does not know an
//! empty 404); and `docs/openapi.json` is the description the code generates
//! (`HETPILOT_BLESS=1` rewrites it), every schema it refers to described in it.

use super::openapi::{document, ApiDoc};
use crate::config::ManagerConfig;
use crate::service::{admin_token_path, Manager};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use hetpilot_protocol::protocol::NewUser;
use std::collections::{BTreeMap, BTreeSet};
use tower::ServiceExt;
use utoipa::OpenApi;

/// The files that declare the router's routes.
const ROUTE_SOURCES: [&str; 3] = [
    include_str!("mod.rs"),
    include_str!("files.rs"),
    include_str!("task_outputs.rs"),
];

const METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::PATCH,
];

/// Every `/v1` path in a `.route("...")` of the router's sources, written as OpenAPI
/// writes it (`{*name}` → `{name}`).
fn routed_paths() -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for source in ROUTE_SOURCES {
        for (i, _) in source.match_indices(".route(") {
            let rest = source[i + ".route(".len()..].trim_start();
            let Some(quoted) = rest.strip_prefix('"') else {
                continue;
            };
            let path = &quoted[..quoted.find('"').expect("a closing quote")];
            if path.starts_with("/v1") {
                paths.insert(path.replace("{*", "{"));
            }
        }
    }
    paths
}

/// The described paths with their methods.
fn described() -> BTreeMap<String, BTreeSet<String>> {
    let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, item)| {
            let methods = item.as_object().unwrap().keys().cloned();
            (path.clone(), methods.collect())
        })
        .collect()
}

/// `path` with a plausible value in each parameter.
fn concrete(path: &str) -> String {
    [
        ("{app}", "1"),
        ("{task}", "1.0"),
        ("{agent}", "1"),
        ("{id}", "abc"),
        ("{name}", "dir/file"),
        ("{attempt}", "1"),
        ("{stream}", "out"),
    ]
    .iter()
    .fold(path.to_string(), |p, (from, to)| p.replace(from, to))
}

#[tokio::test]
async fn the_description_and_the_router_name_the_same_routes_and_methods() {
    let dir = tempfile::tempdir().unwrap();
    let settings =
        ManagerConfig::load(None, &[("data_dir", dir.path().display().to_string())]).unwrap();
    let m = Manager::open(settings).unwrap();
    let admin = std::fs::read_to_string(admin_token_path(dir.path())).unwrap();
    let admin = m.authenticate(Some(admin.trim())).unwrap();
    // A plain user: its probes change nothing that matters (no admin call succeeds).
    let token = m
        .create_user(
            &admin,
            NewUser {
                name: "probe".into(),
            },
        )
        .await
        .unwrap()
        .token;
    let router = super::router(m.clone());
    let described = described();
    let routed = routed_paths();
    let described_paths: BTreeSet<String> = described.keys().cloned().collect();
    assert_eq!(
        routed, described_paths,
        "the router's /v1 paths (left) and the description's (right) differ: annotate the \
         handler with #[utoipa::path] and list it in `openapi::ApiDoc`"
    );
    for path in &routed {
        let mut answered = BTreeSet::new();
        for method in METHODS {
            let req = Request::builder()
                .method(method.clone())
                .uri(concrete(path))
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap();
            let resp = router.clone().oneshot(req).await.unwrap();
            let status = resp.status();
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .unwrap();
            let unrouted = status == StatusCode::METHOD_NOT_ALLOWED
                || (status == StatusCode::NOT_FOUND && body.is_empty());
            if !unrouted {
                answered.insert(method.as_str().to_lowercase());
            }
        }
        assert_eq!(
            answered, described[path],
            "{path}: the methods the router answers (left) and the description's (right)"
        );
    }
}

#[test]
fn the_checked_in_description_is_the_generated_one() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
    let generated = document();
    if std::env::var_os("HETPILOT_BLESS").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/openapi.json is not what the code describes: regenerate it with \
         `HETPILOT_BLESS=1 cargo test -p hetpilot-manager --lib openapi`"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
}

/// Every `$ref` in `value`, depth first.
fn references<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::String(r)) = map.get("$ref") {
                found.push(r);
            }
            map.values().for_each(|v| references(v, found));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| references(v, found)),
        _ => {}
    }
}

#[test]
fn every_schema_the_description_refers_to_is_in_it() {
    let doc: serde_json::Value = serde_json::from_str(&document()).unwrap();
    let mut found = Vec::new();
    references(&doc, &mut found);
    assert!(!found.is_empty());
    let missing: BTreeSet<&str> = found
        .into_iter()
        .filter(|r| {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or(r);
            doc["components"]["schemas"].get(name).is_none()
        })
        .collect();
    assert!(missing.is_empty(), "described nowhere: {missing:?}");
}
