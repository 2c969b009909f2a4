//! `hetpilot demo`: the whole system on this machine with no configuration. A manager on
//! 127.0.0.1 with a fresh data directory, local agents on two platforms that really differ
//! (`dedicated`: one slot pinned to its own core; `shared`: four slots contending for one
//! core), the sample applications shipped in `samples/apps/`, progress bars, and a report
//! per application and platform at the end: where each application's tasks ran follows
//! the live scheduler's platform affinities, measured while the demo runs.

use super::app_file;
use super::output::{millis, print_table};
use super::schedule::print_schedule;
use super::status::print_report;
use anyhow::{bail, Context};
use clap::Args as ClapArgs;
use hetpilot::client::Client;
use hetpilot::config::{ManagerConfig, PlatformConfig};
use hetpilot::service::{admin_token_path, now_ms, Manager};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::views::ScheduleView;
use hetpilot_protocol::AppId;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The sample applications, embedded so the demo needs no files besides the binaries.
const SAMPLE_APPS: [(&str, &str); 4] = [
    (
        "samples/apps/cpu-sim.toml",
        include_str!("../../../samples/apps/cpu-sim.toml"),
    ),
    (
        "samples/apps/mem-walk.toml",
        include_str!("../../../samples/apps/mem-walk.toml"),
    ),
    (
        "samples/apps/io-stage.toml",
        include_str!("../../../samples/apps/io-stage.toml"),
    ),
    (
        "samples/apps/param-sweep.toml",
        include_str!("../../../samples/apps/param-sweep.toml"),
    ),
];

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Data directory (default: a fresh one under the system's temporary directory).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Address the manager listens on (a free port on 127.0.0.1 by default).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Keep the manager and its agents up after the report (the dashboard at `/ui/` and
    /// `/metrics` stay available) until Ctrl-C.
    #[arg(long)]
    pub keep: bool,
}

/// One local platform of the demo.
struct DemoPlatform {
    name: &'static str,
    description: &'static str,
    cpus: String,
    slots: u32,
}

fn platforms() -> Vec<DemoPlatform> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let second = if cores >= 2 { 1 } else { 0 };
    vec![
        DemoPlatform {
            name: "dedicated",
            description: "one slot pinned to its own core",
            cpus: "0".into(),
            slots: 1,
        },
        DemoPlatform {
            name: "shared",
            description: "four slots contending for one core",
            cpus: second.to_string(),
            slots: 4,
        },
    ]
}

struct Agents(Vec<Child>);

impl Agents {
    /// Drains every agent (SIGTERM) and waits for them to leave.
    fn stop(&mut self) {
        for child in &self.0 {
            // SAFETY: signalling our own child processes.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
        self.0.clear();
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.stop();
    }
}

fn binaries() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the hetpilot binary")?;
    let dir = exe
        .parent()
        .context("the binary's directory")?
        .to_path_buf();
    for b in ["hetpilot-agent", "hp-cpu", "hp-mem", "hp-io"] {
        if !dir.join(b).exists() {
            bail!(
                "{} is missing: build everything first with `cargo build --release --workspace`",
                dir.join(b).display()
            );
        }
    }
    Ok(dir)
}

