//! What `hetpilot platforms check` asks about GPUs when a profile sets `gpus_per_node`:
//! whether the partition's (Slurm) or the server's (PBS, TORQUE) nodes have that many, so a
//! GPU platform whose pilots would wait forever, or be refused, is caught before any pilot
//! is submitted.
//!
//! - Slurm: `sinfo -h -p PARTITION -o %G`, one line per node configuration, e.g.
//!   `gpu:2`, `gpu:a100:4(S:0-1)`, `gpu:tesla:2,mps:200` or `(null)`.
//! - PBS Professional and TORQUE: `pbsnodes -a`, a block per node whose indented
//!   `key = value` lines hold `resources_available.ngpus` (PBS Pro) or `gpus` (TORQUE and
//!   Slurm's TORQUE wrapper). A node with a `queue` attribute (PBS Pro) counts only for that
//!   queue; pbsnodes says nothing else about which nodes serve which queue.

use super::queue_check::{Finding, Verdict};
use crate::provision::profile::PlatformProfile;
use crate::provision::runner::CommandRunner;

fn finding(verdict: Verdict, text: String) -> Finding {
    Finding { verdict, text }
}

/// The GPUs of one `%G` line: the largest count among its `gpu[:type]:N[(...)]` entries.
fn gres_gpus(line: &str) -> u32 {
    let mut depth = 0u32;
    let mut entries = vec![String::new()];
    for c in line.trim().chars() {
        match c {
            '(' => depth = depth.saturating_add(1),
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => entries.push(String::new()),
            _ if depth == 0 => entries.last_mut().expect("one entry at least").push(c),
            _ => {}
        }
    }
    entries
        .iter()
        .filter(|e| e.split(':').next() == Some("gpu"))
        .filter_map(|e| e.rsplit(':').next()?.parse::<u32>().ok())
        .max()
        .unwrap_or(0)
}

/// The most GPUs one node of a partition has, from `sinfo -h -o %G`.
pub(super) fn most_gres_gpus(sinfo: &str) -> u32 {
    sinfo.lines().map(gres_gpus).max().unwrap_or(0)
}

/// Slurm: the partition's nodes against the profile's `gpus_per_node`; no finding when the
/// profile asks for none.
pub(super) fn slurm(
    runner: &dyn CommandRunner,
    profile: &PlatformProfile,
    partition: &str,
) -> Option<Finding> {
    let want = profile.gpus_per_node;
    if want == 0 {
        return None;
    }
    let argv = ["sinfo", "-h", "-p", partition, "-o", "%G"];
    let out = match runner.run(&argv, None) {
        Ok(out) if out.status == 0 => out.stdout,
        Ok(out) => {
            return Some(finding(
                Verdict::Warn,
                format!(
                    "GPUs of partition `{partition}`: `sinfo -o %G` exited {}: {}",
                    out.status,
                    super::one_line(&out.stdout, &out.stderr)
                ),
            ))
        }
        Err(e) => {
            return Some(finding(
                Verdict::Warn,
                format!("GPUs of partition `{partition}`: `sinfo -o %G`: {e}"),
            ))
        }
    };
    let shown: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    Some(judge(
        &format!("the nodes of partition `{partition}`"),
        most_gres_gpus(&out),
        want,
        &format!("sinfo %G: {}", shown.join(" ")),
    ))
}

/// The verdict on nodes of at most `most` GPUs for pilots asking `want` a node.
fn judge(nodes: &str, most: u32, want: u32, evidence: &str) -> Finding {
    if most == 0 {
        finding(
            Verdict::Fail,
            format!(
                "{nodes} have no GPUs ({evidence}); the profile asks for {want} a node \
                 (gpus_per_node): use a GPU partition or queue, or set gpus_per_node = 0"
            ),
        )
    } else if most < want {
        finding(
            Verdict::Fail,
            format!(
                "{nodes} have at most {most} GPUs ({evidence}); pilots ask for {want} \
                 (gpus_per_node)"
            ),
        )
    } else {
        finding(
            Verdict::Ok,
            format!("{nodes}: up to {most} GPUs a node, pilots ask for {want}"),
        )
    }
}

/// The most GPUs one node serving `queue` has, from `pbsnodes -a` (`None`: no node listed).
pub(super) fn most_pbsnodes_gpus(text: &str, queue: Option<&str>) -> Option<u32> {
    let mut nodes: Vec<(Option<String>, u32)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with([' ', '\t']) {
            nodes.push((None, 0));
            continue;
        }
        let (Some(node), Some((key, value))) = (nodes.last_mut(), line.split_once('=')) else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "resources_available.ngpus" | "gpus" => node.1 = value.parse().unwrap_or(0),
            "queue" => node.0 = Some(value.to_string()),
            _ => {}
        }
    }
    nodes
        .iter()
        .filter(|(q, _)| match (q, queue) {
            (Some(q), Some(queue)) => q == queue,
            _ => true,
        })
        .map(|(_, gpus)| *gpus)
        .max()
}

