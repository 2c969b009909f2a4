//! The PTGs of the paper's experiments (§5.1.2): random PTGs shaped like Suter's daggen
//! (frs69wq/daggen: number of tasks, width, regularity, density, jumps), FFT graphs with
//! 2, 4 and 8 points and Strassen graphs, each task's cost drawn from one of four
//! complexity scenarios. Times are in Gflop (seconds on a 1 Gflop/s processor); place a
//! PTG on a cluster with [`Ptg::scaled`] by `1 / gflops`.

use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use hetpilot_core::ptg::{Complexity, MoldableTask, Ptg};

/// The complexity of every task of a PTG (§5.1.2's four scenarios).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ComplexityScenario {
    /// Every task `a · d`.
    Linear,
    /// Every task `a · d · log d`.
    LogLinear,
    /// Every task `d^{3/2}`.
    MatrixProduct,
    /// Each task one of the three at random.
    Mixed,
}

impl ComplexityScenario {
    /// The four scenarios.
    pub const ALL: [ComplexityScenario; 4] = [
        ComplexityScenario::Linear,
        ComplexityScenario::LogLinear,
        ComplexityScenario::MatrixProduct,
        ComplexityScenario::Mixed,
    ];

    /// A short name for PTG names.
    pub fn label(self) -> &'static str {
        match self {
            ComplexityScenario::Linear => "ad",
            ComplexityScenario::LogLinear => "adlogd",
            ComplexityScenario::MatrixProduct => "d1.5",
            ComplexityScenario::Mixed => "mixed",
        }
    }
}

/// The smallest side of a task's `√d × √d` data set, in elements (daggen's `--mindata`
/// default: `d` from about 4M, §5.1.2).
pub const MIN_SIDE: f64 = 2048.0;
/// The largest side, excluded (daggen's `--maxdata` default; §5.1.2 bounds `d` by 121M).
pub const MAX_SIDE: f64 = 11264.0;
/// The largest Amdahl serial fraction (§5.1.2: α uniform in [0, 0.25]).
pub const MAX_SERIAL_FRACTION: f64 = 0.25;

/// One task as daggen draws it (frs69wq/daggen `generateTasks`): a data set of `d = s²`
/// elements with `s = ⌊U(2048, 11264) / 1024⌋ · 1024` (so `d` from 4.2M to 105M, the
/// paper's "between 4M and 121M"), `a` uniform in [2^6, 2^9], the scenario's complexity
/// (daggen's `2·a·s²·log₂ s` is `a·d·log₂ d`, its `s³` is `d^{3/2}`), α uniform in
/// [0, 0.25]; its time in Gflop.
pub fn random_task(scenario: ComplexityScenario, rng: &mut dyn RngCore) -> MoldableTask {
    let side = (rng.random_range(MIN_SIDE..MAX_SIDE) / 1024.0).floor() * 1024.0;
    let elements = side * side;
    let factor = rng.random_range(64.0..512.0);
    let kind = match scenario {
        ComplexityScenario::Mixed => ComplexityScenario::ALL[rng.random_range(0..3)],
        s => s,
    };
    let complexity = match kind {
        ComplexityScenario::Linear => Complexity::Linear { factor },
        ComplexityScenario::LogLinear => Complexity::LogLinear { factor },
        _ => Complexity::MatrixProduct,
    };
    MoldableTask {
        sequential_seconds: complexity.operations(elements) / 1e9,
        serial_fraction: rng.random_range(0.0..=MAX_SERIAL_FRACTION),
    }
}

/// The shape parameters of a random PTG (daggen's options, §5.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RandomShape {
    /// The number of tasks (10, 20 or 30), not counting the added entry and exit.
    pub tasks: usize,
    /// `fat`: about `tasks^width` tasks per level (0.2, 0.5, 0.8).
    pub width: f64,
    /// How alike the levels' sizes are (0.2 or 0.8): sizes vary by ±100(1 − regularity)%.
    pub regularity: f64,
    /// How many edges between levels (0.2 or 0.8).
    pub density: f64,
    /// How many levels an edge may span (1, 2 or 4).
    pub jump: usize,
}

