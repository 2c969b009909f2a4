//! The paper's multi-resource, heterogeneity-aware penalty (Section 3.1, 3.3):
//!
//! PE_k(j, i) = max(reqCPU_{k,j} / availCPU_i, reqRAM_{k,j} / availRAM_i
//!                  [, reqGPU_{k,j} / availGPU_i]) × availCPU_i × node_cost_i      (eq. 4, 7)
//! P(j) = queue_cost_j × Σ_k min_{i ∈ M_{k,j}} PE_k(j, i)                          (eq. 5, 8)
//!
//! GPUs enter as a third resource on machines that have them (a GPU-less machine cannot
//! satisfy a GPU request, so it never prices one). An exclusive (`#excl`) node request is
//! charged the whole node: PE_k(j, i) = availCPU_i × node_cost_i. Because P(j) takes the
//! cheapest suitable machine, it does not depend on where the scheduler ran the job.

use super::{check_not_empty, PenaltyError, PenaltyFunction};
use crate::fairshare::machine::{Machine, MachinePool};
use crate::fairshare::request::{JobRequest, NodeRequest};

/// Eq. 8.
#[derive(Debug, Clone, Copy, Default)]
pub struct MultiResource;

/// PE_k(j, i) of one suitable machine.
#[derive(Debug, Clone, PartialEq)]
pub struct MachinePrice {
    /// Index into `MachinePool::machines()`.
    pub machine: usize,
    /// PE_k(j, i) of eq. 7: the processor equivalent of one node of the request on this
    /// machine, in CPUs × node cost.
    pub pe: f64,
}

/// The price of one node request group: every suitable machine and the cheapest.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestPrice {
    /// Nodes in the group (each is one k in eq. 8).
    pub(crate) count: u32,
    /// PE_k(j, i) for each i ∈ M_{k,j}, in platform order.
    pub suitable: Vec<MachinePrice>,
    /// min_{i ∈ M_{k,j}} PE_k(j, i).
    pub(crate) min_pe: f64,
}

impl MultiResource {
    /// PE_k(j, i) of eq. 7 (eq. 4 for single-node jobs), GPUs included when `m` has some.
    pub(crate) fn processor_equivalent(request: &NodeRequest, m: &Machine) -> f64 {
        let avail_cpu = f64::from(m.cpus_per_node);
        if request.exclusive {
            return avail_cpu * m.node_cost;
        }
        let mut share =
            (f64::from(request.cpus) / avail_cpu).max(request.ram as f64 / m.ram_per_node as f64);
        if m.gpus_per_node > 0 {
            share = share.max(f64::from(request.gpus) / f64::from(m.gpus_per_node));
        }
        share * avail_cpu * m.node_cost
    }

    /// Every node request's suitable machines and prices; errors when a request has none.
    pub fn breakdown(
        &self,
        platform: &MachinePool,
        job: &JobRequest,
    ) -> Result<Vec<RequestPrice>, PenaltyError> {
        check_not_empty(job)?;
        (0..job.nodes.len())
            .map(|k| {
                let request = &job.nodes[k];
                let suitable: Vec<MachinePrice> = job
                    .suitable(k, platform.machines())
                    .map(|(i, m)| MachinePrice {
                        machine: i,
                        pe: Self::processor_equivalent(request, m),
                    })
                    .collect();
                let min_pe = suitable.iter().map(|p| p.pe).fold(f64::INFINITY, f64::min);
                if suitable.is_empty() {
                    return Err(no_suitable_machine(k, request));
                }
                Ok(RequestPrice {
                    count: request.count,
                    suitable,
                    min_pe,
                })
            })
            .collect()
    }
}

fn no_suitable_machine(k: usize, request: &NodeRequest) -> PenaltyError {
    let constraints = if request.constraints.is_empty() {
        String::new()
    } else {
        format!(", constraints {:?}", request.constraints)
    };
    PenaltyError::NoSuitableMachine {
        request: k + 1,
        count: request.count,
        cpus: request.cpus,
        ram_gib: request.ram as f64 / (1u64 << 30) as f64,
        gpus: request.gpus,
        constraints,
    }
}

