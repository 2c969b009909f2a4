//! Parallel tasks: one run spanning several agents (`nodes = N` whole nodes, or
//! `procs = P` slots), its size as submitted and checked, and the host file its first
//! agent (the head) gives the task (`HETPILOT_NODEFILE`, the `host slots=N` format that
//! `mpirun -hostfile` and `srun --nodelist` read).

use crate::spec::{AppSpec, SpecError};
use serde::{Deserialize, Serialize};

/// The most processors one parallel task may ask for.
pub const MAX_PROCS: u64 = 65_536;
/// The most nodes one parallel task may ask for.
pub const MAX_NODES: u64 = 4_096;

/// What a parallel task spans, once checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ParallelSize {
    /// `nodes` whole agents, each with all its slots.
    Nodes(u32),
    /// `procs` slots on as many agents as it takes.
    Procs(u32),
    /// `nodes` agents with `per_node` slots on each (`procs = nodes × per_node`).
    NodesOf {
        /// The agents.
        nodes: u32,
        /// The slots on each.
        per_node: u32,
    },
}

impl ParallelSize {
    /// Whether each member gives all its slots (`nodes` alone).
    pub fn whole_nodes(self) -> bool {
        matches!(self, ParallelSize::Nodes(_))
    }
}

/// One host of a parallel run: its name and the slots the run holds there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HostSlots {
    /// The host name its agent registered under.
    pub host: String,
    /// The slots the run holds there.
    pub slots: u32,
}

/// One agent of a parallel run's group lease, as the agents listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupMember {
    /// The agent.
    pub agent: crate::AgentId,
    /// Its host name, as the run's host file names it.
    pub host: String,
    /// The slots the run holds there.
    pub slots: u32,
}

/// A parallel run's group lease: the agents that hold it, its head (which runs it) first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupLeaseView {
    /// The task.
    pub task: crate::TaskRef,
    /// The run's attempt.
    pub attempt: u32,
    /// The head, then the agents that keep slots for it.
    pub members: Vec<GroupMember>,
}

/// The host file of a run over `hosts`: one `host slots=N` line per host, in order, the
/// slots of agents that share a host name added up.
pub fn nodefile(hosts: &[HostSlots]) -> String {
    let mut lines: Vec<(&str, u64)> = Vec::with_capacity(hosts.len());
    for h in hosts {
        match lines.iter_mut().find(|(name, _)| *name == h.host) {
            Some((_, n)) => *n += u64::from(h.slots),
            None => lines.push((&h.host, u64::from(h.slots))),
        }
    }
    lines
        .iter()
        .map(|(host, n)| format!("{host} slots={n}\n"))
        .collect()
}

fn field(field: &'static str, problem: String) -> SpecError {
    SpecError::Field { field, problem }
}

/// The parallel size `nodes` and `procs` ask for (`None`: neither); an error names the
/// field that is out of range or does not fit with the other.
pub fn size_from(
    nodes: Option<u64>,
    procs: Option<u64>,
) -> Result<Option<ParallelSize>, SpecError> {
    let bounded = |name: &'static str, v: Option<u64>, max: u64| match v {
        Some(0) => Err(field(name, "must be at least 1".into())),
        Some(n) if n > max => Err(field(
            name,
            format!("{n} is more than the limit of {max} for one task"),
        )),
        other => Ok(other.map(|n| n as u32)),
    };
    let nodes = bounded("nodes", nodes, MAX_NODES)?;
    let procs = bounded("procs", procs, MAX_PROCS)?;
    Ok(Some(match (nodes, procs) {
        (None, None) => return Ok(None),
        (Some(n), None) => ParallelSize::Nodes(n),
        (None, Some(p)) => ParallelSize::Procs(p),
        (Some(n), Some(p)) if p % n != 0 => {
            return Err(field(
                "procs",
                format!("{p} processors do not split evenly over {n} nodes"),
            ))
        }
        (Some(n), Some(p)) => ParallelSize::NodesOf {
            nodes: n,
            per_node: p / n,
        },
    }))
}

/// The parallel size `spec` asks for (`None`: a task on one agent); an error names the
/// field that is out of range or does not fit with another.
pub fn size_of(spec: &AppSpec) -> Result<Option<ParallelSize>, SpecError> {
    let Some(size) = size_from(spec.nodes, spec.procs)? else {
        return Ok(None);
    };
    if spec.cores != 1 {
        return Err(field(
            "cores",
            "a parallel task's size is its `nodes` and `procs`; leave `cores` out".into(),
        ));
    }
    if spec.gpus.is_some() {
        return Err(field(
            "gpus",
            "a parallel task (`nodes` or `procs`) cannot ask for GPUs yet".into(),
        ));
    }
    if !spec.resources.is_empty() {
        return Err(field(
            "resources",
            "a parallel task (`nodes` or `procs`) cannot ask for named resources yet".into(),
        ));
    }
    if spec.dag.is_some() {
        return Err(field(
            "nodes",
            "a workflow's parallel tasks say `nodes` or `procs` each, not the workflow".into(),
        ));
    }
    if spec.data_intensive {
        return Err(field(
            "data_intensive",
            "a parallel task (`nodes` or `procs`) is not placed by Het-HPS partitions".into(),
        ));
    }
    Ok(Some(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodefile_has_one_line_per_host_with_shared_hosts_added_up() {
        let h = |host: &str, slots| HostSlots {
            host: host.into(),
            slots,
        };
        assert_eq!(
            nodefile(&[h("n1", 2), h("n2", 2), h("n1", 1)]),
            "n1 slots=3\nn2 slots=2\n"
        );
        assert_eq!(nodefile(&[]), "");
    }
}
