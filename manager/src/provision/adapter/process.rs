//! Agents started without a batch system: on a named host over SSH (the `ssh` adapter) or
//! on this machine (the `local` adapter, used by the demo). The launch script runs under
//! `setsid nohup` in its own session; the job id is `host:pid`; status is `ps`, cancel is
//! SIGTERM to the whole process group, then SIGKILL after a grace period.

use super::script::render_launch;
use super::{
    command_failed, run_ok, AdapterError, BatchAdapter, BatchJobId, JobScript, JobState, PilotSpec,
};
use crate::provision::profile::{AdapterKind, Login, PlatformProfile};
use crate::provision::runner::{CommandRunner, RunnerError, SshRunner};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Starts the script ($1) in a new session, output appended to $2 and $3; prints its pid
/// (setsid does not fork here: a background child of a non-interactive shell is not a
/// process-group leader, so the pid printed is the session's).
const LAUNCH: &str = r#"setsid nohup /bin/sh "$1" </dev/null >>"$2" 2>>"$3" & echo $!"#;

/// SIGTERM to process group $1, up to 5 s for it to go, then SIGKILL. (`kill -SIG -PGID`
/// without `--`: dash's kill does not take `--`.)
const STOP: &str = r#"kill -TERM -"$1" 2>/dev/null || exit 0
i=0
while kill -0 -"$1" 2>/dev/null; do
    i=$((i + 1))
    if [ "$i" -gt 50 ]; then kill -KILL -"$1" 2>/dev/null; exit 0; fi
    sleep 0.1
done"#;

/// Opens a runner for a target host of the ssh adapter.
type Connect =
    dyn Fn(&PlatformProfile, &str) -> Result<Arc<dyn CommandRunner>, RunnerError> + Send + Sync;

/// The ssh and local adapters.
pub struct Process {
    kind: AdapterKind,
    /// ssh: one runner (one SSH session) per target host, opened on first use.
    hosts: Option<HostRunners>,
}

struct HostRunners {
    connect: Box<Connect>,
    open: Mutex<HashMap<String, Arc<dyn CommandRunner>>>,
}

impl Process {
    /// The ssh adapter: agents start on `pilot.host`, reached with the profile's ssh login
    /// user, port and key.
    pub fn ssh() -> Self {
        Self::ssh_with(Box::new(connect_like_login))
    }

    /// The ssh adapter with another way to reach hosts (tests).
    pub(crate) fn ssh_with(connect: Box<Connect>) -> Self {
        Process {
            kind: AdapterKind::Ssh,
            hosts: Some(HostRunners {
                connect,
                open: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The local adapter: agents start wherever the runner it is given runs commands.
    pub fn local() -> Self {
        Process {
            kind: AdapterKind::Local,
            hosts: None,
        }
    }

    /// The runner for `host`: the ssh adapter's own session to it, or `given`.
    fn runner_for<'a>(
        &self,
        given: &'a dyn CommandRunner,
        profile: &PlatformProfile,
        host: &str,
    ) -> Result<RunnerRef<'a>, AdapterError> {
        let Some(hosts) = &self.hosts else {
            return Ok(RunnerRef::Given(given));
        };
        let mut open = hosts.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = open.get(host) {
            return Ok(RunnerRef::Own(r.clone()));
        }
        let runner = (hosts.connect)(profile, host)?;
        open.insert(host.to_string(), runner.clone());
        Ok(RunnerRef::Own(runner))
    }

    fn host_of(&self, script: &JobScript) -> Result<String, AdapterError> {
        match (&self.hosts, &script.host) {
            (None, _) => Ok("localhost".into()),
            (Some(_), Some(h)) => Ok(h.clone()),
            (Some(_), None) => Err(AdapterError::Render(
                "the ssh adapter needs the pilot's target host (PilotSpec::host)".into(),
            )),
        }
    }
}

enum RunnerRef<'a> {
    Given(&'a dyn CommandRunner),
    Own(Arc<dyn CommandRunner>),
}

impl RunnerRef<'_> {
    fn get(&self) -> &dyn CommandRunner {
        match self {
            RunnerRef::Given(r) => *r,
            RunnerRef::Own(r) => r.as_ref(),
        }
    }
}

/// A host of the ssh adapter, reached like the profile's login (same user, port, key).
fn connect_like_login(
    profile: &PlatformProfile,
    host: &str,
) -> Result<Arc<dyn CommandRunner>, RunnerError> {
    match &profile.login {
        Login::Ssh {
            user,
            port,
            key_file,
            host_keys,
            ..
        } => Ok(Arc::new(SshRunner::new(
            user, host, *port, key_file, host_keys,
        )?)),
        Login::Local => Err(RunnerError::Unreachable {
            host: host.into(),
            problem: format!(
                "platform {} uses the ssh adapter but its login is \"local\": give an \
                 ssh:// login (its user, port and key_file reach every host)",
                profile.name
            ),
        }),
    }
}

/// `host:pid` split, the pid checked to be a number.
fn split_id(job: &BatchJobId) -> Result<(&str, &str), AdapterError> {
    match job.0.rsplit_once(':') {
        Some((host, pid))
            if !host.is_empty() && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Ok((host, pid))
        }
        _ => Err(AdapterError::Parse {
            command: "job id".into(),
            problem: format!("{:?} is not host:pid", job.0),
        }),
    }
}

