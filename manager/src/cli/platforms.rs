//! `hetpilot platforms` (admin): each provisioned platform's status (available, or why
//! not, and its backoff). `hetpilot platforms check [--dry-run] [--probe]` validates the
//! configured profiles without a manager: job script renders, SSH host keys known, login
//! reachable, batch commands found on the login side, what the batch system says of the
//! partition/queue/class and account (`adapter::queue_check`), the agent binary runs on
//! the login side, and with `--probe` on a compute node (a one-minute job that runs
//! `AGENT --version`, waited for). Any failure makes it exit non-zero; `--dry-run` prints
//! the scripts and contacts nothing.

use super::check_output::println;
use super::connect::Connect;
use super::host_key_report;
use super::output::{age, print_json, print_table};
use clap::{Args as ClapArgs, Subcommand};
use hetpilot::config::ManagerConfig;
use hetpilot::provision::adapter::adapter_for;
use hetpilot::provision::adapter::queue_check::Verdict;
use hetpilot::provision::provisioner::pilot_spec;
use hetpilot::provision::{
    catalog, runner, AdapterKind, BatchAdapter, CommandRunner, JobState, PlatformProfile,
};
use hetpilot::service::now_ms;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<PlatformsCommand>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

#[derive(Debug, Subcommand)]
pub enum PlatformsCommand {
    /// Validate every configured platform profile (no manager needed).
    Check(CheckArgs),
    /// Make the manager re-read the platforms' profiles and re-check them (as SIGHUP to
    /// `hetpilot serve` does); the checks' results show in `hetpilot platforms`.
    Reload,
}

#[derive(Debug, ClapArgs)]
pub struct CheckArgs {
    /// Do not contact login hosts; print each platform's rendered job script.
    #[arg(long)]
    pub dry_run: bool,
    /// Also submit a one-minute job per platform that runs the agent binary with
    /// `--version` on a compute node, and wait for it.
    #[arg(long, conflicts_with = "dry_run")]
    pub probe: bool,
    /// How long `--probe` waits for its job (queue wait included), e.g. `5m`.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub probe_timeout: Duration,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Some(PlatformsCommand::Check(check)) => {
            let config = args.connect.config;
            return tokio::task::spawn_blocking(move || run_check(config, check)).await?;
        }
        Some(PlatformsCommand::Reload) => {
            let reloaded = args.connect.client()?.reload_platforms().await?;
            if args.json {
                return print_json(&reloaded);
            }
            println!(
                "profiles re-read: {}; their checks run now (see `hetpilot platforms`)",
                reloaded.platforms.join(", ")
            );
            return Ok(());
        }
        None => {}
    }
    let platforms = args.connect.client()?.platform_status().await?;
    if args.json {
        return print_json(&platforms);
    }
    let now = now_ms();
    let rows: Vec<Vec<String>> = platforms
        .iter()
        .map(|p| {
            let retry = if p.retry_at_ms > now {
                format!("in {}s", (p.retry_at_ms - now).div_ceil(1000))
            } else {
                "-".into()
            };
            vec![
                p.name.clone(),
                p.adapter.clone(),
                if p.available {
                    "available"
                } else {
                    "unavailable"
                }
                .into(),
                p.demand_cores.to_string(),
                p.failures.to_string(),
                retry,
                age(now, p.checked_at_ms),
                p.reason.clone(),
            ]
        })
        .collect();
    print_table(
        &[
            "PLATFORM", "ADAPTER", "STATUS", "DEMAND", "FAILURES", "RETRY", "CHECKED", "REASON",
        ],
        &rows,
    );
    if platforms.is_empty() {
        eprintln!("no platform has a profile (add `profile = \"...\"` to a [[platforms]] entry)");
    }
    Ok(())
}

