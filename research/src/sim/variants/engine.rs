//! The variant simulator's event engine: nodes with free cores and GPUs, task starts by a
//! placement, task ends as events, and the run's makespan, fairness and GPU use.
//!
//! Fairness is the two-level reproduction's `1 − σ/μ` of throughputs normalized to a
//! fair-share reference. Fastest-OneCore (a `1/n` share of the cores, each on the fastest
//! platform) has no meaning when a slot can be a GPU, so the reference here is each
//! application's throughput alone on a `1/n` share of every node, running its best mix of
//! variants there; with one platform of single-core tasks the two coincide.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

use super::scenario::VariantScenario;
use hetpilot_core::event_queue::EventQueue;
use hetpilot_core::sched::fairness_index;
use hetpilot_core::sched::variants::{
    VariantApplication, VariantKind, VariantPlan, VariantPlatform, VariantScheduler,
    VariantSnapshot,
};
use hetpilot_core::sched::SchedError;

/// How tasks are placed.
#[derive(Debug)]
pub enum Placement<'a> {
    /// Each task takes the first of its variants, in declaration order, that fits on the
    /// first node with free resources; the applications' tasks are interleaved in turn.
    FirstFit,
    /// The variant first level's plan, recomputed whenever an application's queue drains.
    Affinity(&'a VariantScheduler),
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantRun {
    /// Time the last task ended, seconds (infinite if some application never finished).
    pub makespan_s: f64,
    /// `1 − σ/μ` of the normalized throughputs.
    pub fairness: f64,
    /// Per application: throughput over its fair-share reference.
    pub normalized_throughput: Vec<f64>,
    /// Per application: the fraction of its tasks that ran a GPU variant.
    pub gpu_task_fraction: Vec<f64>,
}

#[derive(Debug, Clone, Copy)]
struct TaskEnd {
    node: usize,
    app: usize,
    variant: usize,
    /// The plan column (platform, kind) it was started in.
    column: Option<(usize, VariantKind)>,
}

struct Node {
    platform: usize,
    free_cores: u32,
    free_gpu_units: u64,
}

struct Run<'a> {
    platforms: &'a [VariantPlatform],
    apps: Vec<VariantApplication>,
    nodes: Vec<Node>,
    queue: Vec<u64>,
    running: Vec<u64>,
    finish: Vec<f64>,
    gpu_tasks: Vec<u64>,
    events: EventQueue<f64, TaskEnd>,
    factor: Option<LogNormal<f64>>,
}

