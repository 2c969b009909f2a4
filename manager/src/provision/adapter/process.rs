//! Agents started without a batch system: on named hosts over SSH (the `ssh` adapter) or
//! on this machine (the `local` adapter, used by the demo). The launch script runs under
//! `setsid nohup` in its own session; the job id is `host:pid@START` (START: the process's
//! start time as `ps -o lstart` gives it, so a pid the system reused for another process is
//! not taken for the agent); status is `ps`, cancel is SIGTERM to the whole process group,
//! then SIGKILL after a grace period.
//!
//! A pilot of N nodes on the ssh adapter is N such processes, one on each of N distinct
//! hosts, each agent named after the host it was started on (`HETPILOT_NODE_NAME`: the
//! manager admits one agent per node, and hosts reached under different names may share a
//! machine); its job id joins theirs with `+`. It runs while any of them runs, and ends
//! when all have.

use super::script::render_launch;
use super::{
    command_failed, run_ok, AdapterError, BatchAdapter, BatchJobId, JobScript, JobState, PilotSpec,
};
use crate::provision::profile::{AdapterKind, Login, PlatformProfile};
use crate::provision::runner::{CommandOutput, CommandRunner, RunnerError, SshRunner};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Starts the script ($1) in a new session, output appended to $2 and $3, the agent named
/// $4 when given; prints its pid and start time (setsid does not fork here: a background
/// child of a non-interactive shell is not a process-group leader, so the pid printed is
/// the session's; setsid and nohup exec, so the start time stays the agent's).
const LAUNCH: &str = r#"umask 077
if [ -n "$4" ]; then export HETPILOT_NODE_NAME="$4"; fi
setsid nohup /bin/sh "$1" </dev/null >>"$2" 2>>"$3" &
pid=$!
echo "$pid $(LC_ALL=C ps -o lstart= -p "$pid" 2>/dev/null)""#;

/// The start time of a process from `ps -o lstart` words (`Mon Nov 23 02:51:06 2026`), as
/// a job id keeps it (`Mon-Nov-23-02.51.06-2026`); None unless it has that shape.
fn start_stamp<'a>(words: impl Iterator<Item = &'a str>) -> Option<String> {
    let words: Vec<&str> = words.collect();
    let plain =
        |w: &&str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b':');
    (words.len() == 5 && words.iter().all(plain)).then(|| words.join("-").replace(':', "."))
}

/// SIGTERM to process group $1, up to 5 s for it to go, then SIGKILL; nothing when $2 (a
/// start stamp) is given and process $1 did not start then (the agent is gone and its pid
/// was reused). (`kill -SIG -PGID` without `--`: dash's kill does not take `--`.)
const STOP: &str = r#"if [ -n "$2" ]; then
    started=$(LC_ALL=C ps -o lstart= -p "$1" | tr -s ' ' | sed 's/^ //; s/ $//' | tr ' :' '-.')
    [ "$started" = "$2" ] || exit 0
fi
kill -TERM -"$1" 2>/dev/null || exit 0
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

    /// The hosts a script starts on: the ssh adapter's targets, or this machine.
    fn hosts_of(&self, script: &JobScript) -> Result<Vec<String>, AdapterError> {
        match &self.hosts {
            None => Ok(vec!["localhost".into()]),
            Some(_) if script.hosts.is_empty() => Err(AdapterError::Render(
                "the ssh adapter needs the pilot's target hosts (PilotSpec::hosts)".into(),
            )),
            Some(_) => Ok(script.hosts.clone()),
        }
    }

    /// Starts the script on `host` (the agent named `node_name` when not empty); the job
    /// id of that one process.
    fn launch_on(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        script: &JobScript,
        host: &str,
        node_name: &str,
    ) -> Result<String, AdapterError> {
        let target = self.runner_for(runner, profile, host)?;
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
            node_name,
        ];
        let out = run_ok(target, &argv, None)?;
        let mut words = out.stdout.split_whitespace();
        let pid = words.next().unwrap_or_default();
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AdapterError::Parse {
                command: "setsid nohup".into(),
                problem: format!("expected a pid, got {:?}", out.stdout),
            });
        }
        tracing::info!(%host, pid, script = %script.path, "agent started");
        // No start time when the process already ended: it is found gone at the next poll.
        Ok(match start_stamp(words) {
            Some(start) => format!("{host}:{pid}@{start}"),
            None => format!("{host}:{pid}"),
        })
    }

    /// Stops one process of a pilot.
    fn stop(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        id: &ProcessId<'_>,
    ) -> Result<(), AdapterError> {
        let target = self.runner_for(runner, profile, id.host)?;
        run_ok(
            target.get(),
            &[
                "sh",
                "-c",
                STOP,
                "hetpilot-stop",
                id.pid,
                id.start.unwrap_or_default(),
            ],
            None,
        )?;
        Ok(())
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

/// One process of a job id: host, pid (a number) and the process's start stamp (ids of
/// earlier versions, `host:pid`, have none).
struct ProcessId<'a> {
    host: &'a str,
    pid: &'a str,
    start: Option<&'a str>,
}

