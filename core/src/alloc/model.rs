//! The centralized heterogeneous multi-cluster (CHMC) model of the TLPA paper (Section I):
//! clusters of identical processors with a relative speed, and rigid parallel jobs with a
//! processor count, an actual runtime and a user estimate (both at reference speed 1).
//! A job of runtime r runs r / speed_c on cluster c (single-site allocation).

/// One cluster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cluster {
    /// Processors of the cluster (at least 1).
    pub procs: u32,
    /// Relative speed (1 = reference).
    pub speed: f64,
}

/// One rigid parallel job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Job {
    /// Job number, as in the trace (SWF field 1).
    pub id: i64,
    /// Submit time, seconds from the start of the trace.
    pub submit: f64,
    /// Processors the job needs, all on one cluster.
    pub procs: u32,
    /// Actual runtime at speed 1, seconds.
    pub runtime: f64,
    /// The user's estimate (requested time) at speed 1, what schedulers may look at.
    pub estimate: f64,
}

impl Job {
    /// Actual runtime on `c`.
    pub fn runtime_on(&self, c: &Cluster) -> f64 {
        self.runtime / c.speed
    }

    /// Expected runtime on `c`, from the estimate.
    pub fn estimate_on(&self, c: &Cluster) -> f64 {
        self.estimate / c.speed
    }
}

/// Bad platforms or workloads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AllocError {
    /// No cluster at all.
    #[error(
        "the cluster list is empty: give at least one cluster (e.g. --clusters 8,128,128,128,50)"
    )]
    NoClusters,
    /// A cluster without processors.
    #[error("cluster {index} has 0 processors")]
    EmptyCluster {
        /// Position of the cluster in the list.
        index: usize,
    },
    /// A cluster whose speed is not a finite positive number.
    #[error("cluster {index} has speed {speed}: speeds must be finite and > 0")]
    BadSpeed {
        /// Position of the cluster in the list.
        index: usize,
        /// The speed given.
        speed: f64,
    },
    /// A job wider than every cluster: it could never start.
    #[error("job {id} needs {procs} processors but the largest cluster has {largest}: it can never run (single-site allocation)")]
    JobTooLarge {
        /// The job's number.
        id: i64,
        /// Processors it needs.
        procs: u32,
        /// Processors of the largest cluster.
        largest: u32,
    },
    /// A job with a negative or non-finite time, or no processors.
    #[error("job {id} has an invalid {what}: {value} (must be finite and >= 0; processors > 0)")]
    BadJob {
        /// The job's number.
        id: i64,
        /// Which value: `submit time`, `runtime`, `estimate` or `processor count`.
        what: &'static str,
        /// The value given.
        value: f64,
    },
    /// A TLPA look-ahead deeper than [`MAX_TLPA_DEPTH`](super::MAX_TLPA_DEPTH).
    #[error(
        "a TLPA look-ahead depth of {0} is more than the {max} allowed (--depth, [scheduler] tlpa_depth)",
        max = super::MAX_TLPA_DEPTH
    )]
    DepthTooLarge(usize),
}

/// Check clusters: non-empty, positive sizes and speeds.
pub fn validate_clusters(clusters: &[Cluster]) -> Result<(), AllocError> {
    if clusters.is_empty() {
        return Err(AllocError::NoClusters);
    }
    for (index, c) in clusters.iter().enumerate() {
        if c.procs == 0 {
            return Err(AllocError::EmptyCluster { index });
        }
        if !(c.speed.is_finite() && c.speed > 0.0) {
            return Err(AllocError::BadSpeed {
                index,
                speed: c.speed,
            });
        }
    }
    Ok(())
}

/// Check jobs against the clusters: every job fits some cluster, numbers are sane.
pub fn validate_jobs(clusters: &[Cluster], jobs: &[Job]) -> Result<(), AllocError> {
    validate_clusters(clusters)?;
    let largest = clusters.iter().map(|c| c.procs).max().unwrap_or(0);
    for j in jobs {
        for (what, value) in [
            ("submit time", j.submit),
            ("runtime", j.runtime),
            ("estimate", j.estimate),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(AllocError::BadJob {
                    id: j.id,
                    what,
                    value,
                });
            }
        }
        if j.procs == 0 {
            return Err(AllocError::BadJob {
                id: j.id,
                what: "processor count",
                value: 0.0,
            });
        }
        if j.procs > largest {
            return Err(AllocError::JobTooLarge {
                id: j.id,
                procs: j.procs,
                largest,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_errors_for_bad_input() {
        assert_eq!(validate_clusters(&[]), Err(AllocError::NoClusters));
        let c = [
            Cluster {
                procs: 8,
                speed: 1.0,
            },
            Cluster {
                procs: 16,
                speed: 1.0,
            },
        ];
        let big = Job {
            id: 7,
            submit: 0.0,
            procs: 17,
            runtime: 1.0,
            estimate: 1.0,
        };
        let err = validate_jobs(&c, &[big]).unwrap_err();
        assert_eq!(
            err,
            AllocError::JobTooLarge {
                id: 7,
                procs: 17,
                largest: 16
            }
        );
        assert!(err.to_string().contains("largest cluster has 16"));
        assert!(validate_clusters(&[Cluster {
            procs: 1,
            speed: 0.0
        }])
        .is_err());
    }
}
