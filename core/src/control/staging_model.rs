//! The live staging model of one request (paper Section 3), from live data: measured
//! where measured, assumed elsewhere.
//! - files: each waiting task's declared inputs (shared-filesystem files are read in place
//!   and left out), sized by their declared `size` or, for file-service files, their size
//!   on disk; a file's home storage node is its endpoint (`manager`, `http://host:port`,
//!   `sftp://host:port`, `store:NAME`), the names agents measure transfers under;
//! - compute nodes: each active agent, one node; C_i from the application's measured mean
//!   runtime on the agent's platform over its mean input bytes per task (scaled by relative
//!   platform speed where only other platforms are measured; a default until then); LBW_i
//!   from the platform profile's `[staging]`; NBW_i the measured bandwidth of the
//!   platform's transfers with the request's endpoints (`Bandwidths`), else the profile's
//!   `link_mib_per_s`;
//! - storage nodes: IBW_p a store's configured `io_mib_per_s` (else a default), raised to
//!   the fastest transfer measured from the endpoint.

use super::bandwidth::Bandwidths;
use super::policy_state::PolicyState;
use super::profiling::RunStats;
use crate::queue::StagingRequest;
use crate::staging::model::{
    ComputeCluster, DataFile, StagingPlatform, StorageNode, Task, Workload,
};
use hetpilot_protocol::files::{Source, TaskFile};
use hetpilot_protocol::AppId;
use std::collections::HashMap;

/// Seconds of computation per input byte on a platform of relative speed 1, until the
/// application's runtimes are measured.
const COMPUTE_SECONDS_PER_BYTE: f64 = 1e-8;
/// The file service's I/O bandwidth until a faster transfer from it is measured, MiB/s.
const SERVICE_MIB_PER_S: f64 = 1000.0;
/// Any other endpoint's I/O bandwidth until a faster transfer from it is measured, MiB/s.
const ENDPOINT_MIB_PER_S: f64 = 100.0;
const MIB: f64 = 1024.0 * 1024.0;

/// What the live staging model assumes of a platform's nodes (paper Section 3: LBW_i and
/// the network bandwidth NBW_i) until transfers from the platform are measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StagingProfile {
    /// LBW_i: each node's local disk bandwidth, MiB/s.
    #[serde(default = "default_disk_mib_per_s")]
    pub disk_mib_per_s: f64,
    /// Each node's share of the platform's link to the storage when all its nodes
    /// transfer at once, MiB/s.
    #[serde(default = "default_link_mib_per_s")]
    pub link_mib_per_s: f64,
}

fn default_disk_mib_per_s() -> f64 {
    500.0
}
fn default_link_mib_per_s() -> f64 {
    100.0
}

impl Default for StagingProfile {
    fn default() -> Self {
        StagingProfile {
            disk_mib_per_s: default_disk_mib_per_s(),
            link_mib_per_s: default_link_mib_per_s(),
        }
    }
}

/// The files and tasks of a request, and the endpoints their storage ids stand for.
pub struct RequestFiles {
    pub(crate) workload: Workload,
    /// Storage node p is `endpoints[p]`.
    endpoints: Vec<String>,
}

impl RequestFiles {
    /// Mean input bytes per task.
    fn mean_task_bytes(&self) -> f64 {
        let w = &self.workload;
        let total: u64 = w
            .tasks
            .iter()
            .flat_map(|t| &t.files)
            .map(|&f| w.files[f as usize].size_bytes)
            .sum();
        total as f64 / w.tasks.len().max(1) as f64
    }
}

/// Files fetched by the agents (shared-filesystem files are read in place and left out),
/// each on the storage node of its endpoint.
pub fn request_files(req: &StagingRequest, size: impl Fn(&TaskFile) -> u64) -> RequestFiles {
    let mut ids: HashMap<&Source, u32> = HashMap::new();
    let mut storage: HashMap<String, u32> = HashMap::new();
    let mut endpoints = Vec::new();
    let mut files = Vec::new();
    let tasks = req
        .tasks
        .iter()
        .map(|(_, inputs)| {
            let mut read: Vec<u32> = inputs
                .iter()
                .filter(|f| !matches!(f.source, Source::Shared(_)))
                .map(|f| {
                    *ids.entry(&f.source).or_insert_with(|| {
                        let home = *storage.entry(f.source.endpoint()).or_insert_with_key(|e| {
                            endpoints.push(e.clone());
                            endpoints.len() as u32 - 1
                        });
                        files.push(DataFile {
                            size_bytes: size(f),
                            storage: home,
                        });
                        files.len() as u32 - 1
                    })
                })
                .collect();
            read.sort_unstable();
            read.dedup();
            Task { files: read }
        })
        .collect();
    if endpoints.is_empty() {
        // No file to fetch: the model still needs a storage node.
        endpoints.push("manager".into());
    }
    RequestFiles {
        workload: Workload { files, tasks },
        endpoints,
    }
}