/// A random PTG as daggen builds it (frs69wq/daggen `generateTasks`,
/// `generateDependencies`), plus a zero-cost entry before the first level and a
/// zero-cost exit after every task without successors (daggen's ROOT and END).
///
/// Levels: `⌊tasks^width⌋` tasks each, varied by ±100(1 − regularity)% (at least 1), the
/// last level cut so the total is `tasks`. Each task of level `i ≥ 1` gets
/// `min(1 + ⌊U(0, density · |L_{i−1}|)⌋, |L_{i−1}|)` parents, each on level
/// `max(0, i − ⌊U(1, jump + 1)⌋)` at a uniform index, moving to the next index on a
/// duplicate and giving up once the level is exhausted.
pub fn random_ptg(shape: RandomShape, scenario: ComplexityScenario, rng: &mut dyn RngCore) -> Ptg {
    let n = shape.tasks.max(1);
    let per_level = ((n as f64).ln() * shape.width).exp().floor().max(1.0);
    let spread = 100.0 - 100.0 * shape.regularity;
    let mut level_sizes = Vec::new();
    let mut total = 0;
    while total < n {
        let r = if spread > 0.0 {
            rng.random_range(-spread..spread)
        } else {
            0.0
        };
        let size = ((per_level * (1.0 + r / 100.0)) as usize)
            .max(1)
            .min(n - total);
        level_sizes.push(size);
        total += size;
    }
    // Task indices: 0 is the entry, then level by level, then the exit.
    let mut levels: Vec<Vec<usize>> = Vec::new();
    let mut next = 1;
    for &size in &level_sizes {
        levels.push((next..next + size).collect());
        next += size;
    }
    let exit = next;
    let mut tasks = vec![MoldableTask::EMPTY];
    tasks.extend((0..n).map(|_| random_task(scenario, rng)));
    tasks.push(MoldableTask::EMPTY);
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); exit + 1];
    for i in 1..levels.len() {
        for &task in &levels[i] {
            let previous = levels[i - 1].len();
            let parents = (1 + rng
                .random_range(0.0..shape.density * previous as f64 + f64::MIN_POSITIVE)
                as usize)
                .min(previous);
            for _ in 0..parents {
                let back = rng.random_range(1.0..(shape.jump as f64 + 1.0)) as usize;
                let level = &levels[i.saturating_sub(back)];
                let mut index = rng.random_range(0..level.len());
                let mut found = None;
                for _ in 0..level.len() {
                    if children[level[index]].contains(&task) {
                        index = (index + 1) % level.len();
                    } else {
                        found = Some(level[index]);
                        break;
                    }
                }
                if let Some(parent) = found {
                    children[parent].push(task);
                }
            }
        }
    }
    let mut edges: Vec<(usize, usize)> = levels[0].iter().map(|&t| (0, t)).collect();
    for (parent, kids) in children.iter().enumerate() {
        edges.extend(kids.iter().map(|&k| (parent, k)));
    }
    for (t, kids) in children.iter().enumerate().take(exit).skip(1) {
        if kids.is_empty() {
            edges.push((t, exit));
        }
    }
    let name = format!(
        "random n={} width={} regularity={} density={} jump={} {}",
        shape.tasks,
        shape.width,
        shape.regularity,
        shape.density,
        shape.jump,
        scenario.label()
    );
    Ptg::new(name, tasks, &edges).expect("levels only point forward")
}

