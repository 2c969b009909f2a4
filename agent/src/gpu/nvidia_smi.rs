//! NVIDIA GPUs through `nvidia-smi --query-gpu`, where NVML could not be asked, and the
//! parser of its CSV output (with or without the header line and the units).

use super::{clean, LocalGpu};
use hetpilot_protocol::resources::{GpuDevice, GpuVendor, MAX_GPUS_PER_AGENT};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use thiserror::Error;

/// The fields the agent asks for, in this order.
pub const QUERY: &str = "index,uuid,name,memory.total";

/// How long `nvidia-smi` may take (it hangs on a wedged driver).
const TIMEOUT: Duration = Duration::from_secs(30);

/// Why `nvidia-smi`'s answer was not used.
#[derive(Debug, Error)]
pub enum SmiError {
    #[error("nvidia-smi output line {line}: {why}")]
    Line { line: usize, why: String },
    #[error("nvidia-smi lists more than {MAX_GPUS_PER_AGENT} GPUs")]
    TooMany,
    #[error("running nvidia-smi: {0}")]
    Run(#[from] std::io::Error),
    #[error("nvidia-smi failed ({status}): {stderr}")]
    Failed { status: String, stderr: String },
    #[error("nvidia-smi did not answer within {TIMEOUT:?}")]
    Timeout,
}

/// One GPU's line, with the fields the query had.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub index: Option<u32>,
    pub uuid: Option<String>,
    pub name: Option<String>,
    /// `None` where the device reports none (`[N/A]`, unified memory).
    pub memory_mib: Option<u64>,
}

