//! A small parallel-job trace for tests of both trace simulators (the alloc simulator and
//! the live control plane's replay), so the two are tested on the same jobs: 16 jobs of 1-8
//! processors on clusters of 4, 8 and 8, where a queue forms (jobs 5-8 wait for the
//! 8-processor ones) and drains.

use super::workload::jobs_from_swf;
use super::{Cluster, Job};
use crate::trace::{parse_swf, SwfOptions};

/// The trace, in SWF.
pub const SIXTEEN_JOBS: &str = "\
; a fixture: job submit wait run alloc cpu mem req_procs req_time ...
1 0 -1 100 -1 -1 -1 8 100 -1 1 1 1 -1 1 -1 -1 -1
2 5 -1 300 -1 -1 -1 8 300 -1 1 1 1 -1 1 -1 -1 -1
3 10 -1 50 -1 -1 -1 4 50 -1 1 1 1 -1 1 -1 -1 -1
4 12 -1 200 -1 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
5 20 -1 400 -1 -1 -1 8 400 -1 1 1 1 -1 1 -1 -1 -1
6 25 -1 60 -1 -1 -1 3 60 -1 1 1 1 -1 1 -1 -1 -1
7 30 -1 120 -1 -1 -1 6 120 -1 1 1 1 -1 1 -1 -1 -1
8 40 -1 30 -1 -1 -1 1 30 -1 1 1 1 -1 1 -1 -1 -1
9 300 -1 80 -1 -1 -1 4 80 -1 1 1 1 -1 1 -1 -1 -1
10 310 -1 90 -1 -1 -1 8 90 -1 1 1 1 -1 1 -1 -1 -1
11 320 -1 150 -1 -1 -1 2 150 -1 1 1 1 -1 1 -1 -1 -1
12 330 -1 20 -1 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1
13 900 -1 500 -1 -1 -1 8 500 -1 1 1 1 -1 1 -1 -1 -1
14 905 -1 100 -1 -1 -1 8 100 -1 1 1 1 -1 1 -1 -1 -1
15 910 -1 100 -1 -1 -1 5 100 -1 1 1 1 -1 1 -1 -1 -1
16 915 -1 40 -1 -1 -1 2 40 -1 1 1 1 -1 1 -1 -1 -1
";

/// The trace's jobs.
pub fn sixteen_jobs() -> Vec<Job> {
    let trace = parse_swf(SIXTEEN_JOBS.as_bytes(), SwfOptions::default())
        .expect("the fixture is valid SWF");
    jobs_from_swf(&trace).0
}

/// The trace's three clusters (4, 8 and 8 processors) at `speeds`.
pub fn clusters(speeds: [f64; 3]) -> Vec<Cluster> {
    [4, 8, 8]
        .into_iter()
        .zip(speeds)
        .map(|(procs, speed)| Cluster { procs, speed })
        .collect()
}