impl BatchAdapter for Process {
    fn kind(&self) -> AdapterKind {
        self.kind
    }

    fn render(
        &self,
        profile: &PlatformProfile,
        pilot: &PilotSpec,
    ) -> Result<JobScript, AdapterError> {
        if self.hosts.is_some() {
            match &pilot.host {
                Some(h) if profile.hosts.contains(h) => {}
                other => {
                    return Err(AdapterError::Render(format!(
                        "pilot {} must name one of platform {}'s hosts {:?}, not {other:?}",
                        pilot.name, profile.name, profile.hosts
                    )))
                }
            }
        }
        render_launch(profile, pilot)
    }

    fn submit(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        script: &JobScript,
    ) -> Result<BatchJobId, AdapterError> {
        let host = self.host_of(script)?;
        let target = self.runner_for(runner, profile, &host)?;
        let target = target.get();
        target.write_file(&script.path, script.text.as_bytes(), 0o700)?;
        let argv = [
            "sh",
            "-c",
            LAUNCH,
            "hetpilot-launch",
            &script.path,
            &script.stdout_path,
            &script.stderr_path,
        ];
        let out = run_ok(target, &argv, None)?;
        let pid = out.stdout.trim();
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AdapterError::Parse {
                command: "setsid nohup".into(),
                problem: format!("expected a pid, got {:?}", out.stdout),
            });
        }
        tracing::info!(%host, pid, script = %script.path, "agent started");
        Ok(BatchJobId(format!("{host}:{pid}")))
    }

    fn poll(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        jobs: &[BatchJobId],
    ) -> Result<HashMap<BatchJobId, JobState>, AdapterError> {
        let mut by_host: BTreeMap<&str, Vec<(&BatchJobId, &str)>> = BTreeMap::new();
        for job in jobs {
            let (host, pid) = split_id(job)?;
            by_host.entry(host).or_default().push((job, pid));
        }
        let mut states = HashMap::new();
        for (host, host_jobs) in by_host {
            let target = self.runner_for(runner, profile, host)?;
            let pids: Vec<&str> = host_jobs.iter().map(|(_, pid)| *pid).collect();
            let pid_list = pids.join(",");
            let argv = ["ps", "-o", "pid=,stat=", "-p", &pid_list];
            let out = target.get().run(&argv, None)?;
            // ps exits 1 when none of the pids exists.
            if out.status != 0 && !(out.status == 1 && out.stdout.trim().is_empty()) {
                return Err(command_failed(&argv, &out));
            }
            let alive: HashMap<&str, &str> = out
                .stdout
                .lines()
                .filter_map(|l| {
                    let mut w = l.split_whitespace();
                    Some((w.next()?, w.next()?))
                })
                .collect();
            for (job, pid) in host_jobs {
                let state = match alive.get(pid) {
                    Some(stat) if !stat.starts_with('Z') => JobState::Running,
                    _ => JobState::Ended {
                        exit_code: None,
                        reason: format!("process {pid} on {host} has exited"),
                    },
                };
                states.insert(job.clone(), state);
            }
        }
        Ok(states)
    }

    fn cancel(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        job: &BatchJobId,
    ) -> Result<(), AdapterError> {
        let (host, pid) = split_id(job)?;
        let target = self.runner_for(runner, profile, host)?;
        run_ok(
            target.get(),
            &["sh", "-c", STOP, "hetpilot-stop", pid],
            None,
        )?;
        tracing::info!(%job, "agent stopped");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{pilot, profile, FakeRunner};
    use super::*;

    fn ssh_adapter(fake: Arc<FakeRunner>) -> (Process, Arc<Mutex<Vec<String>>>) {
        let connected = Arc::new(Mutex::new(Vec::new()));
        let seen = connected.clone();
        let adapter = Process::ssh_with(Box::new(move |_, host| {
            seen.lock().unwrap().push(host.to_string());
            Ok(fake.clone() as Arc<dyn CommandRunner>)
        }));
        (adapter, connected)
    }

    #[test]
    fn ssh_starts_on_the_named_host_and_reuses_its_session() {
        let fake = Arc::new(FakeRunner::new(&[
            (0, "4711\n", ""),
            (0, "  4711 Ss\n", ""),
        ]));
        let (adapter, connected) = ssh_adapter(fake.clone());
        let p = profile(AdapterKind::Ssh);
        let mut spec = pilot();
        spec.host = Some("node1".into());
        let script = adapter.render(&p, &spec).unwrap();
        let unused = FakeRunner::new(&[]);
        let id = adapter.submit(&unused, &p, &script).unwrap();
        assert_eq!(id.0, "node1:4711");
        let states = adapter
            .poll(&unused, &p, std::slice::from_ref(&id))
            .unwrap();
        assert_eq!(states[&id], JobState::Running);
        assert_eq!(
            *connected.lock().unwrap(),
            ["node1"],
            "one session per host"
        );
        let calls = fake.calls();
        assert_eq!(calls[0][..3], ["sh", "-c", LAUNCH]);
        assert_eq!(
            calls[0][4..],
            [
                "/scratch/hetpilot/darth-p17.job",
                "/scratch/hetpilot/darth-p17.out",
                "/scratch/hetpilot/darth-p17.err"
            ]
        );
        assert_eq!(calls[1], ["ps", "-o", "pid=,stat=", "-p", "4711"]);
        assert_eq!(fake.files.lock().unwrap()[0].2, 0o700);
    }

    #[test]
    fn ssh_refuses_hosts_outside_the_profile() {
        let (adapter, _) = ssh_adapter(Arc::new(FakeRunner::new(&[])));
        let mut spec = pilot();
        spec.host = Some("elsewhere".into());
        let err = adapter
            .render(&profile(AdapterKind::Ssh), &spec)
            .unwrap_err();
        assert!(err.to_string().contains("elsewhere"), "{err}");
    }

    #[test]
    fn one_ps_per_host_zombies_and_missing_pids_have_ended() {
        let runner = FakeRunner::new(&[(0, "  10 Sl\n  11 Z\n", "")]);
        let jobs: Vec<BatchJobId> = ["localhost:10", "localhost:11", "localhost:12"]
            .iter()
            .map(|s| BatchJobId(s.to_string()))
            .collect();
        let states = Process::local()
            .poll(&runner, &profile(AdapterKind::Local), &jobs)
            .unwrap();
        assert_eq!(
            runner.calls(),
            vec![vec!["ps", "-o", "pid=,stat=", "-p", "10,11,12"]]
        );
        assert_eq!(states[&jobs[0]], JobState::Running);
        assert!(matches!(states[&jobs[1]], JobState::Ended { .. }));
        assert!(matches!(states[&jobs[2]], JobState::Ended { .. }));
    }

    #[test]
    fn ids_that_are_not_host_pid_are_refused() {
        let runner = FakeRunner::new(&[]);
        let p = profile(AdapterKind::Local);
        for bad in ["1234", "host:", "host:12;rm", ":12"] {
            let job = BatchJobId(bad.into());
            assert!(Process::local().cancel(&runner, &p, &job).is_err(), "{bad}");
        }
        assert!(runner.calls().is_empty());
    }

    #[test]
    fn ssh_needs_an_ssh_login() {
        let err = connect_like_login(&profile(AdapterKind::Ssh), "node1")
            .err()
            .unwrap();
        assert!(err.to_string().contains("ssh:// login"), "{err}");
    }
}