/// What the model reads of the live state.
pub(super) struct Measures<'a> {
    stats: &'a RunStats,
    speeds: &'a HashMap<String, f64>,
    bandwidths: &'a Bandwidths,
    priors: &'a HashMap<String, StagingProfile>,
    /// The I/O bandwidth configured for an endpoint (`store:NAME` → `io_mib_per_s`).
    io_mib_per_s: &'a HashMap<String, f64>,
}

impl<'a> Measures<'a> {
    pub(super) fn of(live: &'a PolicyState) -> Measures<'a> {
        Measures {
            stats: &live.stats,
            speeds: &live.speeds,
            bandwidths: &live.bandwidths,
            priors: &live.staging_priors,
            io_mib_per_s: &live.store_io_mib_per_s,
        }
    }
}

/// The platform of a request: one single-node cluster per agent, one storage node per
/// endpoint, with measured rates where there are any (module documentation).
pub(super) fn staging_platform(
    req: &StagingRequest,
    files: &RequestFiles,
    m: &Measures<'_>,
) -> StagingPlatform {
    let endpoints: Vec<&str> = files.endpoints.iter().map(String::as_str).collect();
    let rates = NodeRates {
        app: req.app,
        mean_task_bytes: files.mean_task_bytes(),
        m,
    };
    let clusters = req
        .agents
        .iter()
        .map(|(id, platform)| {
            let prior = m.priors.get(platform).copied().unwrap_or_default();
            ComputeCluster {
                name: format!("agent {id}"),
                nodes: 1,
                compute_seconds_per_byte: rates.compute_seconds_per_byte(platform),
                disk_bandwidth: prior.disk_mib_per_s * MIB,
                link_bandwidth: m
                    .bandwidths
                    .link(platform, &endpoints)
                    .unwrap_or(prior.link_mib_per_s * MIB),
            }
        })
        .collect();
    let storage = endpoints
        .iter()
        .map(|e| StorageNode {
            io_bandwidth: storage_bandwidth(m, e),
        })
        .collect();
    StagingPlatform { clusters, storage }
}

/// IBW_p of an endpoint: the configured figure (a store's `io_mib_per_s`) or the assumed
/// one, raised to the fastest transfer measured from it (the endpoint delivered at least
/// that).
fn storage_bandwidth(m: &Measures<'_>, endpoint: &str) -> f64 {
    let assumed = match m.io_mib_per_s.get(endpoint) {
        Some(&configured) => configured,
        None if endpoint == "manager" => SERVICE_MIB_PER_S,
        None => ENDPOINT_MIB_PER_S,
    } * MIB;
    m.bandwidths
        .fastest_from(endpoint)
        .map_or(assumed, |m| m.max(assumed))
}

/// C_i of one application on each platform, from its measured runtimes.
struct NodeRates<'a> {
    app: AppId,
    mean_task_bytes: f64,
    m: &'a Measures<'a>,
}

