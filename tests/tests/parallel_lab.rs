//! An MPI program over 2-node pilots on the real local lab (`deploy/lab/start.sh`, which
//! installs Debian's Open MPI): a `procs = 4` task on partition `small` (nodes n2 and n3,
//! 2 CPUs each) is leased to the pilot's two agents at once and started on one; each of
//! the four ranks (`MPI_Init`, an `MPI_Allreduce` over all of them) reports the lab node
//! it runs on. Once under a Slurm pilot (the platform's default launcher, a job step,
//! checked too), once under a TORQUE pilot (`qsub` through the lab's TORQUE wrappers),
//! its ranks started by the profile's `launcher` as `$HETPILOT_LAUNCH`.

use hetpilot_e2e::lab::{self, configure};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// An MPI hello world with no compiler: Open MPI's `libmpi` through Python's ctypes. Each
/// rank prints its rank, the world's size, its Slurm node and the sum of one per rank.
const HELLO: &str = r#"import ctypes, os
mpi = ctypes.CDLL("libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
handle = lambda name: ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, name)))
mpi.MPI_Init(None, None)
world = handle("ompi_mpi_comm_world")
rank, size, one, total = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(1), ctypes.c_int(0)
mpi.MPI_Comm_rank(world, ctypes.byref(rank))
mpi.MPI_Comm_size(world, ctypes.byref(size))
mpi.MPI_Allreduce(ctypes.byref(one), ctypes.byref(total), 1, handle("ompi_mpi_int"),
                  handle("ompi_mpi_op_sum"), world)
print(f"rank {rank.value} of {size.value} on {os.environ['SLURMD_NODENAME']} sum {total.value}",
      flush=True)
mpi.MPI_Finalize()
"#;

/// The Slurm task: first the platform's launcher (Slurm's default: a job step over the
/// run's hosts within the pilot's allocation) starts a shell per slot, then `mpirun` over
/// the host file the head was given. Open MPI takes its slots from the host file, not
/// from the agents' job step (`ras ^slurm`), starts its daemons on the other node through
/// `srun` within the pilot's allocation (`SLURM_OVERLAP`: the agents' step holds the
/// CPUs), and talks TCP (the lab's "nodes" share one host).
const SLURM_RUN: &str = r#"#!/bin/sh
export SLURM_OVERLAP=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "nodefile: $(paste -sd, "$HETPILOT_NODEFILE") hosts: $HETPILOT_HOSTS procs: $HETPILOT_PROCS"
$HETPILOT_LAUNCH sh -c 'echo "launched rank $SLURM_PROCID on $SLURMD_NODENAME"'
exec mpirun.openmpi --mca ras ^slurm --mca btl self,tcp -np "$HETPILOT_PROCS" \
  -hostfile "$HETPILOT_NODEFILE" python3 "$(dirname "$0")/hello.py"
"#;

/// The TORQUE task: the platform's launcher (`mpirun` with the host file, as the profile
/// below sets it) runs the ranks.
const TORQUE_RUN: &str = r#"#!/bin/sh
export SLURM_OVERLAP=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "nodefile: $(paste -sd, "$HETPILOT_NODEFILE") launch: $HETPILOT_LAUNCH"
exec $HETPILOT_LAUNCH python3 "$(dirname "$0")/hello.py"
"#;

/// The lab's TORQUE is Slurm's TORQUE wrappers (`qsub` over `sbatch`), without `pbsdsh`:
/// this stands in for `pbsdsh -u`, running its command once on each node of
/// `$PBS_NODEFILE` with the lab's real task launcher underneath (Slurm's `srun`).
const PBSDSH: &str = r#"#!/bin/sh
[ "$1" = -u ] || { echo "pbsdsh stand-in: only -u" >&2; exit 2; }
shift
n=$(sort -u "$PBS_NODEFILE" | wc -l)
exec srun --nodes="$n" --ntasks="$n" --ntasks-per-node=1 \
  --cpus-per-task="$SLURM_CPUS_ON_NODE" --kill-on-bad-exit=0 "$@"
"#;

