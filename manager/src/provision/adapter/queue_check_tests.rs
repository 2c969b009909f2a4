//! Unit tests of what `platforms check` asks each batch system, on recorded outputs
//! (`fixtures/`) replayed by a fake runner.

use super::super::testing::{pilot, profile, FakeRunner};
use super::*;
use crate::provision::profile::AdapterKind;

const SCONTROL_LAB: &str = include_str!("fixtures/scontrol-partitions-lab.txt");
const QSTAT_Q_LAB: &str = include_str!("fixtures/qstat-Q-f-slurm-torque-wrapper.txt");
const QSTAT_Q_PBSPRO: &str = include_str!("fixtures/qstat-Q-f-pbspro-metacentrum.txt");
const QSTAT_Q_TORQUE: &str = include_str!("fixtures/qstat-Q-f-torque-hpc12.txt");
const LLCLASS: &str = include_str!("fixtures/llclass-l-documented.txt");

fn texts(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| format!("{:?} {}", f.verdict, f.text))
        .collect()
}

fn fails(findings: &[Finding]) -> Vec<&str> {
    findings
        .iter()
        .filter(|f| f.verdict == Verdict::Fail)
        .map(|f| f.text.as_str())
        .collect()
}

/// A lab-shaped profile: `adapter` on `queue`, `cores` a node, a 30-minute pilot.
fn lab(adapter: AdapterKind, queue: &str, cores: u32) -> (PlatformProfile, PilotSpec) {
    let mut p = profile(adapter);
    p.queue = Some(queue.into());
    p.account = None;
    p.cores_per_node = cores;
    p.nodes = 2;
    let mut spec = pilot();
    spec.nodes = 1;
    spec.cores_per_node = cores;
    spec.walltime = Duration::from_secs(1800);
    (p, spec)
}

#[test]
fn slurm_times_read_as_scontrol_writes_them() {
    let s = |v: &str| slurm_time(v).unwrap().map(|d| d.as_secs());
    assert_eq!(s("UNLIMITED"), None);
    assert_eq!(s("INFINITE"), None);
    assert_eq!(s("30"), Some(1800));
    assert_eq!(s("30:15"), Some(1815));
    assert_eq!(s("02:00:00"), Some(7200));
    assert_eq!(s("1-00:00:00"), Some(86400));
    assert_eq!(s("2-12"), Some(2 * 86400 + 12 * 3600));
    assert_eq!(s("1-01:30"), Some(86400 + 5400));
    assert!(slurm_time("soon").is_err());
    assert_eq!(pbs_time("336:00:00"), Some(Duration::from_secs(336 * 3600)));
    assert_eq!(pbs_time("90"), Some(Duration::from_secs(90)));
    assert_eq!(
        llclass_seconds("1+00:00:00, 23:00:00 (86400 seconds, 82800 seconds)"),
        Some(Duration::from_secs(86400))
    );
    assert_eq!(llclass_seconds("undefined"), None);
}

#[test]
fn a_slurm_partition_typo_fails_naming_the_partitions_there_are() {
    let (p, spec) = lab(AdapterKind::Slurm, "smal", 2);
    let runner = FakeRunner::new(&[(0, SCONTROL_LAB, "")]);
    let findings = slurm(&runner, &p, &spec);
    assert_eq!(
        fails(&findings),
        ["partition `smal` does not exist (partitions: big, debug, small)"]
    );
    assert_eq!(runner.calls().len(), 1, "nothing more is asked");
}

#[test]
fn a_slurm_partition_that_fits_is_confirmed_by_sbatch_test_only() {
    let (mut p, spec) = lab(AdapterKind::Slurm, "small", 2);
    p.nodes = 2;
    let test_only = "sbatch: Job 2 to start at 2026-11-24T04:14:31 using 2 processors on nodes \
                     n2 in partition small\n";
    let runner = FakeRunner::new(&[(0, SCONTROL_LAB, ""), (0, "2\n2\n", ""), (0, "", test_only)]);
    let findings = slurm(&runner, &p, &spec);
    assert!(fails(&findings).is_empty(), "{:?}", texts(&findings));
    assert_eq!(
        texts(&findings),
        [
            "Ok partition `small`: up, nodes of up to 2 CPUs, MaxTime UNLIMITED",
            "Ok sbatch --test-only: sbatch: Job 2 to start at 2026-11-24T04:14:31 using 2 \
             processors on nodes n2 in partition small",
        ]
    );
    assert_eq!(
        runner.calls()[2],
        [
            "sbatch",
            "--test-only",
            "-p",
            "small",
            "-N",
            "1",
            "--ntasks-per-node",
            "2",
            "-t",
            "00:30:00",
            "--wrap",
            "true"
        ]
    );
}

