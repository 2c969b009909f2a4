//! The adapters against the real local lab (`deploy/lab/start.sh`): Slurm's sbatch, the
//! TORQUE and PBS Pro flavours of qsub, qsub run on the login host over SSH, and agents
//! started over SSH. Ignored in a plain `cargo test`; `deploy/test-all.sh` starts the lab
//! and runs them with `--include-ignored`.

use hetpilot::provision::adapter::{adapter_for, BatchAdapter};
use hetpilot::provision::runner::{for_login, CommandRunner, LocalRunner, SshRunner};
use hetpilot::provision::{AdapterKind, BatchJobId, JobState, Login, PilotSpec, PlatformProfile};
use hetpilot_transport::host_keys::{HostKeyCheck, HostKeyPolicy};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

mod support;

const NEEDS_LAB: &str = "needs the local lab: deploy/lab/start.sh";

/// The lab's directory (`$HETPILOT_LAB`, default /var/tmp/hetpilot-lab); panics with what
/// to do when the lab is not up.
fn lab() -> PathBuf {
    static ENV: Once = Once::new();
    let dir = PathBuf::from(
        std::env::var("HETPILOT_LAB").unwrap_or_else(|_| "/var/tmp/hetpilot-lab".into()),
    );
    let conf = lab_config(&dir);
    ENV.call_once(|| {
        if std::env::var_os("SLURM_CONF").is_none() {
            // Every test calls lab() before it runs any command, so no other thread of
            // this binary is reading the environment yet.
            std::env::set_var("SLURM_CONF", &conf);
        }
    });
    let ping = LocalRunner.run(&["scontrol", "ping"], None);
    let up = matches!(&ping, Ok(out) if out.stdout.contains("is UP"));
    assert!(
        up,
        "the lab's slurmctld is not answering ({ping:?}): run deploy/lab/start.sh"
    );
    dir
}

/// The lab's slurm.conf, or a panic saying how to start the lab.
fn lab_config(dir: &Path) -> PathBuf {
    let conf = dir.join("etc/slurm.conf");
    assert!(
        conf.exists(),
        "the lab is not up ({} is missing): run deploy/lab/start.sh (or set HETPILOT_LAB)",
        conf.display()
    );
    conf
}

