//! Live TLPA: which platform the next task of each multi-core application goes to,
//! chosen by a pure [`Allocator`] of `simulate alloc` (by default TLPA,
//! the TLPA paper's TLPA_BJS, Fig. 1; best fit and fastest first as `[scheduler]
//! allocator` selects) with the live queue as its look-ahead. No I/O: nodes, runtimes and the clock come in as data.
//!
//! The paper's clusters are single sites a rigid job runs within; here that is a node (an
//! agent): cluster = agent, with procs = its slots and speed = its platform's relative
//! speed from the online profile. What an agent holds occupies its slots until now + the
//! task's expected runtime there (held tasks beyond its slots, i.e. prefetched ones, are
//! not modelled). A task's estimate is its application's work at reference speed. The
//! waiting multi-core tasks, applications in submission order (FCFS), are the look-ahead
//! α_1..α_d. Each application's head task is placed in turn and occupies its node, so the
//! next application sees it.
//!
//! A parallel application's run (`nodes`/`procs`) spans agents of one platform, which is
//! the paper's model proper: there a cluster is a platform, with procs = its agents'
//! slots (`procs`) or its agents (`nodes`, whole agents), and the run is the rigid job
//! ([`place_runs`]).

use crate::alloc::{Allocator, AllocatorInput, Cluster, ClusterLoad, Job};
use hetpilot_protocol::parallel::ParallelSize;
use hetpilot_protocol::AppId;

/// An agent as a cluster of the TLPA model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// Index of its platform in the caller's platform list.
    pub(crate) platform: usize,
    pub(crate) slots: u32,
    /// What it holds: (slots taken, expected runtime there in seconds).
    pub(crate) busy: Vec<(u32, f64)>,
}

/// A multi-core application with waiting tasks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParallelApp {
    pub(crate) app: AppId,
    pub(crate) cores: u32,
    pub(crate) waiting: u64,
    pub(crate) submitted_s: f64,
    /// Expected runtime of one task at reference speed 1, seconds.
    pub(crate) work_s: f64,
}

/// A parallel application with waiting runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GroupApp {
    pub(crate) app: AppId,
    pub(crate) size: ParallelSize,
    pub(crate) waiting: u64,
    pub(crate) submitted_s: f64,
    /// Expected runtime of one run at reference speed 1, seconds.
    pub(crate) work_s: f64,
}

/// The platform chosen for each parallel application of `apps` (FCFS order) whose next
/// run can start now on some platform: TLPA over the platforms as clusters, `nodes` (agents
/// of `speeds.len()` platforms, as in [`place`]) pooled per platform. Runs of whole agents
/// and runs of slots are placed apart, each in its own unit (agents, slots).
pub(crate) fn place_runs(
    nodes: &[Node],
    speeds: &[f64],
    apps: &[GroupApp],
    allocator: &mut dyn Allocator,
    now_s: f64,
) -> Vec<(AppId, usize)> {
    let platforms = speeds.len();
    let pooled = |whole_agents: bool| -> Vec<Node> {
        (0..platforms)
            .map(|p| {
                let mine = nodes.iter().filter(|n| n.platform == p);
                let (slots, busy) = if whole_agents {
                    // An agent running anything is a busy node until its longest run ends.
                    let agents = mine.clone().count() as u32;
                    let busy = mine
                        .filter(|n| !n.busy.is_empty())
                        .map(|n| (1, n.busy.iter().map(|b| b.1).fold(0.0, f64::max)))
                        .collect();
                    (agents, busy)
                } else {
                    let slots = mine.clone().map(|n| n.slots).sum();
                    (slots, mine.flat_map(|n| n.busy.iter().copied()).collect())
                };
                Node {
                    platform: p,
                    slots,
                    busy,
                }
            })
            .collect()
    };
    let mut chosen = Vec::new();
    for whole_agents in [true, false] {
        let jobs: Vec<ParallelApp> = apps
            .iter()
            .filter_map(|a| {
                let procs = match a.size {
                    ParallelSize::Nodes(n) if whole_agents => n,
                    ParallelSize::Procs(p) if !whole_agents => p,
                    ParallelSize::NodesOf { nodes, per_node } if !whole_agents => {
                        nodes.saturating_mul(per_node)
                    }
                    _ => return None,
                };
                Some(ParallelApp {
                    app: a.app,
                    cores: procs,
                    waiting: a.waiting,
                    submitted_s: a.submitted_s,
                    work_s: a.work_s,
                })
            })
            .collect();
        if !jobs.is_empty() {
            chosen.extend(place(
                &pooled(whole_agents),
                speeds,
                &jobs,
                allocator,
                now_s,
            ));
        }
    }
    chosen
}

