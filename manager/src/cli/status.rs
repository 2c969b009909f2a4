//! `hetpilot status`, `wait`, `report` and `cancel`: following applications.

use super::connect::Connect;
use super::list_pages;
use super::output::{millis, print_json, print_table};
use clap::Args as ClapArgs;
use hetpilot::client::Client;
use hetpilot_protocol::protocol::{AppReport, AppSummary};
use hetpilot_protocol::AppId;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

#[derive(Debug, ClapArgs)]
pub struct StatusArgs {
    /// One application (default: all of yours).
    pub app: Option<AppId>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

#[derive(Debug, ClapArgs)]
pub struct AppArgs {
    pub app: AppId,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

fn row(a: &AppSummary) -> Vec<String> {
    let c = a.counts;
    let pct = if c.total() == 0 {
        100.0
    } else {
        100.0 * c.finished() as f64 / c.total() as f64
    };
    let state = if a.cancelled {
        "cancelled"
    } else if a.is_finished() {
        "finished"
    } else if a.blocked.is_some() {
        "blocked"
    } else {
        "active"
    };
    vec![
        a.app.to_string(),
        a.name.clone(),
        a.owner.clone(),
        state.into(),
        c.total().to_string(),
        c.waiting.to_string(),
        c.leased.to_string(),
        c.running.to_string(),
        c.done.to_string(),
        c.failed.to_string(),
        c.cancelled.to_string(),
        a.lost_attempts.to_string(),
        format!("{pct:.1}%"),
    ]
}

/// The columns of [`print_summaries`]: `LEASED` tasks were handed to an agent that has not
/// started them yet (prefetched), `RUNNING` ones have started; `LOST ATTEMPTS` ended with
/// their pilot or agent and did not count against `max_attempts`.
const SUMMARY_HEADER: [&str; 13] = [
    "APP",
    "NAME",
    "OWNER",
    "STATE",
    "TASKS",
    "WAITING",
    "LEASED",
    "RUNNING",
    "DONE",
    "FAILED",
    "CANCELLED",
    "LOST ATTEMPTS",
    "PROGRESS",
];

pub fn print_summaries(apps: &[AppSummary]) {
    let header = SUMMARY_HEADER;
    print_table(&header, &apps.iter().map(row).collect::<Vec<_>>());
    for a in apps {
        super::workflow::view::print_progress(a);
        if let Some(why) = &a.blocked {
            println!("application {} is blocked: {why}", a.app);
        }
    }
}

pub async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    let apps = match args.app {
        Some(a) => vec![client.app(a).await?],
        None if args.json => {
            return list_pages::print_json::<AppSummary>(&client, "/v1/apps", |_| true).await
        }
        None => list_pages::all(&client, "/v1/apps").await?,
    };
    if args.json {
        return print_json(&apps);
    }
    if apps.is_empty() {
        println!("no applications");
    } else {
        print_summaries(&apps);
    }
    Ok(())
}

/// How [`follow`] shows progress.
pub enum Progress<'a> {
    /// A progress bar (on a terminal).
    Bar(&'a ProgressBar),
    /// A plain line at most every few seconds.
    Lines,
    /// Nothing until the end.
    Silent,
}

/// How long one long poll for progress waits: a plain line at least this often.
const POLL_MS: u64 = 5_000;

/// Follows an application until every task has ended. The manager answers each long poll
/// as soon as more tasks have ended, so the end is seen the moment it is committed.
pub async fn follow(
    client: &Client,
    app: AppId,
    progress: Progress<'_>,
) -> anyhow::Result<AppSummary> {
    let mut last_line = Instant::now();
    let mut seen = 0;
    let mut first = true;
    let mut told_blocked: Option<String> = None;
    loop {
        let s = if first {
            client.app(app).await?
        } else {
            client.app_wait(app, seen, POLL_MS).await?
        };
        first = false;
        let c = s.counts;
        seen = c.finished();
        // Nothing can run it: say why once (and again if the reason changes), whatever
        // the progress display, since the wait may be long.
        if s.blocked != told_blocked {
            match (&s.blocked, &progress) {
                (Some(why), Progress::Bar(bar)) => bar.println(format!("blocked: {why}")),
                (Some(why), _) => eprintln!("application {app} is blocked: {why} (still waiting)"),
                (None, _) => {}
            }
            told_blocked = s.blocked.clone();
        }
        match progress {
            Progress::Bar(bar) => {
                bar.set_length(c.total());
                bar.set_position(c.finished());
                bar.set_message(match &s.blocked {
                    Some(_) => "blocked".to_string(),
                    None => format!(
                        "running {} leased {} failed {}",
                        c.running, c.leased, c.failed
                    ),
                });
            }
            Progress::Lines
                if last_line.elapsed() >= Duration::from_millis(POLL_MS) || s.is_finished() =>
            {
                println!(
                    "application {app}: {}/{} finished ({} failed)",
                    c.finished(),
                    c.total(),
                    c.failed
                );
                last_line = Instant::now();
            }
            Progress::Lines | Progress::Silent => {}
        }
        if s.is_finished() {
            return Ok(s);
        }
    }
}

pub fn progress_bar(name: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(
        "{prefix:>12} [{bar:40}] {pos}/{len} {per_sec} eta {eta} {msg}",
    )
    .expect("valid template")
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(name.to_string());
    Some(bar)
}

pub async fn wait(args: AppArgs) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    let first = client.app(args.app).await?;
    let bar = if args.json {
        None
    } else {
        progress_bar(&first.name)
    };
    let progress = match (&bar, args.json) {
        (Some(bar), _) => Progress::Bar(bar),
        (None, true) => Progress::Silent,
        (None, false) => Progress::Lines,
    };
    let s = follow(&client, args.app, progress).await?;
    if let Some(bar) = bar {
        bar.finish();
    }
    if args.json {
        print_json(&s)?;
    } else {
        print_summaries(std::slice::from_ref(&s));
    }
    ended_well(&s)
}