/// Starts a manager with `platform` (`profile`'s text, written in `dir`), runs the
/// `procs = 4` task `run` (with `hello.py` next to it) and returns its summary and log.
fn run_mpi_hello(dir: &Path, platform: &str, profile: &str, run: &str) -> (Value, String) {
    let path = dir.join(format!("{platform}.toml"));
    std::fs::write(&path, profile).unwrap();
    let env = configure(
        dir,
        &[(platform, &path)],
        "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 1\n\
         backoff_max_secs = 2\nidle_timeout_secs = 120",
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let m = hetpilot_e2e::Manager::start_with(dir, hetpilot_e2e::free_port(), 120.0, &[], &env);
    let mpi = dir.join("mpi");
    std::fs::create_dir_all(&mpi).unwrap();
    std::fs::write(mpi.join("hello.py"), HELLO).unwrap();
    std::fs::write(mpi.join("run.sh"), run).unwrap();
    let app = m.submit(serde_json::json!({
        "name": "mpi-hello", "command": format!("sh {}", mpi.join("run.sh").display()),
        "procs": 4, "timeout_secs": 120,
        "tasks": {"array": {"start": 0, "end": 0}},
    }));
    let summary = m.wait_finished(app, Duration::from_secs(300));
    let logs = m.cli(&["logs", &format!("{app}.0")]);
    let text = String::from_utf8_lossy(&logs.stdout).to_string();
    eprintln!("{text}");
    (summary, text)
}

/// The log's MPI ranks (`rank R of 4 on HOST sum 4`), each checked to see 4 ranks and a
/// sum of 4, with the node each ran on; ranks on two nodes write to one stream at once,
/// so a report may run into another's line: they are read as a sequence.
fn mpi_ranks(text: &str) -> BTreeMap<u32, String> {
    let mut ranks: BTreeMap<u32, String> = BTreeMap::new();
    for report in text.split("rank ").skip(1) {
        let words: Vec<&str> = report.split_whitespace().collect();
        if words.len() < 7 || words[1] != "of" {
            continue;
        }
        assert_eq!(
            (words[2], words[6]),
            ("4", "4"),
            "size and sum: rank {report}"
        );
        ranks.insert(words[0].parse().unwrap(), words[4].to_string());
    }
    ranks
}

/// Two ranks on each of the lab's nodes n2 and n3.
fn assert_two_ranks_on_each_node(ranks: &BTreeMap<u32, String>, text: &str) {
    assert_eq!(ranks.len(), 4, "{text}");
    let mut per_node: BTreeMap<&str, u32> = BTreeMap::new();
    for node in ranks.values() {
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(per_node, [("n2", 2), ("n3", 2)].into(), "{text}");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_procs_4_mpi_hello_runs_over_a_two_node_slurm_pilot_and_its_ranks_report_the_lab_nodes() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let shipped = std::fs::read_to_string(lab::shipped_profile("lab-small")).unwrap();
    let profile = shipped
        .replace("max_running = 2", "max_running = 1\nnodes_per_pilot = 2")
        .replace("max_queued = 2", "max_queued = 1");
    let (summary, text) = run_mpi_hello(dir.path(), "lab-small", &profile, SLURM_RUN);
    assert_eq!(summary["counts"]["done"], 1, "{summary}\n{text}");
    // The header names both lab nodes with their slots, the head first.
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.contains("lab-small/n2:2,n3:2") || header.contains("lab-small/n3:2,n2:2"),
        "{text}"
    );
    assert_two_ranks_on_each_node(&mpi_ranks(&text), &text);
    // `$HETPILOT_LAUNCH` started one process per slot, in blocks: ranks 0 and 1 on one
    // host of the run, 2 and 3 on the other (Slurm numbers its nodes in its own order,
    // not the host file's).
    let mut launched: BTreeMap<u32, String> = BTreeMap::new();
    for line in text.split("launched rank ").skip(1) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() >= 3 && words[1] == "on" {
            launched.insert(words[0].parse().unwrap(), words[2].to_string());
        }
    }
    let blocks: Vec<&str> = launched.values().map(String::as_str).collect();
    assert!(
        blocks.len() == 4 && blocks[0] == blocks[1] && blocks[2] == blocks[3],
        "{launched:?}\n{text}"
    );
    let mut nodes = vec![blocks[0], blocks[2]];
    nodes.sort();
    assert_eq!(nodes, ["n2", "n3"], "{text}");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_procs_4_mpi_hello_runs_over_a_two_node_torque_pilot_through_the_platforms_launcher() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("pbsdsh"), PBSDSH).unwrap();
    std::fs::set_permissions(
        bin.join("pbsdsh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let shipped = std::fs::read_to_string(lab::shipped_profile("lab-torque")).unwrap();
    let profile = format!(
        "{}\nsetup = [\"export PATH={}:$PATH\"]\n\
         launcher = \"mpirun.openmpi --mca ras ^slurm --mca btl self,tcp -np {{procs}} \
         -hostfile {{nodefile}}\"\n",
        shipped
            .replace("max_running = 2", "max_running = 1\nnodes_per_pilot = 2")
            .replace("max_queued = 2", "max_queued = 1"),
        bin.display()
    );
    let (summary, text) = run_mpi_hello(dir.path(), "lab-torque", &profile, TORQUE_RUN);
    assert_eq!(summary["counts"]["done"], 1, "{summary}\n{text}");
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.contains("lab-torque/n2:2,n3:2") || header.contains("lab-torque/n3:2,n2:2"),
        "{text}"
    );
    // The launcher as the profile wrote it, with this run's slots and host file.
    let launch = text
        .lines()
        .find_map(|l| l.split_once(" launch: ").map(|(_, l)| l.to_string()))
        .unwrap_or_default();
    assert!(
        launch.starts_with("mpirun.openmpi --mca ras ^slurm --mca btl self,tcp -np 4 -hostfile /")
            && launch.ends_with("/hetpilot-nodefile"),
        "{text}"
    );
    assert_two_ranks_on_each_node(&mpi_ranks(&text), &text);
}