/// The lab sshd's port (`LAB_SSH_PORT`, default 2222).
fn lab_ssh_port() -> u16 {
    std::env::var("LAB_SSH_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(2222)
}

fn ssh_login(lab: &Path) -> Login {
    Login::Ssh {
        user: "root".into(),
        host: "127.0.0.1".into(),
        port: lab_ssh_port(),
        key_file: lab.join("ssh/id_ed25519"),
        host_keys: HostKeyCheck::strict(&lab.join("ssh/known_hosts")),
    }
}

/// A work dir with a fake agent that reports its environment and then sleeps until it is
/// cancelled.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("hetpilot-lab-test")
            .tempdir_in("/var/tmp")
            .unwrap();
        let agent = dir.path().join("fake-agent");
        std::fs::write(
            &agent,
            "#!/bin/sh\necho \"agent $HETPILOT_PILOT on $HETPILOT_PLATFORM\"\n\
             echo \"nodes=$(sort -u \"${PBS_NODEFILE:-/dev/null}\" | wc -l)\"\n\
             test -r \"$HETPILOT_AGENT_TOKEN_FILE\" && echo token-file-readable\n\
             exec sleep 300\n",
        )
        .unwrap();
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The lab has no pbsdsh (its TORQUE is Slurm's qsub wrapper): this stands in for
        // `pbsdsh -u CMD...`, running CMD once per distinct node of the job (the lab's
        // nodes all run on this host).
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(
            bin.join("pbsdsh"),
            "#!/bin/sh
[ \"$1\" = -u ] && shift
             for node in $(sort -u \"$PBS_NODEFILE\"); do \"$@\" & done
wait
",
        )
        .unwrap();
        std::fs::set_permissions(bin.join("pbsdsh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        Sandbox { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }

    fn profile(&self, adapter: AdapterKind, queue: Option<&str>, login: Login) -> PlatformProfile {
        PlatformProfile {
            name: "lab".into(),
            adapter,
            login,
            queue: queue.map(String::from),
            account: None,
            nodes: 2,
            nodes_per_pilot: 1,
            cores_per_node: 2,
            memory_per_node_mb: 1024,
            max_walltime: Duration::from_secs(600),
            pilot_walltime: Duration::from_secs(120),
            max_queued: 4,
            max_running: 4,
            agent_binary: self.path("fake-agent"),
            setup: vec![format!("export PATH=\"{}:$PATH\"", self.path("bin"))],
            work_dir: self.path("work"),
            relative_speed: 1.0,
            hosts: vec!["127.0.0.1".into()],
            staging: Default::default(),
            pilots: Default::default(),
            sandbox: Default::default(),
            gpus_per_node: 0,
            resources: Default::default(),
            launcher: hetpilot_protocol::launcher::LaunchTemplate::mpiexec(),
        }
    }

    fn pilot(&self, name: &str, nodes: u32, cores: u32) -> PilotSpec {
        let token = self.path(&format!("work/{name}.token"));
        std::fs::create_dir_all(self.path("work")).unwrap();
        std::fs::write(&token, "secret").unwrap();
        PilotSpec {
            name: name.into(),
            manager_url: "http://127.0.0.1:9".into(),
            tls_fingerprint: None,
            nodes,
            cores_per_node: cores,
            walltime: Duration::from_secs(120),
            script_path: self.path(&format!("work/{name}.job")),
            credential_path: token,
            work_dir: self.path("work"),
            hosts: Vec::new(),
            probe: false,
        }
    }
}

/// Polls (one batched call each time) until `done` holds, for at most `limit`.
fn wait_until(
    adapter: &dyn BatchAdapter,
    runner: &dyn CommandRunner,
    profile: &PlatformProfile,
    job: &BatchJobId,
    what: &str,
    done: impl Fn(&JobState) -> bool,
) -> JobState {
    support::wait_until(
        &format!("job {job} to become {what}"),
        Duration::from_secs(60),
        || {
            let states = adapter
                .poll(runner, profile, std::slice::from_ref(job))
                .unwrap();
            let state = states[job].clone();
            if done(&state) {
                Ok(state)
            } else {
                Err(format!("last {state:?}"))
            }
        },
    )
}

/// Waits until `path` contains `needle` (the agent's output is written as it runs).
fn wait_for_output(path: &str, needle: &str) -> String {
    support::wait_until(
        &format!("{path} to show {needle:?}"),
        Duration::from_secs(30),
        || {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            if text.contains(needle) {
                Ok(text)
            } else {
                Err(format!("{text:?}"))
            }
        },
    )
}

/// What a round trip saw: the job id, its end state, the fake agent's output.
struct Trip {
    job: String,
    end: JobState,
    output: String,
}

/// Submit, see it run (and the fake agent report), cancel, see it end.
fn round_trip(
    kind: AdapterKind,
    queue: Option<&str>,
    runner: &dyn CommandRunner,
    login: Login,
    pilot: impl Fn(&Sandbox) -> PilotSpec,
) -> Trip {
    let sandbox = Sandbox::new();
    let adapter = adapter_for(kind);
    let profile = sandbox.profile(kind, queue, login);
    let spec = pilot(&sandbox);
    let script = adapter.render(&profile, &spec).unwrap();
    let mode = |p: &str| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let started = Instant::now();
    let job = adapter.submit(runner, &profile, &script).unwrap();
    let submit_ms = started.elapsed().as_millis();
    assert_eq!(mode(&script.path), 0o700, "job scripts are private");
    assert!(!std::fs::read_to_string(&script.path)
        .unwrap()
        .contains("secret"));
    wait_until(adapter.as_ref(), runner, &profile, &job, "Running", |s| {
        *s == JobState::Running
    });
    let running_ms = started.elapsed().as_millis();
    let out = wait_for_output(&script.stdout_path, "token-file-readable");
    assert!(
        out.contains(&format!("agent {} on lab", spec.name)),
        "{out}"
    );
    adapter.cancel(runner, &profile, &job).unwrap();
    let end = wait_until(adapter.as_ref(), runner, &profile, &job, "ended", |s| {
        matches!(s, JobState::Ended { .. } | JobState::Vanished)
    });
    // Cancelling again (the job is gone) is not an error.
    adapter.cancel(runner, &profile, &job).unwrap();
    eprintln!(
        "{}: job {job}: submit {submit_ms} ms, running after {running_ms} ms, end {end:?}",
        kind.name()
    );
    Trip {
        job: job.0,
        end,
        output: out,
    }
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn slurm_sbatch_squeue_scancel() {
    lab();
    let trip = round_trip(
        AdapterKind::Slurm,
        Some("debug"),
        &LocalRunner,
        Login::Local,
        |s| s.pilot("lab-slurm", 1, 2),
    );
    assert!(trip.job.bytes().all(|b| b.is_ascii_digit()), "{}", trip.job);
    assert!(
        matches!(&trip.end, JobState::Ended { reason, .. } if reason == "CANCELLED"),
        "{:?}",
        trip.end
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn torque_qsub_nodes_ppn_on_two_nodes() {
    lab();
    let trip = round_trip(
        AdapterKind::Torque,
        Some("small"),
        &LocalRunner,
        Login::Local,
        |s| s.pilot("lab-torque", 2, 2),
    );
    assert!(
        trip.output.contains("nodes=2\n"),
        "two nodes: {}",
        trip.output
    );
    assert!(
        matches!(&trip.end, JobState::Ended { reason, .. } if reason == "finished (C)")
            || trip.end == JobState::Vanished,
        "{:?}",
        trip.end
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn pbs_pro_qsub_select() {
    lab();
    let trip = round_trip(AdapterKind::Pbs, None, &LocalRunner, Login::Local, |s| {
        s.pilot("lab-pbspro", 1, 2)
    });
    assert!(trip.output.contains("nodes=1\n"), "{}", trip.output);
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn qsub_on_the_login_host_over_ssh() {
    let lab = lab();
    let login = ssh_login(&lab);
    let runner = for_login(&login).unwrap();
    round_trip(
        AdapterKind::Torque,
        Some("debug"),
        runner.as_ref(),
        login,
        |s| s.pilot("lab-ssh-qsub", 1, 1),
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn ssh_adapter_starts_and_stops_an_agent_by_pid() {
    let lab = lab();
    let login = ssh_login(&lab);
    // The login runner is not used: the ssh adapter opens its own session per host.
    let trip = round_trip(AdapterKind::Ssh, None, &LocalRunner, login, |s| {
        let mut p = s.pilot("lab-ssh-agent", 1, 1);
        p.hosts = vec!["127.0.0.1".into()];
        p
    });
    assert!(trip.job.starts_with("127.0.0.1:"), "{}", trip.job);
    assert!(matches!(trip.end, JobState::Ended { .. }), "{:?}", trip.end);
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn one_squeue_answers_for_many_jobs() {
    lab();
    let sandbox = Sandbox::new();
    let adapter = adapter_for(AdapterKind::Slurm);
    let profile = sandbox.profile(AdapterKind::Slurm, Some("big"), Login::Local);
    let jobs: Vec<BatchJobId> = (0..3)
        .map(|i| {
            let script = adapter
                .render(&profile, &sandbox.pilot(&format!("lab-many-{i}"), 1, 1))
                .unwrap();
            adapter.submit(&LocalRunner, &profile, &script).unwrap()
        })
        .collect();
    // Never-seen ids ride along: they come back Vanished, in the same call.
    let mut all = jobs.clone();
    all.extend((0..200).map(|i| BatchJobId(format!("{}", 9_000_000 + i))));
    let started = Instant::now();
    let states = adapter.poll(&LocalRunner, &profile, &all).unwrap();
    eprintln!(
        "one Slurm poll of {} ids: {:?}",
        all.len(),
        started.elapsed()
    );
    assert_eq!(states.len(), all.len());
    assert!(
        jobs.iter().all(|j| states[j] != JobState::Vanished),
        "{states:?}"
    );
    assert_eq!(states[&BatchJobId("9000000".into())], JobState::Vanished);
    // The same poll on the login host over SSH: the second one reuses the session.
    let login = ssh_login(&lab());
    let ssh = for_login(&login).unwrap();
    let profile_ssh = sandbox.profile(AdapterKind::Slurm, Some("big"), login);
    let first = Instant::now();
    let over_ssh = adapter.poll(ssh.as_ref(), &profile_ssh, &all).unwrap();
    let first = first.elapsed();
    let second = Instant::now();
    adapter.poll(ssh.as_ref(), &profile_ssh, &all).unwrap();
    eprintln!(
        "the same poll over SSH: {first:?} (with connect), {:?} (session reused)",
        second.elapsed()
    );
    assert_eq!(over_ssh.len(), all.len());
    assert!(
        jobs.iter().all(|j| over_ssh[j] != JobState::Vanished),
        "{over_ssh:?}"
    );
    for job in &jobs {
        adapter.cancel(&LocalRunner, &profile, job).unwrap();
    }
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn ssh_runner_reuses_one_session_writes_private_files_and_reconnects() {
    let lab = lab();
    let runner = lab_runner(&lab, &HostKeyCheck::strict(&lab.join("ssh/known_hosts")));
    // The remote shell's parent is the sshd process serving our one connection.
    let session_pid = |r: &SshRunner| r.run(&["sh", "-c", "echo $PPID"], None).unwrap().stdout;
    let first = session_pid(&runner);
    assert_eq!(session_pid(&runner), first, "a second session was opened");
    let out = runner
        .run(&["printf", "%s|", "a b", "$(id)", "it's"], None)
        .unwrap();
    assert_eq!(
        out.stdout, "a b|$(id)|it's|",
        "argv words must arrive unchanged"
    );
    let out = runner.run(&["cat"], Some(b"from stdin")).unwrap();
    assert_eq!(out.stdout, "from stdin");
    assert_eq!(runner.run(&["sh", "-c", "exit 7"], None).unwrap().status, 7);

    let sandbox = Sandbox::new();
    let file = sandbox.path("new/dirs/script.sh");
    runner
        .write_file(&file, b"#!/bin/sh\necho hi\n", 0o700)
        .unwrap();
    let mode = |p: &str| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o700);
    assert_eq!(mode(&sandbox.path("new")), 0o700);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "#!/bin/sh\necho hi\n"
    );

    // Break the session from the server side (the sshd process serving this test's own
    // connection, by pid); the next call reconnects once and works.
    let pid: i32 = first.trim().parse().unwrap();
    unsafe { libc::kill(pid, libc::SIGTERM) };
    support::wait_until(
        &format!("sshd session {pid} to stop"),
        Duration::from_secs(10),
        || match unsafe { libc::kill(pid, 0) } {
            0 => Err("still running".into()),
            _ => Ok(()),
        },
    );
    let again = session_pid(&runner);
    assert_ne!(again, first, "expected a new session");
}

#[test]
fn the_lab_tests_say_what_to_do_when_the_lab_is_down() {
    assert!(NEEDS_LAB.contains("deploy/lab/start.sh"));
    let missing = std::panic::catch_unwind(|| lab_config(Path::new("/nonexistent/lab")));
    let message = *missing.unwrap_err().downcast::<String>().unwrap();
    assert!(message.contains("run deploy/lab/start.sh"), "{message}");
}

/// An [`SshRunner`] for the lab's login with the host-key check `host_keys`.
fn lab_runner(lab: &Path, host_keys: &HostKeyCheck) -> SshRunner {
    let Login::Ssh {
        user,
        host,
        port,
        key_file,
        ..
    } = ssh_login(lab)
    else {
        unreachable!()
    };
    SshRunner::new(&user, &host, port, &key_file, host_keys).unwrap()
}

/// The lab sshd's host key: (`ssh-ed25519`, base64 key, fingerprint as `ssh-keygen -lf`
/// prints it).
fn lab_host_key(lab: &Path) -> (String, String, String) {
    let public = lab.join("ssh/ssh_host_ed25519_key.pub");
    let text = std::fs::read_to_string(&public).unwrap();
    let mut fields = text.split_whitespace();
    let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
    let out = std::process::Command::new("ssh-keygen")
        .arg("-lf")
        .arg(&public)
        .output()
        .unwrap();
    let listing = String::from_utf8(out.stdout).unwrap();
    let fingerprint = listing.split_whitespace().nth(1).unwrap().to_string();
    assert!(fingerprint.starts_with("SHA256:"), "{listing}");
    (kind.into(), key.into(), fingerprint)
}

fn accept_new(known_hosts: &Path) -> HostKeyCheck {
    HostKeyCheck {
        known_hosts: known_hosts.to_path_buf(),
        policy: HostKeyPolicy::AcceptNew,
    }
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn ssh_runner_refuses_an_unknown_host_naming_its_fingerprint_and_how_to_add_it() {
    let lab = lab();
    let port = lab_ssh_port();
    let (_, _, fingerprint) = lab_host_key(&lab);
    let sandbox = Sandbox::new();
    let missing = PathBuf::from(sandbox.path("no-such-known_hosts"));
    let empty = PathBuf::from(sandbox.path("empty_known_hosts"));
    std::fs::write(&empty, "").unwrap();
    for (file, why) in [
        (&missing, "does not exist, so no host is known"),
        (&empty, "does not list it"),
    ] {
        let runner = lab_runner(&lab, &HostKeyCheck::strict(file));
        let err = runner.run(&["echo", "ok"], None).unwrap_err().to_string();
        for part in [
            format!("127.0.0.1:{port} is not a known host"),
            format!("{} {why}", file.display()),
            format!("ED25519 key {fingerprint}"),
            format!(
                "ssh-keyscan -p {port} -t ed25519 127.0.0.1 >> {}",
                file.display()
            ),
        ] {
            assert!(err.contains(&part), "{part:?} not in {err}");
        }
    }
    assert!(
        !missing.exists(),
        "strict checking must not create the file"
    );
    assert_eq!(std::fs::read_to_string(&empty).unwrap(), "");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn accept_new_adds_an_unknown_host_once_and_strict_checking_then_passes() {
    let lab = lab();
    let port = lab_ssh_port();
    let (kind, key, _) = lab_host_key(&lab);
    let sandbox = Sandbox::new();
    let known = PathBuf::from(sandbox.path("new-dir/known_hosts"));
    let runner = lab_runner(&lab, &accept_new(&known));
    assert_eq!(runner.run(&["echo", "ok"], None).unwrap().stdout, "ok\n");
    let text = std::fs::read_to_string(&known).unwrap();
    assert!(
        text.starts_with(&format!("[127.0.0.1]:{port} {kind} {key}")),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "{text}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&known), 0o600);
    assert_eq!(mode(known.parent().unwrap()), 0o700);

    let strict = lab_runner(&lab, &HostKeyCheck::strict(&known));
    assert_eq!(strict.run(&["echo", "ok"], None).unwrap().stdout, "ok\n");
    // Hashed the way `ssh-keygen -H` (and HashKnownHosts) does, the entry still matches.
    let hashed = std::process::Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&known)
        .output()
        .unwrap();
    assert!(hashed.status.success(), "{hashed:?}");
    let text = std::fs::read_to_string(&known).unwrap();
    assert!(text.starts_with("|1|"), "{text}");
    let strict = lab_runner(&lab, &HostKeyCheck::strict(&known));
    assert_eq!(strict.run(&["echo", "ok"], None).unwrap().stdout, "ok\n");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn ssh_runner_refuses_a_host_whose_key_changed_even_under_accept_new() {
    let lab = lab();
    let port = lab_ssh_port();
    let (kind, key, fingerprint) = lab_host_key(&lab);
    let sandbox = Sandbox::new();
    let known = PathBuf::from(sandbox.path("known_hosts"));
    std::fs::write(&known, format!("[127.0.0.1]:{port} {kind} {key}\n")).unwrap();
    let runner = lab_runner(&lab, &HostKeyCheck::strict(&known));
    assert_eq!(runner.run(&["echo", "ok"], None).unwrap().stdout, "ok\n");

    // Another ed25519 key (the lab's client key) in place of the host's.
    let other = std::fs::read_to_string(lab.join("ssh/id_ed25519.pub")).unwrap();
    let other_key = other.split_whitespace().nth(1).unwrap();
    let listed = format!("[127.0.0.1]:{port} {kind} {other_key}\n");
    std::fs::write(&known, &listed).unwrap();
    for check in [HostKeyCheck::strict(&known), accept_new(&known)] {
        let err = lab_runner(&lab, &check)
            .run(&["echo", "ok"], None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("127.0.0.1:{port}: its host key differs")),
            "{err}"
        );
        assert!(err.contains(&format!("ED25519 key {fingerprint}")), "{err}");
        assert!(err.contains("ssh-keygen -R"), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(&known).unwrap(),
        listed,
        "file unchanged"
    );
}
