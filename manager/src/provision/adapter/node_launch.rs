//! How a job script starts its agents: a one-node pilot `exec`s its agent; a multi-node
//! pilot (`nodes_per_pilot` > 1) starts one agent on each node of its allocation, each
//! batch system's way, and every agent registers with the pilot's one credential (the
//! manager admits one agent per node: see `service::pilots`).
//!
//! - Slurm: `srun --nodes=N --ntasks=N --ntasks-per-node=1 --cpus-per-task=K
//!   --kill-on-bad-exit=0` (`--ntasks` overrides the `SLURM_NTASKS` the batch step sets)
//!   runs the agent once per node with the node's cores; srun passes the environment on,
//!   and one agent ending (drained, or its node lost) does not kill the others.
//! - TORQUE: `pbsdsh -u` runs a command once on each node of the job; PBS Professional's
//!   `pbsdsh --` once on each vnode, which `place=scatter` makes one per host. Neither
//!   passes the environment on, so each node runs this same script again (the pilot's
//!   directory is on storage the nodes share, like its credential), with `--on-node` and
//!   the walltime end computed once on the first node.
//! - LoadLeveler: a `job_type = parallel` step's script runs on its first node;
//!   `$LOADL_HOSTFILE` lists the step's hosts (one line per task) and `llspawn.stdio HOST
//!   COMMAND` starts a command on one of them under LoadLeveler's control ("Using and
//!   Administering LoadLeveler", running MPICH jobs: `llspawn.stdio` stands in for `rsh`).
//!   The script runs itself with `--on-node` on each distinct host and waits for them.
//!
//! The agents of a multi-node pilot keep the credential file (`--keep-token-file`): the
//! first to read it cannot delete it from under the others. No task can read it first:
//! the manager leases a group's agents no task while the credential still admits agents,
//! and revokes it once every node's agent registered or the pilot ends.

use super::resources::agent_resource_flags;
use super::script::shell_quote;
use super::PilotSpec;
use crate::provision::profile::{AdapterKind, PlatformProfile};

/// The script's last lines: what starts the agent, or the agents.
pub(super) fn launch(profile: &PlatformProfile, pilot: &PilotSpec) -> String {
    let flags = agent_resource_flags(profile);
    if pilot.probe {
        return "exec \"$agent\" --version".into();
    }
    if pilot.nodes <= 1 {
        return format!("exec \"$agent\" --delete-token-file{flags}");
    }
    let agent = format!("\"$agent\" --keep-token-file{flags}");
    let n = pilot.nodes;
    let again = || {
        format!(
            "/bin/sh {} --on-node \"$HETPILOT_WALLTIME_END\"",
            shell_quote(&pilot.script_path)
        )
    };
    let on_node = format!(
        "if [ \"${{1:-}}\" = --on-node ]; then\n    \
         export HETPILOT_WALLTIME_END=\"$2\"\n    \
         exec {agent}\n\
         fi\n"
    );
    match profile.adapter {
        AdapterKind::Slurm => format!(
            "exec srun --nodes={n} --ntasks={n} --ntasks-per-node=1 --cpus-per-task={} \
             --kill-on-bad-exit=0 {agent}",
            pilot.cores_per_node
        ),
        AdapterKind::Torque => format!("{on_node}exec pbsdsh -u {}", again()),
        AdapterKind::Pbs => format!("{on_node}exec pbsdsh -- {}", again()),
        AdapterKind::LoadLeveler => format!(
            "{on_node}for host in $(sort -u \"$LOADL_HOSTFILE\"); do\n    \
             llspawn.stdio \"$host\" {} </dev/null &\n\
             done\n\
             wait",
            again()
        ),
        // The ssh adapter starts one launch script per host; the local one has one node.
        AdapterKind::Ssh | AdapterKind::Local => format!("exec {agent}"),
    }
}

/// PBS Professional's `place`: a multi-node pilot's chunks on distinct hosts.
pub(super) fn pbs_place(pilot: &PilotSpec) -> Option<String> {
    (pilot.nodes > 1).then(|| "scatter".to_string())
}

#[cfg(test)]
mod tests {
    use super::super::script::{render_batch, LOADLEVELER, PBS_PRO, SLURM, TORQUE};
    use super::super::testing::{pilot, pilot_of, profile};
    use crate::provision::profile::AdapterKind;
    use std::os::unix::fs::PermissionsExt;

    /// What follows the agent-binary check: the lines that start the agents.
    fn launch_lines(text: &str) -> &str {
        let check_end = "    exit 127\nfi\n";
        &text[text.find(check_end).expect("the binary check") + check_end.len()..]
    }

    #[test]
    fn a_two_node_slurm_pilot_runs_one_agent_per_node_with_srun() {
        let script = render_batch(SLURM, &profile(AdapterKind::Slurm), &pilot_of(2)).unwrap();
        let expected = r#"#!/bin/sh
#SBATCH --job-name=darth-p17
#SBATCH --partition=batch
#SBATCH --account=proj42
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --time=01:30:00
#SBATCH --output=/scratch/hetpilot/darth-p17.out
#SBATCH --error=/scratch/hetpilot/darth-p17.err
set -eu
umask 077
module load gcc/12
export HETPILOT_URL='http://manager.example:8080' HETPILOT_PLATFORM='darth' HETPILOT_PILOT='darth-p17'
export HETPILOT_AGENT_TOKEN_FILE='/scratch/hetpilot/darth-p17.token' HETPILOT_WORK_DIR='/scratch/hetpilot'
export HETPILOT_WALLTIME_END=$(( $(date +%s) + 5400 ))
agent='/opt/hetpilot/bin/hetpilot-agent'
if [ ! -x "$agent" ]; then
    echo "hetpilot: the agent binary $agent is missing or not executable on $(hostname); fix agent_binary in the platform profile" >&2
    exit 127
fi
exec srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --cpus-per-task=8 --kill-on-bad-exit=0 "$agent" --keep-token-file
"#;
        assert_eq!(script.text, expected);
    }

