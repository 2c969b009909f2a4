//! The classic single-resource penalty (Section 2.1): P(j) = queue_cost × reqCPU_j.
//! It still requires a suitable machine for every node request, so bad requests fail the
//! same way as with the other penalties.

use super::{check_not_empty, MultiResource, PenaltyError, PenaltyFunction};
use crate::fairshare::machine::MachinePool;
use crate::fairshare::request::JobRequest;

/// P(j) = reqCPU_j.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuOnly;

impl PenaltyFunction for CpuOnly {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn penalty(&self, platform: &MachinePool, job: &JobRequest) -> Result<f64, PenaltyError> {
        check_not_empty(job)?;
        MultiResource.breakdown(platform, job)?;
        Ok(job.queue_cost * job.total_cpus() as f64)
    }
}