impl Run<'_> {
    fn fits(&self, node: &Node, app: usize, variant: usize, reserved_cores: u32) -> bool {
        let v = &self.apps[app].variants[variant];
        v.fits(&self.platforms[node.platform])
            && node.free_cores >= v.cores.saturating_add(reserved_cores)
            && node.free_gpu_units >= v.gpus.units()
    }

    fn start(
        &mut self,
        now: f64,
        node: usize,
        app: usize,
        variant: usize,
        column: Option<(usize, VariantKind)>,
        rng: &mut dyn RngCore,
    ) {
        let v = &self.apps[app].variants[variant];
        let (cores, gpus) = (v.cores, v.gpus);
        let mean = self.apps[app].runtime_s[variant][self.nodes[node].platform];
        let runtime = mean * self.factor.map_or(1.0, |f| f.sample(rng));
        self.nodes[node].free_cores -= cores;
        self.nodes[node].free_gpu_units -= gpus.units();
        self.queue[app] -= 1;
        self.running[app] += 1;
        if !gpus.is_zero() {
            self.gpu_tasks[app] += 1;
        }
        let end = TaskEnd {
            node,
            app,
            variant,
            column,
        };
        self.events.push(now + runtime, rng.next_u64(), end);
    }

    /// First-fit: in turn, each application with queued tasks places one task with the
    /// first of its variants that fits on some node, until nobody can place one.
    fn first_fit(&mut self, now: f64, rng: &mut dyn RngCore) {
        loop {
            let mut placed = false;
            for a in 0..self.apps.len() {
                if self.queue[a] == 0 {
                    continue;
                }
                let choice = (0..self.apps[a].variants.len()).find_map(|v| {
                    (0..self.nodes.len())
                        .find(|&n| self.fits(&self.nodes[n], a, v, 0))
                        .map(|n| (n, v))
                });
                if let Some((n, v)) = choice {
                    self.start(now, n, a, v, None, rng);
                    placed = true;
                }
            }
            if !placed {
                return;
            }
        }
    }

    /// Affinity: in turn, each application places one task in its highest-affinity column
    /// where it holds fewer running tasks than the plan's slots and a node has room (a CPU
    /// task leaves the cores of a node's unfilled planned GPU slots free).
    #[allow(clippy::needless_range_loop)] // `a` indexes the plan, the queues and the counts
    fn by_plan(
        &mut self,
        now: f64,
        plan: &VariantPlan,
        in_column: &mut [Vec<u64>],
        rng: &mut dyn RngCore,
    ) {
        let gpu_reserve: Vec<Option<(u64, u32)>> = (0..self.platforms.len())
            .map(|p| {
                plan.columns
                    .iter()
                    .enumerate()
                    .find(|(c, col)| {
                        col.platform == p
                            && col.kind == VariantKind::Gpu
                            && plan.slots.iter().any(|row| row[*c] > 0)
                    })
                    .map(|(_, col)| (col.slot_gpus.units().max(1), col.slot_cores))
            })
            .collect();
        loop {
            let mut placed = false;
            for a in 0..self.apps.len() {
                if self.queue[a] == 0 {
                    continue;
                }
                let mut order: Vec<usize> = (0..plan.columns.len())
                    .filter(|&c| in_column[a][c] < plan.slots[a][c])
                    .collect();
                order.sort_by(|&x, &y| {
                    plan.affinity[a][y]
                        .total_cmp(&plan.affinity[a][x])
                        .then(x.cmp(&y))
                });
                let choice = order.iter().find_map(|&c| {
                    let col = plan.columns[c];
                    let v = plan.variant[a][c]?;
                    (0..self.nodes.len())
                        .filter(|&n| self.nodes[n].platform == col.platform)
                        .find(|&n| {
                            let node = &self.nodes[n];
                            let reserved = match (col.kind, gpu_reserve[col.platform]) {
                                (VariantKind::Cpu, Some((per, cores))) => {
                                    let slots = node.free_gpu_units / per;
                                    u32::try_from(slots)
                                        .unwrap_or(u32::MAX)
                                        .saturating_mul(cores)
                                }
                                _ => 0,
                            };
                            self.fits(node, a, v, reserved)
                        })
                        .map(|n| (n, v, c))
                });
                if let Some((n, v, c)) = choice {
                    in_column[a][c] += 1;
                    let col = plan.columns[c];
                    self.start(now, n, a, v, Some((col.platform, col.kind)), rng);
                    placed = true;
                }
            }
            if !placed {
                return;
            }
        }
    }
}

/// Each application's throughput (tasks/hour) alone on a `1/n` share of every node, with
/// its best mix of one GPU-kind and one CPU-kind variant per node.
fn fair_share_reference(platforms: &[VariantPlatform], apps: &[VariantApplication]) -> Vec<f64> {
    let n = apps.len().max(1) as f64;
    apps.iter()
        .map(|app| {
            let alone: f64 = platforms
                .iter()
                .enumerate()
                .map(|(p, platform)| {
                    let kind = |k: VariantKind| {
                        app.variants
                            .iter()
                            .position(|v| v.kind() == k && v.fits(platform))
                    };
                    let rate = |v: usize| 3600.0 / app.runtime_s[v][p];
                    let cores = u64::from(platform.cores_per_node);
                    let cpu = kind(VariantKind::Cpu);
                    let cpu_fill = |left: u64| {
                        cpu.map_or(0.0, |c| {
                            (left / u64::from(app.variants[c].cores)) as f64 * rate(c)
                        })
                    };
                    let best = match kind(VariantKind::Gpu) {
                        None => cpu_fill(cores),
                        Some(g) => {
                            let v = &app.variants[g];
                            let units = u64::from(platform.gpus_per_node) * 10_000;
                            let max =
                                (units / v.gpus.units().max(1)).min(cores / u64::from(v.cores));
                            (0..=max)
                                .map(|k| {
                                    k as f64 * rate(g) + cpu_fill(cores - k * u64::from(v.cores))
                                })
                                .fold(0.0, f64::max)
                        }
                    };
                    best * f64::from(platform.nodes)
                })
                .sum();
            alone / n
        })
        .collect()
}