    const ON_NODE: &str = "if [ \"${1:-}\" = --on-node ]; then\n    \
                           export HETPILOT_WALLTIME_END=\"$2\"\n    \
                           exec \"$agent\" --keep-token-file\n\
                           fi\n";

    #[test]
    fn a_two_node_torque_pilot_runs_the_script_on_each_node_with_pbsdsh() {
        let text = render_batch(TORQUE, &profile(AdapterKind::Torque), &pilot_of(2))
            .unwrap()
            .text;
        assert!(
            text.contains("\n#PBS -l nodes=2:ppn=8,walltime=01:30:00\n"),
            "{text}"
        );
        assert!(!text.contains("place="), "{text}");
        assert_eq!(
            launch_lines(&text),
            format!(
                "{ON_NODE}exec pbsdsh -u /bin/sh '/scratch/hetpilot/darth-p17.job' --on-node \
                 \"$HETPILOT_WALLTIME_END\"\n"
            )
        );
    }

    #[test]
    fn a_two_node_pbs_pro_pilot_scatters_its_chunks_and_runs_pbsdsh() {
        let text = render_batch(PBS_PRO, &profile(AdapterKind::Pbs), &pilot_of(2))
            .unwrap()
            .text;
        assert!(
            text.contains("\n#PBS -l select=2:ncpus=8\n#PBS -l place=scatter\n"),
            "{text}"
        );
        assert_eq!(
            launch_lines(&text),
            format!(
                "{ON_NODE}exec pbsdsh -- /bin/sh '/scratch/hetpilot/darth-p17.job' --on-node \
                 \"$HETPILOT_WALLTIME_END\"\n"
            )
        );
        let one = render_batch(PBS_PRO, &profile(AdapterKind::Pbs), &pilot())
            .unwrap()
            .text;
        assert!(!one.contains("place="), "{one}");
    }

    #[test]
    fn a_two_node_loadleveler_pilot_spawns_the_script_on_each_host() {
        let text = render_batch(
            LOADLEVELER,
            &profile(AdapterKind::LoadLeveler),
            &pilot_of(2),
        )
        .unwrap()
        .text;
        assert!(
            text.contains("\n# @ job_type = parallel\n")
                && text.contains("\n# @ node = 2\n# @ tasks_per_node = 8\n"),
            "{text}"
        );
        assert_eq!(
            launch_lines(&text),
            format!(
                "{ON_NODE}for host in $(sort -u \"$LOADL_HOSTFILE\"); do\n    \
                 llspawn.stdio \"$host\" /bin/sh '/scratch/hetpilot/darth-p17.job' --on-node \
                 \"$HETPILOT_WALLTIME_END\" </dev/null &\n\
                 done\n\
                 wait\n"
            )
        );
    }

    #[test]
    fn one_node_pilots_and_probes_exec_one_agent() {
        for (adapter, template) in [
            (AdapterKind::Slurm, SLURM),
            (AdapterKind::Torque, TORQUE),
            (AdapterKind::Pbs, PBS_PRO),
            (AdapterKind::LoadLeveler, LOADLEVELER),
        ] {
            let one = render_batch(template, &profile(adapter), &pilot()).unwrap();
            assert_eq!(
                launch_lines(&one.text),
                "exec \"$agent\" --delete-token-file\n"
            );
            let mut probe = pilot_of(2);
            probe.probe = true;
            let probe = render_batch(template, &profile(adapter), &probe).unwrap();
            assert_eq!(launch_lines(&probe.text), "exec \"$agent\" --version\n");
        }
    }

    /// Runs a two-node TORQUE script for real, with a `pbsdsh` stand-in that runs its
    /// command once per "node": each node's agent gets the pilot's environment, keeps the
    /// credential file, and the walltime end the first node computed.
    #[test]
    fn each_node_runs_the_script_again_and_its_agent_gets_the_pilots_environment() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = |path: &std::path::Path, text: &str| {
            std::fs::write(path, text).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        // `pbsdsh -u CMD...`: CMD on each of two nodes, one after the other.
        exe(
            &bin.join("pbsdsh"),
            "#!/bin/sh\n[ \"$1\" = -u ] && shift\nfor node in n1 n2; do NODE=$node \"$@\"; done\n",
        );
        let agent = dir.path().join("agent");
        exe(
            &agent,
            "#!/bin/sh\necho \"$NODE $HETPILOT_PILOT $HETPILOT_AGENT_TOKEN_FILE \
             $HETPILOT_WALLTIME_END $*\"\n",
        );
        let mut prof = profile(AdapterKind::Torque);
        prof.agent_binary = agent.to_str().unwrap().into();
        prof.setup = vec![format!("PATH={}:$PATH", bin.display())];
        let mut p = pilot_of(2);
        p.script_path = dir.path().join("job.sh").to_str().unwrap().into();
        let script = render_batch(TORQUE, &prof, &p).unwrap();
        std::fs::write(&script.path, &script.text).unwrap();
        let out = std::process::Command::new("sh")
            .arg(&script.path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let end = lines[0].split(' ').nth(3).unwrap().to_string();
        assert!(end.parse::<u64>().is_ok(), "{lines:?}");
        for (line, node) in lines.iter().zip(["n1", "n2"]) {
            assert_eq!(
                *line,
                format!(
                    "{node} darth-p17 /scratch/hetpilot/darth-p17.token {end} --keep-token-file"
                )
            );
        }
    }
}
