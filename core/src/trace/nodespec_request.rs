//! PBS nodespecs as fairshare job requests: what a traced job asked for, in the terms the
//! multi-resource penalty prices (per-node CPUs, memory, GPUs and constraints).

use super::NodespecGroup;
use crate::fairshare::{Constraint, JobRequest, NodeRequest};

/// From parsed PBS nodespec groups and the job's total requested memory (bytes). A
/// group's own `mem=` wins; otherwise the job's memory is split over its nodes in
/// proportion to their CPUs (PBS `mem` is per job).
pub fn job_request(groups: &[NodespecGroup], job_memory: Option<u64>) -> JobRequest {
    let total_cpus: u64 = groups
        .iter()
        .map(|g| u64::from(g.count) * u64::from(g.ppn))
        .sum::<u64>()
        .max(1);
    let nodes = groups
        .iter()
        .map(|g| {
            let ram = g.mem.unwrap_or_else(|| {
                let total = job_memory.unwrap_or(0) as f64;
                (total * f64::from(g.ppn) / total_cpus as f64).round() as u64
            });
            let mut constraints: Vec<Constraint> = g
                .properties
                .iter()
                .map(|p| Constraint::Property(p.clone()))
                .collect();
            constraints.extend(g.excluded.iter().map(|p| Constraint::Excluded(p.clone())));
            constraints.extend(g.host.iter().map(|h| Constraint::Host(h.clone())));
            NodeRequest {
                count: g.count,
                cpus: g.ppn,
                ram,
                gpus: g.gpus,
                exclusive: g.exclusive,
                constraints,
            }
        })
        .collect();
    JobRequest::from_requests(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fairshare::Machine;
    use crate::trace::parse_nodespec;

    fn cluster(name: &str, nodes: u32, cpus: u32, ram: u64) -> Machine {
        Machine::new(name, nodes, cpus, ram)
    }

    #[test]
    fn constraints_select_machines() {
        let machines = [cluster("zewura", 20, 80, 500), cluster("zegox", 48, 12, 90)];
        let job = job_request(&parse_nodespec("1:ppn=8:cl_zegox").unwrap(), Some(16));
        assert_eq!(
            job.suitable(0, &machines)
                .map(|(i, _)| i)
                .collect::<Vec<_>>(),
            vec![1]
        );
        let job = job_request(&parse_nodespec("1:ppn=8:^cl_zegox").unwrap(), Some(16));
        assert_eq!(
            job.suitable(0, &machines)
                .map(|(i, _)| i)
                .collect::<Vec<_>>(),
            vec![0]
        );
        let job = job_request(&parse_nodespec("1:ppn=4:nodecpus80").unwrap(), None);
        assert_eq!(job.suitable(0, &machines).count(), 1);
        let job = job_request(&parse_nodespec("zegox20.cerit-sc.cz:ppn=4").unwrap(), None);
        assert_eq!(
            job.suitable(0, &machines)
                .map(|(i, _)| i)
                .collect::<Vec<_>>(),
            vec![1]
        );
        let job = job_request(
            &parse_nodespec("1:ppn=4:^zewura12.cerit-sc.cz").unwrap(),
            None,
        );
        assert_eq!(
            job.suitable(0, &machines).count(),
            2,
            "one excluded host leaves the cluster usable"
        );
        let job = job_request(&parse_nodespec("1:ppn=4:infiniband").unwrap(), None);
        assert_eq!(
            job.suitable(0, &machines).count(),
            0,
            "unknown properties must be provided"
        );
        let job = job_request(&parse_nodespec("49:ppn=1").unwrap(), None);
        assert_eq!(
            job.suitable(0, &machines).count(),
            0,
            "more nodes than any cluster"
        );
    }

    #[test]
    fn job_memory_is_split_by_cpus() {
        let job = job_request(&parse_nodespec("1:ppn=1+3:ppn=2").unwrap(), Some(700));
        assert_eq!(job.nodes[0].ram, 100);
        assert_eq!(job.nodes[1].ram, 200);
        assert_eq!(job.total_ram(), 700);
        assert_eq!(job.total_cpus(), 7);
    }
}
