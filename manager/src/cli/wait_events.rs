//! `hetpilot wait ID --events`: waits for an application by following its task-event
//! stream, printing each task's end as it is stored (with `--json`, the stream's own
//! lines), and resuming across dropped connections from the last cursor printed.

use super::output::millis;
use super::status::{ended_well, print_summaries, AppArgs};
use clap::Args as ClapArgs;
use hetpilot::event_stream::EventStream;
use hetpilot_protocol::events::{AppEvent, TaskEnd};
use std::io::Write as _;

#[derive(Debug, ClapArgs)]
pub struct WaitArgs {
    #[command(flatten)]
    pub app: AppArgs,
    /// Print each task's end as it happens (from the application's first end).
    #[arg(long)]
    pub events: bool,
    /// With --events: start past this cursor (the `cursor` of the last end printed).
    #[arg(long, requires = "events", value_name = "CURSOR")]
    pub after: Option<u64>,
}

pub async fn wait(args: WaitArgs) -> anyhow::Result<()> {
    if !args.events {
        return super::status::wait(args.app).await;
    }
    let AppArgs { app, json, connect } = args.app;
    let client = connect.client()?;
    let mut stream = EventStream::new(&client, app, args.after.unwrap_or(0));
    let mut out = std::io::stdout().lock();
    while let Some(event) = stream.next().await? {
        match &event {
            AppEvent::Keepalive { .. } => continue,
            _ if json => writeln!(out, "{}", serde_json::to_string(&event)?)?,
            AppEvent::TaskEnd(end) => writeln!(out, "{}", end_line(end))?,
            AppEvent::AppEnd { .. } => {}
        }
        out.flush()?;
    }
    drop(out);
    let summary = client.app(app).await?;
    if !json {
        print_summaries(std::slice::from_ref(&summary));
    }
    ended_well(&summary)
}

/// One end as a line: `TASK STATE exit N in TIME (attempt N on HOST) cursor N`.
fn end_line(end: &TaskEnd) -> String {
    let mut line = format!("{} {}", end.task, end.state.as_str());
    if let Some(code) = end.exit_code {
        line.push_str(&format!(" exit {code}"));
    }
    if let Some(signal) = end.signal {
        line.push_str(&format!(" signal {signal}"));
    }
    if let Some(wall) = end.wall_ms {
        line.push_str(&format!(" in {}", millis(wall)));
    }
    if end.attempt > 0 {
        line.push_str(&format!(" (attempt {}", end.attempt));
        if let Some(host) = &end.host {
            line.push_str(&format!(" on {host}"));
        }
        line.push(')');
    }
    if let Some(error) = &end.error {
        line.push_str(&format!(": {error}"));
    }
    line.push_str(&format!(" cursor {}", end.cursor));
    line
}