/// A job id split into its processes (one per host, joined by `+`).
fn split_id(job: &BatchJobId) -> Result<Vec<ProcessId<'_>>, AdapterError> {
    job.0.split('+').map(|part| split_part(job, part)).collect()
}

fn split_part<'a>(job: &BatchJobId, part: &'a str) -> Result<ProcessId<'a>, AdapterError> {
    let bad = || AdapterError::Parse {
        command: "job id".into(),
        problem: format!("{:?} is not host:pid@start[+host:pid@start...]", job.0),
    };
    let (host, rest) = part.split_once(':').ok_or_else(bad)?;
    let (pid, start) = match rest.split_once('@') {
        Some((pid, start)) => (pid, Some(start)),
        None => (rest, None),
    };
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    let stamp = start.is_none_or(|s| {
        let words: Vec<&str> = s.split('-').collect();
        words.len() == 5
            && words
                .iter()
                .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.'))
    });
    if host.is_empty() || !digits || !stamp {
        return Err(bad());
    }
    Ok(ProcessId { host, pid, start })
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
            let distinct = pilot
                .hosts
                .iter()
                .enumerate()
                .all(|(i, h)| !pilot.hosts[..i].contains(h));
            let known = pilot.hosts.iter().all(|h| profile.hosts.contains(h));
            if !known || !distinct || pilot.hosts.len() != pilot.nodes as usize {
                return Err(AdapterError::Render(format!(
                    "pilot {} of {} node(s) must name as many distinct hosts of platform \
                     {}'s {:?}, not {:?}",
                    pilot.name, pilot.nodes, profile.name, profile.hosts, pilot.hosts
                )));
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
        let hosts = self.hosts_of(script)?;
        let mut started: Vec<String> = Vec::with_capacity(hosts.len());
        for host in &hosts {
            // One host: the agent keeps its machine's name, as it always has.
            let node_name = if hosts.len() > 1 { host.as_str() } else { "" };
            match self.launch_on(runner, profile, script, host, node_name) {
                Ok(id) => started.push(id),
                Err(e) => {
                    // All or nothing: what already started is stopped again.
                    let partial = BatchJobId(started.join("+"));
                    if !started.is_empty() {
                        for id in split_id(&partial).unwrap_or_default() {
                            if let Err(stop) = self.stop(runner, profile, &id) {
                                tracing::warn!(
                                    error = %stop,
                                    host = id.host,
                                    "cannot stop an agent of a pilot whose start failed on another host"
                                );
                            }
                        }
                    }
                    return Err(e);
                }
            }
        }
        Ok(BatchJobId(started.join("+")))
    }

    fn run_beside(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        job: Option<&BatchJobId>,
        argv: &[&str],
    ) -> Result<CommandOutput, AdapterError> {
        let Some(job) = job else {
            return Ok(runner.run(argv, None)?);
        };
        let ids = split_id(job)?;
        let host = ids.first().map_or("localhost", |id| id.host);
        Ok(self
            .runner_for(runner, profile, host)?
            .get()
            .run(argv, None)?)
    }

    fn poll(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        jobs: &[BatchJobId],
    ) -> Result<HashMap<BatchJobId, JobState>, AdapterError> {
        let mut by_host: BTreeMap<&str, Vec<(&BatchJobId, ProcessId<'_>)>> = BTreeMap::new();
        for job in jobs {
            for id in split_id(job)? {
                by_host.entry(id.host).or_default().push((job, id));
            }
        }
        // The states of each job's processes.
        let mut parts: HashMap<BatchJobId, Vec<JobState>> = HashMap::new();
        for (host, host_jobs) in by_host {
            let target = self.runner_for(runner, profile, host)?;
            let pids: Vec<&str> = host_jobs.iter().map(|(_, id)| id.pid).collect();
            let pid_list = pids.join(",");
            let argv = [
                "env",
                "LC_ALL=C",
                "ps",
                "-o",
                "pid=,stat=,lstart=",
                "-p",
                &pid_list,
            ];
            let out = target.get().run(&argv, None)?;
            // ps exits 1 when none of the pids exists.
            if out.status != 0 && !(out.status == 1 && out.stdout.trim().is_empty()) {
                return Err(command_failed(&argv, &out));
            }
            let alive: HashMap<&str, (&str, Option<String>)> = out
                .stdout
                .lines()
                .filter_map(|l| {
                    let mut w = l.split_whitespace();
                    Some((w.next()?, (w.next()?, start_stamp(w))))
                })
                .collect();
            for (job, id) in host_jobs {
                let pid = id.pid;
                let exited = |reason: String| JobState::Ended {
                    exit_code: None,
                    reason,
                };
                let state = match alive.get(pid) {
                    Some((stat, _)) if stat.starts_with('Z') => {
                        exited(format!("process {pid} on {host} has exited"))
                    }
                    Some((_, started)) if id.start.is_some() && started.as_deref() != id.start => {
                        exited(format!(
                            "process {pid} on {host} has exited (the pid now belongs to another process)"
                        ))
                    }
                    Some(_) => JobState::Running,
                    None => exited(format!("process {pid} on {host} has exited")),
                };
                parts.entry(job.clone()).or_default().push(state);
            }
        }
        Ok(parts
            .into_iter()
            .map(|(job, states)| (job, combined(states)))
            .collect())
    }

    fn cancel(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        job: &BatchJobId,
    ) -> Result<(), AdapterError> {
        // Every process is asked to stop, also after one refused; the first error is told.
        let mut first_error = None;
        for id in split_id(job)? {
            if let Err(e) = self.stop(runner, profile, &id) {
                first_error.get_or_insert(e);
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        tracing::info!(%job, "agent stopped");
        Ok(())
    }
}

/// A pilot's state from its processes': running while any runs, ended once all have
/// (with the first one's reason, and how many there were).
fn combined(mut states: Vec<JobState>) -> JobState {
    if states.len() == 1 {
        return states.remove(0);
    }
    if states.iter().any(|s| matches!(s, JobState::Running)) {
        return JobState::Running;
    }
    let n = states.len();
    match states.into_iter().next() {
        Some(JobState::Ended { exit_code, reason }) => JobState::Ended {
            exit_code,
            reason: format!("all {n} of its processes have exited: {reason}, ..."),
        },
        Some(other) => other,
        None => JobState::Ended {
            exit_code: None,
            reason: "no process".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{pilot, pilot_of, profile, FakeRunner};
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
        spec.hosts = vec!["node1".into()];
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
                "/scratch/hetpilot/darth-p17.err",
                "",
            ]
        );
        assert_eq!(
            calls[1],
            [
                "env",
                "LC_ALL=C",
                "ps",
                "-o",
                "pid=,stat=,lstart=",
                "-p",
                "4711"
            ]
        );
        assert_eq!(fake.files.lock().unwrap()[0].2, 0o700);
    }

    /// A two-node pilot: one agent on each of two hosts, named after its host; running
    /// while either runs; cancelled on both.
    #[test]
    fn a_two_node_ssh_pilot_runs_one_agent_per_host_and_ends_when_both_have() {
        let fake = Arc::new(FakeRunner::new(&[
            (0, "11 Mon Nov  3 02:51:06 2026\n", ""),
            (0, "22 Mon Nov  3 02:51:07 2026\n", ""),
            // Polls, one ps per host: both up; one gone; both gone.
            (0, "  11 Ss   Mon Nov  3 02:51:06 2026\n", ""),
            (0, "  22 Ss   Mon Nov  3 02:51:07 2026\n", ""),
            (0, "  11 Ss   Mon Nov  3 02:51:06 2026\n", ""),
            (1, "", ""),
            (1, "", ""),
            (1, "", ""),
            // The two stops.
            (0, "", ""),
            (0, "", ""),
        ]));
        let (adapter, connected) = ssh_adapter(fake.clone());
        let mut p = profile(AdapterKind::Ssh);
        p.hosts = vec!["node1".into(), "node2".into(), "node3".into()];
        let mut spec = pilot_of(2);
        spec.hosts = vec!["node1".into(), "node3".into()];
        let script = adapter.render(&p, &spec).unwrap();
        let unused = FakeRunner::new(&[]);
        let id = adapter.submit(&unused, &p, &script).unwrap();
        assert_eq!(
            id.0,
            "node1:11@Mon-Nov-3-02.51.06-2026+node3:22@Mon-Nov-3-02.51.07-2026"
        );
        let calls = fake.calls();
        assert_eq!(
            calls[0].last().unwrap(),
            "node1",
            "the agent is named after its host"
        );
        assert_eq!(calls[1].last().unwrap(), "node3");
        let ids = std::slice::from_ref(&id);
        assert_eq!(
            adapter.poll(&unused, &p, ids).unwrap()[&id],
            JobState::Running
        );
        assert_eq!(
            adapter.poll(&unused, &p, ids).unwrap()[&id],
            JobState::Running
        );
        let JobState::Ended { reason, .. } = &adapter.poll(&unused, &p, ids).unwrap()[&id] else {
            panic!("both processes are gone")
        };
        assert!(
            reason.contains("all 2 of its processes have exited"),
            "{reason}"
        );
        adapter.cancel(&unused, &p, &id).unwrap();
        let calls = fake.calls();
        let stops: Vec<&[String]> = calls[calls.len() - 2..].iter().map(|c| &c[3..]).collect();
        assert_eq!(stops[0], ["hetpilot-stop", "11", "Mon-Nov-3-02.51.06-2026"]);
        assert_eq!(stops[1], ["hetpilot-stop", "22", "Mon-Nov-3-02.51.07-2026"]);
        assert_eq!(*connected.lock().unwrap(), ["node1", "node3"]);
    }

    /// A start that fails on the second host stops the agent started on the first.
    #[test]
    fn a_multi_host_start_is_all_or_nothing() {
        let fake = Arc::new(FakeRunner::new(&[
            (0, "11 Mon Nov  3 02:51:06 2026\n", ""),
            (1, "", "sh: cannot fork"),
            (0, "", ""),
        ]));
        let (adapter, _) = ssh_adapter(fake.clone());
        let mut p = profile(AdapterKind::Ssh);
        p.hosts = vec!["node1".into(), "node2".into()];
        let mut spec = pilot_of(2);
        spec.hosts = vec!["node1".into(), "node2".into()];
        let script = adapter.render(&p, &spec).unwrap();
        let err = adapter
            .submit(&FakeRunner::new(&[]), &p, &script)
            .unwrap_err();
        assert!(err.to_string().contains("cannot fork"), "{err}");
        let calls = fake.calls();
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert_eq!(
            calls[2][3..],
            ["hetpilot-stop", "11", "Mon-Nov-3-02.51.06-2026"]
        );
    }

    #[test]
    fn ssh_refuses_hosts_outside_the_profile() {
        let (adapter, _) = ssh_adapter(Arc::new(FakeRunner::new(&[])));
        let mut spec = pilot();
        spec.hosts = vec!["elsewhere".into()];
        let err = adapter
            .render(&profile(AdapterKind::Ssh), &spec)
            .unwrap_err();
        assert!(err.to_string().contains("elsewhere"), "{err}");
        // As many distinct hosts as nodes, no fewer, none twice.
        let mut p = profile(AdapterKind::Ssh);
        p.hosts = vec!["node1".into(), "node2".into()];
        for hosts in [vec!["node1"], vec!["node1", "node1"]] {
            let mut spec = pilot_of(2);
            spec.hosts = hosts.iter().map(|h| h.to_string()).collect();
            let err = adapter.render(&p, &spec).unwrap_err();
            assert!(
                err.to_string().contains("distinct hosts"),
                "{hosts:?}: {err}"
            );
        }
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
            vec![vec![
                "env",
                "LC_ALL=C",
                "ps",
                "-o",
                "pid=,stat=,lstart=",
                "-p",
                "10,11,12"
            ]]
        );
        assert_eq!(states[&jobs[0]], JobState::Running);
        assert!(matches!(states[&jobs[1]], JobState::Ended { .. }));
        assert!(matches!(states[&jobs[2]], JobState::Ended { .. }));
    }

    /// The agent's pid now belongs to a process that started later: the agent has ended,
    /// and cancelling it kills nothing.
    #[test]
    fn a_reused_pid_is_not_taken_for_the_agent() {
        let launch = FakeRunner::new(&[(0, "4711 Mon Nov  3 02:51:06 2026\n", "")]);
        let p = profile(AdapterKind::Local);
        let script = Process::local().render(&p, &pilot()).unwrap();
        let id = Process::local().submit(&launch, &p, &script).unwrap();
        assert_eq!(id.0, "localhost:4711@Mon-Nov-3-02.51.06-2026");
        let poll = FakeRunner::new(&[
            (0, "  4711 Ss   Mon Nov  3 02:51:06 2026\n", ""),
            (0, "  4711 Ss   Tue Nov  4 09:00:00 2026\n", ""),
        ]);
        let ids = std::slice::from_ref(&id);
        let states = Process::local().poll(&poll, &p, ids).unwrap();
        assert_eq!(states[&id], JobState::Running);
        let states = Process::local().poll(&poll, &p, ids).unwrap();
        let JobState::Ended { reason, .. } = &states[&id] else {
            panic!("{states:?}")
        };
        assert!(reason.contains("another process"), "{reason}");
        let stop = FakeRunner::new(&[(0, "", "")]);
        Process::local().cancel(&stop, &p, &id).unwrap();
        assert_eq!(
            stop.calls()[0][3..],
            ["hetpilot-stop", "4711", "Mon-Nov-3-02.51.06-2026"]
        );
    }

    #[test]
    fn ids_that_are_not_host_pid_are_refused() {
        let runner = FakeRunner::new(&[]);
        let p = profile(AdapterKind::Local);
        for bad in [
            "1234",
            "host:",
            "host:12;rm",
            ":12",
            "host:12@x;y",
            "host:12@",
        ] {
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
