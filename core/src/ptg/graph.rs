//! A parallel task graph (PTG, §3.1): a DAG of moldable tasks whose edges are precedence
//! constraints (no data transfers are modelled: data go through files, their cost is in
//! each task's serial fraction). Also the graph measures the algorithms use: bottom and
//! top levels under an allocation, precedence levels, width and sequential work.

use serde::{Deserialize, Serialize};

use super::model::MoldableTask;

/// Why a PTG could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PtgError {
    /// An edge names a task that does not exist.
    #[error("edge {from} -> {to}: the graph has {tasks} tasks")]
    UnknownTask {
        /// The edge's source.
        from: usize,
        /// The edge's target.
        to: usize,
        /// The number of tasks.
        tasks: usize,
    },
    /// A task depends on itself.
    #[error("task {0} depends on itself")]
    SelfLoop(usize),
    /// The edges contain a cycle (one task on it is named).
    #[error("the graph has a cycle through task {0}")]
    Cycle(usize),
    /// The graph has no task.
    #[error("a PTG needs at least one task")]
    Empty,
}

/// A parallel task graph: tasks, their predecessors and successors, a topological order
/// and each task's precedence level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ptg {
    name: String,
    tasks: Vec<MoldableTask>,
    predecessors: Vec<Vec<usize>>,
    successors: Vec<Vec<usize>>,
    topological_order: Vec<usize>,
    precedence_levels: Vec<usize>,
}

impl Ptg {
    /// A PTG from its tasks and its edges `(from, to)` ("`to` cannot start before `from`
    /// ends"). Duplicate edges are merged; unknown tasks, self-loops and cycles are refused.
    pub fn new(
        name: impl Into<String>,
        tasks: Vec<MoldableTask>,
        edges: &[(usize, usize)],
    ) -> Result<Ptg, PtgError> {
        let n = tasks.len();
        if n == 0 {
            return Err(PtgError::Empty);
        }
        let mut predecessors = vec![Vec::new(); n];
        let mut successors = vec![Vec::new(); n];
        for &(from, to) in edges {
            if from >= n || to >= n {
                return Err(PtgError::UnknownTask { from, to, tasks: n });
            }
            if from == to {
                return Err(PtgError::SelfLoop(from));
            }
            if !successors[from].contains(&to) {
                successors[from].push(to);
                predecessors[to].push(from);
            }
        }
        // Kahn's algorithm, smallest index first so the order is deterministic.
        let mut remaining: Vec<usize> = predecessors.iter().map(Vec::len).collect();
        let mut ready: std::collections::BTreeSet<usize> =
            (0..n).filter(|&v| remaining[v] == 0).collect();
        let mut topological_order = Vec::with_capacity(n);
        while let Some(v) = ready.pop_first() {
            topological_order.push(v);
            for &s in &successors[v] {
                remaining[s] -= 1;
                if remaining[s] == 0 {
                    ready.insert(s);
                }
            }
        }
        if topological_order.len() < n {
            let on_cycle = (0..n).find(|&v| remaining[v] > 0).unwrap_or(0);
            return Err(PtgError::Cycle(on_cycle));
        }
        // Precedence level: the length in edges of the longest path from an entry task.
        let mut precedence_levels = vec![0usize; n];
        for &v in &topological_order {
            for &s in &successors[v] {
                precedence_levels[s] = precedence_levels[s].max(precedence_levels[v] + 1);
            }
        }
        Ok(Ptg {
            name: name.into(),
            tasks,
            predecessors,
            successors,
            topological_order,
            precedence_levels,
        })
    }

    /// The PTG's name (generator parameters, or the application's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of tasks `V`.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Always false: a PTG has at least one task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Every task, by index.
    pub fn tasks(&self) -> &[MoldableTask] {
        &self.tasks
    }

    /// Task `v`.
    pub fn task(&self, v: usize) -> &MoldableTask {
        &self.tasks[v]
    }

    /// The tasks `v` waits for.
    pub fn predecessors(&self, v: usize) -> &[usize] {
        &self.predecessors[v]
    }

    /// The tasks that wait for `v`.
    pub fn successors(&self, v: usize) -> &[usize] {
        &self.successors[v]
    }

    /// All edges `(from, to)`.
    pub fn edges(&self) -> Vec<(usize, usize)> {
        (0..self.len())
            .flat_map(|v| self.successors[v].iter().map(move |&s| (v, s)))
            .collect()
    }

    /// Every task once, each after all its predecessors.
    pub fn topological_order(&self) -> &[usize] {
        &self.topological_order
    }

