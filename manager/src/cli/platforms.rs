//! `hetpilot platforms` (admin): each provisioned platform's status (available, or why
//! not, and its backoff). `hetpilot platforms check [--dry-run]` validates the configured
//! profiles without a manager: SSH host keys known, login reachable, batch commands found
//! on the login side, job script renders; `--dry-run` prints the scripts.

use super::connect::Connect;
use super::host_key_report;
use super::output::{age, print_json, print_table};
use clap::{Args as ClapArgs, Subcommand};
use hetpilot::config::Settings;
use hetpilot::provision::adapter::adapter_for;
use hetpilot::provision::provisioner::pilot_spec;
use hetpilot::provision::{catalog, runner, AdapterKind, PlatformProfile};
use hetpilot::service::now_ms;
use std::path::PathBuf;

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
}

#[derive(Debug, ClapArgs)]
pub struct CheckArgs {
    /// Do not contact login hosts; print each platform's rendered job script.
    #[arg(long)]
    pub dry_run: bool,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if let Some(PlatformsCommand::Check(check)) = args.command {
        let config = args.connect.config;
        return tokio::task::spawn_blocking(move || run_check(config, check)).await?;
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
    let settings = Settings::load(config.as_deref(), &[])?;
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
        let problems = check_one(&profile, &url, args.dry_run);
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
fn check_one(profile: &PlatformProfile, url: &str, dry_run: bool) -> usize {
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
            if dry_run {
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
    if dry_run {
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
    for cmd in batch_commands(profile.adapter) {
        match runner.run(&["sh", "-c", "command -v \"$1\"", "sh", cmd], None) {
            Ok(out) if out.status == 0 => println!("  ok   {cmd}: {}", out.stdout.trim()),
            Ok(_) => {
                println!("  FAIL {cmd}: not found on {}", runner.place());
                failures += 1;
            }
            Err(e) => {
                println!("  FAIL {cmd}: {e}");
                failures += 1;
            }
        }
    }
    match runner.run(&["test", "-x", &profile.agent_binary], None) {
        Ok(out) if out.status == 0 => println!("  ok   agent binary {}", profile.agent_binary),
        Ok(_) => println!(
            "  warn agent binary {} is not executable on the login side (fine if only compute nodes have it)",
            profile.agent_binary
        ),
        Err(e) => println!("  warn agent binary: {e}"),
    }
    failures
}
