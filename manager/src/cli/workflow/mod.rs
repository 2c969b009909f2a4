//! Workflow (DAG) applications for `hetpilot submit`: `--wfcommons FILE`, `--dax FILE`
//! and application files with `[[task]]` tables, read with the manager library's readers
//! ([`hetpilot::workflow`]) into an [`AppSpec`] with a DAG, with the external inputs to
//! store first (`--emulate` creates them at their recorded sizes, `--inputs-dir DIR` takes
//! them from `DIR`; see [`hetpilot::workflow::inputs`] and [`upload`]).

mod bounded;
pub mod tasks_file;
pub mod upload;
pub mod view;

pub use hetpilot::workflow::{dax, inputs, wfcommons, Options, Workflow};

use crate::cli::submit_limit::{FileKind, SubmitLimit};
use anyhow::{bail, Context};
use hetpilot::workflow::{check_scale, fresh_prefix};
use hetpilot_protocol::spec::AppSpec;
use std::path::{Path, PathBuf};

#[cfg(test)]
use hetpilot_protocol::dag::DagSpec;

/// `hetpilot submit`'s workflow flags.
#[derive(Debug, Clone, clap::Args)]
pub struct SubmitArgs {
    /// A WfCommons WfFormat instance (JSON, schema 1.4-1.6) to run as a workflow.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dax", "each_line", "array"])]
    pub wfcommons: Option<PathBuf>,
    /// A Pegasus DAX (XML, 2.x or 3.x) to run as a workflow.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["each_line", "array"])]
    pub dax: Option<PathBuf>,
    /// Run each workflow task as the agent's built-in emulator (reads its inputs, burns
    /// CPU for its recorded runtime, writes its outputs at their recorded sizes).
    #[arg(long)]
    pub emulate: bool,
    /// With --emulate: multiply recorded runtimes by F.
    #[arg(long, value_name = "F", default_value_t = 1.0, requires = "emulate")]
    pub time_scale: f64,
    /// With --emulate: multiply recorded file sizes by F.
    #[arg(long, value_name = "F", default_value_t = 1.0, requires = "emulate")]
    pub size_scale: f64,
    /// The workflow's external inputs (files no task writes) are the files DIR/NAME:
    /// stored in the file service and staged to the tasks that read them. (With
    /// --emulate they are created at their recorded sizes instead.)
    #[arg(long, value_name = "DIR", conflicts_with = "emulate")]
    pub inputs_dir: Option<PathBuf>,
}

/// A workflow ready to submit: the application, and the external inputs to store first.
#[derive(Debug)]
pub struct Prepared {
    /// The application.
    pub spec: AppSpec,
    /// External inputs to store in the file service before submitting it.
    pub uploads: Vec<inputs::Upload>,
}

/// The application `hetpilot submit` asked for, if it is a workflow (`--wfcommons`,
/// `--dax`, or an application file with `[[task]]` tables), with its external inputs. A
/// workflow file past the bound `limit` sets is refused before it is read.
pub fn spec_from_args(
    args: &SubmitArgs,
    app_file: Option<&Path>,
    limit: &SubmitLimit,
) -> anyhow::Result<Option<Prepared>> {
    let (path, workflow) = if let Some(p) = &args.wfcommons {
        let in_file = |r: &mut _| wfcommons::read(r).with_context(|| format!("{}", p.display()));
        (
            p.as_path(),
            bounded::parse_streaming(p, FileKind::WfCommons, limit, in_file)?,
        )
    } else if let Some(p) = &args.dax {
        let text = bounded::read_to_string(p, FileKind::Dax, limit)?;
        (
            p.as_path(),
            dax::parse(&text).with_context(|| format!("{}", p.display()))?,
        )
    } else if let Some(p) = app_file {
        let text = bounded::read_to_string(p, FileKind::AppFile, limit)?;
        if !tasks_file::is_workflow(&text) {
            needs_no_workflow(args)?;
            return Ok(None);
        }
        let workflow = tasks_file::parse(&text, p).with_context(|| format!("{}", p.display()))?;
        (p, workflow)
    } else {
        needs_no_workflow(args)?;
        return Ok(None);
    };
    check_scale("--time-scale", args.time_scale)?;
    check_scale("--size-scale", args.size_scale)?;
    let mut opts = Options {
        emulate: args.emulate,
        time_scale: args.time_scale,
        size_scale: args.size_scale,
        prefix: fresh_prefix(),
        max_attempts: 3,
        external: None,
    };
    let uploads = external_uploads(&workflow, args, &opts.prefix)
        .with_context(|| format!("{}", path.display()))?;
    opts.external = uploads.as_deref().map(inputs::staged_sizes);
    if let Some(m) = workflow.makespan_secs {
        eprintln!(
            "workflow `{}`: {} tasks, recorded makespan {m} s",
            workflow.name,
            workflow.tasks.len()
        );
    }
    let spec = workflow
        .into_spec(&opts)
        .with_context(|| format!("{}", path.display()))?;
    Ok(Some(Prepared {
        spec,
        uploads: uploads.unwrap_or_default(),
    }))
}

/// Refuses the workflow flags on an application that is not a workflow.
fn needs_no_workflow(args: &SubmitArgs) -> anyhow::Result<()> {
    for (set, flag) in [
        (args.emulate, "--emulate"),
        (args.inputs_dir.is_some(), "--inputs-dir"),
    ] {
        if set {
            bail!("{flag} needs a workflow: --wfcommons, --dax or [[task]] tables");
        }
    }
    Ok(())
}

/// The external inputs to store before submitting (`--emulate` or `--inputs-dir`), after
/// the size cap; `None`: they are not staged (a note says how many are left to the tasks).
fn external_uploads(
    workflow: &Workflow,
    args: &SubmitArgs,
    prefix: &str,
) -> anyhow::Result<Option<Vec<inputs::Upload>>> {
    if workflow.literal_files {
        // An application file says where each file lives.
        return Ok(None);
    }
    if args.emulate {
        return inputs::emulated_within_bound(
            workflow,
            args.size_scale,
            prefix,
            "replay it with a smaller --size-scale",
        )
        .map(Some);
    }
    let files = inputs::external(workflow);
    if let Some(dir) = &args.inputs_dir {
        let uploads = inputs::from_dir(&files, dir, prefix)?;
        let total = uploads.iter().map(|u| u.bytes).fold(0, u64::saturating_add);
        inputs::check_total(
            total,
            "the workflow's external inputs",
            "put them on a filesystem the nodes share and use that instead",
        )?;
        return Ok(Some(uploads));
    }
    if !files.is_empty() {
        eprintln!(
            "note: the workflow's {} external inputs (read by tasks, written by none) are not \
             staged; give --inputs-dir DIR to store and stage them",
            files.len()
        );
    }
    Ok(None)
}

#[cfg(test)]
mod cores_tests;
#[cfg(test)]
mod tests;
