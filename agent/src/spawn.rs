//! Starting a task's process cheaply: through the spawn helper (`spawner`: a vfork-style
//! clone of a small process, so the task's peak RSS is its own), else `posix_spawn`, into
//! its own process group, with an environment prepared once per application instead of
//! rebuilt from the agent's environment for every task, and output pipes whose read ends
//! are made non-blocking with one `fcntl` each.

use crate::gpu::{binding, Inventory};
use crate::output_dir::{AppDir, Rules};
use crate::sandbox::{Sandbox, TaskView};
use crate::spawner;
use hetpilot_protocol::launcher::LaunchValues;
use hetpilot_protocol::protocol::{AppRuntime, Assignment};
use std::collections::BTreeMap;
use std::ffi::{CStr, CString, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Variables set per task; they override the application's environment.
const PER_TASK: [&str; 10] = [
    "HETPILOT_TASK",
    "HETPILOT_APP",
    "HETPILOT_INDEX",
    "HETPILOT_ATTEMPT",
    "HETPILOT_INPUT",
    "HETPILOT_CORES",
    "HETPILOT_NODEFILE",
    "HETPILOT_HOSTS",
    "HETPILOT_PROCS",
    "HETPILOT_LAUNCH",
];

/// An application's runtime with what every one of its tasks shares, built once.
pub struct Prepared {
    pub runtime: AppRuntime,
    /// `KEY=VALUE` entries: the agent's environment without its own `HETPILOT_*` settings
    /// (the token, its file, keys), plus the app's.
    env: Vec<CString>,
    cwd: PathBuf,
    cwd_c: CString,
    /// The application's own `PATH`, if it sets one (bare command names search it).
    path: Option<OsString>,
    /// Where the tasks' output files go, below their application's directory.
    output_base: PathBuf,
    /// That directory, checked and made once for all the tasks (see
    /// [`Prepared::output_dir`]).
    output_dir: OnceLock<AppDir>,
    /// Why no task of this application can start (a NUL byte in its settings).
    problem: Option<String>,
}

fn cstring(bytes: Vec<u8>, what: &str) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| format!("{what} contains a NUL byte"))
}

impl Prepared {
    pub fn new(runtime: AppRuntime, work_dir: &Path, output_dir: &Path) -> Prepared {
        Prepared::with_env(runtime, work_dir, output_dir, std::env::vars_os())
    }

    /// [`Prepared::new`] with `agent_env` standing for the agent's environment.
    fn with_env(
        runtime: AppRuntime,
        work_dir: &Path,
        output_dir: &Path,
        agent_env: impl Iterator<Item = (OsString, OsString)>,
    ) -> Prepared {
        let kept = |k: &str| {
            !k.starts_with("HETPILOT_AGENT_TOKEN")
                && !PER_TASK.contains(&k)
                && !binding::VARIABLES.contains(&k)
        };
        // The agent's own settings (its token's file, SFTP key, a CLI token) are not the
        // tasks' business, nor are the GPUs its batch job was given: each task is bound to
        // its own.
        let mut vars: BTreeMap<OsString, OsString> = agent_env
            .filter(|(k, _)| {
                !k.as_encoded_bytes().starts_with(b"HETPILOT_")
                    && !k.to_str().is_some_and(|k| binding::VARIABLES.contains(&k))
            })
            .collect();
        for (k, v) in &runtime.env {
            if kept(k) {
                vars.insert(k.into(), v.into());
            }
        }
        let path = runtime.env.get("PATH").map(OsString::from);
        let env: Result<Vec<CString>, String> = vars
            .into_iter()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend(v.into_vec());
                cstring(kv, "an environment variable")
            })
            .collect();
        let cwd = match &runtime.workdir {
            Some(dir) => work_dir.join(dir),
            None => work_dir.to_path_buf(),
        };
        let cwd_c = cstring(cwd.as_os_str().as_bytes().to_vec(), "the working directory");
        let output_base = match &runtime.output_dir {
            Some(dir) => work_dir.join(dir),
            None => output_dir.to_path_buf(),
        };
        let (env, cwd_c, problem) = match (env, cwd_c) {
            (Ok(env), Ok(cwd_c)) => (env, cwd_c, None),
            (Err(e), _) | (_, Err(e)) => (Vec::new(), CString::default(), Some(e)),
        };
        Prepared {
            runtime,
            env,
            cwd,
            cwd_c,
            path,
            output_base,
            output_dir: OnceLock::new(),
            problem,
        }
    }

    /// The directory its tasks' stdout and stderr go to, `OUTPUT_BASE/app-APP`, checked
    /// and made under `rules` on first use (a failure is tried again by the next task).
    /// Its tasks then create `task-INDEX.ATTEMPT.out` and `.err` in it.
    pub fn output_dir(&self, rules: &Rules) -> Result<&AppDir, String> {
        if let Some(dir) = self.output_dir.get() {
            return Ok(dir);
        }
        let dir = rules.open_app_dir(&self.output_base, self.runtime.app)?;
        Ok(self.output_dir.get_or_init(|| dir))
    }
}

