//! Alea machine files: one machine (cluster) per line, tab- or space-separated.
//!
//! Two layouts are recognised by their field count:
//! - 6 fields (Alea): `id name nodes cpus_per_node speed ram_per_node_KB`
//!   (e.g. `metacentrum/wagap-2013.swf.machines`);
//! - 8 fields (AleaNG): `id name nodes pes_per_node rating ram_per_node_GB speed gpus_per_node`
//!   (e.g. `metacentrum/NGI_CZ.swf.machines`).
//!
//! Blank lines and lines starting with `#` or `;` are ignored. Node cost is 1 and machines
//! carry no explicit properties (their name and `cl_<name>` are implicit).

use crate::fairshare::Machine;

/// A machines file that cannot be used, with the line and field at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MachinesError {
    /// A line with neither the Alea nor the AleaNG field count.
    #[error("line {line}: expected 6 fields (id name nodes cpus speed ram_kb) or 8 fields (id name nodes pes rating ram_gb speed gpus), found {found}")]
    FieldCount {
        /// Line number, counting from 1.
        line: usize,
        /// Fields found on it.
        found: usize,
    },
    /// A field that should be a non-negative number (a whole one for counts) is not.
    #[error("line {line}: field {field} ({name}) is not a valid number: {text:?}")]
    BadNumber {
        /// Line number, counting from 1.
        line: usize,
        /// Field number on the line, counting from 1.
        field: usize,
        /// What the field holds, e.g. `nodes` or `speed`.
        name: &'static str,
        /// The field's text.
        text: String,
    },
    /// A machine that parses but cannot be used (see [`Machine::problem`]).
    #[error("line {line}: machine {machine:?} {problem}")]
    BadMachine {
        /// Line number, counting from 1.
        line: usize,
        /// The machine's name.
        machine: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Only blank or comment lines.
    #[error("the machines file lists no machine")]
    Empty,
}

/// Parse an Alea machines file.
pub fn parse_alea_machines(text: &str) -> Result<Vec<Machine>, MachinesError> {
    let mut machines = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        let bad = |field: usize, name: &'static str| MachinesError::BadNumber {
            line,
            field,
            name,
            text: fields[field - 1].to_string(),
        };
        let number = |field: usize, name: &'static str| -> Result<f64, MachinesError> {
            fields[field - 1]
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| bad(field, name))
        };
        // Counts are whole numbers that fit a u32 (no silent rounding or saturation).
        let count = |field: usize, name: &'static str| -> Result<u32, MachinesError> {
            let v = number(field, name)?;
            (v.fract() == 0.0 && v <= f64::from(u32::MAX))
                .then_some(v as u32)
                .ok_or_else(|| bad(field, name))
        };
        let bytes = |field: usize, name: &'static str, unit: f64| -> Result<u64, MachinesError> {
            let v = (number(field, name)? * unit).round();
            // 2^64 is the first f64 past u64::MAX.
            (v < 18_446_744_073_709_551_616.0)
                .then_some(v as u64)
                .ok_or_else(|| bad(field, name))
        };
        let mut machine = match fields.len() {
            6 => {
                let mut m = Machine::new(
                    fields[1],
                    count(3, "nodes")?,
                    count(4, "CPUs per node")?,
                    bytes(6, "RAM per node KB", 1024.0)?,
                );
                m.speed = number(5, "speed")?;
                m
            }
            8 => {
                let mut m = Machine::new(
                    fields[1],
                    count(3, "nodes")?,
                    count(4, "PEs per node")?,
                    bytes(6, "RAM per node GB", (1u64 << 30) as f64)?,
                );
                m.speed = number(7, "speed")?;
                m.gpus_per_node = count(8, "GPUs per node")?;
                m
            }
            found => return Err(MachinesError::FieldCount { line, found }),
        };
        machine.name = fields[1].to_string();
        if let Some(problem) = machine.problem() {
            return Err(MachinesError::BadMachine {
                line,
                machine: machine.name,
                problem,
            });
        }
        machines.push(machine);
    }
    if machines.is_empty() {
        return Err(MachinesError::Empty);
    }
    Ok(machines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_layouts() {
        let alea =
            parse_alea_machines("0\tzewura\t20\t80\t1\t529426432\n1\tzegox\t48\t12\t1\t94035968\n")
                .unwrap();
        assert_eq!(alea.len(), 2);
        assert_eq!(alea[0].cpus_per_node, 80);
        assert_eq!(alea[0].ram_per_node, 529_426_432 * 1024);
        let ng = parse_alea_machines("15\tadan\t61\t32\t1\t192\t5.9\t2\n").unwrap();
        assert_eq!(ng[0].gpus_per_node, 2);
        assert_eq!(ng[0].speed, 5.9);
        assert_eq!(ng[0].ram_per_node, 192 << 30);
    }

    #[test]
    fn zero_cpus_or_ram_name_the_line() {
        let err = parse_alea_machines("# c\n0 a 1 8 1 100\n1 b 2 0 1 100\n").unwrap_err();
        assert_eq!(err.to_string(), "line 3: machine \"b\" has 0 CPUs per node");
        let err = parse_alea_machines("0 a 1 8 1 0\n").unwrap_err();
        assert!(err.to_string().contains("0 RAM"), "{err}");
        let err = parse_alea_machines("0 a 1 x 1 5\n").unwrap_err();
        assert!(err.to_string().contains("field 4 (CPUs per node)"), "{err}");
        assert!(matches!(
            parse_alea_machines("0 a 1\n"),
            Err(MachinesError::FieldCount { line: 1, found: 3 })
        ));
        assert_eq!(parse_alea_machines("\n"), Err(MachinesError::Empty));
    }

    #[test]
    fn counts_and_sizes_out_of_range_are_refused_not_saturated() {
        // These used to be read as u32::MAX nodes, 1 CPU and u64::MAX bytes of RAM.
        for (text, field) in [
            ("0 a 4294967296 8 1 100\n", 3),
            ("0 a 1 1.5 1 100\n", 4),
            ("0 a 1 8 1 1e300\n", 6),
            ("0 a 1 8 1 20000000000 1 1\n", 6),
            ("0 a 1 8 1 1 1 1e10\n", 8),
        ] {
            match parse_alea_machines(text) {
                Err(MachinesError::BadNumber { field: f, .. }) => assert_eq!(f, field, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