/// An error when some of the application's tasks failed or were cancelled.
pub fn ended_well(s: &AppSummary) -> anyhow::Result<()> {
    if s.counts.failed > 0 || s.counts.cancelled > 0 {
        anyhow::bail!(
            "application {} ended with {} failed and {} cancelled tasks",
            s.app,
            s.counts.failed,
            s.counts.cancelled
        );
    }
    Ok(())
}

pub fn print_report(r: &AppReport) {
    let s = &r.summary;
    let makespan = r
        .makespan_ms
        .map(|m| millis(m as f64))
        .unwrap_or_else(|| "-".into());
    println!(
        "application {} ({}): {} done, {} failed, {} cancelled of {}; makespan {makespan}",
        s.app,
        s.name,
        s.counts.done,
        s.counts.failed,
        s.counts.cancelled,
        s.counts.total()
    );
    let rows: Vec<Vec<String>> = r
        .platforms
        .iter()
        .map(|p| {
            vec![
                format!("  {}", p.platform),
                p.tasks.to_string(),
                format!("{:.1}/min", p.throughput_per_min),
                millis(p.mean_wall_ms),
                millis(p.mean_cpu_ms),
                format!("{:.1} MiB", p.mean_max_rss_kb / 1024.0),
            ]
        })
        .collect();
    print_table(
        &[
            "  PLATFORM",
            "TASKS",
            "THROUGHPUT",
            "MEAN WALL",
            "MEAN CPU",
            "MEAN PEAK RSS",
        ],
        &rows,
    );
    let zero_work: u64 = r.platforms.iter().map(|p| p.zero_work_tasks).sum();
    if zero_work > 0 {
        println!(
            "  note: {zero_work} of these runs were zero-work (no process ran): they measure \
             hetpilot itself, not the application"
        );
    }
}

pub async fn report(args: AppArgs) -> anyhow::Result<()> {
    let r = args.connect.client()?.report(args.app).await?;
    if args.json {
        return print_json(&r);
    }
    print_report(&r);
    Ok(())
}

pub async fn cancel(args: AppArgs) -> anyhow::Result<()> {
    let s = args.connect.client()?.cancel(args.app).await?;
    if args.json {
        return print_json(&s);
    }
    println!(
        "application {} cancelled ({} tasks had already finished)",
        s.app,
        s.counts.done + s.counts.failed
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::protocol::StateCounts;

    fn column(row: &[String], name: &str) -> String {
        let at = SUMMARY_HEADER.iter().position(|h| *h == name).expect(name);
        row[at].clone()
    }

    /// 44 tasks started on 44 slots and 35 prefetched: the table says so, not "79 running".
    #[test]
    fn leased_and_running_tasks_and_lost_attempts_are_shown_apart() {
        let summary = AppSummary {
            app: AppId(3),
            name: "sweep".into(),
            owner: "alice".into(),
            submitted_at_ms: 0,
            cancelled: false,
            ended_at_ms: None,
            counts: StateCounts {
                waiting: 221,
                leased: 35,
                running: 44,
                ..StateCounts::default()
            },
            lost_attempts: 7,
            blocked: None,
            workflow: None,
        };
        let shown = row(&summary);
        assert_eq!(shown.len(), SUMMARY_HEADER.len());
        assert_eq!(column(&shown, "RUNNING"), "44");
        assert_eq!(column(&shown, "LEASED"), "35");
        assert_eq!(column(&shown, "LOST ATTEMPTS"), "7");
        assert_eq!(column(&shown, "TASKS"), "300");
    }
}
