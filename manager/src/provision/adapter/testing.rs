//! Test helpers for the adapters: a [`CommandRunner`] that replays recorded outputs and
//! remembers what it was asked, and a sample profile and pilot.

use super::PilotSpec;
use crate::provision::profile::{AdapterKind, Login, PlatformProfile};
use crate::provision::runner::{CommandOutput, CommandRunner, RunnerError};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// Replays `(status, stdout, stderr)` replies in order; records every call and file.
#[derive(Default)]
pub struct FakeRunner {
    replies: Mutex<VecDeque<CommandOutput>>,
    pub calls: Mutex<Vec<Vec<String>>>,
    pub files: Mutex<Vec<(String, String, u32)>>,
}

impl FakeRunner {
    pub fn new(replies: &[(i32, &str, &str)]) -> Self {
        FakeRunner {
            replies: Mutex::new(
                replies
                    .iter()
                    .map(|(status, stdout, stderr)| CommandOutput {
                        status: *status,
                        stdout: stdout.to_string(),
                        stderr: stderr.to_string(),
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    pub fn calls(&self) -> Vec<Vec<String>> {
        self.calls.lock().unwrap().clone()
    }
}

impl CommandRunner for FakeRunner {
    fn run(&self, argv: &[&str], _stdin: Option<&[u8]>) -> Result<CommandOutput, RunnerError> {
        self.calls
            .lock()
            .unwrap()
            .push(argv.iter().map(|s| s.to_string()).collect());
        Ok(self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| panic!("unexpected command {argv:?}")))
    }

    fn write_file(&self, path: &str, contents: &[u8], mode: u32) -> Result<(), RunnerError> {
        self.files.lock().unwrap().push((
            path.into(),
            String::from_utf8_lossy(contents).into_owned(),
            mode,
        ));
        Ok(())
    }

    fn place(&self) -> String {
        "fake".into()
    }
}

/// A platform of 4 nodes x 8 cores with queue `batch`, account `proj42` and one setup line.
pub fn profile(adapter: AdapterKind) -> PlatformProfile {
    PlatformProfile {
        name: "darth".into(),
        adapter,
        login: Login::Local,
        queue: Some("batch".into()),
        account: Some("proj42".into()),
        nodes: 4,
        nodes_per_pilot: 1,
        cores_per_node: 8,
        memory_per_node_mb: 16384,
        max_walltime: Duration::from_secs(24 * 3600),
        pilot_walltime: Duration::from_secs(2 * 3600),
        max_queued: 4,
        max_running: 16,
        agent_binary: "/opt/hetpilot/bin/hetpilot-agent".into(),
        setup: vec!["module load gcc/12".into()],
        work_dir: "/scratch/hetpilot".into(),
        relative_speed: 1.0,
        hosts: vec!["node1".into()],
        staging: Default::default(),
        pilots: Default::default(),
        sandbox: Default::default(),
        gpus_per_node: 0,
        resources: Default::default(),
        launcher: hetpilot_protocol::launcher::LaunchTemplate::mpiexec(),
    }
}

/// Pilot `darth-p17`: 1 node x 8 cores for 1 h 30 min.
pub fn pilot() -> PilotSpec {
    pilot_of(1)
}

/// Pilot `darth-p17` of `nodes` nodes x 8 cores for 1 h 30 min.
pub fn pilot_of(nodes: u32) -> PilotSpec {
    PilotSpec {
        name: "darth-p17".into(),
        manager_url: "http://manager.example:8080".into(),
        tls_fingerprint: None,
        nodes,
        cores_per_node: 8,
        walltime: Duration::from_secs(5400),
        script_path: "/scratch/hetpilot/darth-p17.job".into(),
        credential_path: "/scratch/hetpilot/darth-p17.token".into(),
        work_dir: "/scratch/hetpilot".into(),
        hosts: Vec::new(),
        probe: false,
    }
}
