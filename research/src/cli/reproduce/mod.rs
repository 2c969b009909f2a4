//! `hetpilot-research reproduce`: regenerates every table and figure under `docs/reproduction/`
//! from the committed experiment files in `profiles/reproduction/<paper>/*.toml` (settings
//! fixed before the run, each with a note saying where it comes from). `--quick` runs the
//! reduced settings into `docs/reproduction/<paper>/quick/`; `--check` writes into a
//! scratch directory instead and fails when a produced file differs from the committed one,
//! so the documents cannot drift from the code. The tables inside each
//! `docs/reproduction/<paper>.md` are marked blocks (`doc_blocks`) that a full run rewrites
//! from the files it produced and `--check` compares with the committed files.

mod check;
mod doc_blocks;
mod settings;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::CommandFactory;

use settings::{command_line, read_all, Places, Planned};

/// Regenerate the reproduction documents' tables and figures.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this paper's experiments (a folder of the settings directory: staging, tlpa,
    /// two-level, fairshare, ptg).
    #[arg(long)]
    paper: Option<String>,
    /// Only the experiments whose name contains this text.
    #[arg(long)]
    only: Option<String>,
    /// The reduced settings of each file's `[quick]` table, written to `<paper>/quick/`.
    #[arg(long)]
    quick: bool,
    /// Write into a scratch directory and compare with the committed files; exit non-zero
    /// when any produced file differs or is missing.
    #[arg(long)]
    check: bool,
    /// Experiment files, one folder per paper.
    #[arg(long, default_value = "profiles/reproduction")]
    settings: PathBuf,
    /// Where the tables and figures go (and what `--check` compares against).
    #[arg(long, default_value = "docs/reproduction")]
    docs: PathBuf,
    /// Reference data (traces) that `{data}` in an experiment file stands for.
    #[arg(long, default_value = "../shared/data")]
    data: PathBuf,
    /// List the experiments and their command lines without running them.
    #[arg(long)]
    list: bool,
    /// Only rewrite the table blocks of the documents (`docs/reproduction/<paper>.md`) from
    /// the committed files, running nothing: after editing a document by hand.
    #[arg(long, conflicts_with_all = ["check", "quick", "list"])]
    tables_only: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let experiments: Vec<Planned> = read_all(&args.settings, args.paper.as_deref())?
        .into_iter()
        .filter(|p| {
            args.only
                .as_ref()
                .is_none_or(|o| p.name.contains(o.as_str()))
        })
        .collect();
    if experiments.is_empty() {
        bail!("no experiment matches");
    }
    if args.tables_only {
        return sync_documents(&args, &experiments, &mut check::Report::default());
    }
    let scratch = if args.check {
        Some(tempfile::tempdir().context("cannot create a scratch directory")?)
    } else {
        None
    };
    let root = scratch
        .as_ref()
        .map(|d| d.path().to_path_buf())
        .unwrap_or_else(|| args.docs.clone());
    let exe = std::env::current_exe().context("cannot find the hetpilot-research executable")?;
    let mut report = check::Report::default();
    for p in &experiments {
        let out = output_dir(&root, p, args.quick);
        let (line, inputs) = command_line(
            &p.experiment,
            args.quick,
            &Places {
                out: &out,
                data: &args.data,
            },
        )?;
        let ours = line
            .first()
            .is_some_and(|c| crate::cli::Cli::command().find_subcommand(c).is_some());
        if !ours {
            bail!(
                "{}: `{}` is not a hetpilot-research command",
                p.id,
                line.first().map_or("", String::as_str)
            );
        }
        if args.list {
            println!(
                "{}: {}\n  hetpilot-research {}",
                p.id,
                p.experiment.title,
                shell_words::join(&line)
            );
            continue;
        }
        if let Some(missing) = inputs.iter().find(|i| !i.exists()) {
            if args.check {
                println!("{}: skipped, input {} is absent", p.id, missing.display());
                report.skipped += 1;
                continue;
            }
            bail!(
                "{}: input {} is absent (see --data)",
                p.id,
                missing.display()
            );
        }
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        let started = Instant::now();
        run_one(&exe, p, &line, &out)?;
        println!("{}: done in {:.1} s", p.id, started.elapsed().as_secs_f64());
        if args.check {
            let committed = output_dir(&args.docs, p, args.quick);
            report.compare(&p.id, &out, &committed)?;
        }
    }
    if args.list || (args.quick && !args.check) {
        return Ok(());
    }
    sync_documents(&args, &experiments, &mut report)?;
    if args.check {
        report.finish()?;
    }
    Ok(())
}

/// Rewrites (or with `--check`, compares) the table blocks of each experiment's paper
/// document.
fn sync_documents(
    args: &Args,
    experiments: &[Planned],
    report: &mut check::Report,
) -> anyhow::Result<()> {
    let papers: std::collections::BTreeSet<&str> =
        experiments.iter().map(|p| p.paper.as_str()).collect();
    for paper in papers {
        if let Some(drift) = doc_blocks::sync(&args.docs, paper, args.check)? {
            report.drift.push(drift);
        }
    }
    Ok(())
}

/// `<root>/<paper>` or `<root>/<paper>/quick`.
fn output_dir(root: &Path, p: &Planned, quick: bool) -> PathBuf {
    let dir = root.join(&p.paper);
    if quick {
        dir.join("quick")
    } else {
        dir
    }
}

/// Runs `hetpilot-research <line>` (`exe`) as a child process, its standard output into
/// the experiment's `stdout` file.
fn run_one(exe: &Path, p: &Planned, line: &[String], out: &Path) -> anyhow::Result<()> {
    let output = Command::new(exe)
        .args(line)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("{}: cannot start {}", p.id, exe.display()))?;
    if !output.status.success() {
        bail!(
            "{}: `hetpilot-research {}` failed ({})",
            p.id,
            shell_words::join(line),
            output.status
        );
    }
    if let Some(name) = &p.experiment.stdout {
        let path = out.join(name);
        std::fs::write(&path, &output.stdout)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
