//! Parallel tasks (`nodes` / `procs`) leased to groups of agents: all at once or not at
//! all, the members' slots held while the head runs, released when it reports, and the
//! task retried whole when a member is lost.

use super::*;
use crate::test_apps::{alice_entry, array_app, success};
use hetpilot_protocol::parallel::HostSlots;
use hetpilot_protocol::protocol::{Assignment, TaskAttempt, TaskState};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId};

fn spec(n: u64, procs: Option<u64>, nodes: Option<u64>) -> AppSpec {
    AppSpec {
        timeout_secs: Some(10),
        nodes,
        procs,
        ..array_app("a", n)
    }
}

fn add_app(q: &mut Queues, id: u64, spec: AppSpec) {
    q.insert_app(alice_entry(AppId(id), spec));
}

fn agents(q: &mut Queues, slots: &[u32]) {
    for (i, s) in slots.iter().enumerate() {
        let id = i as u64 + 1;
        q.insert_agent(AgentEntry::new(
            AgentId(id),
            "p".into(),
            format!("n{id}"),
            *s,
            0,
        ));
    }
}

fn lease(q: &mut Queues, agent: u64, max: u32, now_ms: u64) -> Vec<Assignment> {
    q.lease(AgentId(agent), max, now_ms).unwrap().tasks
}

fn free(q: &Queues, agent: u64) -> u32 {
    q.free_slots_of(AgentId(agent)).unwrap()
}

/// Every member hold belongs to a group whose head holds its task under that attempt:
/// no agent keeps slots for a run that is not leased whole.
fn assert_no_partial_holds(q: &Queues) {
    for agent in q.agents() {
        for h in &agent.member_of {
            let group = q
                .group_lease(h.at.task)
                .expect("a member hold has its group");
            assert_eq!(group.attempt, h.at.attempt);
            let head = q.agent(group.members[0].agent).unwrap();
            assert!(
                head.held.contains_key(&h.at.task),
                "head holds {}",
                h.at.task
            );
            assert!(group.members[1..].iter().any(|m| m.agent == agent.id));
        }
    }
}

#[test]
fn a_procs_task_is_leased_to_two_agents_at_once_and_holds_both_until_it_reports() {
    let mut q = Queues::new(60_000);
    agents(&mut q, &[2, 2]);
    add_app(&mut q, 1, spec(1, Some(4), None));
    add_app(&mut q, 2, spec(10, None, None));
    let got = lease(&mut q, 1, 2, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    let a = &got[0];
    assert_eq!(a.task.app, AppId(1));
    assert_eq!(a.cores, Some(2));
    let host = |h: &str| HostSlots {
        host: h.into(),
        slots: 2,
    };
    assert_eq!(a.hosts, vec![host("n1"), host("n2")]);
    assert_eq!((free(&q, 1), free(&q, 2)), (0, 0));
    assert!(
        lease(&mut q, 2, 2, 2).is_empty(),
        "the member's slots are held"
    );
    assert_no_partial_holds(&q);
    q.apply_result(AgentId(1), success(a.task, a.attempt));
    assert!(q.group_lease(a.task).is_none());
    assert_eq!((free(&q, 1), free(&q, 2)), (2, 2));
    assert_eq!(
        lease(&mut q, 2, 2, 3).len(),
        2,
        "the freed slots take tasks"
    );
}

#[test]
fn a_lost_member_sends_the_run_back_whole_and_frees_every_slot() {
    let mut q = Queues::new(60_000);
    agents(&mut q, &[2, 2, 2]);
    add_app(&mut q, 1, spec(1, None, Some(2)));
    let got = lease(&mut q, 2, 2, 1);
    assert_eq!(got.len(), 1);
    let at = TaskAttempt {
        task: got[0].task,
        attempt: got[0].attempt,
    };
    let member = q.group_lease(at.task).unwrap().members[1].agent;
    assert_ne!(member, AgentId(2));
    q.lose_agent(member, "killed", 5);
    let slot = *q.app(AppId(1)).unwrap().task(0).unwrap();
    assert_eq!(slot.state, TaskState::Waiting);
    assert_eq!(slot.lost, 1);
    assert!(q.group_lease(at.task).is_none());
    assert_eq!(free(&q, 2), 2, "the head's slots are free");
    let (_, kill) = q.heartbeat(AgentId(2), 6).unwrap();
    assert_eq!(kill, vec![at], "the head kills its run");
    assert_no_partial_holds(&q);
    // Retried whole on the agents left.
    let again = lease(&mut q, 2, 2, 7);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempt, 2);
    assert_eq!(again[0].hosts.len(), 2);
    assert!(again[0]
        .hosts
        .iter()
        .all(|h| h.host != format!("n{}", member.0)));
}

