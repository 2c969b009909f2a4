//! What a pilot's job script asks for besides nodes, cores and time: the profile's
//! `gpus_per_node` in each batch system's own words, and the profile's named `[resources]`
//! handed to the agent as `--resource NAME=N` flags (the agent offers them at
//! registration; GPUs it detects itself, within what the batch system granted).
//!
//! - Slurm: `#SBATCH --gres=gpu:N` (per node; accepted by `select/cons_res` and
//!   `select/cons_tres` alike, and Slurm then sets `CUDA_VISIBLE_DEVICES` itself).
//! - PBS Professional: `:ngpus=N` in the `select` chunk (PBS Pro's built-in GPU resource).
//! - TORQUE: `nodes=N:ppn=K:gpus=G` (TORQUE's node-spec GPU count).
//! - LoadLeveler has no built-in GPU keyword: GPUs are a site-defined consumable resource
//!   (`SCHEDULE_BY_RESOURCES` in the global configuration, a machine's `resources =
//!   GPU(n)`), which a job consumes per task with `# @ resources = name(count)` or per
//!   node with `# @ node_resources = name(count)` ("Using and Administering LoadLeveler",
//!   job command file keywords `resources` and `node_resources`). The pilot asks per node
//!   (its tasks are slots, not GPU users): `# @ node_resources = GPU(N)`.

use super::script::shell_quote;
use crate::provision::profile::PlatformProfile;

/// The name LoadLeveler sites give their GPU consumable resource.
const LOADLEVELER_GPU_RESOURCE: &str = "GPU";

/// The template placeholders of a GPU request: `None` (a directive line dropped) or an
/// empty suffix when the profile asks for no GPUs.
pub(super) fn gpu_placeholders(profile: &PlatformProfile) -> [(&'static str, Option<String>); 4] {
    let n = profile.gpus_per_node;
    let asked = n > 0;
    let suffix = |text: String| Some(if asked { text } else { String::new() });
    [
        ("gpus_per_node", asked.then(|| n.to_string())),
        ("pbs_ngpus", suffix(format!(":ngpus={n}"))),
        ("torque_gpus", suffix(format!(":gpus={n}"))),
        (
            "loadleveler_gpus",
            asked.then(|| format!("{LOADLEVELER_GPU_RESOURCE}({n})")),
        ),
    ]
}

/// The agent's `--resource NAME=N` flags, one per named resource of the profile, each
/// shell-quoted (names are `[a-z][a-z0-9_]*` and amounts decimal numbers already).
pub(super) fn agent_resource_flags(profile: &PlatformProfile) -> String {
    profile
        .resources
        .iter()
        .map(|(name, amount)| format!(" --resource {}", shell_quote(&format!("{name}={amount}"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::script::{render_batch, render_launch, LOADLEVELER, PBS_PRO, SLURM, TORQUE};
    use super::super::testing::{pilot, profile};
    use crate::provision::profile::{AdapterKind, PlatformProfile};
    use hetpilot_protocol::resources::ResourceAmount;

    fn gpu_profile(adapter: AdapterKind) -> PlatformProfile {
        let mut p = profile(adapter);
        p.gpus_per_node = 2;
        p.resources
            .insert("licenses".into(), ResourceAmount::whole(3).unwrap());
        p.resources
            .insert("scratch_gb".into(), ResourceAmount::parse(0.5).unwrap());
        p
    }

    /// The directive lines of a script (those starting with `prefix`).
    fn directives(text: &str, prefix: &str) -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn slurm_pilots_ask_for_their_gpus_per_node_with_gres() {
        let text = render_batch(SLURM, &gpu_profile(AdapterKind::Slurm), &pilot())
            .unwrap()
            .text;
        assert_eq!(
            directives(&text, "#SBATCH"),
            [
                "#SBATCH --job-name=darth-p17",
                "#SBATCH --partition=batch",
                "#SBATCH --account=proj42",
                "#SBATCH --nodes=1",
                "#SBATCH --ntasks-per-node=8",
                "#SBATCH --gres=gpu:2",
                "#SBATCH --time=01:30:00",
                "#SBATCH --output=/scratch/hetpilot/darth-p17.out",
                "#SBATCH --error=/scratch/hetpilot/darth-p17.err",
            ]
        );
    }

    #[test]
    fn pbs_pro_pilots_ask_for_ngpus_in_the_select_chunk() {
        let text = render_batch(PBS_PRO, &gpu_profile(AdapterKind::Pbs), &pilot())
            .unwrap()
            .text;
        let lines = directives(&text, "#PBS -l");
        assert_eq!(
            lines,
            [
                "#PBS -l select=1:ncpus=8:ngpus=2",
                "#PBS -l walltime=01:30:00"
            ]
        );
    }

    #[test]
    fn torque_pilots_ask_for_gpus_in_the_node_spec() {
        let text = render_batch(TORQUE, &gpu_profile(AdapterKind::Torque), &pilot())
            .unwrap()
            .text;
        assert_eq!(
            directives(&text, "#PBS -l"),
            ["#PBS -l nodes=1:ppn=8:gpus=2,walltime=01:30:00"]
        );
    }

    #[test]
    fn loadleveler_pilots_consume_the_gpu_resource_per_node() {
        let text = render_batch(
            LOADLEVELER,
            &gpu_profile(AdapterKind::LoadLeveler),
            &pilot(),
        )
        .unwrap()
        .text;
        let lines = directives(&text, "# @ node");
        assert_eq!(lines, ["# @ node = 1", "# @ node_resources = GPU(2)"]);
    }

    #[test]
    fn cpu_platforms_ask_for_no_gpus_and_no_resources() {
        for (adapter, template) in [
            (AdapterKind::Slurm, SLURM),
            (AdapterKind::Pbs, PBS_PRO),
            (AdapterKind::Torque, TORQUE),
            (AdapterKind::LoadLeveler, LOADLEVELER),
        ] {
            let text = render_batch(template, &profile(adapter), &pilot())
                .unwrap()
                .text;
            for word in ["gpu", "GPU", "--resource", "node_resources"] {
                assert!(!text.contains(word), "{adapter:?}: {word} in\n{text}");
            }
        }
        let pbs = render_batch(PBS_PRO, &profile(AdapterKind::Pbs), &pilot()).unwrap();
        assert!(
            pbs.text.contains("\n#PBS -l select=1:ncpus=8\n"),
            "{}",
            pbs.text
        );
    }

    #[test]
    fn named_resources_reach_the_agent_as_resource_flags_but_not_the_probe() {
        let prof = gpu_profile(AdapterKind::Slurm);
        let want = "exec \"$agent\" --delete-token-file --resource 'licenses=3' \
                    --resource 'scratch_gb=0.5'\n";
        let batch = render_batch(SLURM, &prof, &pilot()).unwrap().text;
        assert!(batch.ends_with(want), "{batch}");
        let launch = render_launch(&prof, &pilot()).unwrap().text;
        assert!(launch.ends_with(want), "{launch}");
        let mut probe = pilot();
        probe.probe = true;
        let probe = render_batch(SLURM, &prof, &probe).unwrap().text;
        assert!(probe.ends_with("exec \"$agent\" --version\n"), "{probe}");
    }
}