/// The platform chosen for each application of `apps` (given in FCFS order) whose task can
/// start now on some node; `speeds[p]` is platform p's relative speed. The allocator sees
/// as many waiting tasks behind each as its look-ahead asks for.
pub(crate) fn place(
    nodes: &[Node],
    speeds: &[f64],
    apps: &[ParallelApp],
    allocator: &mut dyn Allocator,
    now_s: f64,
) -> Vec<(AppId, usize)> {
    let depth = allocator.lookahead();
    let clusters: Vec<Cluster> = nodes
        .iter()
        .map(|n| Cluster {
            procs: n.slots.max(1),
            speed: speeds[n.platform],
        })
        .collect();
    let mut loads: Vec<ClusterLoad> = nodes
        .iter()
        .zip(&clusters)
        .map(|(n, c)| {
            let mut load = ClusterLoad::idle(c.procs);
            for (k, &(slots, runtime)) in n.busy.iter().enumerate() {
                if slots <= load.free {
                    load.occupy(slots, now_s + runtime.max(0.0), k);
                }
            }
            load
        })
        .collect();
    // The live queue: every waiting multi-core task, up to what the look-ahead can see.
    let mut queue: Vec<Job> = Vec::new();
    for (i, a) in apps.iter().enumerate() {
        let take = a.waiting.min((depth as u64).saturating_add(1));
        queue.extend((0..take).map(|_| Job {
            id: i as i64,
            submit: a.submitted_s,
            procs: a.cores,
            runtime: a.work_s,
            estimate: a.work_s,
        }));
    }
    let mut chosen = Vec::new();
    let mut head = 0;
    for (i, a) in apps.iter().enumerate() {
        let Some(offset) = queue[head..].iter().position(|j| j.id == i as i64) else {
            continue;
        };
        head += offset;
        let job = queue[head];
        let allocable: Vec<usize> = (0..clusters.len())
            .filter(|&c| loads[c].free >= job.procs)
            .collect();
        if !allocable.is_empty() {
            let waiting_end = (head + 1).saturating_add(depth).min(queue.len());
            let c = allocator.choose(&AllocatorInput {
                now: now_s,
                job: &job,
                clusters: &clusters,
                loads: &loads,
                allocable: &allocable,
                waiting: &queue[head + 1..waiting_end],
            });
            loads[c].occupy(job.procs, now_s + job.estimate_on(&clusters[c]), usize::MAX);
            chosen.push((a.app, nodes[c].platform));
        }
        head += 1;
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::Tlpa;

    fn app(id: u64, cores: u32, waiting: u64, work_s: f64) -> ParallelApp {
        ParallelApp {
            app: AppId(id),
            cores,
            waiting,
            submitted_s: 0.0,
            work_s,
        }
    }

    #[test]
    fn the_look_ahead_keeps_the_big_node_for_the_job_only_it_can_hold() {
        // Platform 0: a 4-slot node at speed 1; platform 1: an 8-slot node at speed 1.25.
        let nodes = [
            Node {
                platform: 0,
                slots: 4,
                busy: Vec::new(),
            },
            Node {
                platform: 1,
                slots: 8,
                busy: Vec::new(),
            },
        ];
        let speeds = [1.0, 1.25];
        // A short 4-core task, then an 8-core one that fits the big node only.
        let apps = [app(1, 4, 1, 10.0), app(2, 8, 1, 1000.0)];
        // Greedy (depth 0) takes the faster node for the short task ...
        assert_eq!(
            place(&nodes, &speeds, &apps[..1], &mut Tlpa::new(0), 0.0),
            vec![(AppId(1), 1)]
        );
        // ... the look-ahead sees the 8-core task behind it and leaves the big node free.
        assert_eq!(
            place(&nodes, &speeds, &apps, &mut Tlpa::new(1), 0.0),
            vec![(AppId(1), 0), (AppId(2), 1)]
        );
        // A look-ahead deeper than any queue sees it all, without overflowing.
        assert_eq!(
            place(&nodes, &speeds, &apps, &mut Tlpa::new(usize::MAX), 0.0),
            vec![(AppId(1), 0), (AppId(2), 1)]
        );
    }

    #[test]
    fn the_configured_allocator_decides_the_placement() {
        // A 4-core task on idle nodes of 8 slots (speed 1.25) and 4 slots (speed 1):
        // fastest first and greedy TLPA take the fast node, best fit the one it fills.
        let nodes = [
            Node {
                platform: 0,
                slots: 8,
                busy: Vec::new(),
            },
            Node {
                platform: 1,
                slots: 4,
                busy: Vec::new(),
            },
        ];
        let speeds = [1.25, 1.0];
        let apps = [app(1, 4, 1, 10.0)];
        let chosen = |name: &str| {
            let kind: crate::alloc::AllocatorKind = name.parse().unwrap();
            let mut allocator = kind.build(0).unwrap();
            place(&nodes, &speeds, &apps, allocator.as_mut(), 0.0)
        };
        assert_eq!(chosen("ff"), [(AppId(1), 0)]);
        assert_eq!(chosen("tlpa"), [(AppId(1), 0)]);
        assert_eq!(chosen("bf"), [(AppId(1), 1)]);
    }

    #[test]
    fn nodes_without_enough_free_slots_are_not_allocable() {
        let nodes = [
            Node {
                platform: 0,
                slots: 4,
                busy: vec![(1, 30.0), (1, 30.0)],
            },
            Node {
                platform: 1,
                slots: 2,
                busy: Vec::new(),
            },
        ];
        let speeds = [1.0, 1.0];
        // 3 cores: only node 0 could, and it has 2 free: no placement now.
        assert!(place(
            &nodes,
            &speeds,
            &[app(1, 3, 5, 1.0)],
            &mut Tlpa::new(4),
            0.0
        )
        .is_empty());
        assert_eq!(
            place(
                &nodes,
                &speeds,
                &[app(1, 2, 5, 1.0)],
                &mut Tlpa::new(4),
                0.0
            )
            .len(),
            1
        );
    }

    fn run(id: u64, size: ParallelSize, work_s: f64) -> GroupApp {
        GroupApp {
            app: AppId(id),
            size,
            waiting: 1,
            submitted_s: id as f64,
            work_s,
        }
    }

    /// Agents of 4 slots: `per_platform[p]` of them on platform p, busy as given.
    fn agents(per_platform: &[(usize, Vec<(u32, f64)>)]) -> Vec<Node> {
        per_platform
            .iter()
            .enumerate()
            .flat_map(|(p, (n, busy))| {
                (0..*n).map(move |k| Node {
                    platform: p,
                    slots: 4,
                    busy: if k == 0 { busy.clone() } else { Vec::new() },
                })
            })
            .collect()
    }

    #[test]
    fn a_parallel_run_goes_to_the_faster_platform_that_holds_it_now() {
        // Two platforms of two 4-slot agents; platform 1 twice as fast.
        let speeds = [1.0, 2.0];
        let place = |nodes: &[Node], app: u64, size: ParallelSize| {
            place_runs(
                nodes,
                &speeds,
                &[run(app, size, 100.0)],
                &mut Tlpa::new(2),
                0.0,
            )
        };
        // Both idle: the fast one.
        let idle = agents(&[(2, vec![]), (2, vec![])]);
        assert_eq!(place(&idle, 1, ParallelSize::Procs(8)), [(AppId(1), 1)]);
        // The fast one busy on a slot: 7 slots left there, the run of 8 fits only the slow
        // one now.
        let nodes = agents(&[(2, vec![]), (2, vec![(1, 500.0)])]);
        assert_eq!(place(&nodes, 1, ParallelSize::Procs(8)), [(AppId(1), 0)]);
        // Whole agents count agents, not slots: one busy agent leaves one free there.
        assert_eq!(place(&nodes, 2, ParallelSize::Nodes(2)), [(AppId(2), 0)]);
        assert_eq!(place(&nodes, 3, ParallelSize::Nodes(1)), [(AppId(3), 1)]);
        // No platform holds it now: no choice (the reservation then picks by start time).
        let got = place(&nodes, 4, ParallelSize::Procs(9));
        assert!(got.is_empty(), "{got:?}");
    }
}