#[test]
fn a_lost_head_frees_its_members() {
    let mut q = Queues::new(60_000);
    agents(&mut q, &[2, 2]);
    add_app(&mut q, 1, spec(1, Some(4), None));
    let got = lease(&mut q, 1, 2, 1);
    assert_eq!(got.len(), 1);
    q.lose_agent(AgentId(1), "killed", 5);
    assert_eq!(free(&q, 2), 2);
    assert_eq!(
        q.app(AppId(1)).unwrap().task(0).unwrap().state,
        TaskState::Waiting
    );
    assert_no_partial_holds(&q);
}

#[test]
fn two_wide_parallel_tasks_never_deadlock_on_partial_holds() {
    // Each needs three of the four slots of two 2-slot agents: together they cannot run,
    // and a hold of part of what each needs would block both for ever.
    let mut q = Queues::new(60_000);
    agents(&mut q, &[2, 2]);
    add_app(&mut q, 1, spec(3, Some(3), None));
    add_app(&mut q, 2, spec(3, Some(3), None));
    add_app(&mut q, 3, spec(20, None, None));
    let mut running: Vec<(u64, Assignment)> = Vec::new();
    let mut now = 1;
    for step in 0..200u64 {
        now += 100;
        let agent = step % 2 + 1;
        for a in lease(&mut q, agent, 2, now) {
            running.push((agent, a));
        }
        assert_no_partial_holds(&q);
        let used: u32 = (1..=2).map(|a| 2 - free(&q, a)).sum();
        assert!(used <= 4);
        // The oldest run ends.
        if !running.is_empty() {
            let (agent, a) = running.remove(0);
            q.apply_result(AgentId(agent), success(a.task, a.attempt));
        }
        let done = |app| q.app(AppId(app)).unwrap().counts.done;
        if done(1) == 3 && done(2) == 3 && done(3) == 20 {
            assert_eq!((free(&q, 1), free(&q, 2)), (2, 2));
            return;
        }
    }
    panic!(
        "not all done: {:?}",
        (1..=3)
            .map(|a| q.app(AppId(a)).unwrap().counts.done)
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_restored_group_holds_its_members_or_is_given_back_when_one_is_gone() {
    let build = || {
        let mut q = Queues::new(60_000);
        agents(&mut q, &[2, 2]);
        add_app(&mut q, 1, spec(1, Some(4), None));
        q
    };
    let mut q = build();
    let got = lease(&mut q, 1, 2, 1);
    let at = TaskAttempt {
        task: got[0].task,
        attempt: got[0].attempt,
    };
    let members = q.group_lease(at.task).unwrap().members.clone();
    // A fresh queue as the store restores it: the head's lease is reattached from the
    // task's row, then the group.
    let restored = |member_state: AgentState| {
        let mut r = Queues::new(60_000);
        agents(&mut r, &[2, 2]);
        r.agents.get_mut(&AgentId(2)).unwrap().state = member_state;
        let mut app = alice_entry(AppId(1), spec(1, Some(4), None));
        app.tasks[0] = TaskSlot {
            state: TaskState::Running,
            attempt: at.attempt,
            lost: 0,
            agent: Some(AgentId(1)),
            variant: None,
        };
        r.insert_app(app);
        r.reattach_leases(&Default::default());
        let changes = r.restore_groups(vec![(at, members.clone())], 10);
        (r, changes)
    };
    let (r, changes) = restored(AgentState::Active);
    assert!(changes.is_empty());
    assert_eq!((free(&r, 1), free(&r, 2)), (0, 0));
    assert_no_partial_holds(&r);
    let (mut r, changes) = restored(AgentState::Lost);
    assert!(
        changes
            .iter()
            .any(|c| matches!(c, Change::AttemptLost { at: a, .. } if *a == at)),
        "{changes:?}"
    );
    assert_eq!((free(&r, 1), free(&r, 2)), (2, 2));
    assert_no_partial_holds(&r);
    assert_eq!(r.heartbeat(AgentId(1), 11).unwrap().1, vec![at]);
}

#[test]
fn a_run_stays_within_one_batch_allocation_when_one_can_hold_it() {
    // Agents 1 and 2 belong to two different pilots' jobs, 3 and 4 to one job: the run
    // asked for by agent 1 goes to 3 and 4, which one `srun` can reach.
    let mut q = Queues::new(60_000);
    for (id, job) in [(1, "j1"), (2, "j2"), (3, "j3"), (4, "j3")] {
        let mut a = AgentEntry::new(AgentId(id), "p".into(), format!("n{id}"), 2, 0);
        a.batch_job_id = Some(job.into());
        q.insert_agent(a);
    }
    add_app(&mut q, 1, spec(1, Some(4), None));
    assert!(lease(&mut q, 1, 2, 1).is_empty(), "agent 1 is not reserved");
    let mut reserved = q.reservation(AppId(1)).unwrap().agents.clone();
    reserved.sort();
    assert_eq!(reserved, [AgentId(3), AgentId(4)]);
    let got = lease(&mut q, 4, 2, 2);
    assert_eq!(got.len(), 1);
    let hosts: Vec<&str> = got[0].hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(hosts, ["n4", "n3"], "the asking agent heads it");
    // With no allocation able to hold it alone, it spans the platform's, the agents free
    // now first.
    add_app(&mut q, 2, spec(1, Some(6), None));
    assert!(
        lease(&mut q, 1, 2, 3).is_empty(),
        "3 and 4 still run the first"
    );
    let reserved = &q.reservation(AppId(2)).unwrap().agents;
    assert_eq!(reserved.len(), 3, "{reserved:?}");
    assert!(reserved.contains(&AgentId(1)) && reserved.contains(&AgentId(2)));
    assert_no_partial_holds(&q);
}

#[test]
fn a_member_free_now_backfills_runs_that_end_before_the_whole_group_can_start() {
    // Agent 2 runs a 100 s task until 100 s: the run over both agents starts then. Agent 1,
    // free now, takes a 5 s task meanwhile, but not a 200 s one.
    let mut q = Queues::new(60_000);
    agents(&mut q, &[2, 2]);
    let mut long = spec(2, None, None);
    long.timeout_secs = Some(100);
    add_app(&mut q, 1, long);
    assert_eq!(lease(&mut q, 2, 2, 1).len(), 2);
    add_app(&mut q, 2, spec(1, Some(4), None));
    let mut short = spec(1, None, None);
    short.timeout_secs = Some(5);
    add_app(&mut q, 3, short);
    let mut longer = spec(1, None, None);
    longer.timeout_secs = Some(200);
    add_app(&mut q, 4, longer);
    let got = lease(&mut q, 1, 2, 1_000);
    let mut reserved = q.reservation(AppId(2)).unwrap().agents.clone();
    reserved.sort();
    assert_eq!(reserved, [AgentId(1), AgentId(2)]);
    let apps: Vec<AppId> = got.iter().map(|a| a.task.app).collect();
    assert_eq!(apps, [AppId(3)], "only the short run backfills");
    assert_no_partial_holds(&q);
}

#[test]
fn a_run_tlpa_placed_on_a_platform_is_reserved_there() {
    // Platform "near" holds the asking agent 1 and agent 2; "far" holds 3 and 4, all idle.
    // Left to itself the run goes to the asking agent's platform at once; placed on "far"
    // by the last round, it is reserved there.
    let queues = || {
        let mut q = Queues::new(60_000);
        for (id, platform) in [(1, "near"), (2, "near"), (3, "far"), (4, "far")] {
            q.insert_agent(AgentEntry::new(
                AgentId(id),
                platform.into(),
                format!("n{id}"),
                2,
                0,
            ));
        }
        add_app(&mut q, 1, spec(2, Some(4), None));
        q
    };
    let mut q = queues();
    assert_eq!(
        lease(&mut q, 1, 2, 1).len(),
        1,
        "near holds it, the asker heads"
    );
    let mut q = queues();
    let mut plan = LeasePlan::default();
    plan.parallel.insert(AppId(1), "far".into());
    q.set_plan(plan);
    assert!(lease(&mut q, 1, 2, 1).is_empty(), "not on near");
    let mut reserved = q.reservation(AppId(1)).unwrap().agents.clone();
    reserved.sort();
    assert_eq!(reserved, [AgentId(3), AgentId(4)], "TLPA's platform");
    assert_eq!(lease(&mut q, 3, 2, 2).len(), 1, "leased on far");
    assert_no_partial_holds(&q);
}

#[test]
fn a_reservation_moves_when_a_round_places_the_run_where_it_starts_now() {
    // "debug": agent 1, 8 slots; "small": agents 2 and 3, 2 slots each.
    let mut q = Queues::new(60_000);
    for (id, platform, slots) in [(1, "debug", 8), (2, "small", 2), (3, "small", 2)] {
        q.insert_agent(AgentEntry::new(
            AgentId(id),
            platform.into(),
            format!("n{id}"),
            slots,
            0,
        ));
    }
    // A 7-proc run (10 s) fills debug; 1-core tasks (100 s) fill small.
    add_app(&mut q, 1, spec(1, Some(7), None));
    assert_eq!(lease(&mut q, 1, 8, 1).len(), 1, "the 7-proc run on debug");
    let mut long = spec(4, None, None);
    long.timeout_secs = Some(100);
    add_app(&mut q, 2, long);
    let small: Vec<(u64, Assignment)> = [2, 3]
        .into_iter()
        .flat_map(|a| lease(&mut q, a, 2, 2).into_iter().map(move |t| (a, t)))
        .collect();
    assert_eq!(small.len(), 4, "small is full");
    // A 2-proc run fits nowhere now: debug frees first, so it is reserved there.
    add_app(&mut q, 3, spec(1, Some(2), None));
    assert!(lease(&mut q, 1, 1, 3).is_empty());
    assert_eq!(q.reservation(AppId(3)).unwrap().agents, [AgentId(1)]);
    // Small frees early, and the next round places the run there.
    for (agent, a) in &small {
        q.apply_result(AgentId(*agent), success(a.task, a.attempt));
    }
    let mut plan = LeasePlan::default();
    plan.parallel.insert(AppId(3), "small".into());
    let wake = q.set_plan(plan);
    assert_eq!(
        q.hold(AgentId(1)),
        None,
        "debug no longer keeps slots for a run placed on small"
    );
    assert!(wake, "idle agents on small must be woken to start it");
    let got = lease(&mut q, 2, 2, 4);
    assert_eq!(got.len(), 1, "it starts on small now: {got:?}");
    assert_eq!(got[0].task.app, AppId(3));
    assert_no_partial_holds(&q);
}
