//! The execution-time model of one data-parallel task, the computational complexities of
//! the paper's synthetic tasks, and the clusters of its Table 1.
//!
//! A task is *moldable*: it runs on any number of processors `p`, taking `T(v, p)`
//! (§3.1). Like the paper (§5.1.2) we use Amdahl's law: a fraction `α` of the sequential
//! time does not parallelize (it includes the task's I/O, since data go through files).

use serde::{Deserialize, Serialize};

/// One moldable data-parallel task: its sequential time and Amdahl's serial fraction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoldableTask {
    /// `T(v, 1)`: the execution time on one processor, in seconds (or, before a PTG is
    /// placed on a cluster, in Gflop: the time on a 1 Gflop/s processor).
    pub sequential_seconds: f64,
    /// Amdahl's non-parallelizable fraction `α` in [0, 1] (§5.1.2: uniform in [0, 0.25]).
    pub serial_fraction: f64,
}

impl MoldableTask {
    /// A task of zero cost (the entry and exit tasks the generators add, §3.1).
    pub const EMPTY: MoldableTask = MoldableTask {
        sequential_seconds: 0.0,
        serial_fraction: 0.0,
    };

    /// `T(v, p) = T(v, 1) · (α + (1 − α) / p)`, Amdahl's law (§5.1.2). `p` is at least 1.
    pub fn time(&self, processors: u32) -> f64 {
        let p = processors.max(1) as f64;
        self.sequential_seconds * (self.serial_fraction + (1.0 - self.serial_fraction) / p)
    }

    /// The task's area `p · T(v, p)`, in processor-seconds (used by HCPA's `T_A`).
    pub fn area(&self, processors: u32) -> f64 {
        processors.max(1) as f64 * self.time(processors)
    }

    /// Whether the task costs nothing (it then holds no processor when scheduled).
    pub fn is_empty(&self) -> bool {
        self.sequential_seconds <= 0.0
    }
}

/// The computational complexity of a task operating on `d` double-precision elements
/// (§5.1.2), in floating-point operations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Complexity {
    /// `a · d`, e.g. a stencil on a `√d × √d` domain, `a` in [2^6, 2^9].
    Linear {
        /// The iteration factor `a`.
        factor: f64,
    },
    /// `a · d · log₂ d`, e.g. sorting `d` elements, `a` in [2^6, 2^9].
    LogLinear {
        /// The iteration factor `a`.
        factor: f64,
    },
    /// `d^{3/2}`, e.g. multiplying two `√d × √d` matrices.
    MatrixProduct,
}

impl Complexity {
    /// The number of operations on `elements` elements (§5.1.2's three expressions).
    pub fn operations(&self, elements: f64) -> f64 {
        match *self {
            Complexity::Linear { factor } => factor * elements,
            Complexity::LogLinear { factor } => factor * elements * elements.log2(),
            Complexity::MatrixProduct => elements.powf(1.5),
        }
    }
}

/// A homogeneous cluster: its number of processors and their speed (Table 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// The Grid'5000 cluster's name.
    pub name: String,
    /// The number of processors `P`.
    pub processors: u32,
    /// Each processor's speed in Gflop/s (HPL over ACML, Table 1).
    pub gflops: f64,
}

impl Cluster {
    /// Table 1's four clusters, in the order of Table 2's columns: chti, grillon, grelon, gdx.
    pub fn table1() -> Vec<Cluster> {
        [
            ("chti", 20, 4.311),
            ("grillon", 47, 3.379),
            ("grelon", 120, 3.185),
            ("gdx", 216, 3.388),
        ]
        .into_iter()
        .map(|(name, processors, gflops)| Cluster {
            name: name.to_string(),
            processors,
            gflops,
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amdahl_time_and_area() {
        let t = MoldableTask {
            sequential_seconds: 100.0,
            serial_fraction: 0.2,
        };
        assert_eq!(t.time(1), 100.0);
        assert!((t.time(4) - (20.0 + 20.0)).abs() < 1e-12);
        assert!((t.area(4) - 160.0).abs() < 1e-12);
        // Strictly decreasing time, strictly increasing area when 0 < α < 1.
        for p in 1..50 {
            assert!(t.time(p + 1) < t.time(p));
            assert!(t.area(p + 1) > t.area(p));
        }
        assert!(MoldableTask::EMPTY.is_empty());
        assert_eq!(MoldableTask::EMPTY.time(7), 0.0);
    }

    #[test]
    fn complexities() {
        let d = 1024.0 * 1024.0;
        assert_eq!(Complexity::Linear { factor: 64.0 }.operations(d), 64.0 * d);
        assert_eq!(
            Complexity::LogLinear { factor: 2.0 }.operations(d),
            2.0 * d * 20.0
        );
        assert_eq!(
            Complexity::MatrixProduct.operations(d),
            1024.0 * 1024.0 * 1024.0
        );
    }

    #[test]
    fn table1_has_the_four_clusters() {
        let c = Cluster::table1();
        let procs: Vec<u32> = c.iter().map(|c| c.processors).collect();
        assert_eq!(procs, [20, 47, 120, 216]);
        assert_eq!(c[2].name, "grelon");
        assert_eq!(c[2].gflops, 3.185);
    }
}