/// One seeded run of `scenario` under `placement`.
pub fn simulate(
    scenario: &VariantScenario,
    placement: &Placement,
    seed: u64,
) -> Result<VariantRun, SchedError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let platforms = scenario.platforms();
    let tasks = scenario.tasks();
    let cv = scenario.runtime_cv;
    let factor = (cv > 0.0)
        .then(|| {
            let s2 = (1.0 + cv * cv).ln();
            LogNormal::new(-s2 / 2.0, s2.sqrt()).ok()
        })
        .flatten();
    let mut run = Run {
        platforms,
        apps: scenario.applications(&[]),
        nodes: platforms
            .iter()
            .enumerate()
            .flat_map(|(p, pl)| {
                (0..pl.nodes).map(move |_| Node {
                    platform: p,
                    free_cores: pl.cores_per_node,
                    free_gpu_units: u64::from(pl.gpus_per_node) * 10_000,
                })
            })
            .collect(),
        queue: tasks.clone(),
        running: vec![0; tasks.len()],
        finish: vec![f64::INFINITY; tasks.len()],
        gpu_tasks: vec![0; tasks.len()],
        events: EventQueue::default(),
        factor,
    };
    let scheduler = match placement {
        Placement::Affinity(scheduler) => Some(*scheduler),
        Placement::FirstFit => None,
    };
    let replan = |scheduler: &VariantScheduler,
                  run: &Run,
                  now: f64,
                  rng: &mut dyn RngCore|
     -> Result<VariantPlan, SchedError> {
        let mut apps = run.apps.clone();
        for (a, app) in apps.iter_mut().enumerate() {
            app.remaining_tasks = run.queue[a];
            app.completed_tasks = tasks[a] - run.queue[a] - run.running[a];
            app.age_s = now;
        }
        let snapshot = VariantSnapshot {
            platforms,
            applications: &apps,
        };
        scheduler.plan(&snapshot, rng)
    };
    let mut plan = scheduler
        .map(|s| replan(s, &run, 0.0, &mut rng))
        .transpose()?;
    let mut in_column = plan
        .as_ref()
        .map_or_else(Vec::new, |p| vec![vec![0u64; p.columns.len()]; tasks.len()]);
    let mut now = 0.0;
    loop {
        match &plan {
            Some(p) => run.by_plan(now, p, &mut in_column, &mut rng),
            None => run.first_fit(now, &mut rng),
        }
        let Some((t, end)) = run.events.pop() else {
            break;
        };
        now = t;
        let v = &run.apps[end.app].variants[end.variant];
        let (cores, gpus) = (v.cores, v.gpus.units());
        run.nodes[end.node].free_cores += cores;
        run.nodes[end.node].free_gpu_units += gpus;
        run.running[end.app] -= 1;
        let drained = run.queue[end.app] == 0;
        if drained && run.running[end.app] == 0 {
            run.finish[end.app] = now;
        }
        if let (Some(p), Some(scheduler)) = (&mut plan, scheduler) {
            let column = end.column.and_then(|(platform, kind)| {
                p.columns
                    .iter()
                    .position(|c| c.platform == platform && c.kind == kind)
            });
            if let Some(c) = column {
                in_column[end.app][c] = in_column[end.app][c].saturating_sub(1);
            }
            // A queue that emptied frees its planned slots for the others: plan again
            // (once: the new plan gives the drained application no slots).
            if drained && p.slots[end.app].iter().any(|&s| s > 0) {
                let next = replan(scheduler, &run, now, &mut rng)?;
                in_column = remap(&in_column, p, &next);
                *p = next;
            }
        }
    }
    let reference = fair_share_reference(platforms, &run.apps);
    let normalized: Vec<f64> = (0..tasks.len())
        .map(|a| {
            let throughput = tasks[a] as f64 * 3600.0 / run.finish[a];
            if reference[a] > 0.0 && run.finish[a].is_finite() {
                throughput / reference[a]
            } else {
                0.0
            }
        })
        .collect();
    Ok(VariantRun {
        makespan_s: run.finish.iter().copied().fold(0.0, f64::max),
        fairness: fairness_index(&normalized),
        normalized_throughput: normalized,
        gpu_task_fraction: (0..tasks.len())
            .map(|a| run.gpu_tasks[a] as f64 / tasks[a].max(1) as f64)
            .collect(),
    })
}

