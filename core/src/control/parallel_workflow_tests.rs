//! A workflow's parallel task (`nodes` / `procs` on one `[[task]]`) through the whole
//! control plane, like a parallel application's run: the round's allocator chooses its
//! platform, its reservation is made there, and pilot demand asks for its whole width,
//! before the first provisioning round too.

use super::*;
use crate::control::resource_fit::NodeResources;
use crate::test_apps::{agent_join, array_app, control_settings, control_with, workflow_app};
use hetpilot_protocol::dag::DagTask;

pub(super) fn spec(
    name: &str,
    dag: Option<Vec<DagTask>>,
    nodes: Option<u64>,
    procs: Option<u64>,
) -> AppSpec {
    let app = match dag {
        Some(tasks) => workflow_app(name, name, tasks),
        None => array_app(name, 1),
    };
    AppSpec {
        max_attempts: 1,
        nodes,
        procs,
        ..app
    }
}

fn task(parents: Vec<u32>, nodes: Option<u64>, procs: Option<u64>) -> DagTask {
    DagTask {
        parents,
        runtime_secs: Some(10.0),
        nodes,
        procs,
        ..DagTask::default()
    }
}

/// A workflow whose first task is parallel: `sim` (as given) → `post`.
fn workflow(nodes: Option<u64>, procs: Option<u64>) -> AppSpec {
    let tasks = vec![task(vec![], nodes, procs), task(vec![0], None, None)];
    spec("wf", Some(tasks), None, None)
}

pub(super) fn control(apps: Vec<AppSpec>) -> Control {
    control_with(&control_settings(), apps)
}

pub(super) fn join(c: &mut Control, id: u64, platform: &str, slots: u32) {
    let join = AgentJoin {
        hostname: format!("n{id}"),
        ..agent_join(AgentId(id), platform, slots)
    };
    c.agent_joined(join, 0);
}

pub(super) fn round(c: &mut Control, now_ms: u64) {
    let job = c.begin_round(&HashSet::new(), now_ms).unwrap();
    let warnings = c.finish_round(job.run());
    assert!(warnings.round.is_none(), "{:?}", warnings.round);
    assert!(warnings.demand.is_none(), "{:?}", warnings.demand);
}

/// The lab's two Slurm platforms: `debug`, one 8-core node; `small`, two 2-core nodes.
fn lab_profiles(c: &mut Control) {
    let node = |nodes, cores| Capacity {
        nodes,
        cores_per_node: cores,
        resources: NodeResources::default(),
    };
    c.use_profiles(
        BTreeMap::from([
            ("debug".to_string(), StagingProfile::default()),
            ("small".to_string(), StagingProfile::default()),
        ]),
        BTreeMap::from([
            ("debug".to_string(), node(1, 8)),
            ("small".to_string(), node(2, 2)),
        ]),
    );
}

/// The applications and task indices of a lease, with the hosts of each run.
fn lease(c: &mut Control, agent: u64, now_ms: u64) -> Vec<(u64, u64, Vec<String>)> {
    let batch = c.lease(AgentId(agent), 4, now_ms).unwrap();
    batch
        .tasks
        .iter()
        .map(|t| {
            let hosts = t.hosts.iter().map(|h| h.host.clone()).collect();
            (t.task.app.0, t.task.index, hosts)
        })
        .collect()
}

#[test]
fn the_allocator_places_a_workflows_parallel_task_and_its_reservation_follows() {
    // `big` has two 4-slot agents, `small` one. The workflow's ready `procs = 4` task fits
    // either, but the look-ahead sees the parallel application's run of 8 behind it,
    // which only `big` can hold.
    let mut c = control(vec![
        workflow(None, Some(4)),
        spec("wide", None, None, Some(8)),
    ]);
    join(&mut c, 10, "big", 4);
    join(&mut c, 11, "big", 4);
    join(&mut c, 20, "small", 4);
    round(&mut c, 1_000);
    let placed = |app: u64| {
        c.schedule_view()
            .apps
            .iter()
            .find(|a| a.app == AppId(app))
            .and_then(|a| a.placed_on.clone())
    };
    assert_eq!(placed(1).as_deref(), Some("small"), "the workflow's run");
    assert_eq!(placed(2).as_deref(), Some("big"), "the run of 8");
    // A `big` agent asks first: it heads the run of 8, not the workflow's task.
    assert_eq!(
        lease(&mut c, 10, 1_001),
        [(2, 0, vec!["n10".to_string(), "n11".to_string()])]
    );
    assert_eq!(lease(&mut c, 20, 1_002), [(1, 0, vec!["n20".to_string()])]);
}

#[test]
fn a_workflows_parallel_task_asks_for_a_pilot_of_its_width() {
    // `sim` takes two whole nodes, which only `small`'s pilot has; `prep` is an ordinary
    // task ready beside it.
    let tasks = vec![
        task(vec![], Some(2), None),
        task(vec![], None, None),
        task(vec![0, 1], None, None),
    ];
    let mut c = control(vec![spec("wf", Some(tasks), None, None)]);
    lab_profiles(&mut c);
    round(&mut c, 1_000);
    let on = |p: &str| c.demand_by_user(p).values().sum::<u64>();
    let (small, debug) = (on("small"), on("debug"));
    assert!(
        (4..=5).contains(&small),
        "small: 4 cores (2 nodes) for `sim`, at most 1 for `prep`: {small}"
    );
    assert!(debug <= 1, "debug: at most `prep`'s core: {debug}");
    assert!(
        small + debug >= 5,
        "`prep` asks somewhere: {small} + {debug}"
    );
}

#[test]
fn before_any_provisioning_round_a_parallel_run_asks_for_the_whole_nodes_it_takes() {
    // A parallel application of two whole nodes and a workflow's `procs = 3` task.
    let mut c = control(vec![
        spec("mpi", None, Some(2), None),
        workflow(None, Some(3)),
    ]);
    lab_profiles(&mut c);
    let user = |u: u64, cores: u64| (format!("user{u}"), cores);
    // `small`: both runs take its two 2-core nodes.
    assert_eq!(
        c.demand_by_user("small"),
        BTreeMap::from([user(0, 4), user(1, 4)])
    );
    // `debug`: one node cannot hold two; 3 procs take its 8-core node.
    assert_eq!(c.demand_by_user("debug"), BTreeMap::from([user(1, 8)]));
}
