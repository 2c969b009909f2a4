//! A cluster's processor availability over time as an allocator sees it: free processors
//! now and the expected releases of running jobs (from estimates). TLPA's look-ahead
//! (Fig. 1, step II.b) asks it for the earliest time a job fits.

/// Processors expected back at `end`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Release {
    pub(crate) end: f64,
    pub(crate) procs: u32,
    /// Job index (so the simulator can drop the entry when the job really ends).
    pub(crate) job: usize,
}

/// Free processors and pending releases of one cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterLoad {
    /// Processors free now.
    pub free: u32,
    /// Sorted by `end`, latest first (the earliest release is at the back).
    releases: Vec<Release>,
}

impl ClusterLoad {
    /// A cluster of `procs` processors, all free.
    pub fn idle(procs: u32) -> Self {
        ClusterLoad {
            free: procs,
            releases: Vec::new(),
        }
    }

    /// Take `procs` processors until `end` for job `job`.
    pub fn occupy(&mut self, procs: u32, end: f64, job: usize) {
        debug_assert!(procs <= self.free);
        self.free -= procs;
        let at = self.releases.partition_point(|r| r.end > end);
        self.releases.insert(at, Release { end, procs, job });
    }

    /// Job `job` really ended: give its processors back and forget its release.
    pub fn release_job(&mut self, job: usize) {
        if let Some(pos) = self.releases.iter().rposition(|r| r.job == job) {
            let r = self.releases.remove(pos);
            self.free += r.procs;
        }
    }

    /// Apply every expected release up to `t` (look-ahead only).
    pub(crate) fn advance(&mut self, t: f64) {
        while let Some(r) = self.releases.last() {
            if r.end > t {
                break;
            }
            self.free += r.procs;
            self.releases.pop();
        }
    }

    /// Earliest time >= `now` at which `procs` processors are expected free. Releases
    /// expected before `now` (jobs running past their estimate) count as happening at `now`.
    pub(crate) fn earliest(&self, procs: u32, now: f64) -> Option<f64> {
        if self.free >= procs {
            return Some(now);
        }
        let mut free = self.free;
        for r in self.releases.iter().rev() {
            free += r.procs;
            if free >= procs {
                return Some(r.end.max(now));
            }
        }
        None
    }

    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        self.releases.len()
    }

    /// Copy `other` into `self`, reusing the allocation.
    pub(crate) fn copy_from(&mut self, other: &ClusterLoad) {
        self.free = other.free;
        self.releases.clear();
        self.releases.extend_from_slice(&other.releases);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_walks_releases_in_time_order() {
        let mut load = ClusterLoad::idle(10);
        load.occupy(4, 50.0, 0);
        load.occupy(5, 20.0, 1);
        assert_eq!(load.free, 1);
        assert_eq!(load.earliest(1, 0.0), Some(0.0));
        assert_eq!(load.earliest(6, 0.0), Some(20.0));
        assert_eq!(load.earliest(10, 0.0), Some(50.0));
        assert_eq!(load.earliest(11, 0.0), None);
        assert_eq!(
            load.earliest(6, 30.0),
            Some(30.0),
            "overdue release counts as now"
        );
        load.advance(20.0);
        assert_eq!((load.free, load.running()), (6, 1));
        load.release_job(0);
        assert_eq!((load.free, load.running()), (10, 0));
    }
}