impl NodeRates<'_> {
    fn speed(&self, platform: &str) -> f64 {
        self.m
            .speeds
            .get(platform)
            .copied()
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(1.0)
    }

    /// C_i (s/byte) on `platform`: the measured mean runtime there over the mean input
    /// bytes per task; else the speed-normalized runtimes measured elsewhere (geometric
    /// mean), scaled by this platform's speed; else the default, scaled.
    fn compute_seconds_per_byte(&self, platform: &str) -> f64 {
        let stats = self.m.stats;
        let per_byte = |seconds: f64| seconds / self.mean_task_bytes;
        if self.mean_task_bytes <= 0.0 {
            return COMPUTE_SECONDS_PER_BYTE / self.speed(platform);
        }
        if let Some(r) = stats.mean(self.app, platform) {
            return per_byte(r);
        }
        let (n, log_sum) = stats
            .platforms()
            .filter_map(|p| Some(stats.mean(self.app, p)? * self.speed(p)))
            .fold((0usize, 0.0), |(n, s), w| (n + 1, s + w.ln()));
        let work = if n > 0 {
            per_byte((log_sum / n as f64).exp())
        } else {
            COMPUTE_SECONDS_PER_BYTE
        };
        work / self.speed(platform)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use hetpilot_protocol::AgentId;

    fn file(name: &str, size: u64) -> TaskFile {
        TaskFile {
            source: Source::Service(name.into()),
            name: name.into(),
            size: Some(size),
            sha256: None,
        }
    }

    /// 4 groups of 4 tasks, interleaved in the queue; each group reads 3 files of 1 MiB.
    /// Agent 1 is on `fast`, agent 2 on `slow`.
    pub(crate) fn grouped() -> StagingRequest {
        let tasks = (0..16u64)
            .map(|t| {
                let g = t % 4;
                let inputs = (0..3)
                    .map(|k| file(&format!("g{g}/f{k}"), 1 << 20))
                    .collect();
                (t, inputs)
            })
            .collect();
        StagingRequest {
            app: AppId(7),
            owner: "alice".into(),
            generation: 3,
            agents: vec![(AgentId(1), "fast".into()), (AgentId(2), "slow".into())],
            tasks,
        }
    }

    /// The live state a model reads, owned.
    #[derive(Default)]
    pub(crate) struct State {
        pub(crate) stats: RunStats,
        pub(crate) speeds: HashMap<String, f64>,
        pub(crate) bandwidths: Bandwidths,
        pub(crate) priors: HashMap<String, StagingProfile>,
        pub(crate) io_mib_per_s: HashMap<String, f64>,
    }

    impl State {
        pub(crate) fn platform(&self, req: &StagingRequest) -> (Workload, StagingPlatform) {
            let files = request_files(req, |f| f.size.unwrap());
            let m = Measures {
                stats: &self.stats,
                speeds: &self.speeds,
                bandwidths: &self.bandwidths,
                priors: &self.priors,
                io_mib_per_s: &self.io_mib_per_s,
            };
            let platform = staging_platform(req, &files, &m);
            (files.workload, platform)
        }
    }

    #[test]
    fn model_shares_files_between_tasks_and_has_one_node_per_agent() {
        let req = grouped();
        let state = State {
            speeds: HashMap::from([("fast".to_string(), 2.0)]),
            ..State::default()
        };
        let (w, p) = state.platform(&req);
        assert_eq!(w.files.len(), 12);
        assert_eq!(w.tasks.len(), 16);
        assert_eq!(w.tasks[0].files, w.tasks[4].files);
        assert_ne!(w.tasks[0].files, w.tasks[1].files);
        assert_eq!(p.node_count(), 2);
        assert_eq!(p.storage.len(), 1, "one endpoint: the file service");
        assert_eq!(
            p.clusters[0].compute_seconds_per_byte,
            COMPUTE_SECONDS_PER_BYTE / 2.0
        );
        assert_eq!(p.clusters[1].link_bandwidth, 100.0 * MIB, "profile default");
    }

    #[test]
    fn files_live_on_the_storage_node_of_their_endpoint() {
        let mut req = grouped();
        req.tasks[0].1.push(TaskFile {
            source: Source::Http("http://data.example:8080/a/b.dat".into()),
            name: "b.dat".into(),
            size: Some(5),
            sha256: None,
        });
        req.tasks[1].1.push(TaskFile {
            source: Source::Shared("/gpfs/ref.fa".into()),
            name: "ref.fa".into(),
            size: Some(5),
            sha256: None,
        });
        req.tasks[2].1.push(TaskFile {
            source: Source::Store {
                store: "lustre".into(),
                path: "big/c.dat".into(),
            },
            name: "c.dat".into(),
            size: Some(5),
            sha256: None,
        });
        let state = State {
            io_mib_per_s: HashMap::from([("store:lustre".to_string(), 2000.0)]),
            ..State::default()
        };
        let (w, p) = state.platform(&req);
        assert_eq!(p.storage.len(), 3, "the file service, data.example, lustre");
        assert_eq!(
            w.files.len(),
            14,
            "the shared-filesystem file is read in place"
        );
        assert_eq!(w.files[3].storage, 1);
        assert_eq!(p.storage[0].io_bandwidth, SERVICE_MIB_PER_S * MIB);
        assert_eq!(p.storage[1].io_bandwidth, ENDPOINT_MIB_PER_S * MIB);
        assert_eq!(p.storage[2].io_bandwidth, 2000.0 * MIB, "as configured");
    }

    #[test]
    fn compute_cost_comes_from_measured_runtimes() {
        let req = grouped();
        let mut state = State::default();
        state.stats.add(AppId(7), "fast", &[], 3.0);
        state.speeds = HashMap::from([("fast".into(), 1.0), ("slow".into(), 0.25)]);
        let (_, p) = state.platform(&req);
        let task_bytes = 3.0 * MIB;
        let fast = p.clusters[0].compute_seconds_per_byte;
        assert!((fast - 3.0 / task_bytes).abs() < 1e-15, "{fast}");
        let slow = p.clusters[1].compute_seconds_per_byte;
        assert!((slow - 4.0 * fast).abs() < 1e-15, "{slow} vs {fast}");
    }
}
