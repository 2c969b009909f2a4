//! Turning a trace into a TLPA experiment: SWF jobs to rigid jobs, system loading and speed
//! heterogeneity. The TLPA paper names SL (Low, Medium, High) and SH (0, 0.1, 0.2) without
//! defining them; these are our definitions (also in docs/reproduction/tlpa.md).
//!
//! **Offered load** ρ = Σ_j procs_j × runtime_j / (Σ_c procs_c × speed_c × (last submit −
//! first submit)): the work the trace asks for per unit of the platform's capacity over the
//! arrival window. **System loading** rescales inter-arrival times by one factor so that ρ
//! hits a target: Low = 0.5, Medium = 0.7, High = 0.9 (or any number).
//! **Speed heterogeneity** SH spreads cluster speeds evenly over [1 − SH, 1 + SH] in the
//! order the clusters are listed: speed_i = 1 − SH + 2·SH·i/(n − 1) (all 1 when SH = 0).

use crate::alloc::{Cluster, Job};
use crate::trace::SwfTrace;

/// Why some trace records are not jobs of the experiment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobConversion {
    /// Records with no run time (cancelled before starting): dropped.
    pub never_ran: usize,
    /// Records with neither requested nor allocated processors: dropped.
    pub no_procs: usize,
    /// Jobs without a requested time: the runtime stands in as the estimate.
    pub estimate_from_runtime: usize,
}

/// Rigid jobs from an SWF trace: procs = requested (else allocated), runtime = run time,
/// estimate = requested time (else the run time).
pub fn jobs_from_swf(trace: &SwfTrace) -> (Vec<Job>, JobConversion) {
    let mut conversion = JobConversion::default();
    let mut jobs = Vec::with_capacity(trace.jobs.len());
    for record in &trace.jobs {
        let Some(runtime) = record.run else {
            conversion.never_ran += 1;
            continue;
        };
        let Some(procs) = record.procs() else {
            conversion.no_procs += 1;
            continue;
        };
        let estimate = record.requested_time.unwrap_or_else(|| {
            conversion.estimate_from_runtime += 1;
            runtime
        });
        jobs.push(Job {
            id: record.id,
            submit: record.submit,
            procs,
            runtime,
            estimate,
        });
    }
    (jobs, conversion)
}

/// System loading level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SystemLoad {
    /// SL low: offered load ρ = 0.5.
    Low,
    /// SL medium: offered load ρ = 0.7.
    Medium,
    /// SL high: offered load ρ = 0.9.
    High,
    /// An explicit target offered load ρ.
    Offered(f64),
}

impl SystemLoad {
    /// Target offered load ρ.
    pub fn target(self) -> f64 {
        match self {
            SystemLoad::Low => 0.5,
            SystemLoad::Medium => 0.7,
            SystemLoad::High => 0.9,
            SystemLoad::Offered(rho) => rho,
        }
    }

    /// `low`, `medium`, `high` or a number.
    pub fn parse(text: &str) -> Option<SystemLoad> {
        match text.to_ascii_lowercase().as_str() {
            "low" => Some(SystemLoad::Low),
            "medium" => Some(SystemLoad::Medium),
            "high" => Some(SystemLoad::High),
            other => other
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite() && *r > 0.0)
                .map(SystemLoad::Offered),
        }
    }

    /// The name [`SystemLoad::parse`] reads back: `low`, `medium`, `high` or the number.
    pub fn label(self) -> String {
        match self {
            SystemLoad::Low => "low".into(),
            SystemLoad::Medium => "medium".into(),
            SystemLoad::High => "high".into(),
            SystemLoad::Offered(r) => format!("{r}"),
        }
    }
}

/// ρ of `jobs` on `clusters` (see the module doc); 0 for fewer than two distinct submits.
pub fn offered_load(jobs: &[Job], clusters: &[Cluster]) -> f64 {
    let first = jobs.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
    let last = jobs
        .iter()
        .map(|j| j.submit)
        .fold(f64::NEG_INFINITY, f64::max);
    let capacity: f64 = clusters.iter().map(|c| f64::from(c.procs) * c.speed).sum();
    let work: f64 = jobs.iter().map(|j| f64::from(j.procs) * j.runtime).sum();
    if last > first && capacity > 0.0 {
        work / (capacity * (last - first))
    } else {
        0.0
    }
}

/// Rescale inter-arrival times so that the offered load becomes `load.target()`; submit
/// times keep their order and the first submit stays where it was.
pub fn scale_to_load(jobs: &[Job], clusters: &[Cluster], load: SystemLoad) -> Vec<Job> {
    let rho = offered_load(jobs, clusters);
    if rho <= 0.0 {
        return jobs.to_vec();
    }
    let factor = rho / load.target();
    let first = jobs.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
    jobs.iter()
        .map(|j| Job {
            submit: first + (j.submit - first) * factor,
            ..*j
        })
        .collect()
}

/// Cluster speeds for speed heterogeneity `sh` over `n` clusters (module doc).
pub fn heterogeneous_speeds(n: usize, sh: f64) -> Vec<f64> {
    if n <= 1 {
        return vec![1.0; n];
    }
    (0..n)
        .map(|i| 1.0 - sh + 2.0 * sh * i as f64 / (n - 1) as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{parse_swf, SwfOptions};

    #[test]
    fn converts_records_and_reports_drops() {
        let text = "1 0 0 100 4 -1 -1 -1 200 -1 1 1 1 -1 1 -1 -1 -1\n\
                    2 5 9 -1 -1 -1 -1 8 60 -1 5 1 1 -1 1 -1 -1 -1\n\
                    3 9 0 30 2 -1 -1 2 -1 -1 1 1 1 -1 1 -1 -1 -1\n";
        let trace = parse_swf(text.as_bytes(), SwfOptions::default()).unwrap();
        let (jobs, conv) = jobs_from_swf(&trace);
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].procs, jobs[0].estimate), (4, 200.0));
        assert_eq!(jobs[1].estimate, 30.0);
        assert_eq!(
            conv,
            JobConversion {
                never_ran: 1,
                no_procs: 0,
                estimate_from_runtime: 1
            }
        );
    }

    #[test]
    fn scaling_hits_the_target_load() {
        let clusters = [Cluster {
            procs: 10,
            speed: 1.0,
        }];
        let jobs: Vec<Job> = (0..10)
            .map(|i| Job {
                id: i,
                submit: 100.0 * i as f64,
                procs: 2,
                runtime: 50.0,
                estimate: 60.0,
            })
            .collect();
        let scaled = scale_to_load(&jobs, &clusters, SystemLoad::High);
        assert!((offered_load(&scaled, &clusters) - 0.9).abs() < 1e-12);
        assert_eq!(scaled[0].submit, 0.0);
        assert!(scaled.windows(2).all(|w| w[0].submit <= w[1].submit));
        assert_eq!(SystemLoad::parse("Medium"), Some(SystemLoad::Medium));
        assert_eq!(SystemLoad::parse("0.8"), Some(SystemLoad::Offered(0.8)));
        assert_eq!(SystemLoad::parse("-1"), None);
    }

    #[test]
    fn speeds_spread_evenly() {
        let s = heterogeneous_speeds(5, 0.2);
        let expected = [0.8, 0.9, 1.0, 1.1, 1.2];
        assert!(s.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-12));
        assert_eq!(heterogeneous_speeds(3, 0.0), vec![1.0; 3]);
    }
}