#[test]
fn slurm_refuses_more_cores_or_walltime_than_the_partition_has() {
    let (p, spec) = lab(AdapterKind::Slurm, "small", 4);
    let runner = FakeRunner::new(&[(0, SCONTROL_LAB, ""), (0, "2\n2\n", "")]);
    assert_eq!(
        fails(&slurm(&runner, &p, &spec)),
        ["the nodes of partition `small` have at most 2 CPUs; pilots ask for 4 (cores_per_node)"]
    );
    // The lab's partitions have no time limit; a site's may.
    let limited = SCONTROL_LAB.replace("MaxTime=UNLIMITED", "MaxTime=00:20:00");
    let (p, spec) = lab(AdapterKind::Slurm, "debug", 2);
    let runner = FakeRunner::new(&[(0, &limited, ""), (0, "8\n", "")]);
    assert_eq!(
        fails(&slurm(&runner, &p, &spec)),
        ["partition `debug` allows at most 00:20:00 (MaxTime); pilots ask for 00:30:00 (pilot_walltime)"]
    );
}

#[test]
fn a_slurm_account_is_checked_against_the_partition_and_accounting() {
    let (mut p, spec) = lab(AdapterKind::Slurm, "debug", 2);
    p.account = Some("proj42".into());
    p.nodes = 1;
    let allow = SCONTROL_LAB.replace(
        "PartitionName=debug AllowGroups=ALL AllowAccounts=ALL",
        "PartitionName=debug AllowGroups=ALL AllowAccounts=physics,chem",
    );
    let runner = FakeRunner::new(&[(0, &allow, ""), (0, "8\n", "")]);
    assert_eq!(
        fails(&slurm(&runner, &p, &spec)),
        ["partition `debug` does not allow account `proj42` (AllowAccounts=physics,chem)"]
    );
    // No accounting database (the lab): said, not failed; sbatch --test-only still asked.
    let no_dbd = "You are not running a supported accounting_storage plugin\n";
    let runner = FakeRunner::new(&[
        (0, SCONTROL_LAB, ""),
        (0, "8\n", ""),
        (1, no_dbd, ""),
        (0, "", "sbatch: Job 3 to start at now\n"),
    ]);
    let findings = slurm(&runner, &p, &spec);
    assert!(fails(&findings).is_empty(), "{:?}", texts(&findings));
    assert!(
        texts(&findings)[1].starts_with(
            "Warn account `proj42` cannot be checked without Slurm's accounting: `sacctmgr` \
             exited 1: You are not running"
        ),
        "{:?}",
        texts(&findings)
    );
    assert!(runner.calls()[3].contains(&"-A".to_string()));
    // With accounting, a missing association fails.
    let runner = FakeRunner::new(&[(0, SCONTROL_LAB, ""), (0, "8\n", ""), (0, "", "")]);
    assert_eq!(
        fails(&slurm(&runner, &p, &spec)),
        ["account `proj42` has no association with this user (sacctmgr show assoc)"]
    );
}

#[test]
fn a_pbs_queue_typo_fails_naming_the_queues_there_are() {
    let (p, spec) = lab(AdapterKind::Pbs, "smal", 2);
    let runner = FakeRunner::new(&[(0, QSTAT_Q_LAB, "")]);
    assert_eq!(
        fails(&pbs(&runner, &p, &spec)),
        ["queue `smal` does not exist (queues: big, debug, small)"]
    );
    let (p, spec) = lab(AdapterKind::Torque, "small", 2);
    let runner = FakeRunner::new(&[(0, QSTAT_Q_LAB, "")]);
    assert_eq!(
        texts(&pbs(&runner, &p, &spec)),
        ["Ok queue `small`: Execution, enabled and started, walltime no limit"]
    );
}

#[test]
fn pbs_pro_queue_limits_are_read_from_recorded_output() {
    // MetaCentrum's gpu_long queue runs only jobs asking for a GPU; pilots ask for none.
    let (p, spec) = lab(AdapterKind::Pbs, "gpu_long", 8);
    let runner = FakeRunner::new(&[(0, QSTAT_Q_PBSPRO, "")]);
    assert_eq!(
        fails(&pbs(&runner, &p, &spec)),
        ["queue `gpu_long` takes jobs of at least 1 GPUs (resources_min.ngpus); pilots ask for 0"]
    );
    // Its routing queue takes them, for up to 720 hours.
    let (p, mut spec) = lab(AdapterKind::Pbs, "default", 8);
    let runner = FakeRunner::new(&[(0, QSTAT_Q_PBSPRO, "")]);
    assert_eq!(
        texts(&pbs(&runner, &p, &spec)),
        [
            "Ok queue `default`: Route, enabled and started, walltime 720:00:00, routing to \
          q_2h,q_4h,q_1d,q_2d,q_4d,q_1w,q_2w,q_2w_plus"
        ]
    );
    spec.walltime = Duration::from_secs(721 * 3600);
    let runner = FakeRunner::new(&[(0, QSTAT_Q_PBSPRO, "")]);
    assert_eq!(
        fails(&pbs(&runner, &p, &spec)),
        [
            "queue `default` allows at most 720:00:00 (resources_max.walltime); pilots ask for \
          721:00:00 (pilot_walltime)"
        ]
    );
}

