//! A parallel run's host file (`HETPILOT_NODEFILE`), written in its run directory: one
//! `host slots=N` line per host, which `mpirun -hostfile` and `srun --nodelist` read.

use hetpilot_protocol::parallel::{nodefile, HostSlots};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The host file's name in the run directory.
const NAME: &str = "hetpilot-nodefile";

/// Writes the host file of a run over `hosts` into `run_dir` (mode 0600, never through
/// a link a task left there); its path, or a "could not start" reason.
pub fn write(run_dir: &Path, hosts: &[HostSlots]) -> Result<PathBuf, String> {
    let path = run_dir.join(NAME);
    let fail = |e: std::io::Error| format!("cannot write the host file {}: {e}", path.display());
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(e)),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(fail)?;
    file.write_all(nodefile(hosts).as_bytes()).map_err(fail)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_file_lists_each_host_with_its_slots_and_replaces_a_stale_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(NAME), "stale\n").unwrap();
        let hosts = [
            HostSlots {
                host: "n1".into(),
                slots: 2,
            },
            HostSlots {
                host: "n2".into(),
                slots: 2,
            },
        ];
        let path = write(dir.path(), &hosts).unwrap();
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            "n1 slots=2\nn2 slots=2\n"
        );
    }
}
