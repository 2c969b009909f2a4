//! Moab/Maui processor equivalent over the whole system, eq. 3:
//! PE(j) = max(reqCPU_j / availCPU, reqRAM_j / availRAM [, reqGPU_j / availGPU]) × availCPU,
//! with system-wide totals. Shown for comparison (Examples 3 and 4: 121.9 and 80).

use super::{check_not_empty, PenaltyError, PenaltyFunction};
use crate::fairshare::machine::MachinePool;
use crate::fairshare::request::JobRequest;

/// Eq. 3, times queue_cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessorEquivalent;

impl PenaltyFunction for ProcessorEquivalent {
    fn name(&self) -> &'static str {
        "processor-equivalent"
    }

    fn penalty(&self, platform: &MachinePool, job: &JobRequest) -> Result<f64, PenaltyError> {
        check_not_empty(job)?;
        let cpus = platform.total_cpus() as f64;
        let mut share = (job.total_cpus() as f64 / cpus)
            .max(job.total_ram() as f64 / platform.total_ram() as f64);
        if platform.total_gpus() > 0 {
            share = share.max(job.total_gpus() as f64 / platform.total_gpus() as f64);
        }
        Ok(job.queue_cost * share * cpus)
    }
}