/// An FFT PTG on `points` points (a power of two; the paper uses 2, 4, 8): the recursive
/// calls form a binary tree of `2·points − 1` tasks, then `log₂ points` butterfly stages
/// of `points` tasks, stage `s` task `j` after stage `s − 1` tasks `j` and `j XOR
/// 2^{s−1}` (Cormen et al., the paper's [10]); 5, 15 and 39 tasks of maximum parallelism
/// 2, 4 and 8, plus a zero-cost exit.
pub fn fft_ptg(points: usize, scenario: ComplexityScenario, rng: &mut dyn RngCore) -> Ptg {
    assert!(
        points >= 2 && points.is_power_of_two(),
        "FFT on {points} points"
    );
    let tree = 2 * points - 1;
    let stages = points.trailing_zeros() as usize;
    let count = tree + stages * points;
    let mut edges = Vec::new();
    for k in 0..points - 1 {
        edges.push((k, 2 * k + 1));
        edges.push((k, 2 * k + 2));
    }
    // Stage 0 is the tree's leaves, in order.
    let task_at = |stage: usize, j: usize| {
        if stage == 0 {
            points - 1 + j
        } else {
            tree + (stage - 1) * points + j
        }
    };
    for s in 1..=stages {
        for j in 0..points {
            edges.push((task_at(s - 1, j), task_at(s, j)));
            edges.push((task_at(s - 1, j ^ (1 << (s - 1))), task_at(s, j)));
        }
    }
    let exit = count;
    for j in 0..points {
        edges.push((task_at(stages, j), exit));
    }
    let mut tasks: Vec<MoldableTask> = (0..count).map(|_| random_task(scenario, rng)).collect();
    tasks.push(MoldableTask::EMPTY);
    Ptg::new(
        format!("fft points={points} {}", scenario.label()),
        tasks,
        &edges,
    )
    .expect("an FFT graph is a DAG")
}

/// A Strassen PTG: the 10 block additions, the 7 block products `M1..M7` and the 8 block
/// additions that combine them (`C11 = M1 + M4 − M5 + M7`, `C12 = M3 + M5`,
/// `C21 = M2 + M4`, `C22 = M1 − M2 + M3 + M6`, one task per binary operation): 25 tasks
/// of maximum parallelism 10 as in §5.1.2, plus a zero-cost entry and exit.
pub fn strassen_ptg(scenario: ComplexityScenario, rng: &mut dyn RngCore) -> Ptg {
    // 0 entry; 1..=10 sums S1..S10; 11..=17 products M1..M7; 18..=25 combinations; 26 exit.
    let s = |k: usize| k; // S_k, k in 1..=10
    let m = |k: usize| 10 + k; // M_k, k in 1..=7
    let mut edges: Vec<(usize, usize)> = (1..=10).map(|k| (0, s(k))).collect();
    // M1 = (A11+A22)(B11+B22), M2 = (A21+A22)B11, M3 = A11(B12−B22), M4 = A22(B21−B11),
    // M5 = (A11+A12)B22, M6 = (A21−A11)(B11+B12), M7 = (A12−A22)(B21+B22).
    let products: [&[usize]; 7] = [&[1, 2], &[3], &[4], &[5], &[6], &[7, 8], &[9, 10]];
    for (k, sums) in products.iter().enumerate() {
        for &j in *sums {
            edges.push((s(j), m(k + 1)));
        }
    }
    let (t1, t2, c11, t3, t4, c22, c12, c21) = (18, 19, 20, 21, 22, 23, 24, 25);
    edges.extend([
        (m(1), t1),
        (m(4), t1),
        (t1, t2),
        (m(5), t2),
        (t2, c11),
        (m(7), c11),
        (m(1), t3),
        (m(2), t3),
        (t3, t4),
        (m(3), t4),
        (t4, c22),
        (m(6), c22),
        (m(3), c12),
        (m(5), c12),
        (m(2), c21),
        (m(4), c21),
    ]);
    let exit = 26;
    edges.extend([c11, c22, c12, c21].map(|c| (c, exit)));
    let mut tasks = vec![MoldableTask::EMPTY];
    tasks.extend((0..25).map(|_| random_task(scenario, rng)));
    tasks.push(MoldableTask::EMPTY);
    Ptg::new(format!("strassen {}", scenario.label()), tasks, &edges)
        .expect("a Strassen graph is a DAG")
}

