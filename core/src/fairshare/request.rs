//! What a job asks for, per node (Section 3.3): r node requests, each with CPUs, RAM,
//! GPUs and constraints, plus the queue cost of eq. 5/8 and optional SPEC bounds
//! (Section 3.2: users may give the minimum and maximum eligible SPEC).

use super::machine::Machine;

/// A constraint a node request places on a machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint {
    /// The machine must carry this property (`cl_zewura`, `x86_64`; `nodecpusN` asks for N
    /// CPUs per node).
    Property(String),
    /// The machine must not carry this property. An excluded single host (`^zewura12.x`)
    /// does not make a multi-node machine unsuitable: the job can use its other nodes.
    Excluded(String),
    /// The job names a host; the machine must be that host's cluster (host name without its
    /// trailing number and domain, `zegox20.cerit-sc.cz` -> `zegox`).
    Host(String),
}

/// A group of `count` identical node requests (k = 1..count in eq. 7/8).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRequest {
    /// How many nodes of this shape.
    pub count: u32,
    /// reqCPU_{k,j}
    pub cpus: u32,
    /// reqRAM_{k,j}, bytes.
    pub ram: u64,
    /// GPUs per node; a machine without enough GPUs is unsuitable.
    pub gpus: u32,
    /// Whole nodes reserved (`#excl`): the job is charged the whole node, PE = availCPU_i.
    pub exclusive: bool,
    /// Every constraint must hold for a machine to be suitable.
    pub constraints: Vec<Constraint>,
}

/// A job's resource request.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRequest {
    /// The node request groups (r of eq. 7/8); the job needs all of them.
    pub nodes: Vec<NodeRequest>,
    /// queue_cost_j of eq. 5/8, default 1.
    pub queue_cost: f64,
    /// Eligible SPEC range (Section 3.2), inclusive.
    pub(crate) min_speed: Option<f64>,
    pub(crate) max_speed: Option<f64>,
}

impl NodeRequest {
    /// `count` nodes each with `cpus`, `ram` bytes and `gpus`, no constraints.
    pub fn new(count: u32, cpus: u32, ram: u64, gpus: u32) -> Self {
        NodeRequest {
            count,
            cpus,
            ram,
            gpus,
            exclusive: false,
            constraints: Vec::new(),
        }
    }

    /// True when machine `m` can satisfy this request (resources, node count, constraints).
    pub fn fits(&self, m: &Machine) -> bool {
        self.cpus <= m.cpus_per_node
            && self.ram <= m.ram_per_node
            && self.gpus <= m.gpus_per_node
            && self.count <= m.nodes
            && self.constraints.iter().all(|c| satisfies(m, c))
    }
}

fn satisfies(m: &Machine, constraint: &Constraint) -> bool {
    match constraint {
        Constraint::Property(p) => match p.strip_prefix("nodecpus").map(str::parse::<u32>) {
            Some(Ok(n)) => n == m.cpus_per_node,
            _ => m.has_property(p),
        },
        Constraint::Excluded(p) => {
            if p.contains('.') {
                !(m.nodes == 1 && host_cluster(p) == m.name)
            } else {
                !m.has_property(p)
            }
        }
        Constraint::Host(h) => host_cluster(h) == m.name,
    }
}

/// `zegox20.cerit-sc.cz` -> `zegox`.
fn host_cluster(host: &str) -> &str {
    let short = host.split('.').next().unwrap_or(host);
    short.trim_end_matches(|c: char| c.is_ascii_digit())
}

impl JobRequest {
    /// `nodes` nodes, each with `cpus`, `ram` bytes and `gpus` (the `fairshare penalty` CLI).
    pub fn uniform(nodes: u32, cpus: u32, ram: u64, gpus: u32) -> Self {
        JobRequest::from_requests(vec![NodeRequest::new(nodes, cpus, ram, gpus)])
    }

    /// A job of these node request groups, queue cost 1 and no SPEC bounds.
    pub fn from_requests(nodes: Vec<NodeRequest>) -> Self {
        JobRequest {
            nodes,
            queue_cost: 1.0,
            min_speed: None,
            max_speed: None,
        }
    }

    /// Total CPUs asked for (Σ_k reqCPU_{k,j}).
    pub fn total_cpus(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| u64::from(n.count) * u64::from(n.cpus))
            .sum()
    }

    /// Total RAM asked for, bytes.
    pub fn total_ram(&self) -> u64 {
        self.nodes.iter().map(|n| u64::from(n.count) * n.ram).sum()
    }

    /// Total GPUs asked for.
    pub(crate) fn total_gpus(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| u64::from(n.count) * u64::from(n.gpus))
            .sum()
    }

    /// True when `m`'s speed is inside the job's eligible SPEC range.
    pub fn speed_ok(&self, m: &Machine) -> bool {
        self.min_speed.is_none_or(|lo| m.speed >= lo)
            && self.max_speed.is_none_or(|hi| m.speed <= hi)
    }

    /// M_{k,j}: the machines suitable for node request `k`.
    pub(crate) fn suitable<'a>(
        &'a self,
        k: usize,
        machines: &'a [Machine],
    ) -> impl Iterator<Item = (usize, &'a Machine)> + 'a {
        let request = &self.nodes[k];
        machines
            .iter()
            .enumerate()
            .filter(move |(_, m)| request.fits(m) && self.speed_ok(m))
    }
}
