//! The manager serves its API description at `/v1/openapi.json`, without a token (like
//! `/v1/health`): the very document checked in as `docs/openapi.json`.

use hetpilot_e2e::Manager;

#[test]
fn the_description_is_served_without_a_token_and_is_the_checked_in_one() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let resp = reqwest::blocking::get(format!("{}/v1/openapi.json", m.url)).unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert_eq!(content_type, "application/json");
    let served = resp.text().unwrap();
    let checked_in =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json"))
            .unwrap();
    assert!(
        served == checked_in,
        "the served description is docs/openapi.json"
    );
    let doc: serde_json::Value = serde_json::from_str(&served).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/v1/apps/{app}/events"]["get"].is_object());
}
