//! The minimal platform profile read by the fairshare tools: a TOML file with one
//! `[[machine]]` table per machine type. The full platform profiles (batch system, login
//! host, queues, ...) are the provisioner's; this reader only takes the fields below and
//! ignores any others, so it can read those files too.
//!
//! ```toml
//! [[machine]]
//! name = "type2"          # required
//! nodes = 1               # default 1
//! cpus_per_node = 80      # required, > 0
//! memory_per_node = "512GB" # required, > 0: a size string or a number of bytes
//! gpus_per_node = 0       # default 0
//! speed = 1.0             # SPEC, relative speed for walltime normalization; default 1
//! node_cost = 1.0         # eq. 4 node_cost_i; default 1
//! properties = ["x86_64"] # default none (name and cl_<name> are implicit)
//! ```

use serde::Deserialize;

use super::size::parse_size;
use crate::fairshare::Machine;

/// A profile that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlatformProfileError {
    /// Not TOML, or a field of the wrong type; the parser's message.
    #[error("invalid platform profile: {0}")]
    Toml(String),
    /// No `[[machine]]` table at all.
    #[error("the platform profile has no [[machine]] table")]
    Empty,
    /// A machine table with a missing or unusable value.
    #[error("[[machine]] number {index} ({name:?}): {problem}")]
    BadMachine {
        /// Position of the table among the `[[machine]]` tables, counting from 1.
        index: usize,
        /// The machine's name.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
}

#[derive(Debug, Deserialize)]
struct Profile {
    #[serde(default)]
    machine: Vec<MachineEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

#[derive(Debug, Deserialize)]
struct MachineEntry {
    name: String,
    #[serde(default = "one")]
    nodes: u32,
    cpus_per_node: u32,
    memory_per_node: Size,
    #[serde(default)]
    gpus_per_node: u32,
    #[serde(default = "unit")]
    speed: f64,
    #[serde(default = "unit")]
    node_cost: f64,
    #[serde(default)]
    properties: Vec<String>,
}

fn one() -> u32 {
    1
}

fn unit() -> f64 {
    1.0
}

/// Parse a platform profile.
pub fn parse_platform_profile(text: &str) -> Result<Vec<Machine>, PlatformProfileError> {
    let profile: Profile =
        toml::from_str(text).map_err(|e| PlatformProfileError::Toml(e.to_string()))?;
    if profile.machine.is_empty() {
        return Err(PlatformProfileError::Empty);
    }
    profile
        .machine
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            let bad = |problem: String| PlatformProfileError::BadMachine {
                index: i + 1,
                name: entry.name.clone(),
                problem,
            };
            let ram = match &entry.memory_per_node {
                Size::Bytes(b) => *b,
                Size::Text(t) => parse_size(t).map_err(|e| bad(format!("memory_per_node: {e}")))?,
            };
            let mut m = Machine::new(&entry.name, entry.nodes, entry.cpus_per_node, ram);
            m.gpus_per_node = entry.gpus_per_node;
            m.speed = entry.speed;
            m.node_cost = entry.node_cost;
            m.properties = entry.properties.iter().cloned().collect();
            match m.problem() {
                Some(problem) => Err(bad(problem)),
                None => Ok(m),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_defaults() {
        let text = "[[machine]]\nname = \"t1\"\nnodes = 10\ncpus_per_node = 8\nmemory_per_node = \"16GB\"\n\
                    [[machine]]\nname = \"g\"\ncpus_per_node = 4\nmemory_per_node = 1024\ngpus_per_node = 2\nnode_cost = 3.0\nproperties = [\"gpu\"]\n";
        let m = parse_platform_profile(text).unwrap();
        assert_eq!(m[0].nodes, 10);
        assert_eq!(m[0].ram_per_node, 16 << 30);
        assert_eq!(m[1].nodes, 1);
        assert_eq!(m[1].ram_per_node, 1024);
        assert_eq!(m[1].gpus_per_node, 2);
        assert_eq!(m[1].node_cost, 3.0);
        assert!(m[1].has_property("gpu"));
    }

    #[test]
    fn bad_profiles_are_explained() {
        let zero = "[[machine]]\nname = \"z\"\ncpus_per_node = 0\nmemory_per_node = \"1GB\"\n";
        assert_eq!(
            parse_platform_profile(zero).unwrap_err().to_string(),
            "[[machine]] number 1 (\"z\"): has 0 CPUs per node"
        );
        let size = "[[machine]]\nname = \"z\"\ncpus_per_node = 2\nmemory_per_node = \"huge\"\n";
        assert!(parse_platform_profile(size)
            .unwrap_err()
            .to_string()
            .contains("memory_per_node"));
        assert_eq!(
            parse_platform_profile("").unwrap_err(),
            PlatformProfileError::Empty
        );
        assert!(matches!(
            parse_platform_profile("[[machine]]\nname = 3\n"),
            Err(PlatformProfileError::Toml(_))
        ));
    }
}
