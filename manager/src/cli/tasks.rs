//! `hetpilot tasks` and `hetpilot logs`: individual tasks and their output.

use super::connect::Connect;
use super::output::{millis, print_json, print_table};
use clap::Args as ClapArgs;
use hetpilot_shared::protocol::{AttemptRecord, TaskInfo};
use hetpilot_shared::{AppId, TaskRef};

#[derive(Debug, ClapArgs)]
pub struct TasksArgs {
    pub app: AppId,
    /// Only tasks in this state (waiting, leased, running, done, failed, cancelled).
    #[arg(long)]
    pub state: Option<String>,
    /// At most this many tasks.
    #[arg(long, default_value_t = 100)]
    pub limit: u64,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

#[derive(Debug, ClapArgs)]
pub struct LogsArgs {
    /// Task id, APP.INDEX (e.g. 7.42).
    pub task: TaskRef,
    /// Which run (default: the last).
    #[arg(long)]
    pub attempt: Option<u32>,
    /// Also print the stdout/stderr files the agent reported, when they are on this host
    /// (a shared filesystem). Only regular files you can read are opened, never a link.
    #[arg(long)]
    pub local: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

/// Reads a file an agent reported, only if it is a regular file and not a symlink: the
/// path comes from the agent, not from you.
fn read_reported(path: &str) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Task output made safe for a terminal: control characters (escape sequences that could
/// rewrite the screen or the title) are shown escaped, newlines and tabs kept.
fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '\n' | '\t' => vec![c],
            c if c.is_control() => c.escape_default().collect(),
            c => vec![c],
        })
        .collect()
}

fn ended(a: &Option<AttemptRecord>) -> String {
    match a {
        None => "-".into(),
        Some(a) => match (&a.outcome, a.exit_code, a.signal) {
            (None, _, _) => a.error.clone().unwrap_or_else(|| "running".into()),
            (Some(o), Some(c), _) => format!("{o:?} (exit {c})"),
            (Some(o), _, Some(s)) => format!("{o:?} (signal {s})"),
            (Some(o), _, _) => format!("{o:?}"),
        },
    }
}

fn row(t: &TaskInfo) -> Vec<String> {
    let wall = t
        .last
        .as_ref()
        .and_then(|a| a.measurements.as_ref())
        .map(|m| millis(m.wall_ms))
        .unwrap_or_default();
    let place = t
        .last
        .as_ref()
        .map(|a| format!("{}/{}", a.platform, a.host))
        .unwrap_or_default();
    let mut input = t.input.clone();
    if input.chars().count() > 40 {
        input = input.chars().take(37).collect::<String>() + "...";
    }
    vec![
        t.task.to_string(),
        t.state.as_str().into(),
        t.attempts.to_string(),
        ended(&t.last),
        wall,
        place,
        input,
    ]
}

pub async fn tasks(args: TasksArgs) -> anyhow::Result<()> {
    let tasks = args
        .connect
        .client()?
        .tasks(args.app, args.state.as_deref(), args.limit)
        .await?;
    if args.json {
        return print_json(&tasks);
    }
    if tasks.is_empty() {
        println!("no tasks");
        return Ok(());
    }
    print_table(
        &[
            "TASK", "STATE", "ATTEMPTS", "LAST RUN", "WALL", "WHERE", "INPUT",
        ],
        &tasks.iter().map(row).collect::<Vec<_>>(),
    );
    Ok(())
}

pub async fn logs(args: LogsArgs) -> anyhow::Result<()> {
    let detail = args.connect.client()?.task(args.task).await?;
    if args.json {
        return print_json(&detail);
    }
    let attempt = match args.attempt {
        Some(n) => detail.history.iter().find(|a| a.attempt == n),
        None => detail.history.last(),
    };
    let Some(a) = attempt else {
        println!(
            "task {} has not run yet ({})",
            args.task,
            detail.info.state.as_str()
        );
        return Ok(());
    };
    println!(
        "task {} attempt {} on {}/{}: {}",
        args.task,
        a.attempt,
        a.platform,
        a.host,
        ended(&Some(a.clone()))
    );
    if let Some(e) = &a.error {
        println!("error: {e}");
    }
    let mut shown = false;
    for (label, path) in [("stdout", &a.stdout_path), ("stderr", &a.stderr_path)] {
        let Some(path) = path.as_deref().filter(|_| args.local) else {
            continue;
        };
        if let Some(text) = read_reported(path) {
            println!("--- {label} ({}) ---", printable(path));
            print!("{}", printable(&text));
            shown = true;
        }
    }
    if !shown {
        if let Some(tail) = a.output_tail.as_deref().filter(|t| !t.is_empty()) {
            println!("--- output tail (the files are on the node; --local reads them here) ---");
            print!("{}", printable(tail));
        } else if a.stdout_path.is_none() && a.stderr_path.is_none() {
            println!("(the task wrote no output)");
        }
    }
    Ok(())
}