impl PenaltyFunction for MultiResource {
    fn name(&self) -> &'static str {
        "multi-resource"
    }

    fn penalty(&self, platform: &MachinePool, job: &JobRequest) -> Result<f64, PenaltyError> {
        let prices = self.breakdown(platform, job)?;
        let sum: f64 = prices.iter().map(|p| f64::from(p.count) * p.min_pe).sum();
        Ok(job.queue_cost * sum)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ProcessorEquivalent;
    use super::*;
    use proptest::prelude::*;

    const GB: u64 = 1 << 30;

    /// Examples 3-5: 10 nodes of 8 CPUs / 16 GB and 1 node of 80 CPUs / 512 GB.
    fn example_platform() -> MachinePool {
        MachinePool::new(vec![
            Machine::new("type1", 10, 8, 16 * GB),
            Machine::new("type2", 1, 80, 512 * GB),
        ])
        .unwrap()
    }

    #[test]
    fn paper_examples_3_to_5() {
        let p = example_platform();
        let ex3 = JobRequest::uniform(1, 1, 512 * GB, 0);
        let pe3 = ProcessorEquivalent.penalty(&p, &ex3).unwrap();
        assert!((pe3 - 160.0 * 512.0 / 672.0).abs() < 1e-9);
        assert_eq!(format!("{pe3:.1}"), "121.9");
        let ex4 = JobRequest::uniform(1, 80, 80 * GB, 0);
        assert_eq!(ProcessorEquivalent.penalty(&p, &ex4).unwrap(), 80.0);
        assert_eq!(MultiResource.penalty(&p, &ex3).unwrap(), 80.0);
        assert_eq!(MultiResource.penalty(&p, &ex4).unwrap(), 80.0);
        let ex5 = JobRequest::uniform(1, 1, 16 * GB, 0);
        let prices = MultiResource.breakdown(&p, &ex5).unwrap();
        let pes: Vec<f64> = prices[0].suitable.iter().map(|m| m.pe).collect();
        assert_eq!(pes, vec![8.0, 2.5]);
        assert_eq!(MultiResource.penalty(&p, &ex5).unwrap(), 2.5);
    }

    #[test]
    fn gpus_are_a_third_resource_and_multi_node_sums() {
        let mut gpu = Machine::new("gpu", 4, 16, 64 * GB);
        gpu.gpus_per_node = 4;
        gpu.node_cost = 2.0;
        let p = MachinePool::new(vec![Machine::new("cpu", 4, 16, 64 * GB), gpu]).unwrap();
        // 1 CPU, 1 GB, 2 of 4 GPUs: only the GPU machine fits; PE = 0.5 × 16 × 2.
        assert_eq!(
            MultiResource
                .penalty(&p, &JobRequest::uniform(1, 1, GB, 2))
                .unwrap(),
            16.0
        );
        // Two nodes of 8 CPUs on the CPU machine: 2 × 8.
        let mut job = JobRequest::uniform(2, 8, GB, 0);
        job.queue_cost = 1.5;
        assert_eq!(MultiResource.penalty(&p, &job).unwrap(), 24.0);
    }

    #[test]
    fn unsatisfiable_request_says_no_suitable_machine() {
        let err = MultiResource
            .penalty(&example_platform(), &JobRequest::uniform(1, 1, 600 * GB, 0))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("no suitable machine for node request 1"),
            "{err}"
        );
        let err = MultiResource
            .penalty(&example_platform(), &JobRequest::uniform(0, 1, GB, 0))
            .unwrap_err();
        assert_eq!(err, PenaltyError::EmptyRequest);
    }

    fn arb_platform() -> impl Strategy<Value = MachinePool> {
        prop::collection::vec(
            (1u32..20, 1u32..128, 1u64..1024, 0u32..5, 0.25f64..4.0),
            1..6,
        )
        .prop_map(|specs| {
            let machines = specs
                .into_iter()
                .enumerate()
                .map(|(i, (nodes, cpus, ram_gb, gpus, cost))| {
                    let mut m = Machine::new(&format!("m{i}"), nodes, cpus, ram_gb * GB);
                    m.gpus_per_node = gpus;
                    m.node_cost = cost;
                    m
                })
                .collect();
            MachinePool::new(machines).unwrap()
        })
    }

    fn arb_job() -> impl Strategy<Value = JobRequest> {
        (
            prop::collection::vec((1u32..3, 1u32..64, 0u64..512, 0u32..3), 1..4),
            0.5f64..3.0,
        )
            .prop_map(|(groups, qc)| {
                let mut job = JobRequest::from_requests(
                    groups
                        .into_iter()
                        .map(|(n, c, r, g)| NodeRequest::new(n, c, r * GB, g))
                        .collect(),
                );
                job.queue_cost = qc;
                job
            })
    }

    proptest! {
        /// P(j) is the same whatever suitable machine the scheduler picked: reordering or
        /// relabelling the machines (which changes any "first fit" choice) and the machine
        /// actually used never enter the formula.
        #[test]
        fn penalty_is_insensitive_to_the_machine_used(platform in arb_platform(), job in arb_job(), shift in 0usize..6) {
            if let Ok(p) = MultiResource.penalty(&platform, &job) {
                let mut machines = platform.machines().to_vec();
                let len = machines.len();
                machines.rotate_left(shift % len);
                let rotated = MachinePool::new(machines).unwrap();
                let q = MultiResource.penalty(&rotated, &job).unwrap();
                prop_assert!((p - q).abs() <= 1e-9 * p.max(1.0));
                // Every suitable machine prices the request at least P(j)'s share.
                for price in MultiResource.breakdown(&platform, &job).unwrap() {
                    for m in &price.suitable {
                        prop_assert!(m.pe >= price.min_pe);
                    }
                }
            }
        }

        /// P(j) / queue_cost <= Σ_k min over suitable machines of availCPU_i × node_cost_i.
        #[test]
        fn penalty_is_bounded_by_whole_nodes(platform in arb_platform(), job in arb_job()) {
            if let Ok(p) = MultiResource.penalty(&platform, &job) {
                let bound: f64 = (0..job.nodes.len()).map(|k| {
                    let cheapest = job.suitable(k, platform.machines())
                        .map(|(_, m)| f64::from(m.cpus_per_node) * m.node_cost)
                        .fold(f64::INFINITY, f64::min);
                    f64::from(job.nodes[k].count) * cheapest
                }).sum();
                prop_assert!(p / job.queue_cost <= bound * (1.0 + 1e-12), "{} > {}", p / job.queue_cost, bound);
            }
        }
    }
}
