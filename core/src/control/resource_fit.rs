//! Which platforms an application's pilots may be asked on, by what its tasks request
//! besides cores: GPU work only where the platform's nodes have enough GPUs (and named
//! resources), and CPU-only work off the GPU platforms whenever a platform offering nothing
//! but cores can take it, so a GPU node is never held by work that did not need it.

use super::provision_demand::Capacity;
use hetpilot_protocol::resources::{ResourceAmount, ResourceRequest, GPUS};
use std::collections::{BTreeMap, BTreeSet};

/// What one node of a platform offers besides cores.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeResources {
    /// Whole GPUs.
    #[serde(default)]
    pub gpus: u32,
    /// Named counts (`licenses`, `scratch_gb`), never `gpus`.
    #[serde(default)]
    pub named: BTreeMap<String, ResourceAmount>,
}

impl NodeResources {
    /// Whether it offers nothing besides cores.
    pub fn is_empty(&self) -> bool {
        self.gpus == 0 && self.named.is_empty()
    }

    /// Whether one task asking `request` fits on such a node: a share of one GPU needs a
    /// GPU, whole GPUs need as many, and each named count needs at least its amount.
    pub fn fits(&self, request: &ResourceRequest) -> bool {
        request.0.iter().all(|(name, amount)| {
            if name == GPUS {
                let whole = amount.whole_units().max(1);
                u64::from(self.gpus) >= whole
            } else {
                self.named.get(name).is_some_and(|have| have >= amount)
            }
        })
    }
}

/// The platforms, among `platforms`, whose pilots may run an application whose tasks take
/// `cores` cores and `request` besides: those whose nodes fit the request (a platform
/// without a capacity offers cores only, of any number). For a CPU-only request, the
/// platforms offering nothing besides cores, when one of them has nodes of enough cores;
/// only when none has does it fall back to the others.
pub fn eligible_platforms<'a>(
    platforms: impl IntoIterator<Item = &'a str>,
    capacities: &BTreeMap<String, Capacity>,
    cores: u32,
    request: &ResourceRequest,
) -> BTreeSet<String> {
    let none = NodeResources::default();
    let offer = |p: &str| capacities.get(p).map_or(&none, |c| &c.resources);
    let enough_cores = |p: &str| {
        capacities
            .get(p)
            .is_none_or(|c| c.cores_per_node >= cores.max(1))
    };
    let fitting: Vec<&str> = platforms
        .into_iter()
        .filter(|p| offer(p).fits(request))
        .collect();
    if request.is_empty() {
        let plain: Vec<&str> = fitting
            .iter()
            .copied()
            .filter(|p| offer(p).is_empty())
            .collect();
        if plain.iter().any(|p| enough_cores(p)) {
            return plain.into_iter().map(str::to_string).collect();
        }
    }
    fitting.into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn request(pairs: &[(&str, f64)]) -> ResourceRequest {
        ResourceRequest(
            pairs
                .iter()
                .map(|(n, a)| (n.to_string(), ResourceAmount::parse(*a).unwrap()))
                .collect(),
        )
    }

    fn capacity(cores: u32, gpus: u32, named: &[(&str, f64)]) -> Capacity {
        Capacity {
            nodes: 2,
            cores_per_node: cores,
            resources: NodeResources {
                gpus,
                named: request(named).0,
            },
        }
    }

    /// `cpu` (8 cores), `gpu2` (4 cores, 2 GPUs), `gpu8` (16 cores, 8 GPUs, 2 licences).
    fn capacities() -> BTreeMap<String, Capacity> {
        BTreeMap::from([
            ("cpu".to_string(), capacity(8, 0, &[])),
            ("gpu2".to_string(), capacity(4, 2, &[])),
            ("gpu8".to_string(), capacity(16, 8, &[("licenses", 2.0)])),
        ])
    }

    fn eligible(cores: u32, req: &[(&str, f64)]) -> Vec<String> {
        let caps = capacities();
        let names: Vec<&str> = caps.keys().map(String::as_str).collect();
        eligible_platforms(names, &caps, cores, &request(req))
            .into_iter()
            .collect()
    }

    #[test]
    fn gpu_work_goes_only_where_nodes_have_enough_gpus() {
        assert_eq!(eligible(1, &[("gpus", 1.0)]), ["gpu2", "gpu8"]);
        assert_eq!(eligible(1, &[("gpus", 0.25)]), ["gpu2", "gpu8"]);
        assert_eq!(eligible(1, &[("gpus", 4.0)]), ["gpu8"]);
        assert!(eligible(1, &[("gpus", 16.0)]).is_empty());
        assert_eq!(eligible(1, &[("licenses", 1.0)]), ["gpu8"]);
        assert!(eligible(1, &[("licenses", 3.0)]).is_empty());
        assert!(eligible(1, &[("fpga", 1.0)]).is_empty(), "nobody offers it");
    }

    #[test]
    fn cpu_work_keeps_off_gpu_platforms_while_a_cpu_platform_can_take_it() {
        assert_eq!(eligible(1, &[]), ["cpu"]);
        assert_eq!(eligible(8, &[]), ["cpu"]);
        // Tasks of 12 cores fit no CPU node: then the GPU platforms may take them.
        assert_eq!(eligible(12, &[]), ["cpu", "gpu2", "gpu8"]);
        // A platform without a profile offers cores only.
        let caps = capacities();
        let got = eligible_platforms(["gpu2", "local"], &caps, 1, &request(&[]));
        assert_eq!(got.into_iter().collect::<Vec<_>>(), ["local"]);
        let got = eligible_platforms(["gpu2", "local"], &caps, 1, &request(&[("gpus", 1.0)]));
        assert_eq!(got.into_iter().collect::<Vec<_>>(), ["gpu2"]);
    }
}
