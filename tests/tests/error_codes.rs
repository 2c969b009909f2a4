//! Every refusal carries a machine-readable `code` beside its message, from the fixed list
//! of `hetpilot_protocol::error_code::ErrorCode`, on the routes clients use most.

use hetpilot_e2e::{array_app, Manager};
use hetpilot_protocol::error_code::ErrorCode;
use serde_json::{json, Value};

/// Asserts an answer's status and code, and that its message is there for people.
#[track_caller]
fn refused(answer: (u16, Value), status: u16, code: ErrorCode) {
    let (got, body) = answer;
    assert_eq!(got, status, "{body}");
    assert_eq!(body["code"], code.as_str(), "{body}");
    assert!(!body["error"].as_str().unwrap_or("").is_empty(), "{body}");
}

#[test]
fn refusals_name_their_code_beside_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let (s, b) = http.post("/v1/users", &m.admin, &json!({"name": "alice"}));
    assert_eq!(s, 200, "{b}");
    let alice = b["token"].as_str().unwrap().to_string();
    let (s, b) = http.post("/v1/apps", &m.admin, &array_app("held", "true", 2));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();

    refused(http.get("/v1/apps", ""), 401, ErrorCode::Unauthorized);
    refused(
        http.post("/v1/users", &alice, &json!({"name": "mallory"})),
        403,
        ErrorCode::Forbidden,
    );
    refused(
        http.get(&format!("/v1/apps/{app}"), &alice),
        404,
        ErrorCode::NotFound,
    );
    let (s, b) = http.get(&format!("/v1/apps/{app}/tasks?limit=0"), &m.admin);
    assert!(b["error"].as_str().unwrap_or("").contains("limit"), "{b}");
    refused((s, b), 400, ErrorCode::InvalidField);
    refused(
        http.post_bytes("/v1/apps", &m.admin, b"{not json".to_vec()),
        400,
        ErrorCode::InvalidBody,
    );
    // No agent has run it: the application is live, and only an ended one is forgotten.
    refused(
        http.post(&format!("/v1/apps/{app}/forget"), &m.admin, &json!({})),
        409,
        ErrorCode::Conflict,
    );
}