/// A started process: its pid and the read ends of its stdout and stderr (non-blocking).
pub struct Child {
    pub pid: i32,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A pipe whose read end is non-blocking and whose write end stays blocking (the task
/// writes to it); both are closed on exec.
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(last_error());
    }
    // SAFETY: the kernel just returned these descriptors; nothing else owns them.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: r is an open descriptor we own.
    if unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(last_error());
    }
    Ok((r, w))
}

/// /dev/null, opened once, for every task's stdin.
fn dev_null() -> std::io::Result<BorrowedFd<'static>> {
    static NULL: OnceLock<std::io::Result<OwnedFd>> = OnceLock::new();
    match NULL.get_or_init(|| std::fs::File::open("/dev/null").map(OwnedFd::from)) {
        Ok(fd) => Ok(fd.as_fd()),
        Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
    }
}

/// The executable a bare command name means when the application sets its own `PATH`
/// (`posix_spawnp` would search the agent's).
fn search(program: &str, path: &OsString, cwd: &Path) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| cwd.join(dir).join(program))
        .find(|p| {
            CString::new(p.as_os_str().as_bytes())
                // SAFETY: p is a NUL-terminated path.
                .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0)
                && p.is_file()
        })
}

/// How a task is placed: its run directory, if it has one (it then replaces the
/// application's working directory), and the sandbox it runs in with the run directory's
/// files that stay read-only.
#[derive(Default)]
pub struct Place<'a> {
    pub run_dir: Option<&'a Path>,
    pub sandbox: Option<&'a Sandbox>,
    pub read_only: &'a [PathBuf],
    /// The agent's GPUs, which the task is bound to (none: it sees no GPU).
    pub gpus: Option<&'a Inventory>,
    /// A parallel run's host file (see [`parallel_env`]).
    pub nodefile: Option<&'a Path>,
    /// The agent's batch job id, for a parallel run's launcher.
    pub job_id: Option<&'a str>,
}

/// A parallel run's variables: `HETPILOT_NODEFILE` (its host file), `HETPILOT_HOSTS`
/// (the hosts, comma-separated, in the file's order), `HETPILOT_PROCS` (its slots in all)
/// and, when the manager sent its platform's launcher, `HETPILOT_LAUNCH` (the launcher
/// filled in, words a shell splits back exactly); none for a run on this agent alone. A
/// launcher that cannot be filled in safely is a "could not start" reason.
fn parallel_env(a: &Assignment, place: &Place) -> Result<Vec<Vec<u8>>, String> {
    let Some(path) = place.nodefile.filter(|_| !a.hosts.is_empty()) else {
        return Ok(Vec::new());
    };
    let mut hosts: Vec<&str> = Vec::with_capacity(a.hosts.len());
    for h in &a.hosts {
        if !hosts.contains(&h.host.as_str()) {
            hosts.push(&h.host);
        }
    }
    let procs: u64 = a.hosts.iter().map(|h| u64::from(h.slots)).sum();
    let mut file = b"HETPILOT_NODEFILE=".to_vec();
    file.extend_from_slice(path.as_os_str().as_bytes());
    let mut env = vec![
        file,
        format!("HETPILOT_HOSTS={}", hosts.join(",")).into_bytes(),
        format!("HETPILOT_PROCS={procs}").into_bytes(),
    ];
    if let Some(launcher) = &a.launcher {
        let values = LaunchValues {
            hosts: &hosts,
            // A path that is not UTF-8 is refused as unsafe, like one with a blank.
            nodefile: &path.to_string_lossy(),
            procs,
            job_id: place.job_id,
        };
        let words = launcher
            .render(&values)
            .map_err(|e| format!("the platform's launcher (HETPILOT_LAUNCH): {e}"))?;
        env.push(format!("HETPILOT_LAUNCH={}", words.join(" ")).into_bytes());
    }
    Ok(env)
}