    /// Tasks without predecessors.
    pub fn entry_tasks(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&v| self.predecessors[v].is_empty())
            .collect()
    }

    /// Tasks without successors.
    pub fn exit_tasks(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&v| self.successors[v].is_empty())
            .collect()
    }

    /// Task `v`'s precedence level: 0 for entry tasks, else one more than the highest
    /// level among its predecessors. Tasks of one level are independent (§4.2, §4.3).
    pub fn precedence_level(&self, v: usize) -> usize {
        self.precedence_levels[v]
    }

    /// The number of precedence levels.
    pub fn level_count(&self) -> usize {
        self.precedence_levels.iter().max().map_or(0, |&l| l + 1)
    }

    /// The number of tasks in each precedence level.
    pub fn level_sizes(&self) -> Vec<usize> {
        let mut sizes = vec![0; self.level_count()];
        for &l in &self.precedence_levels {
            sizes[l] += 1;
        }
        sizes
    }

    /// `width(i)` of §4.3 eq. (2): the number of tasks in the largest precedence level.
    pub fn width(&self) -> usize {
        self.level_sizes().into_iter().max().unwrap_or(0)
    }

    /// `ω_i` of §4.3 eq. (1): the sum of the sequential times of all tasks.
    pub fn sequential_work(&self) -> f64 {
        self.tasks.iter().map(|t| t.sequential_seconds).sum()
    }

    /// The same graph with every task's time multiplied by `factor` (a PTG generated in
    /// Gflop placed on processors of `1 / factor` Gflop/s).
    pub fn scaled(&self, factor: f64) -> Ptg {
        let mut scaled = self.clone();
        for t in &mut scaled.tasks {
            t.sequential_seconds *= factor;
        }
        scaled
    }

    /// The same graph with other task times (`tasks[v]` for task `v`); `None` when the
    /// count differs.
    pub fn reweighted(&self, tasks: Vec<MoldableTask>) -> Option<Ptg> {
        if tasks.len() != self.tasks.len() {
            return None;
        }
        Some(Ptg {
            name: self.name.clone(),
            tasks,
            predecessors: self.predecessors.clone(),
            successors: self.successors.clone(),
            topological_order: self.topological_order.clone(),
            precedence_levels: self.precedence_levels.clone(),
        })
    }

    /// Bottom levels under `allocation` (processors per task): `bl(v) = T(v, p_v) +
    /// max over successors s of bl(s)`, the length of the longest path from `v` to an exit
    /// task, `v` included (no communication costs, §3.1).
    pub fn bottom_levels(&self, allocation: &[u32]) -> Vec<f64> {
        let mut bl = vec![0.0; self.len()];
        for &v in self.topological_order.iter().rev() {
            let longest_after = self.successors[v]
                .iter()
                .map(|&s| bl[s])
                .fold(0.0, f64::max);
            bl[v] = self.tasks[v].time(allocation[v]) + longest_after;
        }
        bl
    }

    /// Top levels under `allocation`: the length of the longest path from an entry task
    /// to `v`, `v` excluded (its earliest start with unbounded processors).
    pub fn top_levels(&self, allocation: &[u32]) -> Vec<f64> {
        let mut tl = vec![0.0; self.len()];
        for &v in &self.topological_order {
            let end = tl[v] + self.tasks[v].time(allocation[v]);
            for &s in &self.successors[v] {
                if end > tl[s] {
                    tl[s] = end;
                }
            }
        }
        tl
    }

    /// The critical path's length `T_CP` under `allocation`: the largest bottom level.
    pub fn critical_path(&self, allocation: &[u32]) -> f64 {
        self.bottom_levels(allocation)
            .into_iter()
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A task of `seconds` on one processor with serial fraction `alpha`.
    pub(crate) fn task(seconds: f64, alpha: f64) -> MoldableTask {
        MoldableTask {
            sequential_seconds: seconds,
            serial_fraction: alpha,
        }
    }

    /// The diamond 0 -> {1, 2} -> 3 with perfectly parallel tasks of 10, 40, 20, 10 s.
    pub(crate) fn diamond() -> Ptg {
        Ptg::new(
            "diamond",
            vec![
                task(10.0, 0.0),
                task(40.0, 0.0),
                task(20.0, 0.0),
                task(10.0, 0.0),
            ],
            &[(0, 1), (0, 2), (1, 3), (2, 3)],
        )
        .unwrap()
    }

    #[test]
    fn levels_width_and_work_of_a_diamond() {
        let g = diamond();
        assert_eq!(g.topological_order(), &[0, 1, 2, 3]);
        assert_eq!(g.level_sizes(), vec![1, 2, 1]);
        assert_eq!(g.width(), 2);
        assert_eq!(g.sequential_work(), 80.0);
        assert_eq!(g.entry_tasks(), vec![0]);
        assert_eq!(g.exit_tasks(), vec![3]);
        assert_eq!(g.precedence_level(3), 2);
    }

    #[test]
    fn bottom_and_top_levels_follow_the_allocation() {
        let g = diamond();
        assert_eq!(g.bottom_levels(&[1, 1, 1, 1]), vec![60.0, 50.0, 30.0, 10.0]);
        assert_eq!(g.top_levels(&[1, 1, 1, 1]), vec![0.0, 10.0, 10.0, 50.0]);
        // Task 1 on 4 processors: 10 s; now the path through task 2 is critical.
        assert_eq!(g.bottom_levels(&[1, 4, 1, 1]), vec![40.0, 20.0, 30.0, 10.0]);
        assert_eq!(g.critical_path(&[1, 4, 1, 1]), 40.0);
    }

    #[test]
    fn jump_edges_set_the_precedence_level_by_the_longest_path() {
        // 0 -> 1 -> 2 and a jump 0 -> 2: task 2 is on level 2, not 1.
        let g = Ptg::new(
            "jump",
            vec![task(1.0, 0.0); 3],
            &[(0, 1), (1, 2), (0, 2), (0, 2)],
        )
        .unwrap();
        assert_eq!(g.precedence_level(2), 2);
        assert_eq!(g.edges().len(), 3, "the duplicate edge is merged");
    }

    #[test]
    fn bad_graphs_are_refused() {
        let t = vec![task(1.0, 0.0); 3];
        assert_eq!(
            Ptg::new("c", t.clone(), &[(0, 1), (1, 2), (2, 1)]).unwrap_err(),
            PtgError::Cycle(1)
        );
        assert_eq!(
            Ptg::new("s", t.clone(), &[(1, 1)]).unwrap_err(),
            PtgError::SelfLoop(1)
        );
        assert!(matches!(
            Ptg::new("u", t, &[(0, 3)]).unwrap_err(),
            PtgError::UnknownTask { to: 3, .. }
        ));
        assert_eq!(Ptg::new("e", vec![], &[]).unwrap_err(), PtgError::Empty);
    }
}