/// The commands a batch system needs on its login side.
fn batch_commands(kind: AdapterKind) -> &'static [&'static str] {
    match kind {
        AdapterKind::Slurm => &["sbatch", "squeue", "scancel"],
        AdapterKind::Pbs | AdapterKind::Torque => &["qsub", "qstat", "qdel"],
        AdapterKind::LoadLeveler => &["llsubmit", "llq", "llcancel"],
        AdapterKind::Ssh | AdapterKind::Local => &["sh"],
    }
}

fn run_check(config: Option<PathBuf>, args: CheckArgs) -> anyhow::Result<()> {
    let settings = ManagerConfig::load(config.as_deref(), &[])?;
    let mut failed = 0;
    let mut checked = 0;
    for p in &settings.platforms {
        let Some(path) = &p.profile else { continue };
        checked += 1;
        println!("{} ({})", p.name, path.display());
        let profile = match catalog::load_profile(path) {
            Ok(profile) if profile.name == p.name => profile,
            Ok(profile) => {
                println!("  FAIL profile: named `{}`, not `{}`", profile.name, p.name);
                failed += 1;
                continue;
            }
            Err(e) => {
                println!("  FAIL profile: {e}");
                failed += 1;
                continue;
            }
        };
        println!(
            "  ok   profile: {} adapter, {} cores per node",
            profile.adapter.name(),
            profile.cores_per_node
        );
        let url = settings
            .advertise_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", settings.listen));
        let problems = check_one(&profile, &url, &args);
        failed += usize::from(problems > 0);
    }
    if checked == 0 {
        anyhow::bail!(
            "no configured platform names a profile (`profile = \"...\"` in [[platforms]])"
        );
    }
    if failed > 0 {
        anyhow::bail!("{failed} of {checked} platforms failed their checks");
    }
    println!("all {checked} platforms passed");
    Ok(())
}

/// Checks one profile, printing a line per check; returns the number of failures.
pub(super) fn check_one(profile: &PlatformProfile, url: &str, args: &CheckArgs) -> usize {
    let mut failures = 0;
    let adapter = adapter_for(profile.adapter);
    let spec = pilot_spec(profile, url, "check-p0");
    match adapter.render(profile, &spec) {
        Ok(script) => {
            println!(
                "  ok   job script renders ({} bytes, {})",
                script.text.len(),
                script.path
            );
            if args.dry_run {
                println!("  ---- {} ----", script.path);
                for line in script.text.lines() {
                    println!("  | {line}");
                }
            }
        }
        Err(e) => {
            println!("  FAIL job script: {e}");
            failures += 1;
        }
    }
    if args.dry_run {
        return failures;
    }
    let refused_keys = host_key_report::report(profile);
    if refused_keys > 0 {
        return failures + refused_keys;
    }
    let runner = match runner::for_login(&profile.login) {
        Ok(r) => r,
        Err(e) => {
            println!("  FAIL login: {e}");
            return failures + 1;
        }
    };
    match runner.run(&["true"], None) {
        Ok(out) if out.status == 0 => println!("  ok   login reachable ({})", runner.place()),
        Ok(out) => {
            println!(
                "  FAIL login {}: `true` exited {}: {}",
                runner.place(),
                out.status,
                out.stderr.trim()
            );
            return failures + 1;
        }
        Err(e) => {
            println!("  FAIL login: {e}");
            return failures + 1;
        }
    }
    let mut commands_found = true;
    for cmd in batch_commands(profile.adapter) {
        match runner.run(&["sh", "-c", "command -v \"$1\"", "sh", cmd], None) {
            Ok(out) if out.status == 0 => println!("  ok   {cmd}: {}", out.stdout.trim()),
            Ok(_) => {
                println!("  FAIL {cmd}: not found on {}", runner.place());
                failures += 1;
                commands_found = false;
            }
            Err(e) => {
                println!("  FAIL {cmd}: {e}");
                failures += 1;
                commands_found = false;
            }
        }
    }
    if commands_found {
        for finding in adapter.check_queue(runner.as_ref(), profile, &spec) {
            let mark = match finding.verdict {
                Verdict::Ok => "ok  ",
                Verdict::Warn => "warn",
                Verdict::Fail => {
                    failures += 1;
                    "FAIL"
                }
            };
            println!("  {mark} {}", finding.text);
        }
    }
    let binary = &profile.agent_binary;
    match runner.run(&[binary.as_str(), "--version"], None) {
        Ok(out) if out.status == 0 => {
            println!("  ok   agent binary {binary} runs: {}", out.stdout.trim())
        }
        result => {
            let why = match result {
                Ok(out) => format!("exited {}: {}", out.status, out.stderr.trim()),
                Err(e) => e.to_string(),
            };
            if args.probe {
                println!(
                    "  warn agent binary {binary} does not run on the login side ({why}); the \
                     probe job says whether compute nodes have it"
                );
            } else {
                println!(
                    "  FAIL agent binary {binary} does not run on the login side ({why}); if only \
                     compute nodes have it, check with --probe"
                );
                failures += 1;
            }
        }
    }
    if args.probe && failures == 0 {
        match probe(
            adapter.as_ref(),
            runner.as_ref(),
            profile,
            url,
            args.probe_timeout,
        ) {
            Ok(version) => {
                println!("  ok   probe job: the agent binary runs on a compute node: {version}")
            }
            Err(e) => {
                println!("  FAIL probe job: {e}");
                failures += 1;
            }
        }
    }
    failures
}