/// The three PTG populations of §5.1.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PtgFamily {
    /// Random PTGs: 3 sizes × 3 widths × 2 regularities × 2 densities × 3 jumps × 4
    /// scenarios × 3 samples = 1,296.
    Random,
    /// Strassen: 4 scenarios × 25 samples = 100.
    Strassen,
    /// FFT with 2, 4 and 8 points: 3 × 4 scenarios × 10 samples = 120.
    Fft,
}

impl PtgFamily {
    /// The three, in the order of the paper's box plots (random, Strassen, FFT).
    pub const ALL: [PtgFamily; 3] = [PtgFamily::Random, PtgFamily::Strassen, PtgFamily::Fft];

    /// Its name in tables.
    pub fn label(self) -> &'static str {
        match self {
            PtgFamily::Random => "random",
            PtgFamily::Strassen => "strassen",
            PtgFamily::Fft => "fft",
        }
    }

    /// Every PTG of the population, in Gflop.
    pub fn population(self, rng: &mut dyn RngCore) -> Vec<Ptg> {
        let mut out = Vec::new();
        match self {
            PtgFamily::Random => {
                for tasks in [10, 20, 30] {
                    for width in [0.2, 0.5, 0.8] {
                        for regularity in [0.2, 0.8] {
                            for density in [0.2, 0.8] {
                                for jump in [1, 2, 4] {
                                    for scenario in ComplexityScenario::ALL {
                                        for _ in 0..3 {
                                            let shape = RandomShape {
                                                tasks,
                                                width,
                                                regularity,
                                                density,
                                                jump,
                                            };
                                            out.push(random_ptg(shape, scenario, rng));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            PtgFamily::Fft => {
                for points in [2, 4, 8] {
                    for scenario in ComplexityScenario::ALL {
                        for _ in 0..10 {
                            out.push(fft_ptg(points, scenario, rng));
                        }
                    }
                }
            }
            PtgFamily::Strassen => {
                for scenario in ComplexityScenario::ALL {
                    for _ in 0..25 {
                        out.push(strassen_ptg(scenario, rng));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::ptg::algorithms::{all, run};
    use hetpilot_core::ptg::hcpa::HcpaSettings;
    use hetpilot_core::ptg::{ClusterPtg, Instance};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::sync::Arc;

    fn real_tasks(g: &Ptg) -> usize {
        g.tasks().iter().filter(|t| !t.is_empty()).count()
    }

    #[test]
    fn fft_graphs_have_the_papers_sizes_and_widths() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (points, tasks) in [(2, 5), (4, 15), (8, 39)] {
            let g = fft_ptg(points, ComplexityScenario::Linear, &mut rng);
            assert_eq!(real_tasks(&g), tasks);
            assert_eq!(g.width(), points);
            assert_eq!(g.entry_tasks(), vec![0]);
            assert_eq!(g.exit_tasks().len(), 1);
        }
        // 4 points: leaf 0 (task 3) feeds stage-1 tasks 0 and 1.
        let g = fft_ptg(4, ComplexityScenario::Linear, &mut rng);
        assert_eq!(g.successors(3), &[7, 8]);
    }

    #[test]
    fn strassen_has_25_tasks_and_width_10() {
        let g = strassen_ptg(
            ComplexityScenario::MatrixProduct,
            &mut ChaCha8Rng::seed_from_u64(2),
        );
        assert_eq!(real_tasks(&g), 25);
        assert_eq!(g.level_sizes()[1], 10);
        assert_eq!(g.width(), 10);
        assert_eq!(g.exit_tasks(), vec![26]);
    }

    #[test]
    fn random_ptgs_follow_their_shape() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..50 {
            let chain_like = random_ptg(
                RandomShape {
                    tasks: 30,
                    width: 0.2,
                    regularity: 0.8,
                    density: 0.2,
                    jump: 1,
                },
                ComplexityScenario::Mixed,
                &mut rng,
            );
            assert_eq!(real_tasks(&chain_like), 30);
            assert_eq!(chain_like.entry_tasks(), vec![0]);
            assert_eq!(chain_like.exit_tasks(), vec![31]);
            // 30^0.2 = 1.97: one or two tasks per level, ±20%.
            assert!(chain_like.width() <= 2);
            let fat = random_ptg(
                RandomShape {
                    tasks: 30,
                    width: 0.8,
                    regularity: 0.8,
                    density: 0.8,
                    jump: 4,
                },
                ComplexityScenario::Linear,
                &mut rng,
            );
            // 30^0.8 = 15.2: levels of 15 ± 20%.
            assert!((12..=18).contains(&fat.width()), "{}", fat.width());
        }
    }

    #[test]
    fn task_costs_stay_in_the_papers_ranges() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for _ in 0..200 {
            let t = random_task(ComplexityScenario::Linear, &mut rng);
            assert!(t.serial_fraction <= MAX_SERIAL_FRACTION);
            assert!(t.sequential_seconds >= 64.0 * MIN_SIDE * MIN_SIDE / 1e9);
            assert!(t.sequential_seconds <= 512.0 * 10240.0 * 10240.0 / 1e9);
            let m = random_task(ComplexityScenario::MatrixProduct, &mut rng);
            // s³ for a side that is a multiple of 1024 in [2048, 10240].
            let side = (m.sequential_seconds * 1e9).cbrt();
            assert!(
                (side / 1024.0 - (side / 1024.0).round()).abs() < 1e-6,
                "{side}"
            );
            assert!((2048.0..=10240.0).contains(&side.round()));
        }
    }

    #[test]
    fn populations_have_the_papers_sizes_and_are_reproducible() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        assert_eq!(PtgFamily::Random.population(&mut rng).len(), 1296);
        assert_eq!(PtgFamily::Fft.population(&mut rng).len(), 120);
        assert_eq!(PtgFamily::Strassen.population(&mut rng).len(), 100);
        let a = PtgFamily::Fft.population(&mut ChaCha8Rng::seed_from_u64(9));
        let b = PtgFamily::Fft.population(&mut ChaCha8Rng::seed_from_u64(9));
        assert_eq!(a, b);
    }

    #[test]
    fn generated_ptgs_get_valid_schedules_from_every_algorithm() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (k, processors) in [(0, 20u32), (1, 47), (2, 20)] {
            let shape = |tasks, width, jump| RandomShape {
                tasks,
                width,
                regularity: 0.2,
                density: 0.8,
                jump,
            };
            let mixed = ComplexityScenario::Mixed;
            let ptgs: Vec<Ptg> = vec![
                random_ptg(shape(30, 0.8, 4), mixed, &mut rng),
                random_ptg(shape(10, 0.2, 1), ComplexityScenario::Linear, &mut rng),
                fft_ptg(8, mixed, &mut rng),
                strassen_ptg(ComplexityScenario::MatrixProduct, &mut rng),
            ]
            .into_iter()
            .skip(k)
            .map(|g| g.scaled(1.0 / 3.4))
            .collect();
            let inst = Instance {
                processors,
                ptgs: ptgs
                    .into_iter()
                    .map(|g| Arc::new(ClusterPtg::new(g, processors, HcpaSettings::default())))
                    .collect(),
            };
            let graphs = inst.graphs();
            for alg in all() {
                let out = run(
                    alg.as_ref(),
                    &inst,
                    &mut ChaCha8Rng::seed_from_u64(k as u64),
                );
                out.schedule
                    .verify(&graphs, processors)
                    .unwrap_or_else(|e| panic!("{} on {processors}: {e}", alg.name()));
                assert!(out.metrics.maximum_stretch >= out.metrics.minimum_stretch);
            }
        }
    }
}