/// PBS Professional and TORQUE: the server's nodes against the profile's `gpus_per_node`;
/// no finding when the profile asks for none.
pub(super) fn pbs(runner: &dyn CommandRunner, profile: &PlatformProfile) -> Option<Finding> {
    let want = profile.gpus_per_node;
    if want == 0 {
        return None;
    }
    let text = match runner.run(&["pbsnodes", "-a"], None) {
        Ok(out) if out.status == 0 => out.stdout,
        Ok(out) => {
            return Some(finding(
                Verdict::Warn,
                format!(
                    "GPUs of the nodes: `pbsnodes -a` exited {}: {} (not checked)",
                    out.status,
                    super::one_line(&out.stdout, &out.stderr)
                ),
            ))
        }
        Err(e) => {
            return Some(finding(
                Verdict::Warn,
                format!("GPUs of the nodes: `pbsnodes -a`: {e} (not checked)"),
            ))
        }
    };
    let queue = profile.queue.as_deref();
    let nodes = match queue {
        Some(q) => format!("the nodes of queue `{q}`"),
        None => "the server's nodes".to_string(),
    };
    Some(match most_pbsnodes_gpus(&text, queue) {
        None => finding(
            Verdict::Warn,
            "`pbsnodes -a` lists no nodes: GPUs not checked".to_string(),
        ),
        Some(most) => judge(&nodes, most, want, "pbsnodes -a"),
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{profile, FakeRunner};
    use super::*;
    use crate::provision::profile::AdapterKind;

    #[test]
    fn gres_lines_read_as_sinfo_prints_them() {
        assert_eq!(gres_gpus("gpu:2"), 2);
        assert_eq!(gres_gpus("gpu:a100:4(S:0-1)"), 4);
        assert_eq!(gres_gpus("gpu:tesla:2,mps:200"), 2);
        assert_eq!(gres_gpus("mps:200,gpu:v100:8(S:0,1)"), 8);
        assert_eq!(gres_gpus("(null)"), 0);
        assert_eq!(gres_gpus("gpu"), 0);
        assert_eq!(gres_gpus("shard:gpu:9"), 0, "a shard is not a GPU");
        assert_eq!(most_gres_gpus("gpu:2\n(null)\ngpu:h100:4\n"), 4);
        assert_eq!(most_gres_gpus(""), 0);
    }

    fn gpu_profile(adapter: AdapterKind, gpus: u32) -> PlatformProfile {
        let mut p = profile(adapter);
        p.gpus_per_node = gpus;
        p
    }

    #[test]
    fn a_cpu_partition_fails_a_gpu_profile_with_the_reason() {
        let runner = FakeRunner::new(&[(0, "(null)\n", "")]);
        let f = slurm(&runner, &gpu_profile(AdapterKind::Slurm, 2), "debug").unwrap();
        assert_eq!(f.verdict, Verdict::Fail);
        assert_eq!(
            f.text,
            "the nodes of partition `debug` have no GPUs (sinfo %G: (null)); the profile asks \
             for 2 a node (gpus_per_node): use a GPU partition or queue, or set \
             gpus_per_node = 0"
        );
        assert_eq!(runner.calls(), [["sinfo", "-h", "-p", "debug", "-o", "%G"]]);
    }

    #[test]
    fn a_gpu_partition_passes_when_its_nodes_have_enough() {
        let runner = FakeRunner::new(&[(0, "gpu:2\n", ""), (0, "gpu:2\n", "")]);
        let ok = slurm(&runner, &gpu_profile(AdapterKind::Slurm, 2), "gpu").unwrap();
        assert_eq!(ok.verdict, Verdict::Ok, "{}", ok.text);
        let few = slurm(&runner, &gpu_profile(AdapterKind::Slurm, 4), "gpu").unwrap();
        assert_eq!(few.verdict, Verdict::Fail);
        assert!(few.text.contains("at most 2 GPUs"), "{}", few.text);
        let none = slurm(&FakeRunner::new(&[]), &profile(AdapterKind::Slurm), "gpu");
        assert!(none.is_none(), "no GPUs asked, nothing asked of Slurm");
    }

    /// `pbsnodes -a` of the lab (Slurm's TORQUE wrapper) and of PBS Professional.
    const PBSNODES_LAB: &str = "n1\n    state = free\n    np = 8\n    ntype = cluster\n\
        n5\n    state = free\n    np = 4\n    ntype = cluster\n    gpus = 2\n\n";
    const PBSNODES_PRO: &str = "node01\n     Mom = node01\n     resources_available.ngpus = 4\n\
        \x20    queue = gpuq\n\nnode02\n     Mom = node02\n     resources_available.ngpus = 0\n";

    #[test]
    fn pbsnodes_gpus_are_counted_per_node_and_queue() {
        assert_eq!(most_pbsnodes_gpus(PBSNODES_LAB, Some("batch")), Some(2));
        assert_eq!(most_pbsnodes_gpus(PBSNODES_PRO, Some("gpuq")), Some(4));
        assert_eq!(most_pbsnodes_gpus(PBSNODES_PRO, Some("workq")), Some(0));
        assert_eq!(most_pbsnodes_gpus("", None), None);
        let runner = FakeRunner::new(&[(0, PBSNODES_PRO, "")]);
        let mut p = gpu_profile(AdapterKind::Pbs, 1);
        p.queue = Some("workq".into());
        let f = pbs(&runner, &p).unwrap();
        assert_eq!(f.verdict, Verdict::Fail);
        assert!(
            f.text
                .starts_with("the nodes of queue `workq` have no GPUs"),
            "{}",
            f.text
        );
        let runner = FakeRunner::new(&[(1, "", "pbsnodes: cannot connect to server")]);
        let f = pbs(&runner, &p).unwrap();
        assert_eq!(f.verdict, Verdict::Warn);
        assert!(f.text.contains("cannot connect"), "{}", f.text);
    }
}
