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
    /// No machine can satisfy one of the job's node requests, so M_{k,j} is empty.
    #[error("no suitable machine for node request {request} ({count} node(s) x {cpus} CPUs, {ram_gib:.2} GiB RAM, {gpus} GPUs{constraints}): no machine has enough CPUs, RAM, GPUs, nodes or the asked properties")]
    NoSuitableMachine {
        /// Position of the node request in [`JobRequest::nodes`], counting from 1.
        request: usize,
        /// Nodes in that request.
        count: u32,
        /// CPUs per node it asks for.
        cpus: u32,
        /// RAM per node it asks for, GiB.
        ram_gib: f64,
        /// GPUs per node it asks for.
        gpus: u32,
        /// Its constraints as text (`, constraints [...]`), empty when there are none.
        constraints: String,
    },
    /// The job asks for no CPUs at all (no node request, or only empty ones).
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

hetpilot_protocol::named_enum! {
    /// A penalty function, by the name the configuration gives it.
    pub enum Penalty("penalty") {
        /// [`MultiResource`].
        MultiResource = "multi-resource",
        /// [`CpuOnly`].
        Cpu = "cpu",
        /// [`ProcessorEquivalent`].
        ProcessorEquivalent = "processor-equivalent",
    }
}

impl Penalty {
    /// The function.
    pub fn build(self) -> Box<dyn PenaltyFunction> {
        match self {
            Penalty::MultiResource => Box::new(MultiResource),
            Penalty::Cpu => Box::new(CpuOnly),
            Penalty::ProcessorEquivalent => Box::new(ProcessorEquivalent),
        }
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
        for &penalty in Penalty::ALL {
            assert_eq!(penalty.build().name(), penalty.as_str());
        }
        assert!("drf".parse::<Penalty>().is_err());
    }
}
