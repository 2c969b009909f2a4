//! Applications, queue entries, agents, control-plane settings and task results for
//! core's unit tests.
//!
//! Each builder returns what an application file or configuration naming only its
//! arguments would give, so a test spells out just what sets its case apart, with
//! struct-update syntax: `AppSpec { cores: 4, ..array_app("a", 10) }`.

use crate::control::{AgentJoin, Control, ControlSettings, FairshareConfig, SchedulerConfig};
use crate::queue::AppEntry;
use hetpilot_protocol::dag::{DagSpec, DagTask};
use hetpilot_protocol::protocol::{Measurements, Outcome, TaskAttempt, TaskResult};
use hetpilot_protocol::resources::{GpuDevice, GpuVendor, ResourceAmount, ResourceOffer};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::variants::VariantSpec;
use hetpilot_protocol::{AgentId, AppId, TaskRef};

/// An application of tasks `1..=n`, each `run {}` on one core with three attempts (an
/// application file's defaults); no limits, files, GPUs, workflow, group or variants.
pub(crate) fn array_app(name: &str, n: u64) -> AppSpec {
    AppSpec {
        name: name.into(),
        command: "run {}".into(),
        tasks: TaskSource::Array { start: 1, end: n },
        cores: 1,
        memory_mb: 0,
        env: Default::default(),
        workdir: None,
        max_attempts: 3,
        timeout_secs: None,
        output_dir: None,
        inputs: vec![],
        outputs: vec![],
        data_intensive: false,
        dag: None,
        gpus: None,
        resources: Default::default(),
        nodes: None,
        procs: None,
        variants: Vec::new(),
    }
}

/// A workflow of `tasks`, task `i` named `{prefix}{i}`; otherwise as [`array_app`].
pub(crate) fn workflow_app(name: &str, prefix: &str, tasks: Vec<DagTask>) -> AppSpec {
    AppSpec {
        tasks: TaskSource::Lines((0..tasks.len()).map(|i| format!("{prefix}{i}")).collect()),
        dag: Some(DagSpec { tasks }),
        ..array_app(name, 1)
    }
}

/// Two ways to run an application's tasks: `gpu`, `gpu-run {}` on one core and one whole
/// GPU, declared first; `cpu`, the application's own command on two cores.
pub(crate) fn gpu_and_cpu_variants() -> Vec<VariantSpec> {
    vec![
        VariantSpec {
            name: "gpu".into(),
            command: Some("gpu-run {}".into()),
            cores: 1,
            gpus: ResourceAmount::whole(1),
        },
        VariantSpec {
            name: "cpu".into(),
            command: None,
            cores: 2,
            gpus: None,
        },
    ]
}

/// What an agent with `n` NVIDIA GPUs (`GPU-0`, `GPU-1`, ...) and no named counts offers.
pub(crate) fn gpu_offer(n: u32) -> ResourceOffer {
    ResourceOffer {
        gpus: (0..n)
            .map(|i| GpuDevice {
                index: i,
                uuid: format!("GPU-{i}"),
                model: "NVIDIA A100".into(),
                memory_mib: 40_960,
                vendor: GpuVendor::Nvidia,
            })
            .collect(),
        named: Default::default(),
    }
}

/// `spec` as the queues hold it once `alice` submitted it at time 0.
pub(crate) fn alice_entry(id: AppId, spec: AppSpec) -> AppEntry {
    let template = spec.validate().expect("a valid test application");
    AppEntry::new(id, "alice".into(), spec, template, 0)
}

/// The default scheduler and fairshare, leases lost after a minute silent, a fixed
/// heartbeat cadence and no store bandwidth configured.
pub(crate) fn control_settings() -> ControlSettings {
    ControlSettings {
        scheduler: SchedulerConfig::default(),
        fairshare: FairshareConfig::default(),
        lease_timeout_ms: 60_000,
        heartbeats_per_second: None,
        store_io_mib_per_s: Default::default(),
    }
}

/// A control plane under `settings` with nothing measured yet, to which `user{i}`
/// submitted `apps[i]` as application `i + 1` at time 0.
pub(crate) fn control_with(settings: &ControlSettings, apps: Vec<AppSpec>) -> Control {
    let mut c = Control::new(settings, Default::default()).expect("valid test settings");
    for (i, spec) in apps.into_iter().enumerate() {
        let template = spec.validate().expect("a valid test application");
        c.submit(AppId(i as u64 + 1), format!("user{i}"), spec, template, 0);
    }
    c
}

/// An agent on `platform`, host `h`, with `slots` slots and as many cores, no memory
/// figure, batch job, owner or resources besides cores.
pub(crate) fn agent_join(agent: AgentId, platform: &str, slots: u32) -> AgentJoin {
    AgentJoin {
        agent,
        platform: platform.into(),
        hostname: "h".into(),
        slots,
        cores: slots,
        memory_mb: 0,
        batch_job_id: None,
        only_user: None,
        resources: Default::default(),
    }
}

/// Attempt `attempt` of `task` ended with `outcome`: exit code 0 on success and 1
/// otherwise, nothing measured, no output.
pub(crate) fn result(task: TaskRef, attempt: u32, outcome: Outcome) -> TaskResult {
    let at = TaskAttempt { task, attempt };
    TaskResult {
        exit_code: Some(i32::from(outcome != Outcome::Success)),
        ..TaskResult::without_output(at, outcome, Measurements::default(), None)
    }
}

/// Attempt `attempt` of `task` succeeded (see [`result`]).
pub(crate) fn success(task: TaskRef, attempt: u32) -> TaskResult {
    result(task, attempt, Outcome::Success)
}
