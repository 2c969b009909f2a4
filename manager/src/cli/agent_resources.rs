//! The GPUs and named counts part of `hetpilot agents`: a GPUS column in the agents table,
//! then a table of every agent's devices (model, memory, share in use, runs on it) and one
//! of its named counts (offered, in use), each printed only when some agent has any.

use super::output::print_table;
use hetpilot_protocol::protocol::AgentInfo;

/// The agents table's GPUS cell: `2 (1.5 in use)`, or empty for an agent without GPUs.
pub fn gpus_cell(a: &AgentInfo) -> String {
    if a.gpus.is_empty() {
        return String::new();
    }
    let used: f64 = a.gpus.iter().map(|g| g.in_use).sum();
    format!("{} ({used} in use)", a.gpus.len())
}

/// One row per device of every agent.
fn device_rows(agents: &[AgentInfo]) -> Vec<Vec<String>> {
    agents
        .iter()
        .flat_map(|a| {
            a.gpus.iter().map(move |g| {
                vec![
                    a.agent.to_string(),
                    g.device.index.to_string(),
                    g.device.model.clone(),
                    g.device.memory_mib.to_string(),
                    g.in_use.to_string(),
                    g.tasks.to_string(),
                    g.device.uuid.clone(),
                ]
            })
        })
        .collect()
}

/// One row per named count of every agent.
fn named_rows(agents: &[AgentInfo]) -> Vec<Vec<String>> {
    agents
        .iter()
        .flat_map(|a| {
            a.resources.iter().map(move |r| {
                vec![
                    a.agent.to_string(),
                    r.name.clone(),
                    r.offered.to_string(),
                    r.in_use.to_string(),
                ]
            })
        })
        .collect()
}

/// Prints the devices table and the named counts table, each after a blank line, when
/// they have rows.
pub fn print(agents: &[AgentInfo]) {
    let devices = device_rows(agents);
    if !devices.is_empty() {
        println!();
        print_table(
            &[
                "AGENT",
                "GPU",
                "MODEL",
                "MEMORY MIB",
                "IN USE",
                "TASKS",
                "UUID",
            ],
            &devices,
        );
    }
    let named = named_rows(agents);
    if !named.is_empty() {
        println!();
        print_table(&["AGENT", "RESOURCE", "OFFERED", "IN USE"], &named);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(json: serde_json::Value) -> AgentInfo {
        let mut base = serde_json::json!({
            "agent": 3, "platform": "gpu", "hostname": "n5", "slots": 4, "state": "active",
            "batch_job_id": null, "registered_at_ms": 0, "last_seen_ms": 0, "tasks_held": 3
        });
        base.as_object_mut()
            .unwrap()
            .extend(json.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn devices_and_named_counts_show_their_use() {
        let a = agent(serde_json::json!({
            "gpus": [
                {"index": 0, "uuid": "GPU-a", "model": "NVIDIA A100-SXM4-80GB",
                 "memory_mib": 81920, "vendor": "nvidia", "in_use": 1, "tasks": 1},
                {"index": 1, "uuid": "GPU-b", "model": "NVIDIA A100-SXM4-80GB",
                 "memory_mib": 81920, "vendor": "nvidia", "in_use": 0.5, "tasks": 2}
            ],
            "resources": [{"name": "licenses", "offered": 4, "in_use": 1.25}]
        }));
        assert_eq!(gpus_cell(&a), "2 (1.5 in use)");
        assert_eq!(
            device_rows(std::slice::from_ref(&a))[1],
            [
                "3",
                "1",
                "NVIDIA A100-SXM4-80GB",
                "81920",
                "0.5",
                "2",
                "GPU-b"
            ]
        );
        assert_eq!(
            named_rows(std::slice::from_ref(&a)),
            [["3", "licenses", "4", "1.25"]]
        );
    }

    #[test]
    fn an_agent_without_resources_shows_none_and_old_answers_still_read() {
        let a = agent(serde_json::json!({}));
        assert_eq!(gpus_cell(&a), "");
        assert!(device_rows(std::slice::from_ref(&a)).is_empty());
        assert!(named_rows(&[a]).is_empty());
    }
}
