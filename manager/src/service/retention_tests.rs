//! Forgetting ended applications through the service, with the clock given to the sweep:
//! who may forget what, the `[retention]` sweep, and what a restart finds afterwards (no
//! forgotten rows, no reused ids, the owner's usage intact); results still coming for a
//! forgotten application are refused without harm.

use super::*;
use crate::config::ManagerConfig;
use crate::service::Principal;
use hetpilot_protocol::protocol::{
    ForgetSummary, PullRequest, PurgeRequest, ReportRequest, TaskResult,
};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::AppId;
use test_support::success;

const DAY_MS: u64 = 86_400_000;

struct Site {
    settings: ManagerConfig,
    m: Arc<Manager>,
    admin: Principal,
}

fn open(dir: &tempfile::TempDir) -> Site {
    let (settings, m, admin) = test_support::open(dir.path(), &[]);
    Site { settings, m, admin }
}

async fn user(site: &Site, name: &str) -> Principal {
    test_support::user(&site.m, &site.admin, name).await
}

async fn agent(site: &Site) -> (Principal, AgentId) {
    let registration = test_support::registration(&site.m, &site.admin).await;
    test_support::local_agent(&site.m, &registration, "node1").await
}

fn array(name: &str, n: u64) -> AppSpec {
    serde_json::from_value(serde_json::json!({
        "name": name, "command": "true", "tasks": {"array": {"start": 0, "end": n - 1}}
    }))
    .unwrap()
}

fn rows(dir: &tempfile::TempDir, table: &str, app: AppId) -> i64 {
    let db = rusqlite::Connection::open(database_path(dir.path())).unwrap();
    let key = if table == "apps" { "id" } else { "app_id" };
    db.query_row(
        &format!("SELECT COUNT(*) FROM {table} WHERE {key} = ?1"),
        [app.0 as i64],
        |r| r.get(0),
    )
    .unwrap()
}

fn usage_of(site: &Site, name: &str) -> f64 {
    site.m
        .usage(&site.admin)
        .unwrap()
        .into_iter()
        .find(|u| u.user == name)
        .map_or(0.0, |u| u.usage)
}

#[tokio::test]
async fn the_sweep_forgets_what_ended_past_the_retention_and_a_restart_does_not_bring_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let site = open(&dir);
    let alice = user(&site, "alice").await;
    let kept = site.m.submit(&alice, array("kept", 2)).await.unwrap().app;
    let old = site.m.submit(&alice, array("old", 3)).await.unwrap().app;
    let (agent, id) = agent(&site).await;
    let pulled = site
        .m
        .pull(
            &agent,
            id,
            PullRequest {
                max: 1,
                wait_ms: 0,
                started: vec![],
            },
        )
        .await
        .unwrap();
    let task = pulled.tasks[0].task;
    assert_eq!(task.app, kept, "round-robin starts with the first");
    // Kept's first task ran; "old" gets a run too, then is cancelled.
    site.m
        .record(
            &agent,
            id,
            ReportRequest {
                results: vec![success(task, 1)],
                wanted: None,
            },
        )
        .await
        .unwrap();
    let pulled = site
        .m
        .pull(
            &agent,
            id,
            PullRequest {
                max: 2,
                wait_ms: 0,
                started: vec![],
            },
        )
        .await
        .unwrap();
    let of_old = pulled
        .tasks
        .iter()
        .find(|t| t.task.app == old)
        .expect("a task of the second application")
        .task;
    site.m
        .record(
            &agent,
            id,
            ReportRequest {
                results: vec![success(of_old, 1)],
                wanted: None,
            },
        )
        .await
        .unwrap();
    let ended = site.m.cancel(&alice, old).await.unwrap();
    let ended_at = ended
        .ended_at_ms
        .expect("a cancelled application has ended");
    let used = usage_of(&site, "alice");
    assert!(used > 0.0);
    assert_eq!(rows(&dir, "attempts", old), 1);

    let age = site.settings.retention.ended_app_age_ms();
    assert_eq!(age, 30 * DAY_MS, "the default retention");
    assert_eq!(
        site.m.sweep_retention(ended_at + age - 1).await.unwrap(),
        ForgetSummary::default(),
        "not old enough yet"
    );
    assert_eq!(
        site.m.sweep_retention(ended_at + age).await.unwrap(),
        ForgetSummary { apps: 1, tasks: 3 }
    );
    let listed: Vec<AppId> = site
        .m
        .list_apps(&alice)
        .unwrap()
        .iter()
        .map(|a| a.app)
        .collect();
    assert_eq!(listed, [kept], "the live application stays");
    for table in ["apps", "tasks", "attempts", "attempt_staging"] {
        assert_eq!(rows(&dir, table, old), 0, "{table}");
    }
    assert_eq!(usage_of(&site, "alice"), used, "alice's usage stays");

    let Site { settings, m, .. } = site;
    drop(m);
    let site = Site {
        m: Manager::open(settings.clone()).unwrap(),
        settings,
        admin: site.admin,
    };
    let listed: Vec<AppId> = site
        .m
        .list_apps(&site.admin)
        .unwrap()
        .iter()
        .map(|a| a.app)
        .collect();
    assert_eq!(listed, [kept], "nothing forgotten comes back");
    let carried = usage_of(&site, "alice");
    assert!(
        (carried - used).abs() <= 1e-9 * used,
        "the usage of forgotten runs survives a restart: {carried} vs {used}"
    );
    let again = site
        .m
        .submit(&site.admin, array("new", 1))
        .await
        .unwrap()
        .app;
    assert!(again > old, "a forgotten id is never given again: {again}");
}

