//! The task slots this node's share of a batch allocation holds, from the variables the
//! batch system sets in the job's environment. A pilot runs as many tasks at once as its
//! allocation has cores on the node, not as many as the node has (`--slots` overrides):
//!
//! - Slurm: `SLURM_CPUS_ON_NODE`.
//! - TORQUE: `PBS_NUM_PPN` (cores per node), else `PBS_NP` / `PBS_NUM_NODES`.
//! - PBS Professional: `NCPUS` (the chunk's `ncpus`), only with `PBS_JOBID` set.
//! - LoadLeveler: the task geometry in `LOADL_PROCESSOR_LIST` (one host name per task;
//!   this host's tasks), else `LOADL_TOTAL_TASKS` (pilots are one node).

/// This node's name as its batch system knows it: Slurm's node name (`SLURMD_NODENAME`,
/// which differs from the host name where one host runs several slurmd, and is what
/// `--nodelist` takes), else the host name the ssh adapter reached it by
/// (`HETPILOT_NODE_NAME`, which its launch sets), else `hostname`. The agents of a
/// multi-node pilot register one per node under these names.
pub fn node_name(var: impl Fn(&str) -> Option<String>, hostname: String) -> String {
    ["SLURMD_NODENAME", "HETPILOT_NODE_NAME"]
        .into_iter()
        .find_map(|name| {
            var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        })
        .unwrap_or(hostname)
}

/// The slots the allocation gives this node and the variable they came from; `None`
/// outside a batch job (or when no variable holds a positive count). `var` looks a
/// variable up; `hostname` is this node's name.
pub fn slots(var: impl Fn(&str) -> Option<String>, hostname: &str) -> Option<(u32, &'static str)> {
    let count = |name: &'static str| {
        var(name)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|n| *n > 0)
            .map(|n| (n, name))
    };
    if let Some(found) = count("SLURM_CPUS_ON_NODE") {
        return Some(found);
    }
    if let Some(found) = count("PBS_NUM_PPN") {
        return Some(found);
    }
    if let Some((np, _)) = count("PBS_NP") {
        let nodes = count("PBS_NUM_NODES").map_or(1, |(n, _)| n);
        return Some(((np / nodes).max(1), "PBS_NP"));
    }
    if var("PBS_JOBID").is_some() {
        if let Some(found) = count("NCPUS") {
            return Some(found);
        }
    }
    if let Some(list) = var("LOADL_PROCESSOR_LIST") {
        let hosts: Vec<&str> = list.split_whitespace().collect();
        let short = |h: &str| h.split('.').next().unwrap_or(h).to_string();
        let mine = hosts.iter().filter(|h| short(h) == short(hostname)).count() as u32;
        if mine > 0 {
            return Some((mine, "LOADL_PROCESSOR_LIST"));
        }
        let mut distinct: Vec<String> = hosts.iter().map(|h| short(h)).collect();
        distinct.sort();
        distinct.dedup();
        if !distinct.is_empty() {
            let per_node = (hosts.len() / distinct.len()) as u32;
            return Some((per_node, "LOADL_PROCESSOR_LIST"));
        }
    }
    count("LOADL_TOTAL_TASKS")
}

#[cfg(test)]
mod tests {
    use super::{node_name, slots};

    #[test]
    fn slurm_s_node_name_comes_before_the_host_name() {
        let host = || "vm".to_string();
        assert_eq!(node_name(env(&[]), host()), "vm");
        assert_eq!(node_name(env(&[("SLURMD_NODENAME", "n2")]), host()), "n2");
        assert_eq!(node_name(env(&[("SLURMD_NODENAME", " ")]), host()), "vm");
        assert_eq!(
            node_name(env(&[("HETPILOT_NODE_NAME", "node7")]), host()),
            "node7"
        );
        assert_eq!(
            node_name(
                env(&[("HETPILOT_NODE_NAME", "node7"), ("SLURMD_NODENAME", "n2")]),
                host()
            ),
            "n2"
        );
    }

    /// A job's environment and the slots expected from it.
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<(u32, &'a str)>);

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn each_batch_system_says_how_many_cores_the_node_holds() {
        let cases: &[Case] = &[
            (&[], None),
            (
                &[("SLURM_CPUS_ON_NODE", "32"), ("SLURM_JOB_ID", "7")],
                Some((32, "SLURM_CPUS_ON_NODE")),
            ),
            // The lab's PBS layer runs on Slurm: Slurm's own count comes first.
            (
                &[("SLURM_CPUS_ON_NODE", "8"), ("PBS_NP", "2")],
                Some((8, "SLURM_CPUS_ON_NODE")),
            ),
            (
                &[
                    ("PBS_NUM_PPN", "12"),
                    ("PBS_NP", "24"),
                    ("PBS_NUM_NODES", "2"),
                ],
                Some((12, "PBS_NUM_PPN")),
            ),
            (
                &[("PBS_NP", "24"), ("PBS_NUM_NODES", "2")],
                Some((12, "PBS_NP")),
            ),
            (&[("PBS_NP", "6")], Some((6, "PBS_NP"))),
            (
                &[("PBS_JOBID", "1.pbs"), ("NCPUS", "16")],
                Some((16, "NCPUS")),
            ),
            // NCPUS alone is not a batch allocation.
            (&[("NCPUS", "16")], None),
            (
                &[("LOADL_PROCESSOR_LIST", "c1.site c1.site c2.site c1.site")],
                Some((3, "LOADL_PROCESSOR_LIST")),
            ),
            (
                &[("LOADL_PROCESSOR_LIST", "x1 x1 x2 x2")],
                Some((2, "LOADL_PROCESSOR_LIST")),
            ),
            (
                &[("LOADL_TOTAL_TASKS", "64")],
                Some((64, "LOADL_TOTAL_TASKS")),
            ),
            (&[("SLURM_CPUS_ON_NODE", "0"), ("SLURM_JOB_ID", "7")], None),
            (&[("SLURM_CPUS_ON_NODE", "lots")], None),
        ];
        for (vars, expected) in cases {
            assert_eq!(slots(env(vars), "c1"), *expected, "{vars:?}");
        }
    }
}