#[test]
fn torque_node_limits_and_group_acls_are_checked() {
    let (mut p, mut spec) = lab(AdapterKind::Torque, "fpt-small", 20);
    spec.nodes = 2;
    p.nodes = 4;
    let runner = FakeRunner::new(&[(0, QSTAT_Q_TORQUE, ""), (0, "users students\n", "")]);
    assert_eq!(
        fails(&pbs(&runner, &p, &spec)),
        [
            "queue `fpt-small` takes jobs of at most 1 nodes (resources_max.nodes); pilots ask for 2",
            "queue `fpt-small` takes jobs of the groups lr-fpt, delftblue-groupadmins only \
             (acl_groups); this login is users, students",
        ]
    );
    assert_eq!(runner.calls()[1], ["sh", "-c", "id -Gn"]);
    spec.nodes = 1;
    let runner = FakeRunner::new(&[(0, QSTAT_Q_TORQUE, ""), (0, "users lr-fpt\n", "")]);
    assert!(fails(&pbs(&runner, &p, &spec)).is_empty());
}

#[test]
fn loadleveler_class_limits_are_read_from_the_long_listing() {
    let (p, spec) = lab(AdapterKind::LoadLeveler, "Parallel", 8);
    let runner = FakeRunner::new(&[(0, LLCLASS, "")]);
    assert_eq!(
        texts(&loadleveler(&runner, &p, &spec)),
        ["Ok class `Parallel`: wall clock limit 05:30:00, 05:30:00 (19800 seconds, 19800 seconds)"]
    );
    assert_eq!(runner.calls()[0], ["llclass", "-l", "Parallel"]);
    let (p, mut spec) = lab(AdapterKind::LoadLeveler, "Parallel", 32);
    spec.walltime = Duration::from_secs(6 * 3600);
    let runner = FakeRunner::new(&[(0, LLCLASS, "")]);
    assert_eq!(
        fails(&loadleveler(&runner, &p, &spec)),
        [
            "class `Parallel` allows at most 05:30:00 (Wall_clock_limit); pilots ask for 06:00:00 (pilot_walltime)",
            "class `Parallel` has at most 24 slots (Maximum_slots); pilots ask for 32",
        ]
    );
    let (p, spec) = lab(AdapterKind::LoadLeveler, "Paralel", 8);
    let runner = FakeRunner::new(&[(0, LLCLASS, "")]);
    let findings = loadleveler(&runner, &p, &spec);
    let f = fails(&findings);
    assert!(f[0].starts_with("class `Paralel` does not exist"), "{f:?}");
}

#[test]
fn a_gpu_profile_on_a_cpu_partition_fails_before_sbatch_test_only() {
    let (mut p, spec) = lab(AdapterKind::Slurm, "small", 2);
    p.gpus_per_node = 2;
    let runner = FakeRunner::new(&[
        (0, SCONTROL_LAB, ""),
        (0, "2\n2\n", ""),
        (0, "(null)\n", ""),
    ]);
    let findings = slurm(&runner, &p, &spec);
    assert_eq!(
        fails(&findings),
        [
            "the nodes of partition `small` have no GPUs (sinfo %G: (null)); the profile asks \
          for 2 a node (gpus_per_node): use a GPU partition or queue, or set gpus_per_node = 0"
        ]
    );
    assert_eq!(
        runner.calls().len(),
        3,
        "no sbatch --test-only after a failure"
    );
}

#[test]
fn a_gpu_profile_s_test_only_job_asks_for_its_gpus() {
    let (mut p, spec) = lab(AdapterKind::Slurm, "small", 2);
    p.gpus_per_node = 2;
    let test_only = "sbatch: Job 3 to start at 2026-11-27T21:00:00 using 2 processors on nodes \
                     n5 in partition gpu\n";
    let runner = FakeRunner::new(&[
        (0, SCONTROL_LAB, ""),
        (0, "2\n", ""),
        (0, "gpu:2\n", ""),
        (0, "", test_only),
    ]);
    let findings = slurm(&runner, &p, &spec);
    assert!(fails(&findings).is_empty(), "{:?}", texts(&findings));
    assert!(
        runner.calls()[3].contains(&"--gres=gpu:2".to_string()),
        "{:?}",
        runner.calls()[3]
    );
}

#[test]
fn a_pbs_queue_with_too_few_gpus_fails_naming_the_limit() {
    let (mut p, spec) = lab(AdapterKind::Pbs, "gpuq", 2);
    p.gpus_per_node = 2;
    let queues = "Queue: gpuq\n    queue_type = Execution\n    resources_max.ngpus = 1\n    \
                  enabled = True\n    started = True\n";
    let nodes = "g1\n    state = free\n    gpus = 2\n";
    let runner = FakeRunner::new(&[(0, queues, ""), (0, nodes, "")]);
    let findings = pbs(&runner, &p, &spec);
    assert_eq!(
        fails(&findings),
        ["queue `gpuq` takes jobs of at most 1 GPUs (resources_max.ngpus); pilots ask for 2"]
    );
    assert_eq!(runner.calls()[1], ["pbsnodes", "-a"]);
}