#[tokio::test]
async fn only_an_ended_application_of_ones_own_is_forgotten_and_its_late_results_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let site = open(&dir);
    let m = &site.m;
    let alice = user(&site, "alice").await;
    let bob = user(&site, "bob").await;
    let app = m.submit(&alice, array("a", 2)).await.unwrap().app;
    let other = m.submit(&bob, array("b", 1)).await.unwrap().app;
    let (agent, id) = agent(&site).await;
    let pulled = m
        .pull(
            &agent,
            id,
            PullRequest {
                max: 4,
                wait_ms: 0,
                started: vec![],
            },
        )
        .await
        .unwrap();
    assert_eq!(pulled.tasks.len(), 3);

    let refused = m.forget_app(&alice, app).await.unwrap_err();
    assert!(
        matches!(&refused, ServiceError::Conflict(e) if e.contains("cancel it first")),
        "{refused:?}"
    );
    m.cancel(&alice, app).await.unwrap();
    for (who, what) in [(&bob, app), (&alice, AppId(999)), (&alice, AppId(u64::MAX))] {
        let e = m.forget_app(who, what).await.unwrap_err();
        assert!(
            matches!(&e, ServiceError::NotFound(s) if s.contains("no application")),
            "{e:?}"
        );
    }
    let e = m.forget_app(&agent, app).await.unwrap_err();
    assert!(matches!(e, ServiceError::Forbidden(_)), "{e:?}");
    assert_eq!(
        m.forget_app(&alice, app).await.unwrap(),
        ForgetSummary { apps: 1, tasks: 2 }
    );
    let again = m.forget_app(&site.admin, app).await.unwrap_err();
    assert!(matches!(again, ServiceError::NotFound(_)), "{again:?}");

    // The agent still runs the cancelled tasks: their results are refused, bob's is not.
    let results: Vec<TaskResult> = pulled
        .tasks
        .iter()
        .map(|t| success(t.task, t.attempt))
        .collect();
    let e = m
        .record(
            &agent,
            id,
            ReportRequest {
                results,
                wanted: None,
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ServiceError::NotFound(_)), "{e:?}");
    let bobs = pulled.tasks.iter().find(|t| t.task.app == other).unwrap();
    let recorded = m
        .record(
            &agent,
            id,
            ReportRequest {
                results: vec![success(bobs.task, bobs.attempt)],
                wanted: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(recorded.recorded, 1);

    // Purge: admins only, with an age in range.
    let e = m
        .purge(&bob, PurgeRequest { older_than_secs: 0 })
        .await
        .unwrap_err();
    assert!(matches!(e, ServiceError::Forbidden(_)), "{e:?}");
    let e = m
        .purge(
            &site.admin,
            PurgeRequest {
                older_than_secs: u64::MAX,
            },
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("older_than_secs"), "{e}");
    assert_eq!(
        m.purge(
            &site.admin,
            PurgeRequest {
                older_than_secs: 3600
            }
        )
        .await
        .unwrap(),
        ForgetSummary::default(),
        "bob's application ended just now"
    );
    assert_eq!(
        m.purge(&site.admin, PurgeRequest { older_than_secs: 0 })
            .await
            .unwrap(),
        ForgetSummary { apps: 1, tasks: 1 }
    );
    assert!(m.list_apps(&site.admin).unwrap().is_empty());
}

#[tokio::test]
async fn what_retention_stores_cannot_stop_a_start_however_it_was_tampered_with() {
    let dir = tempfile::tempdir().unwrap();
    let site = open(&dir);
    let ended = site
        .m
        .submit(&site.admin, array("ended", 2))
        .await
        .unwrap()
        .app;
    site.m.cancel(&site.admin, ended).await.unwrap();
    let Site { settings, m, admin } = site;
    drop(m);
    {
        let db = rusqlite::Connection::open(database_path(dir.path())).unwrap();
        db.execute_batch(
            "UPDATE apps SET ended_ms = -5;
             INSERT INTO usage_carried (user, raw, decayed, at) VALUES ('text', 'abc', 1, 1);
             INSERT INTO usage_carried (user, raw, decayed, at) VALUES ('negative', -1, -1, 0);
             INSERT INTO usage_carried (user, raw, decayed, at) VALUES ('fine', 7, 7, 0);
             INSERT INTO counters (name, value) VALUES ('next_app', 9223372036854775807);",
        )
        .unwrap();
    }
    let site = Site {
        m: Manager::open(settings.clone()).unwrap(),
        settings,
        admin,
    };
    let summary = site.m.app(&site.admin, ended).unwrap();
    let end = summary
        .ended_at_ms
        .expect("an unreadable end time is found again");
    assert!(end <= now_ms());
    assert_eq!(usage_of(&site, "fine"), 7.0);
    assert_eq!(usage_of(&site, "negative"), 0.0, "skipped");
    let next = site
        .m
        .submit(&site.admin, array("next", 1))
        .await
        .unwrap()
        .app;
    assert_eq!(next, AppId(ended.0 + 1), "an absurd counter is ignored");
    assert_eq!(
        site.m.sweep_retention(u64::MAX).await.unwrap(),
        ForgetSummary { apps: 1, tasks: 2 },
        "a sweep far in the future forgets every ended application"
    );
}
