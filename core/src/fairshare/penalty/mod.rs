//! Job penalty functions P(j) (Section 2-3 of the multi-resource fairshare paper), one
//! plug-in per file behind [`PenaltyFunction`], selected by name with [`penalty_by_name`].

mod cpu_only;
mod multi_resource;
mod processor_equivalent;

pub use cpu_only::CpuOnly;
pub use multi_resource::{MachinePrice, MultiResource, RequestPrice};
pub use processor_equivalent::ProcessorEquivalent;

use super::machine::MachinePool;
use super::request::JobRequest;

/// Why a penalty cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PenaltyError {
    #[error("no suitable machine for node request {request} ({count} node(s) x {cpus} CPUs, {ram_gib:.2} GiB RAM, {gpus} GPUs{constraints}): no machine has enough CPUs, RAM, GPUs, nodes or the asked properties")]
    NoSuitableMachine {
        request: usize,
        count: u32,
        cpus: u32,
        ram_gib: f64,
        gpus: u32,
        constraints: String,
    },
    #[error("the job requests nothing (0 CPUs on 0 nodes)")]
    EmptyRequest,
}

/// P(j): the penalty a job is charged per unit of (normalized) walltime.
pub trait PenaltyFunction: Send + Sync {
    /// Name used on the command line.
    fn name(&self) -> &'static str;
    /// P(j) of `job` on `platform`.
    fn penalty(&self, platform: &MachinePool, job: &JobRequest) -> Result<f64, PenaltyError>;
}

/// Names accepted by [`penalty_by_name`].
pub const PENALTY_NAMES: [&str; 3] = ["multi-resource", "cpu", "processor-equivalent"];

/// The penalty function called `name` (see [`PENALTY_NAMES`]).
pub fn penalty_by_name(name: &str) -> Option<Box<dyn PenaltyFunction>> {
    match name {
        "multi-resource" => Some(Box::new(MultiResource)),
        "cpu" => Some(Box::new(CpuOnly)),
        "processor-equivalent" => Some(Box::new(ProcessorEquivalent)),
        _ => None,
    }
}

/// Shared validation: a request for nothing is an error, not a zero penalty.
fn check_not_empty(job: &JobRequest) -> Result<(), PenaltyError> {
    if job.nodes.is_empty() || job.nodes.iter().all(|n| n.count == 0 || n.cpus == 0) {
        return Err(PenaltyError::EmptyRequest);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_knows_every_name() {
        for name in PENALTY_NAMES {
            assert_eq!(penalty_by_name(name).unwrap().name(), name);
        }
        assert!(penalty_by_name("drf").is_none());
    }
}
