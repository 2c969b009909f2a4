//! `hetpilot tasks` and `hetpilot logs`: individual tasks and their output.

use super::connect::Connect;
use super::listing::{more_line, JsonArray, Partial};
use super::log_window::{printable, write_window, Window, DEFAULT_TAIL_LINES};
use super::output::{millis, print_json, print_table};
use super::remote_output;
use super::task_pages::{self, Query};
use clap::Args as ClapArgs;
use hetpilot_protocol::protocol::{AttemptRecord, TaskInfo};
use hetpilot_protocol::task_output::OutputStream;
use hetpilot_protocol::{AppId, TaskRef};
use indicatif::HumanBytes;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

#[derive(Debug, ClapArgs)]
pub struct TasksArgs {
    pub app: AppId,
    /// Only tasks in this state (waiting, leased, running, done, failed, cancelled).
    #[arg(long)]
    pub state: Option<String>,
    /// At most this many tasks (default: 100 in the table; every task with --json).
    #[arg(long, conflicts_with = "all")]
    pub limit: Option<u64>,
    /// Every task, in the table too.
    #[arg(long)]
    pub all: bool,
    /// Only tasks whose index is greater: where a cut listing goes on.
    #[arg(long)]
    pub after: Option<u64>,
    /// Every task as a JSON array; with --limit, cut short, an object saying how to go on.
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
    /// Show the first N lines of each stream.
    #[arg(long, value_name = "N", conflicts_with_all = ["tail", "all"])]
    pub head: Option<u64>,
    /// Show the last N lines of each stream (default: the last 100).
    #[arg(long, value_name = "N", conflicts_with = "all")]
    pub tail: Option<u64>,
    /// Show all of each stream, however long.
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

/// Opens an output file an agent reported when it is on this host (a shared filesystem or
/// a local agent). The path comes from the agent, not from you, so only a regular file (no
/// symlink) named as the agent names outputs, `app-A/task-I.N.out` or `.err`, is opened.
fn open_reported(path: &str, task: TaskRef, attempt: u32, ext: &str) -> Option<std::fs::File> {
    let path = std::path::Path::new(path);
    let name_ok = path.file_name()? == format!("task-{}.{attempt}.{ext}", task.index).as_str()
        && path.parent()?.file_name()? == format!("app-{}", task.app).as_str();
    if !name_ok {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata().ok()?.file_type().is_file().then_some(file)
}

/// The window `--head`, `--tail` and `--all` ask for.
fn window(args: &LogsArgs) -> Window {
    match (args.head, args.tail, args.all) {
        (Some(n), _, _) => Window::Head(n),
        (_, Some(n), _) => Window::Tail(n),
        (_, _, true) => Window::All,
        _ => Window::Tail(DEFAULT_TAIL_LINES),
    }
}

/// Writes the part of an output file `window` selects under `header`, and says on stderr
/// what was left out and how to see it; `size` is the whole output's size when `file`
/// holds only a part of it.
fn show_output(
    label: &str,
    header: &str,
    file: &mut std::fs::File,
    window: Window,
    size: Option<u64>,
) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    writeln!(out, "{header}")?;
    let mut shown = write_window(file, window, &mut out)?;
    out.flush()?;
    shown.of = size.unwrap_or(shown.of);
    if shown.cut() {
        let what = match window {
            Window::Head(n) => format!("the first {n} lines"),
            Window::Tail(n) => format!("the last {n} lines"),
            Window::All => "all".into(),
        };
        eprintln!(
            "{label}: showed {what} ({} of {}); --head N or --tail N for other lines, --all for \
             everything",
            HumanBytes(shown.bytes),
            HumanBytes(shown.of)
        );
    }
    Ok(())
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

/// A task's attempts, with those lost to the infrastructure (which do not count against
/// `max_attempts`) said apart: `3 (2 lost)`.
fn attempts(t: &TaskInfo) -> String {
    match t.lost_attempts {
        0 => t.attempts.to_string(),
        lost => format!("{} ({lost} lost)", t.attempts),
    }
}

/// The variant the attempt ran as and what it was granted besides cores, ` as gpu with
/// gpus 0,1` (empty when neither), as the `logs` header says it.
fn granted(a: &AttemptRecord) -> String {
    let variant = a
        .variant
        .as_deref()
        .map(|v| format!(" as {}", printable(v)))
        .unwrap_or_default();
    if a.resources.is_empty() {
        variant
    } else {
        format!("{variant} with {}", a.resources)
    }
}

/// The `GRANTED` cell: the variant and the grant, `gpu: gpus 0` (`cpu` for a CPU-only
/// variant; only the grant without variants).
fn granted_cell(a: &AttemptRecord) -> String {
    match (&a.variant, a.resources.is_empty()) {
        (Some(v), true) => printable(v),
        (Some(v), false) => format!("{}: {}", printable(v), a.resources),
        (None, _) => a.resources.to_string(),
    }
}

/// Where the attempt ran: `PLATFORM/HOST`, or a parallel run's hosts with their slots,
/// the head first (`PLATFORM/n1:2,n2:2`).
fn place(a: &AttemptRecord) -> String {
    if a.hosts.is_empty() {
        return format!("{}/{}", a.platform, a.host);
    }
    let hosts: Vec<String> = a
        .hosts
        .iter()
        .map(|h| format!("{}:{}", h.host, h.slots))
        .collect();
    format!("{}/{}", a.platform, hosts.join(","))
}

fn row(t: &TaskInfo) -> Vec<String> {
    let wall = t
        .last
        .as_ref()
        .and_then(|a| a.measurements.as_ref())
        .map(|m| millis(m.wall_ms))
        .unwrap_or_default();
    let place = t.last.as_ref().map(place).unwrap_or_default();
    let mut input = t.input.clone();
    if input.chars().count() > 40 {
        input = input.chars().take(37).collect::<String>() + "...";
    }
    vec![
        t.task.to_string(),
        printable(&input),
        super::workflow::view::task_state(t).into(),
        attempts(t),
        ended(&t.last),
        wall,
        place,
        t.last.as_ref().map(granted_cell).unwrap_or_default(),
    ]
}

pub async fn tasks(args: TasksArgs) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    let q = Query {
        app: args.app,
        state: args.state.as_deref(),
        after: args.after,
        limit: match args.limit {
            Some(n) => Some(n),
            None if args.all || args.json => None,
            None => Some(100),
        },
    };
    if args.json && q.limit.is_none() {
        let mut array = JsonArray::new(std::io::BufWriter::new(std::io::stdout()))?;
        task_pages::each(&client, &q, |rows| {
            rows.iter().try_for_each(|t| array.push(t))
        })
        .await?;
        return Ok(array.finish()?);
    }
    let (tasks, more) = task_pages::collect(&client, &q).await?;
    let last = tasks
        .last()
        .map_or(args.after.unwrap_or(0), |t| t.task.index);
    if args.json && more {
        let state = args
            .state
            .map(|s| format!(" --state {s}"))
            .unwrap_or_default();
        return print_json(&Partial {
            partial: true,
            rows: &tasks,
            after: last,
            next: format!("hetpilot tasks {} --json{state} --after {last}", args.app),
        });
    }
    if args.json {
        return print_json(&tasks);
    }
    let more = if more {
        let matching = match (&q.after, q.state) {
            (Some(_), _) => None,
            (None, state) => {
                let mut counts = client.app(args.app).await?.counts;
                match state.and_then(hetpilot_protocol::protocol::TaskState::parse) {
                    Some(s) => Some(*counts.get_mut(s)),
                    None => Some(counts.total()),
                }
            }
        };
        more_line(tasks.len(), matching, last)
    } else {
        None
    };
    if tasks.is_empty() {
        println!("no tasks");
        return Ok(());
    }
    print_table(
        &[
            "TASK", "INPUT", "STATE", "ATTEMPTS", "LAST RUN", "WALL", "WHERE", "GRANTED",
        ],
        &tasks.iter().map(row).collect::<Vec<_>>(),
    );
    if let Some(line) = more {
        println!("{line}");
    }
    Ok(())
}

pub async fn logs(args: LogsArgs) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    let detail = client.task(args.task).await?;
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
        "task {} (input {}) attempt {} of {} on {}{}: {}",
        args.task,
        printable(&detail.info.input),
        a.attempt,
        attempts(&detail.info),
        place(a),
        granted(a),
        ended(&Some(a.clone()))
    );
    if let Some(e) = &a.error {
        println!("error: {e}");
    }
    let mut shown = false;
    for (label, stream, path) in [
        ("stdout", OutputStream::Stdout, &a.stdout_path),
        ("stderr", OutputStream::Stderr, &a.stderr_path),
    ] {
        let Some(path) = path.as_deref() else {
            continue;
        };
        let shown_path = printable(path);
        if let Some(mut file) = open_reported(path, args.task, a.attempt, stream.as_str()) {
            let header = format!("--- {label} ({shown_path}) ---");
            show_output(label, &header, &mut file, window(&args), None)?;
            shown = true;
            continue;
        }
        // Not on this host (or not readable here): through the manager, from the agent.
        match remote_output::fetch(&client, args.task, a.attempt, stream, window(&args)).await {
            Ok(mut fetched) => {
                let header = format!(
                    "--- {label} (from the manager: {shown_path} on {} is not readable here) ---",
                    printable(&a.host)
                );
                let size = fetched.kept.saturating_add(fetched.skipped);
                show_output(label, &header, &mut fetched.file, window(&args), Some(size))?;
                if fetched.skipped > 0 {
                    eprintln!(
                        "{label}: the manager keeps only its last {} (limits.max_output_mib); \
                         the first {} are on {} only",
                        HumanBytes(fetched.kept),
                        HumanBytes(fetched.skipped),
                        printable(&a.host)
                    );
                }
                shown = true;
            }
            Err(e) => eprintln!(
                "{label}: {shown_path} is not readable here, and the manager could not fetch it: \
                 {}",
                printable(&e.to_string())
            ),
        }
    }
    if !shown {
        if let Some(tail) = a.output_tail.as_deref().filter(|t| !t.is_empty()) {
            println!("--- output tail (the files are on the node) ---");
            print!("{}", printable(tail));
        } else if a.stdout_path.is_none() && a.stderr_path.is_none() {
            println!("(the task wrote no output)");
        }
    }
    Ok(())
}
