//! The local adapter for real: fork a fake agent in its own session, see it run with the
//! environment the launch script sets, cancel it (SIGTERM to its process group), see it end.

use hetpilot::provision::adapter::adapter_for;
use hetpilot::provision::runner::LocalRunner;
use hetpilot::provision::{AdapterKind, JobState, Login, PilotSpec, PlatformProfile};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

mod support;

#[test]
fn local_agent_starts_in_its_own_session_and_stops_by_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    // The agent starts a child: cancelling must stop the whole group, not just the leader.
    std::fs::write(
        path("agent"),
        "#!/bin/sh\necho \"pilot=$HETPILOT_PILOT token=$HETPILOT_AGENT_TOKEN_FILE\"\n\
         sleep 300 &\necho \"child=$!\"\nwait\n",
    )
    .unwrap();
    std::fs::set_permissions(path("agent"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let profile = PlatformProfile {
        name: "here".into(),
        adapter: AdapterKind::Local,
        login: Login::Local,
        queue: None,
        account: None,
        nodes: 1,
        nodes_per_pilot: 1,
        cores_per_node: 1,
        memory_per_node_mb: 512,
        max_walltime: Duration::from_secs(600),
        pilot_walltime: Duration::from_secs(60),
        max_queued: 1,
        max_running: 1,
        agent_binary: path("agent"),
        setup: vec!["echo setup-ran".into()],
        work_dir: path("work"),
        relative_speed: 1.0,
        hosts: vec![],
        staging: Default::default(),
        pilots: Default::default(),
        sandbox: Default::default(),
        gpus_per_node: 0,
        resources: Default::default(),
        launcher: hetpilot_protocol::launcher::LaunchTemplate::mpiexec(),
    };
    let pilot = PilotSpec {
        name: "here-p1".into(),
        manager_url: "http://127.0.0.1:9".into(),
        tls_fingerprint: None,
        nodes: 1,
        cores_per_node: 1,
        walltime: Duration::from_secs(60),
        script_path: path("work/here-p1.sh"),
        credential_path: path("work/here-p1.token"),
        work_dir: path("work"),
        hosts: Vec::new(),
        probe: false,
    };
    let adapter = adapter_for(AdapterKind::Local);
    let script = adapter.render(&profile, &pilot).unwrap();
    let job = adapter.submit(&LocalRunner, &profile, &script).unwrap();
    let (host, process) = job.0.split_once(':').unwrap();
    assert_eq!(host, "localhost");
    // host:pid@start, the start as `ps -o lstart` says (cancel checks it before killing).
    let (pid, start) = process.split_once('@').expect("a start stamp");
    assert_eq!(start.split('-').count(), 5, "{start}");
    let pid: i32 = pid.parse().unwrap();

    let out = support::wait_until("the agent's output", Duration::from_secs(20), || {
        let out = std::fs::read_to_string(&script.stdout_path).unwrap_or_default();
        if out.contains("child=") {
            Ok(out)
        } else {
            Err(format!("agent output: {out:?}"))
        }
    });
    assert!(out.starts_with("setup-ran\npilot=here-p1 token="), "{out}");
    assert_eq!(
        unsafe { libc::getsid(pid) },
        pid,
        "the agent leads its own session"
    );
    let child: i32 = out.rsplit("child=").next().unwrap().trim().parse().unwrap();
    let states = adapter
        .poll(&LocalRunner, &profile, std::slice::from_ref(&job))
        .unwrap();
    assert_eq!(states[&job], JobState::Running);

    adapter.cancel(&LocalRunner, &profile, &job).unwrap();
    support::wait_until("the agent to end", Duration::from_secs(20), || {
        let state = adapter
            .poll(&LocalRunner, &profile, std::slice::from_ref(&job))
            .unwrap()[&job]
            .clone();
        match state {
            JobState::Ended { .. } => Ok(()),
            state => Err(format!("still {state:?}")),
        }
    });
    // The child of the agent went with its group (gone, or a zombie awaiting its reaper).
    let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "child {child} survived: {stat}"
    );
}