/// Starts task `a` of application `app` at `place`; errors are "could not start" reasons.
pub fn start(a: &Assignment, app: &Prepared, place: Place) -> Result<Child, String> {
    let run_dir = place.run_dir;
    if let Some(problem) = &app.problem {
        return Err(problem.clone());
    }
    // The built-in emulator runs as the agent's own binary.
    let emulated = match a.argv.first() {
        Some(p) if p == crate::emulate::PROGRAM => Some(crate::emulate::command(&a.argv)?),
        _ => None,
    };
    let task_argv = emulated.as_ref().unwrap_or(&a.argv);
    let program = task_argv.first().ok_or("empty command")?;
    let cwd = run_dir.unwrap_or(&app.cwd);
    let run_dir_c = run_dir
        .map(|d| cstring(d.as_os_str().as_bytes().to_vec(), "the run directory"))
        .transpose()?;
    let fail = |e: std::io::Error| format!("cannot start `{program}` in {}: {e}", cwd.display());
    let argv = task_argv
        .iter()
        .map(|s| cstring(s.clone().into_bytes(), "the command"))
        .collect::<Result<Vec<_>, _>>()?;
    let task_env = [
        format!("HETPILOT_TASK={}", a.task),
        format!("HETPILOT_APP={}", a.task.app),
        format!("HETPILOT_INDEX={}", a.task.index),
        format!("HETPILOT_ATTEMPT={}", a.attempt),
        format!("HETPILOT_INPUT={}", a.input),
        format!(
            "HETPILOT_CORES={}",
            a.cores.unwrap_or(app.runtime.cores).max(1)
        ),
    ]
    .map(|kv| cstring(kv.into_bytes(), "the task's input"));
    let no_gpus = Inventory::default();
    let gpus = binding::bind(&a.resources, place.gpus.unwrap_or(&no_gpus))?;
    let gpu_env = gpus
        .env
        .into_iter()
        .map(|kv| cstring(kv.into_bytes(), "the GPU binding"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut envp: Vec<&CStr> = Vec::with_capacity(app.env.len() + task_env.len() + gpu_env.len());
    envp.extend(app.env.iter().map(CString::as_c_str));
    for kv in &task_env {
        envp.push(kv.as_ref().map_err(Clone::clone)?);
    }
    envp.extend(gpu_env.iter().map(CString::as_c_str));
    let parallel = parallel_env(a, &place)?
        .into_iter()
        .map(|kv| cstring(kv, "the parallel run's hosts"))
        .collect::<Result<Vec<_>, _>>()?;
    envp.extend(parallel.iter().map(CString::as_c_str));
    let argp: Vec<&CStr> = argv.iter().map(CString::as_c_str).collect();
    // A bare name searches the application's PATH, else the agent's (as execvp would).
    let searched = match (&app.path, program.contains('/')) {
        (_, true) => None,
        (Some(path), false) => Some(search(program, path, cwd)),
        (None, false) => {
            Some(std::env::var_os("PATH").and_then(|path| search(program, &path, cwd)))
        }
    };
    let searched_c = match searched {
        Some(None) => return Err(fail(std::io::ErrorKind::NotFound.into())),
        Some(Some(p)) => Some(cstring(p.into_os_string().into_vec(), "the command")?),
        None => None,
    };
    let (out_r, out_w) = pipe().map_err(fail)?;
    let (err_r, err_w) = pipe().map_err(fail)?;
    let null = dev_null().map_err(fail)?;
    let stdio = [null, out_w.as_fd(), err_w.as_fd()];
    let cwd_c = run_dir_c.as_deref().unwrap_or(&app.cwd_c);
    let pid = match place.sandbox {
        None => spawn(
            searched_c.as_deref().unwrap_or(&argv[0]),
            &argp,
            &envp,
            stdio,
            cwd_c,
        ),
        Some(sandbox) => {
            let run_dir = run_dir.ok_or("a sandboxed task needs a run directory")?;
            let mut command = vec![searched_c.clone().unwrap_or_else(|| argv[0].clone())];
            command.extend(argv[1..].iter().cloned());
            let env: Vec<&[u8]> = envp.iter().map(|c| c.to_bytes()).collect();
            // The emulator is the agent's own binary, which may sit in a directory the
            // sandbox hides (the agent's home or work dir): it is bound read-only.
            let with_exe: Vec<PathBuf>;
            let read_only = match &emulated {
                Some(cmd) => {
                    with_exe = [place.read_only, &[PathBuf::from(&cmd[0])]].concat();
                    &with_exe[..]
                }
                None => place.read_only,
            };
            let view = TaskView {
                run_dir,
                read_only,
                env: &env,
                devices: &gpus.nodes,
            };
            let bwrap_argv = sandbox.argv(&view, &command)?;
            let bwrap_argp: Vec<&CStr> = bwrap_argv.iter().map(CString::as_c_str).collect();
            // bwrap itself runs with an empty environment: the task's is in its arguments.
            spawn(sandbox.program(), &bwrap_argp, &[], stdio, cwd_c)
        }
    }
    .map_err(fail)?;
    Ok(Child {
        pid,
        stdout: out_r,
        stderr: err_r,
    })
}

/// Starts `program` (a path) with `stdio` as fds 0–2, in `cwd`, in a new process group,
/// with an empty signal mask and the default SIGPIPE disposition: through the spawn helper
/// (see `spawner`), else with `posix_spawn`.
fn spawn(
    program: &CStr,
    argv: &[&CStr],
    envp: &[&CStr],
    stdio: [BorrowedFd<'_>; 3],
    cwd: &CStr,
) -> std::io::Result<i32> {
    let request = spawner::Request {
        program,
        argv,
        envp,
        cwd,
        stdio,
    };
    if let Some(started) = spawner::spawn(&request) {
        return started;
    }
    let mut argp: Vec<*const libc::c_char> = argv.iter().map(|c| c.as_ptr()).collect();
    argp.push(std::ptr::null());
    let mut envpp: Vec<*const libc::c_char> = envp.iter().map(|c| c.as_ptr()).collect();
    envpp.push(std::ptr::null());
    posix_spawn(program, &argp, &envpp, stdio, cwd)
}

/// posix_spawn with `stdio` as fds 0–2, in `cwd`, in a new process group, with an empty
/// signal mask and the default SIGPIPE disposition.
fn posix_spawn(
    program: &CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    stdio: [BorrowedFd<'_>; 3],
    cwd: &CStr,
) -> std::io::Result<i32> {
    let check = |r: libc::c_int| match r {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    };
    // SAFETY: the attribute and file-action objects are initialised before use and
    // destroyed after; every pointer passed (program, argv, envp, cwd) is NUL-terminated
    // and outlives the call; the pid is written into a live local.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        check(libc::posix_spawnattr_init(&mut attr))?;
        if let Err(e) = check(libc::posix_spawn_file_actions_init(&mut actions)) {
            libc::posix_spawnattr_destroy(&mut attr);
            return Err(e);
        }
        let result = (|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            check(libc::posix_spawnattr_setsigmask(&mut attr, &set))?;
            libc::sigaddset(&mut set, libc::SIGPIPE);
            check(libc::posix_spawnattr_setsigdefault(&mut attr, &set))?;
            check(libc::posix_spawnattr_setpgroup(&mut attr, 0))?;
            let flags = libc::POSIX_SPAWN_SETPGROUP
                | libc::POSIX_SPAWN_SETSIGMASK
                | libc::POSIX_SPAWN_SETSIGDEF;
            check(libc::posix_spawnattr_setflags(
                &mut attr,
                flags as libc::c_short,
            ))?;
            for (fd, target) in stdio.into_iter().zip(0..) {
                check(libc::posix_spawn_file_actions_adddup2(
                    &mut actions,
                    fd.as_raw_fd(),
                    target,
                ))?;
            }
            check(libc::posix_spawn_file_actions_addchdir_np(
                &mut actions,
                cwd.as_ptr(),
            ))?;
            let mut pid: libc::pid_t = 0;
            check(libc::posix_spawn(
                &mut pid,
                program.as_ptr(),
                &actions,
                &attr,
                argv.as_ptr() as *const *mut libc::c_char,
                envp.as_ptr() as *const *mut libc::c_char,
            ))?;
            Ok(pid)
        })();
        libc::posix_spawn_file_actions_destroy(&mut actions);
        libc::posix_spawnattr_destroy(&mut attr);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::{AppId, TaskRef};
    use std::io::Read;

    fn app(env: &[(&str, &str)]) -> AppRuntime {
        AppRuntime {
            app: AppId(7),
            name: "t".into(),
            cores: 1,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            workdir: None,
            output_dir: None,
            timeout_secs: None,
            files: None,
        }
    }

    fn task(argv: &[&str]) -> Assignment {
        Assignment {
            task: TaskRef {
                app: AppId(7),
                index: 3,
            },
            attempt: 2,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            input: "in put".into(),
            files: None,
            cores: None,
            resources: Default::default(),
            hosts: Vec::new(),
            launcher: None,
        }
    }

    fn run(a: &Assignment, p: &Prepared) -> (String, i32) {
        run_at(a, p, Place::default())
    }

    fn run_at(a: &Assignment, p: &Prepared, place: Place) -> (String, i32) {
        let c = start(a, p, place).unwrap();
        let mut status = 0;
        // SAFETY: c.pid is our child; status is a live local.
        assert_eq!(unsafe { libc::waitpid(c.pid, &mut status, 0) }, c.pid);
        // A child another test spawned meanwhile may hold the pipe's write end a moment
        // longer: read in blocking mode, to its end.
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(c.stdout.as_raw_fd(), libc::F_SETFL, 0) };
        let mut out = String::new();
        let mut f = std::fs::File::from(c.stdout);
        f.read_to_string(&mut out).unwrap();
        (out, status)
    }

    #[test]
    fn tasks_see_their_variables_and_the_apps_in_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("w")).unwrap();
        let mut rt = app(&[
            ("GREETING", "hi"),
            ("HETPILOT_INDEX", "ignored"),
            ("HETPILOT_AGENT_TOKEN", "never passed on"),
        ]);
        rt.workdir = Some("w".into());
        let p = Prepared::new(rt, dir.path(), dir.path());
        let script = "echo $GREETING $HETPILOT_TASK $HETPILOT_INDEX $HETPILOT_ATTEMPT \
                      \"$HETPILOT_INPUT\" ${HETPILOT_AGENT_TOKEN-none} $(pwd -P); \
                      read x; echo \"stdin:$x\"; kill -0 -$$ && echo own-group";
        let (out, status) = run(&task(&["/bin/sh", "-c", script]), &p);
        let cwd = dir.path().join("w").canonicalize().unwrap();
        assert_eq!(
            out,
            format!(
                "hi 7.3 3 2 in put none {}\nstdin:\nown-group\n",
                cwd.display()
            )
        );
        assert_eq!(status, 0);
    }

    #[test]
    fn a_parallel_run_sees_its_hosts_and_an_app_cannot_set_them() {
        let dir = tempfile::tempdir().unwrap();
        let spoof = [
            ("HETPILOT_NODEFILE", "/etc/passwd"),
            ("HETPILOT_HOSTS", "evil"),
            ("HETPILOT_PROCS", "999"),
        ];
        let p = Prepared::new(app(&spoof), dir.path(), dir.path());
        let script = "echo ${HETPILOT_NODEFILE-none} ${HETPILOT_HOSTS-none} ${HETPILOT_PROCS-none}";
        let mut a = task(&["/bin/sh", "-c", script]);
        assert_eq!(run(&a, &p).0, "none none none\n", "a run on one agent");
        a.hosts = ["n1", "n2", "n1"]
            .map(|h| hetpilot_protocol::parallel::HostSlots {
                host: h.into(),
                slots: 2,
            })
            .to_vec();
        let nodefile = dir.path().join("hetpilot-nodefile");
        let place = Place {
            nodefile: Some(&nodefile),
            ..Place::default()
        };
        let (out, _) = run_at(&a, &p, place);
        assert_eq!(out, format!("{} n1,n2 6\n", nodefile.display()));
    }

    #[test]
    fn a_parallel_run_gets_its_launcher_filled_in_as_words_a_shell_splits_back() {
        use hetpilot_protocol::launcher::LaunchTemplate;
        let dir = tempfile::tempdir().unwrap();
        let p = Prepared::new(
            app(&[("HETPILOT_LAUNCH", "rm -rf")]),
            dir.path(),
            dir.path(),
        );
        // What a task does with it: `$HETPILOT_LAUNCH prog args`, one argument per line.
        let script = "printf '%s\\n' ${HETPILOT_LAUNCH-none} prog";
        let mut a = task(&["/bin/sh", "-c", script]);
        a.hosts = ["n1", "n2"]
            .map(|h| hetpilot_protocol::parallel::HostSlots {
                host: h.into(),
                slots: 2,
            })
            .to_vec();
        let nodefile = dir.path().join("hetpilot-nodefile");
        let place = |job_id| Place {
            nodefile: Some(&nodefile),
            job_id,
            ..Place::default()
        };
        assert_eq!(
            run_at(&a, &p, place(None)).0,
            "none\nprog\n",
            "no launcher sent"
        );
        a.launcher = Some(LaunchTemplate::slurm());
        assert_eq!(
            run_at(&a, &p, place(Some("953"))).0,
            "srun\n--overlap\n--jobid=953\n--nodes=2\n--nodelist=n1,n2\n--ntasks=4\n\
             --cpus-per-task=1\n--distribution=block\nprog\n"
        );
        a.launcher = Some(LaunchTemplate::mpiexec());
        assert_eq!(
            run_at(&a, &p, place(None)).0,
            format!("mpiexec\n-hostfile\n{}\n-n\n4\nprog\n", nodefile.display())
        );
        // A host name a word split would break, and Slurm's launcher outside a batch job:
        // the run does not start, and says why.
        a.launcher = Some(LaunchTemplate::slurm());
        let err = start(&a, &p, place(None)).err().unwrap();
        assert!(
            err.contains("HETPILOT_LAUNCH") && err.contains("no batch job id"),
            "{err}"
        );
        a.hosts[1].host = "n2 *".into();
        let err = start(&a, &p, place(Some("953"))).err().unwrap();
        assert!(err.contains("the host name \"n2 *\""), "{err}");
    }

    #[test]
    fn the_agents_own_settings_are_not_passed_to_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let agent_env = [
            ("HETPILOT_AGENT_TOKEN_FILE", "/secret/token"),
            ("HETPILOT_SFTP_KEY", "/secret/key"),
            ("HETPILOT_TOKEN", "/secret/cli"),
            ("PATH", "/usr/bin:/bin"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let p = Prepared::with_env(
            app(&[("MINE", "1")]),
            dir.path(),
            dir.path(),
            agent_env.into_iter(),
        );
        let (out, _) = run(&task(&["/bin/sh", "-c", "env | sort"]), &p);
        assert!(!out.contains("/secret/"), "{out}");
        assert!(
            out.contains("MINE=1") && out.contains("HETPILOT_TASK=7.3"),
            "{out}"
        );
    }

    #[test]
    fn bare_names_search_the_apps_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("mytool");
        std::fs::write(&tool, "#!/bin/sh\necho from-mytool\n").unwrap();
        std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let with_path = Prepared::new(
            app(&[("PATH", &format!("/usr/bin:/bin:{}", bin.display()))]),
            dir.path(),
            dir.path(),
        );
        assert_eq!(run(&task(&["mytool"]), &with_path).0, "from-mytool\n");
        let without = Prepared::new(app(&[]), dir.path(), dir.path());
        let err = start(&task(&["mytool"]), &without, Place::default())
            .err()
            .unwrap();
        assert!(err.contains("cannot start `mytool`"), "{err}");
    }

    #[test]
    fn a_nul_byte_is_a_start_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = Prepared::new(app(&[("BAD", "a\0b")]), dir.path(), dir.path());
        let err = start(&task(&["/bin/true"]), &p, Place::default())
            .err()
            .unwrap();
        assert!(err.contains("NUL"), "{err}");
    }

    #[test]
    fn a_task_sees_only_its_granted_gpu_whatever_the_agent_and_app_say() {
        use crate::gpu::LocalGpu;
        use hetpilot_protocol::resources::{
            GpuDevice, GpuShare, GpuVendor, ResourceAmount, ResourceGrant,
        };
        let dir = tempfile::tempdir().unwrap();
        // The agent's batch job saw two GPUs, and the application names one itself.
        let agent_env = [("CUDA_VISIBLE_DEVICES", "0,1"), ("PATH", "/usr/bin:/bin")]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let p = Prepared::with_env(
            app(&[
                ("CUDA_VISIBLE_DEVICES", "GPU-app"),
                ("HIP_VISIBLE_DEVICES", "3"),
            ]),
            dir.path(),
            dir.path(),
            agent_env.into_iter(),
        );
        let gpus = crate::gpu::Inventory {
            source: "test".into(),
            granted_by: vec![],
            gpus: (0..2)
                .map(|i| LocalGpu {
                    device: GpuDevice {
                        index: i,
                        uuid: format!("GPU-{i}"),
                        model: "m".into(),
                        memory_mib: 1,
                        vendor: GpuVendor::Nvidia,
                    },
                    nodes: vec![],
                })
                .collect(),
        };
        let script = "env | grep -E '^(CUDA|ROCR|HIP)_VISIBLE_DEVICES=|^HETPILOT_GPU' | sort";
        let show = |grant: ResourceGrant| {
            let mut t = task(&["/bin/sh", "-c", script]);
            t.resources = grant;
            let place = Place {
                gpus: Some(&gpus),
                ..Place::default()
            };
            let c = start(&t, &p, place).unwrap();
            let mut status = 0;
            // SAFETY: c.pid is our child; status is a live local.
            assert_eq!(unsafe { libc::waitpid(c.pid, &mut status, 0) }, c.pid);
            let mut out = String::new();
            std::fs::File::from(c.stdout)
                .read_to_string(&mut out)
                .unwrap();
            out
        };
        let half = ResourceGrant {
            gpus: vec![GpuShare {
                index: 1,
                uuid: "GPU-1".into(),
                amount: ResourceAmount::parse(0.5).unwrap(),
            }],
            ..Default::default()
        };
        assert_eq!(
            show(half),
            "CUDA_VISIBLE_DEVICES=GPU-1\nHETPILOT_GPUS=1\nHETPILOT_GPU_SHARE=0.5\n\
             HIP_VISIBLE_DEVICES=-1\nROCR_VISIBLE_DEVICES=-1\n"
        );
        assert_eq!(
            show(ResourceGrant::default()),
            "CUDA_VISIBLE_DEVICES=\nHETPILOT_GPUS=\nHETPILOT_GPU_SHARE=\n\
             HIP_VISIBLE_DEVICES=-1\nROCR_VISIBLE_DEVICES=-1\n"
        );
        let foreign = ResourceGrant {
            gpus: vec![GpuShare {
                index: 5,
                uuid: "GPU-5".into(),
                amount: ResourceAmount::whole(1).unwrap(),
            }],
            ..Default::default()
        };
        let mut t = task(&["/bin/true"]);
        t.resources = foreign;
        let err = start(&t, &p, Place::default()).err().unwrap();
        assert!(err.contains("not one of this agent's"), "{err}");
    }
}
