//! `hetpilot files put/get/ls/rm` against a real manager, and the file service's listing
//! and removal routes: each user sees and removes only their own files, pages are bounded,
//! names that are not file names are refused naming the field.

use hetpilot_e2e::{bin, pattern, Manager};
use std::path::Path;
use std::process::{Command, Output};

/// Runs `hetpilot ARGS` against `m` with `token`, in `cwd`.
fn cli_as(m: &Manager, token: &str, cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin("hetpilot"))
        .args(args)
        .current_dir(cwd)
        .env_remove("HETPILOT_CONFIG")
        .env("HETPILOT_URL", &m.url)
        .env("HETPILOT_TOKEN", token)
        .output()
        .unwrap()
}

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn listed(m: &Manager, token: &str, cwd: &Path) -> Vec<(String, u64)> {
    let o = ok(cli_as(m, token, cwd, &["files", "ls", "--json"]));
    let files: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["size"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn files_go_up_come_back_are_listed_and_removed_each_user_seeing_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let bob = m.create_user("bob");
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    // Larger than the progress bar's threshold, so the streamed path is the one used.
    let big = pattern(9 << 20, 7);
    std::fs::write(w.join("big.bin"), &big).unwrap();
    std::fs::write(w.join("notes.txt"), "hello\n").unwrap();

    ok(cli_as(
        &m,
        &alice,
        w,
        &["files", "put", "big.bin", "data/big.bin"],
    ));
    ok(cli_as(&m, &alice, w, &["files", "put", "notes.txt"]));
    assert_eq!(
        listed(&m, &alice, w),
        [
            ("data/big.bin".to_string(), big.len() as u64),
            ("notes.txt".to_string(), 6)
        ]
    );
    let table = ok(cli_as(&m, &alice, w, &["files", "ls", "data/"]));
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("data/big.bin") && !table.contains("notes.txt"),
        "{table}"
    );
    assert!(listed(&m, &bob, w).is_empty(), "bob sees alice's files");

    let back = tempfile::tempdir().unwrap();
    ok(cli_as(
        &m,
        &alice,
        back.path(),
        &["files", "get", "data/big.bin"],
    ));
    assert!(std::fs::read(back.path().join("big.bin")).unwrap() == big);
    let again = cli_as(&m, &alice, back.path(), &["files", "get", "data/big.bin"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    ok(cli_as(
        &m,
        &alice,
        back.path(),
        &["files", "get", "data/big.bin", "--force"],
    ));
    let o = ok(cli_as(&m, &alice, w, &["files", "get", "notes.txt", "-"]));
    assert_eq!(o.stdout, b"hello\n");

    let o = cli_as(
        &m,
        &bob,
        back.path(),
        &["files", "get", "notes.txt", "stolen"],
    );
    assert!(!o.status.success() && !back.path().join("stolen").exists());
    let o = cli_as(&m, &bob, w, &["files", "rm", "notes.txt"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no file"),
        "{o:?}"
    );

    ok(cli_as(&m, &alice, w, &["files", "rm", "data/big.bin"]));
    assert_eq!(listed(&m, &alice, w), [("notes.txt".to_string(), 6)]);
    let o = cli_as(&m, &alice, w, &["files", "rm", "data/big.bin"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no file"),
        "{o:?}"
    );
}

#[test]
fn the_listing_route_pages_bounded_and_refuses_hostile_names() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let work = tempfile::tempdir().unwrap();
    for i in 0..3 {
        let f = work.path().join(format!("f{i}"));
        std::fs::write(&f, [i as u8]).unwrap();
        ok(cli_as(
            &m,
            &alice,
            work.path(),
            &["files", "put", f.to_str().unwrap()],
        ));
    }
    let http = m.http();
    let (s, page) = http.get("/v1/files?limit=2", &alice);
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["files"].as_array().unwrap().len(), 2);
    assert_eq!(page["next"], "f1");
    let (s, page) = http.get("/v1/files?limit=2&after=f1", &alice);
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["files"][0]["name"], "f2");
    assert!(page.get("next").is_none(), "{page}");
    // The CLI walks every page.
    assert_eq!(listed(&m, &alice, work.path()).len(), 3);

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("prefix=../other", "prefix"),
        ("prefix=/etc", "prefix"),
        ("after=a%00b", "after"),
        ("limit=-1", "limit"),
    ] {
        let (s, body) = http.get(&format!("/v1/files?{query}"), &alice);
        assert_eq!(s, 400, "{query}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(field),
            "{query}: {body}"
        );
    }
    let long = "a".repeat(5000);
    let (s, _) = http.get(&format!("/v1/files?prefix={long}"), &alice);
    assert_eq!(s, 400);
    let (s, _) = http.get("/v1/files", "");
    assert_eq!(s, 401);
    let agent_token = m.agent_token("local");
    let (s, _) = http.get("/v1/files", &agent_token);
    assert!(s == 401 || s == 403, "{s}");
}