/// Submits a job that runs `AGENT --version` on one core of a compute node and waits for
/// it (polling its state every second, as the provisioner does every interval); returns
/// what the agent printed.
fn probe(
    adapter: &dyn BatchAdapter,
    runner: &dyn CommandRunner,
    profile: &PlatformProfile,
    url: &str,
    timeout: Duration,
) -> Result<String, String> {
    let name = format!("probe-{}-{}", profile.name, std::process::id());
    let mut spec = pilot_spec(profile, url, &name);
    spec.probe = true;
    spec.cores_per_node = 1;
    spec.walltime = Duration::from_secs(120).min(profile.max_walltime);
    let script = adapter.render(profile, &spec).map_err(|e| e.to_string())?;
    let job = adapter
        .submit(runner, profile, &script)
        .map_err(|e| format!("submission failed: {e}"))?;
    println!(
        "  ..   probe job {job} submitted; waiting up to {}",
        humantime::format_duration(timeout)
    );
    let started = Instant::now();
    let ended = loop {
        let states = adapter
            .poll(runner, profile, std::slice::from_ref(&job))
            .map_err(|e| format!("polling job {job}: {e}"))?;
        match states.get(&job) {
            Some(JobState::Ended { exit_code, reason }) => break (*exit_code, reason.clone()),
            Some(JobState::Vanished) => break (None, "gone from the batch system".into()),
            _ if started.elapsed() >= timeout => {
                let _ = adapter.cancel(runner, profile, &job);
                return Err(format!(
                    "job {job} did not end within {} (cancelled): raise --probe-timeout if the \
                     queue is busy",
                    humantime::format_duration(timeout)
                ));
            }
            _ => std::thread::sleep(Duration::from_secs(1)),
        }
    };
    let read = |path: &str| {
        runner
            .run(&["cat", path], None)
            .map(|o| o.stdout)
            .unwrap_or_default()
    };
    let (stdout, stderr) = (read(&script.stdout_path), read(&script.stderr_path));
    let version = stdout
        .lines()
        .find(|l| l.starts_with("hetpilot-agent"))
        .map(str::to_string);
    match (ended.0, version) {
        (Some(0) | None, Some(version)) => Ok(version),
        (code, _) => Err(format!(
            "job {job} ended ({}{}) without the agent's version: {}",
            code.map_or("no exit status".to_string(), |c| format!("exit {c}")),
            if ended.1.is_empty() {
                String::new()
            } else {
                format!(", {}", ended.1)
            },
            super::output::one_line(&stderr)
        )),
    }
}
