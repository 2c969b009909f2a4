//! The system as the fairshare penalty sees it: a [`MachinePool`] of machines (node types
//! or clusters) with per-node CPUs, RAM, GPUs, a relative speed (SPEC, Section 3.2), a node
//! cost (eq. 4 footnote 5) and properties a job can ask for.

use std::collections::BTreeSet;

/// One machine type: `nodes` identical nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Machine (cluster or node type) name; a request's `cl_<name>` or `<name>` selects it.
    pub name: String,
    /// Identical nodes of this type (at least 1).
    pub nodes: u32,
    /// availCPU_i: CPUs (cores) per node.
    pub cpus_per_node: u32,
    /// availRAM_i: RAM per node, bytes.
    pub ram_per_node: u64,
    /// GPUs per node (0 when the machine has none; GPUs then do not enter its PE).
    pub gpus_per_node: u32,
    /// SPEC_i: relative speed used for walltime normalization (eq. 6, 9). 1.0 = reference.
    pub speed: f64,
    /// node_cost_i (eq. 4), default 1.0.
    pub node_cost: f64,
    /// Properties a request can name (`cl_<name>` and the machine's name are implicit).
    pub(crate) properties: BTreeSet<String>,
}

impl Machine {
    /// A machine with speed 1, node cost 1, no GPUs and no properties.
    pub fn new(name: &str, nodes: u32, cpus_per_node: u32, ram_per_node: u64) -> Self {
        Machine {
            name: name.to_string(),
            nodes,
            cpus_per_node,
            ram_per_node,
            gpus_per_node: 0,
            speed: 1.0,
            node_cost: 1.0,
            properties: BTreeSet::new(),
        }
    }

    /// True when the machine carries `property` (explicitly, or implicitly as its own name
    /// or `cl_<name>`).
    pub(crate) fn has_property(&self, property: &str) -> bool {
        self.properties.contains(property)
            || property == self.name
            || property.strip_prefix("cl_") == Some(self.name.as_str())
    }

    /// The first problem that makes this machine unusable, if any.
    pub fn problem(&self) -> Option<String> {
        if self.cpus_per_node == 0 {
            return Some("has 0 CPUs per node".into());
        }
        if self.ram_per_node == 0 {
            return Some("has 0 RAM per node".into());
        }
        if self.nodes == 0 {
            return Some("has 0 nodes".into());
        }
        if !(self.speed.is_finite() && self.speed > 0.0) {
            return Some(format!("has a non-positive speed {}", self.speed));
        }
        if !(self.node_cost.is_finite() && self.node_cost > 0.0) {
            return Some(format!("has a non-positive node cost {}", self.node_cost));
        }
        None
    }
}

/// A validated, non-empty pool of machines: the whole system whose totals (availCPU,
/// availRAM of eq. 3) the penalties divide by.
#[derive(Debug, Clone, PartialEq)]
pub struct MachinePool {
    machines: Vec<Machine>,
}

/// Why a set of machines is not a usable [`MachinePool`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MachinePoolError {
    /// No machine at all.
    #[error("the platform has no machines")]
    Empty,
    /// A machine with a zero or non-positive value (see [`Machine::problem`]).
    #[error("machine {name:?} {problem}")]
    BadMachine {
        /// The machine's name.
        name: String,
        /// What is wrong, as [`Machine::problem`] words it.
        problem: String,
    },
}

impl MachinePool {
    /// Checks every machine ([`Machine::problem`]) and that there is at least one.
    pub fn new(machines: Vec<Machine>) -> Result<Self, MachinePoolError> {
        if machines.is_empty() {
            return Err(MachinePoolError::Empty);
        }
        if let Some((m, problem)) = machines.iter().find_map(|m| m.problem().map(|p| (m, p))) {
            return Err(MachinePoolError::BadMachine {
                name: m.name.clone(),
                problem,
            });
        }
        Ok(MachinePool { machines })
    }

    /// The machines, in the order given (the order of every per-machine result).
    pub fn machines(&self) -> &[Machine] {
        &self.machines
    }

    /// availCPU of eq. 3: all CPUs of the system.
    pub fn total_cpus(&self) -> u64 {
        self.machines
            .iter()
            .map(|m| u64::from(m.nodes) * u64::from(m.cpus_per_node))
            .sum()
    }

    /// availRAM of eq. 3: all RAM of the system, bytes.
    pub fn total_ram(&self) -> u64 {
        self.machines
            .iter()
            .map(|m| u64::from(m.nodes) * m.ram_per_node)
            .sum()
    }

    /// All GPUs of the system.
    pub(crate) fn total_gpus(&self) -> u64 {
        self.machines
            .iter()
            .map(|m| u64::from(m.nodes) * u64::from(m.gpus_per_node))
            .sum()
    }

    /// Adds `properties` to every machine (site-wide properties such as `x86_64` that a
    /// machines file does not list).
    pub fn with_site_properties<'a>(
        mut self,
        properties: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let properties: Vec<&str> = properties.into_iter().collect();
        for m in &mut self.machines {
            m.properties
                .extend(properties.iter().map(|p| p.to_string()));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_zero_cpu_and_ram_machines_by_name() {
        let err = MachinePool::new(vec![Machine::new("a", 1, 0, 10)]).unwrap_err();
        assert_eq!(err.to_string(), "machine \"a\" has 0 CPUs per node");
        let err = MachinePool::new(vec![Machine::new("b", 1, 4, 0)]).unwrap_err();
        assert_eq!(err.to_string(), "machine \"b\" has 0 RAM per node");
        assert_eq!(
            MachinePool::new(vec![]).unwrap_err(),
            MachinePoolError::Empty
        );
    }

    #[test]
    fn totals_and_implicit_properties() {
        let p = MachinePool::new(vec![
            Machine::new("t1", 10, 8, 16),
            Machine::new("t2", 1, 80, 512),
        ])
        .unwrap();
        assert_eq!(p.total_cpus(), 160);
        assert_eq!(p.total_ram(), 672);
        let t2 = &p.machines()[1];
        assert!(t2.has_property("cl_t2") && t2.has_property("t2") && !t2.has_property("cl_t1"));
    }
}
