//! A data directory with no room (the database capped at its size with SQLite's
//! `max_page_count`): new work is refused with 507 naming the directory, reads still
//! answer, a result the store could not take is not acknowledged, and once there is room
//! the resent result ends its task exactly once, in the store too, and new work is taken
//! again without a restart.

use super::test_support::{self, success};
use super::{database_path, Manager, Principal};
use crate::db::StoreError;
use crate::service::ServiceError;
use hetpilot_protocol::protocol::{Assignment, PullRequest, ReportRequest};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId};
use std::sync::Arc;

/// More pages than any test writes.
const ROOMY: u32 = 1 << 30;

fn array(name: &str, n: u64) -> AppSpec {
    serde_json::from_value(serde_json::json!({
        "name": name, "command": "true", "tasks": {"array": {"start": 0, "end": n - 1}}
    }))
    .unwrap()
}

/// A manager whose agent holds the 2 tasks of one application.
struct Site {
    dir: tempfile::TempDir,
    m: Arc<Manager>,
    admin: Principal,
    agent: Principal,
    id: AgentId,
    app: AppId,
    leased: Vec<Assignment>,
}

async fn site() -> Site {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let app = m.submit(&admin, array("held", 2)).await.unwrap().app;
    let registration = test_support::registration(&m, &admin).await;
    let (agent, id) = test_support::local_agent(&m, &registration, "node1").await;
    let pull = PullRequest {
        max: 2,
        wait_ms: 0,
        started: vec![],
    };
    let leased = m.pull(&agent, id, pull).await.unwrap().tasks;
    assert_eq!(leased.len(), 2);
    Site {
        dir,
        m,
        admin,
        agent,
        id,
        app,
        leased,
    }
}

/// A report of the first leased task's success, with an output tail that needs new pages.
fn big_report(site: &Site) -> ReportRequest {
    let mut result = success(site.leased[0].task, site.leased[0].attempt);
    result.output_tail = "x".repeat(60_000);
    ReportRequest {
        results: vec![result],
        wanted: None,
    }
}

#[tokio::test]
async fn a_full_data_directory_refuses_new_work_with_507_naming_it_and_resumes_by_itself() {
    let s = site().await;
    s.m.writer.limit_pages(1);
    // A full store is the error the API answers with 507 (`server::error`, and the e2e
    // test `disk_full.rs`).
    let refused = s.m.submit(&s.admin, array("more", 500)).await.unwrap_err();
    assert!(
        matches!(refused, ServiceError::Store(StoreError::Full { .. })),
        "{refused}"
    );
    let message = refused.to_string();
    let dir = s.dir.path().display().to_string();
    assert!(message.contains(&dir), "{message}");
    assert!(message.contains("free some space"), "{message}");
    assert!(s.m.data_dir_full());
    let report =
        s.m.record(&s.agent, s.id, big_report(&s))
            .await
            .unwrap_err();
    assert!(
        matches!(report, ServiceError::Store(StoreError::Full { .. })),
        "{report}"
    );
    // Reads still answer.
    assert_eq!(s.m.app(&s.admin, s.app).unwrap().counts.done, 1);
    assert_eq!(s.m.list_apps(&s.admin).unwrap().len(), 1);
    s.m.writer.limit_pages(ROOMY);
    s.m.record(&s.agent, s.id, big_report(&s)).await.unwrap();
    let again = s.m.submit(&s.admin, array("more", 500)).await.unwrap();
    assert_eq!(again.tasks, 500);
    assert!(!s.m.data_dir_full());
}

#[tokio::test]
async fn a_result_refused_for_want_of_room_ends_its_task_once_in_the_store_when_resent() {
    let s = site().await;
    s.m.writer.limit_pages(1);
    assert!(s.m.record(&s.agent, s.id, big_report(&s)).await.is_err());
    s.m.writer.limit_pages(ROOMY);
    s.m.record(&s.agent, s.id, big_report(&s)).await.unwrap();
    let Site { dir, m, app, .. } = s;
    drop(m);
    // What a restart reads back: the task done once, its one run a success.
    let db = rusqlite::Connection::open(database_path(dir.path())).unwrap();
    let task = |sql: &str| -> i64 { db.query_row(sql, [app.0 as i64], |r| r.get(0)).unwrap() };
    assert_eq!(
        task("SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND idx = 0 AND outcome = 'success'"),
        1
    );
    drop(db);
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let summary = m.app(&admin, app).unwrap();
    assert_eq!(
        (
            summary.counts.done,
            summary.counts.leased + summary.counts.running
        ),
        (1, 1)
    );
}
