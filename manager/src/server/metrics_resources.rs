//! Resource gauges for `/metrics`: the GPUs and named counts of live (active or draining)
//! agents, used and free, summed by platform and resource. `gpus` counts devices (a
//! device half taken by shares is half used); a named count is in its own unit.

use hetpilot_protocol::protocol::AgentInfo;
use hetpilot_protocol::resources::GPUS;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlatformResourceLabels {
    platform: String,
    resource: String,
}

/// What live agents offer and use of each resource, by (platform, resource).
fn totals(agents: &[AgentInfo]) -> BTreeMap<(String, String), (f64, f64)> {
    let mut sums: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for a in agents
        .iter()
        .filter(|a| a.state == "active" || a.state == "draining")
    {
        let mut add = |resource: &str, offered: f64, used: f64| {
            let e = sums
                .entry((a.platform.clone(), resource.to_string()))
                .or_default();
            e.0 += offered;
            e.1 += used;
        };
        for g in &a.gpus {
            add(GPUS, 1.0, g.in_use);
        }
        for r in &a.resources {
            add(&r.name, r.offered, r.in_use);
        }
    }
    sums
}

/// Registers `agent_resources_used` and `agent_resources_free` over `agents`.
pub fn register(r: &mut Registry, agents: &[AgentInfo]) {
    let used: Family<PlatformResourceLabels, FloatGauge> = Family::default();
    let free: Family<PlatformResourceLabels, FloatGauge> = Family::default();
    for ((platform, resource), (offered, in_use)) in totals(agents) {
        let l = PlatformResourceLabels { platform, resource };
        used.get_or_create(&l).set(in_use);
        free.get_or_create(&l).set((offered - in_use).max(0.0));
    }
    r.register(
        "agent_resources_used",
        "GPUs (devices) and named counts that runs of live agents were granted, by platform and resource",
        used,
    );
    r.register(
        "agent_resources_free",
        "GPUs (devices) and named counts of live agents no run holds, by platform and resource",
        free,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(platform: &str, state: &str, resources: serde_json::Value) -> AgentInfo {
        let mut a = serde_json::json!({
            "agent": 1, "platform": platform, "hostname": "n", "slots": 4, "state": state,
            "batch_job_id": null, "registered_at_ms": 0, "last_seen_ms": 0, "tasks_held": 0
        });
        a.as_object_mut()
            .unwrap()
            .extend(resources.as_object().unwrap().clone());
        serde_json::from_value(a).unwrap()
    }

    fn gpu(index: u32, in_use: f64) -> serde_json::Value {
        serde_json::json!({"index": index, "uuid": format!("GPU-{index}"), "model": "A100",
            "memory_mib": 81920, "vendor": "nvidia", "in_use": in_use, "tasks": 1})
    }

    #[test]
    fn live_agents_sum_by_platform_and_resource() {
        let agents = [
            agent(
                "gpu",
                "active",
                serde_json::json!({"gpus": [gpu(0, 1.0), gpu(1, 0.5)],
                    "resources": [{"name": "licenses", "offered": 4, "in_use": 1}]}),
            ),
            agent(
                "gpu",
                "draining",
                serde_json::json!({"gpus": [gpu(0, 0.25)]}),
            ),
            agent("gpu", "lost", serde_json::json!({"gpus": [gpu(0, 1.0)]})),
            agent("cpu", "active", serde_json::json!({})),
        ];
        let t = totals(&agents);
        assert_eq!(t[&("gpu".into(), "gpus".into())], (3.0, 1.75));
        assert_eq!(t[&("gpu".into(), "licenses".into())], (4.0, 1.0));
        assert_eq!(t.len(), 2, "{t:?}");

        let mut r = Registry::with_prefix("hetpilot");
        register(&mut r, &agents);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
        assert!(
            text.contains("hetpilot_agent_resources_free{platform=\"gpu\",resource=\"gpus\"} 1.25"),
            "{text}"
        );
        assert!(
            text.contains(
                "hetpilot_agent_resources_used{platform=\"gpu\",resource=\"licenses\"} 1.0"
            ),
            "{text}"
        );
    }
}