/// Running tasks per column of `old` counted in the columns of `new` (same platform and
/// kind); tasks of a column `new` lacks are not counted (they hold their resources still).
fn remap(in_column: &[Vec<u64>], old: &VariantPlan, new: &VariantPlan) -> Vec<Vec<u64>> {
    in_column
        .iter()
        .map(|row| {
            new.columns
                .iter()
                .map(|nc| {
                    old.columns
                        .iter()
                        .position(|oc| oc.platform == nc.platform && oc.kind == nc.kind)
                        .map_or(0, |o| row[o])
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::sched::SchedulerSettings;

    fn scenario() -> VariantScenario {
        let text = include_str!("../../../../profiles/variants/gpu-speedup.toml")
            .replace("tasks = 2000", "tasks = 300");
        VariantScenario::parse(&text).unwrap()
    }

    #[test]
    fn affinity_runs_the_40x_application_on_gpus_and_ends_sooner_than_first_fit() {
        let s = scenario();
        let paf = VariantScheduler::new(SchedulerSettings {
            first_level: hetpilot_core::sched::FirstLevel::Paf,
            ..Default::default()
        })
        .unwrap();
        for seed in 1..4 {
            let ff = simulate(&s, &Placement::FirstFit, seed).unwrap();
            let aff = simulate(&s, &Placement::Affinity(&paf), seed).unwrap();
            assert!(aff.makespan_s < ff.makespan_s, "{seed}: {aff:?} vs {ff:?}");
            assert!(aff.fairness > ff.fairness, "{seed}: {aff:?} vs {ff:?}");
            // First-fit shares the GPUs by who asks first; the plan gives them to the 40x app.
            assert!(
                aff.gpu_task_fraction[2] > ff.gpu_task_fraction[2],
                "{aff:?} vs {ff:?}"
            );
            assert!(
                aff.gpu_task_fraction[0] < ff.gpu_task_fraction[0],
                "{aff:?} vs {ff:?}"
            );
            assert!(aff.normalized_throughput.iter().all(|&t| t > 0.0));
        }
        // Seeded: the same seed gives the same run.
        assert_eq!(
            simulate(&s, &Placement::Affinity(&paf), 9).unwrap(),
            simulate(&s, &Placement::Affinity(&paf), 9).unwrap()
        );
    }

    #[test]
    fn hostile_scenarios_are_refused_with_the_field_named() {
        let base = include_str!("../../../../profiles/variants/gpu-speedup.toml");
        for (from, to, field) in [
            ("runs = 20", "runs = 0", "runs"),
            ("runtime_cv = 0.3", "runtime_cv = nan", "runtime_cv"),
            ("tasks = 2000", "tasks = 0", "application[0].tasks"),
            (
                "runtime_s = 400.0",
                "runtime_s = -1.0",
                "application[0].variant[0].runtime_s",
            ),
            (
                "gpus = 1, runtime_s = 400.0",
                "gpus = -1, runtime_s = 400.0",
                "must be above 0",
            ),
            (
                "cores = 8, runtime_s = 800.0 },\n]\n\n[[application]]\nname = \"gpu-10x\"",
                "cores = 0, runtime_s = 800.0 },\n]\n\n[[application]]\nname = \"gpu-10x\"",
                "variants[1].cores",
            ),
        ] {
            let text = base.replacen(from, to, 1);
            assert_ne!(text, base, "{from}");
            let err = VariantScenario::parse(&text).unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
        }
    }
}