fn sample_apps(bin_dir: &Path) -> anyhow::Result<Vec<AppSpec>> {
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );
    SAMPLE_APPS
        .iter()
        .map(|(name, text)| {
            let mut spec = app_file::parse(text, Path::new(name))?;
            spec.env.insert("PATH".into(), path.clone());
            Ok(spec)
        })
        .collect()
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let bin_dir = binaries()?;
    let data_dir = args.data_dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("hetpilot-demo-{}-{}", std::process::id(), now_ms()))
    });
    let mut settings = ManagerConfig::load(
        None,
        &[
            ("listen", args.listen.clone()),
            ("data_dir", data_dir.to_string_lossy().into_owned()),
        ],
    )?;
    let demo_platforms = platforms();
    settings.platforms = demo_platforms
        .iter()
        .map(|p| PlatformConfig {
            name: p.name.into(),
            description: p.description.into(),
            profile: None,
            register_from: None,
        })
        .collect();
    let listener = tokio::net::TcpListener::bind(&settings.listen).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let manager = Manager::open(settings)?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(hetpilot::server::serve(manager, listener, None, async {
        let _ = stop_rx.await;
    }));
    let admin = std::fs::read_to_string(admin_token_path(&data_dir))?;
    let client = Client::new(&url, &admin, &Default::default())?;
    println!(
        "hetpilot demo: manager on {url}, data in {}",
        data_dir.display()
    );
    println!(
        "  dashboard: {url}/ui/ (log in with the admin token in {}); metrics: {url}/metrics",
        admin_token_path(&data_dir).display()
    );

    let mut agents = Agents(Vec::new());
    for p in &demo_platforms {
        let token = client.agent_token(p.name, Some(3600), None).await?.token;
        let work = data_dir.join("agents").join(p.name);
        std::fs::create_dir_all(&work)?;
        let log = std::fs::File::create(data_dir.join("agents").join(format!("{}.log", p.name)))?;
        let child = Command::new(bin_dir.join("hetpilot-agent"))
            .args([
                "--manager",
                &url,
                "--platform",
                p.name,
                "--cpus",
                &p.cpus,
                "--slots",
                &p.slots.to_string(),
            ])
            .arg("--work-dir")
            .arg(&work)
            .env("HETPILOT_AGENT_TOKEN", token.trim())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting a local agent")?;
        println!(
            "  platform {:<9} {} slot(s) on CPU {} ({})",
            p.name, p.slots, p.cpus, p.description
        );
        agents.0.push(child);
    }

    let mut apps: Vec<(AppId, String)> = Vec::new();
    for spec in sample_apps(&bin_dir)? {
        let name = spec.name.clone();
        let answer = client.submit(&spec).await?;
        println!(
            "  submitted {:<12} application {} ({} tasks)",
            name, answer.app, answer.tasks
        );
        apps.push((answer.app, name));
    }
    let allocation = follow_all(&client, &apps).await?;
    if !args.keep {
        agents.stop();
    }
    if let Some(view) = allocation {
        println!("\nthe live scheduler's last allocation while applications competed:");
        print_schedule(&view);
    }

    println!();
    let mut rows = Vec::new();
    for (app, _) in &apps {
        let r = client.report(*app).await?;
        print_report(&r);
        let on = |platform: &str| r.platforms.iter().find(|p| p.platform == platform);
        let mean = |platform: &str| {
            on(platform)
                .map(|p| millis(p.mean_wall_ms))
                .unwrap_or("-".into())
        };
        let ran = |platform: &str| on(platform).map_or(0, |p| p.tasks).to_string();
        let per_min = r
            .makespan_ms
            .map(|m| r.summary.counts.done as f64 * 60_000.0 / m.max(1) as f64)
            .unwrap_or(0.0);
        rows.push(vec![
            r.summary.name.clone(),
            r.summary.counts.total().to_string(),
            r.summary.counts.done.to_string(),
            r.summary.counts.failed.to_string(),
            format!("{per_min:.1}/min"),
            ran("dedicated"),
            ran("shared"),
            mean("dedicated"),
            mean("shared"),
        ]);
    }
    println!();
    print_table(
        &[
            "APPLICATION",
            "TASKS",
            "DONE",
            "FAILED",
            "THROUGHPUT",
            "RAN ON dedicated",
            "RAN ON shared",
            "MEAN RUNTIME dedicated",
            "MEAN RUNTIME shared",
        ],
        &rows,
    );
    if args.keep {
        println!(
            "\nthe manager stays up for the dashboard at {url}/ui/ and {url}/metrics; Ctrl-C stops it"
        );
        tokio::signal::ctrl_c().await?;
        agents.stop();
    }
    let _ = stop_tx.send(());
    server.await??;
    println!(
        "\ndemo finished in {:.1} s; the data (SQLite, task output) stays in {}",
        started.elapsed().as_secs_f64(),
        data_dir.display()
    );
    if rows.iter().any(|r| r[3] != "0") {
        bail!(
            "some tasks failed: see `hetpilot tasks APP --state failed --data-dir {}`",
            data_dir.display()
        );
    }
    Ok(())
}

/// Progress bars per application (plain lines when not on a terminal) until all finish;
/// returns the last scheduling round in which applications still competed.
async fn follow_all(
    client: &Client,
    apps: &[(AppId, String)],
) -> anyhow::Result<Option<ScheduleView>> {
    let mut allocation = None;
    let terminal = std::io::stderr().is_terminal();
    let multi = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>12} [{bar:40}] {pos}/{len} {msg}")
        .expect("valid template")
        .progress_chars("=> ");
    let bars: Vec<ProgressBar> = apps
        .iter()
        .map(|(_, name)| {
            let bar = multi.add(ProgressBar::new(0));
            bar.set_style(style.clone());
            bar.set_prefix(name.clone());
            if !terminal {
                bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
            }
            bar
        })
        .collect();
    let mut last_line = Instant::now();
    loop {
        let mut all_done = true;
        let mut line = Vec::new();
        for ((app, name), bar) in apps.iter().zip(&bars) {
            let s = client.app(*app).await?;
            let c = s.counts;
            bar.set_length(c.total());
            bar.set_position(c.finished());
            bar.set_message(format!("running {} leased {}", c.running, c.leased));
            line.push(format!("{name} {}/{}", c.finished(), c.total()));
            all_done &= s.is_finished();
        }
        if !terminal && (last_line.elapsed() >= Duration::from_secs(5) || all_done) {
            println!("  progress: {}", line.join(", "));
            last_line = Instant::now();
        }
        let view = client.schedule().await?;
        // The latest round in which applications still competed for the platforms.
        if view.apps.len() >= 2 || (allocation.is_none() && !view.apps.is_empty()) {
            allocation = Some(view);
        }
        if all_done {
            for bar in &bars {
                bar.finish();
            }
            return Ok(allocation);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