/// Parses the output of `nvidia-smi --query-gpu=QUERY --format=csv[,noheader][,nounits]`.
pub fn parse(out: &str, query: &str) -> Result<Vec<Row>, SmiError> {
    let fields: Vec<&str> = query.split(',').map(str::trim).collect();
    let mut rows = Vec::new();
    for (n, line) in out.lines().enumerate() {
        let line_no = n + 1;
        let bad = |why: String| SmiError::Line { line: line_no, why };
        if line.trim().is_empty() {
            continue;
        }
        let values: Vec<&str> = line.split(',').map(str::trim).collect();
        // The header names the fields, with units: `memory.total [MiB]`.
        if n == 0 && values.first().map(|v| v.split(" [").next()) == Some(fields.first().copied()) {
            continue;
        }
        if values.len() != fields.len() {
            return Err(bad(format!(
                "{} values for the {} fields {query}",
                values.len(),
                fields.len()
            )));
        }
        let mut row = Row::default();
        for (field, value) in fields.iter().zip(&values) {
            match *field {
                "index" => {
                    let index = value.parse().map_err(|_| bad(format!("index `{value}`")))?;
                    row.index = Some(index);
                }
                "uuid" | "gpu_uuid" => {
                    let ok = !value.is_empty()
                        && value.len() <= 96
                        && value.bytes().all(|b| b.is_ascii_graphic());
                    if !ok {
                        return Err(bad(format!("UUID `{}`", clean(value, 96))));
                    }
                    row.uuid = Some(value.to_string());
                }
                "name" | "gpu_name" => row.name = Some(clean(value, 128)),
                "memory.total" => row.memory_mib = memory_mib(value).map_err(bad)?,
                _ => {}
            }
        }
        if rows.len() == MAX_GPUS_PER_AGENT {
            return Err(SmiError::TooMany);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// `81559`, `81559 MiB`, or none for `[N/A]`.
fn memory_mib(value: &str) -> Result<Option<u64>, String> {
    if value.contains("N/A") {
        return Ok(None);
    }
    let digits = value.strip_suffix("MiB").unwrap_or(value).trim();
    digits
        .parse()
        .map(Some)
        .map_err(|_| format!("memory.total `{}`", clean(value, 40)))
}

/// The devices of rows that have every field the agent asks for.
pub fn to_devices(rows: Vec<Row>) -> Result<Vec<LocalGpu>, SmiError> {
    rows.into_iter()
        .enumerate()
        .map(|(n, r)| {
            let missing = || SmiError::Line {
                line: n + 1,
                why: format!("needs the fields {QUERY}"),
            };
            let index = r.index.ok_or_else(missing)?;
            Ok(LocalGpu {
                device: GpuDevice {
                    index,
                    uuid: r.uuid.ok_or_else(missing)?,
                    model: r.name.ok_or_else(missing)?,
                    memory_mib: r.memory_mib.unwrap_or(0),
                    vendor: GpuVendor::Nvidia,
                },
                // nvidia-smi does not name the minor number; on bare metal it is the index.
                nodes: vec![PathBuf::from(format!("/dev/nvidia{index}"))],
            })
        })
        .collect()
}

/// The node's NVIDIA GPUs as `nvidia-smi` on `PATH` lists them; `Ok(None)` without one.
pub fn devices() -> Result<Option<Vec<LocalGpu>>, SmiError> {
    match run(QUERY)? {
        Some(out) => to_devices(parse(&out, QUERY)?).map(Some),
        None => Ok(None),
    }
}

/// The output of `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`; `Ok(None)`
/// where no `nvidia-smi` is on `PATH`.
pub fn run(query: &str) -> Result<Option<String>, SmiError> {
    let child = Command::new("nvidia-smi")
        .arg(format!("--query-gpu={query}"))
        .arg("--format=csv,noheader,nounits")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let out = match rx.recv_timeout(TIMEOUT) {
        Ok(out) => out?,
        Err(_) => {
            // SAFETY: signalling our own child, which the waiting thread then reaps.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Err(SmiError::Timeout);
        }
    };
    if !out.status.success() {
        return Err(SmiError::Failed {
            status: out.status.to_string(),
            stderr: clean(&String::from_utf8_lossy(&out.stdout), 300)
                + &clean(&String::from_utf8_lossy(&out.stderr), 300),
        });
    }
    Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/gpu/fixtures")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn a_recorded_h100_parses() {
        let rows = parse(&fixture("h100_index_name_uuid.csv"), "index,name,uuid").unwrap();
        assert_eq!(
            rows,
            [Row {
                index: Some(0),
                uuid: Some("GPU-bc5610b9-79c8-fedd-8899-07539c7f868a".into()),
                name: Some("NVIDIA H100 80GB HBM3".into()),
                memory_mib: None,
            }]
        );
        let rows = parse(
            &fixture("h100_index_name_memory.csv"),
            "index,name,memory.total",
        )
        .unwrap();
        assert_eq!(rows.len(), 1, "the header line is skipped");
        assert_eq!(rows[0].memory_mib, Some(81559));
        assert_eq!(rows[0].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    }

    #[test]
    fn the_lent_h100s_recorded_answers_parse_to_what_nvml_said_there() {
        // NVML on that machine: index 0, this UUID, 81559 MiB (the real-GPU check's run).
        let uuid = "GPU-0ddeb7a6-7c0d-2b8f-f071-af0bfcac8e86";
        let own = fixture("h100_lent_index_uuid_name_memory_nounits.csv");
        let gpus = to_devices(parse(&own, QUERY).unwrap()).unwrap();
        assert_eq!(gpus.len(), 1);
        assert_eq!(gpus[0].device.uuid, uuid);
        assert_eq!(gpus[0].device.model, "NVIDIA H100 80GB HBM3");
        assert_eq!(gpus[0].device.memory_mib, 81559);
        assert_eq!(gpus[0].nodes, [PathBuf::from("/dev/nvidia0")]);
        let with_units = fixture("h100_lent_index_name_uuid_driver_memory.csv");
        let rows = parse(&with_units, "index,name,uuid,driver_version,memory.total").unwrap();
        assert_eq!(rows.len(), 1, "the header line is skipped");
        assert_eq!(rows[0].uuid.as_deref(), Some(uuid));
        assert_eq!(rows[0].memory_mib, Some(81559), "\" MiB\" is read off");
    }

    #[test]
    fn a_recorded_a100_parses() {
        let rows = parse(
            &fixture("a100_name_uuid_driver_memory.csv"),
            "name,uuid,driver_version,memory.total",
        )
        .unwrap();
        assert_eq!(
            rows,
            [Row {
                index: None,
                uuid: Some("GPU-1f1b65b3-e559-713a-e355-9dd901bfd8e6".into()),
                name: Some("NVIDIA A100-SXM4-80GB".into()),
                memory_mib: Some(81920),
            }]
        );
    }

    #[test]
    fn a_recorded_four_gpu_node_becomes_four_devices() {
        let out = fixture("h200x4_index_uuid_name_memory_used.csv");
        let rows = parse(&out, "index,uuid,name,memory.total,memory.used").unwrap();
        let gpus = to_devices(rows).unwrap();
        assert_eq!(gpus.len(), 4);
        assert_eq!(
            gpus.iter().map(|g| g.device.index).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(
            gpus[3].device.uuid,
            "GPU-8187d0e1-3af1-11b3-a3da-3990b94501cf"
        );
        assert!(gpus.iter().all(|g| g.device.model == "NVIDIA H200-141C"
            && g.device.memory_mib == 144_384
            && g.device.vendor == GpuVendor::Nvidia));
        assert_eq!(gpus[2].nodes, [PathBuf::from("/dev/nvidia2")]);
        let mixed = parse(
            &fixture("mixed2_index_uuid_name_memory.csv"),
            "index,uuid,name,memory.total",
        )
        .unwrap();
        let gpus = to_devices(mixed).unwrap();
        assert_eq!(gpus[0].device.model, "NVIDIA GeForce RTX 4080 SUPER");
        assert_eq!(gpus[1].device.memory_mib, 24_576);
    }

    #[test]
    fn the_agents_own_query_without_units_parses() {
        let out = "0, GPU-bc5610b9-79c8-fedd-8899-07539c7f868a, NVIDIA H100 80GB HBM3, 81559\n";
        let gpus = to_devices(parse(out, QUERY).unwrap()).unwrap();
        assert_eq!(gpus[0].device.memory_mib, 81559);
        assert_eq!(gpus[0].device.index, 0);
    }

    #[test]
    fn bad_output_is_refused_with_the_line_named() {
        for (out, want) in [
            ("0, GPU-a, H100\n", "line 1: 3 values"),
            ("x, GPU-a, H100, 1\n", "index `x`"),
            (
                "0, GPU-a, H100, 1\n-1, GPU-b, H100, 1\n",
                "line 2: index `-1`",
            ),
            ("0, GPU a, H100, 1\n", "UUID"),
            ("0, GPU-a, H100, lots\n", "memory.total `lots`"),
            ("99999999999, GPU-a, H100, 1\n", "index"),
        ] {
            let err = parse(out, QUERY).unwrap_err().to_string();
            assert!(err.contains(want), "{out:?}: {err}");
        }
        let many: String = (0..65)
            .map(|i| format!("{i}, GPU-{i}, H100, 1\n"))
            .collect();
        assert!(matches!(parse(&many, QUERY), Err(SmiError::TooMany)));
        let unified = parse("0, GPU-a, NVIDIA GB10, [N/A]\n", QUERY).unwrap();
        assert_eq!(unified[0].memory_mib, None);
        let no_uuid = parse("0, H100\n", "index,name").unwrap();
        assert!(to_devices(no_uuid).is_err());
        assert!(parse("", QUERY).unwrap().is_empty());
    }
}
