//! Workflows submitted as documents (`POST /v1/workflows`): a WfCommons instance, a
//! Pegasus DAX or an application file with `[[task]]` tables ([`super::workflow_tasks`])
//! read by the manager with the CLI's readers ([`crate::workflow`]), turned
//! into an application with a DAG, and submitted as the caller. The bounds are the CLI's:
//! a document of each kind at most its multiple of the submit limit, the application's
//! JSON at most the submit limit, the external inputs at most
//! [`inputs::MAX_STAGED_BYTES`]. External inputs are created by the manager in the
//! caller's files when emulated, found among the caller's files (stored under the
//! submission's prefix beforehand) with `inputs = stored`, or left to the tasks; an
//! application file's files are used as given (names or URIs), as the CLI uses them.

use super::users::user;
use super::workflow_tasks;
use super::{Manager, Principal, ServiceError};
use crate::workflow::inputs::{self, Upload};
use crate::workflow::{self, check_scale, staged_name, FileKind, Options, Workflow};
use hetpilot_protocol::protocol::SubmitResponse;
use hetpilot_protocol::spec::AppSpec;
use hetpilot_transport::beneath;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use utoipa::ToSchema;

/// The format of a workflow document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkflowFormat {
    /// WfCommons WfFormat JSON, schema 1.4 to 1.6.
    Wfcommons,
    /// Pegasus DAX XML, 2.x or 3.x.
    Dax,
    /// An application file (TOML) with `[[task]]` tables, as `hetpilot submit FILE` takes
    /// it; its files are used as given, so it has no external inputs to create or store.
    Tasks,
}

impl WorkflowFormat {
    fn kind(self) -> FileKind {
        match self {
            WorkflowFormat::Wfcommons => FileKind::WfCommons,
            WorkflowFormat::Dax => FileKind::Dax,
            WorkflowFormat::Tasks => FileKind::AppFile,
        }
    }
}

/// Where a workflow's external inputs (files its tasks read and no task writes) come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExternalInputs {
    /// Not staged: the tasks find them themselves (a shared filesystem). With `emulate`
    /// the manager creates them at their recorded sizes instead.
    #[default]
    Tasks,
    /// The caller stored each one beforehand among its files under `PREFIX/` (the names
    /// `POST /v1/workflows/inputs` gives); each is staged at its stored size.
    Stored,
}

/// How to read and run a workflow document.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WorkflowRequest {
    /// The document's format: `wfcommons`, `dax` or `tasks` (an application file with
    /// `[[task]]` tables).
    pub format: WorkflowFormat,
    /// Run each task as the agents' built-in emulator (its recorded runtime and file
    /// sizes) instead of its own command; the manager creates the external inputs.
    #[serde(default)]
    pub emulate: bool,
    /// With `emulate`: recorded runtimes × this (default 1).
    pub time_scale: Option<f64>,
    /// With `emulate`: recorded file sizes × this (default 1).
    pub size_scale: Option<f64>,
    /// Where the external inputs come from (`tasks`, the default, or `stored`).
    #[serde(default)]
    pub inputs: ExternalInputs,
    /// The folder of the caller's files that staged files go under (1 to 64 of
    /// `A-Za-z0-9._-`, not starting with `.`); default `wf-MILLISECONDS`. Needed with
    /// `inputs=stored`.
    pub prefix: Option<String>,
    /// The application's name in place of the workflow's own.
    pub name: Option<String>,
}

/// One external input and where the caller stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ExternalInput {
    /// The workflow's name for it (the file to read from a local inputs folder).
    pub file: String,
    /// Its name among the caller's files (`PUT /v1/files/NAME`).
    pub name: String,
    /// Its recorded size, bytes, if the workflow records one.
    pub size: Option<u64>,
}

/// A workflow's external inputs, and the prefix their names are under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WorkflowInputs {
    /// The workflow's name.
    pub workflow: String,
    /// Its tasks.
    pub tasks: usize,
    /// The prefix to submit with (`prefix=` of `POST /v1/workflows`).
    pub prefix: String,
    /// Every file its tasks read and no task writes, each once.
    pub inputs: Vec<ExternalInput>,
}

/// The longest prefix, bytes.
const MAX_PREFIX: usize = 64;

/// The prefix `prefix` names, checked, or a fresh one.
fn prefix_of(prefix: Option<&str>) -> Result<String, ServiceError> {
    let Some(p) = prefix else {
        return Ok(workflow::fresh_prefix());
    };
    let plain = !p.is_empty()
        && p.len() <= MAX_PREFIX
        && !p.starts_with('.')
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !plain {
        return Err(ServiceError::BadRequest(format!(
            "prefix `{}`: 1 to {MAX_PREFIX} of A-Z a-z 0-9 . _ -, not starting with `.`",
            p.escape_debug()
        )));
    }
    Ok(p.to_string())
}

fn bad(e: anyhow::Error) -> ServiceError {
    ServiceError::BadRequest(format!("{e:#}"))
}

/// Reads `document` as `format`, refusing one past its bound (`submit_bytes` × the
/// format's multiple) before reading it.
fn read(
    format: WorkflowFormat,
    document: &[u8],
    submit_bytes: u64,
) -> Result<Workflow, ServiceError> {
    let kind = format.kind();
    let bound = submit_bytes.saturating_mul(kind.per_submit());
    if document.len() as u64 > bound {
        return Err(ServiceError::TooLarge(format!(
            "{} MiB is more than the {} MiB {} may be ({} × the manager's submit limit)",
            (document.len() as u64).div_ceil(1 << 20),
            bound >> 20,
            kind.name(),
            kind.per_submit()
        )));
    }
    let read = match format {
        WorkflowFormat::Wfcommons => workflow::wfcommons::read(document),
        WorkflowFormat::Dax => std::str::from_utf8(document)
            .map_err(|e| anyhow::anyhow!("the DAX is not UTF-8: {e}"))
            .and_then(workflow::dax::parse),
        // Its errors name the file themselves.
        WorkflowFormat::Tasks => return workflow_tasks::read(document).map_err(bad),
    };
    read.map_err(|e| ServiceError::BadRequest(format!("{}: {e:#}", kind.name())))
}

/// Bytes of `value`'s JSON, counted without building it.
fn json_bytes(value: &impl Serialize) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len() as u64);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // A spec always serializes; were it to fail, the count so far is still a bound.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

impl Manager {
    /// The external inputs of the workflow `document`, and the names under which the
    /// caller stores them before submitting it with `inputs=stored` and the same prefix.
    pub async fn workflow_inputs(
        &self,
        who: &Principal,
        request: WorkflowRequest,
        document: axum::body::Bytes,
    ) -> Result<WorkflowInputs, ServiceError> {
        user(who)?;
        if request.format == WorkflowFormat::Tasks {
            return Err(ServiceError::BadRequest(
                "format=tasks: an application file's files are used as given (names or \
                 URIs), so it has no external inputs to store"
                    .into(),
            ));
        }
        let prefix = prefix_of(request.prefix.as_deref())?;
        let submit_bytes = self.settings.limits.submit_bytes() as u64;
        let wf = tokio::task::spawn_blocking(move || read(request.format, &document, submit_bytes))
            .await??;
        let inputs = inputs::external(&wf)
            .into_iter()
            .map(|f| ExternalInput {
                name: staged_name(&prefix, &f.name),
                file: f.name,
                size: f.size,
            })
            .collect();
        Ok(WorkflowInputs {
            workflow: wf.name,
            tasks: wf.tasks.len(),
            prefix,
            inputs,
        })
    }

    /// Reads the workflow `document` and submits it as the caller.
    pub async fn submit_workflow(
        &self,
        who: &Principal,
        request: WorkflowRequest,
        document: axum::body::Bytes,
    ) -> Result<SubmitResponse, ServiceError> {
        user(who)?;
        let opts = self.workflow_options(&request)?;
        let submit_bytes = self.settings.limits.submit_bytes() as u64;
        let format = request.format;
        let wf =
            tokio::task::spawn_blocking(move || read(format, &document, submit_bytes)).await??;
        let (spec, emulated) = self.workflow_spec(who, wf, &request, opts).await?;
        let json = json_bytes(&spec);
        if json > submit_bytes {
            return Err(ServiceError::TooLarge(format!(
                "the workflow makes an application of {} MiB of JSON, more than the \
                 manager's submit limit ({} MiB, [limits] max_submit_mib): split it",
                json.div_ceil(1 << 20),
                submit_bytes >> 20
            )));
        }
        // Stored only once the application is known good: a refused workflow stores
        // nothing.
        self.store_emulated(who, emulated).await?;
        self.submit(who, spec).await
    }

    /// The options `request` asks for, checked as the CLI checks its flags.
    fn workflow_options(&self, request: &WorkflowRequest) -> Result<Options, ServiceError> {
        if !request.emulate {
            for (given, field) in [
                (request.time_scale.is_some(), "time_scale"),
                (request.size_scale.is_some(), "size_scale"),
            ] {
                if given {
                    return Err(ServiceError::BadRequest(format!(
                        "{field} needs emulate=true"
                    )));
                }
            }
        } else if request.inputs == ExternalInputs::Stored {
            return Err(ServiceError::BadRequest(
                "inputs=stored and emulate=true exclude each other: an emulated workflow's \
                 external inputs are created by the manager"
                    .into(),
            ));
        }
        if request.inputs == ExternalInputs::Stored && request.format == WorkflowFormat::Tasks {
            return Err(ServiceError::BadRequest(
                "inputs=stored: an application file's files are used as given (names or \
                 URIs); none is staged from your files under a prefix"
                    .into(),
            ));
        }
        if request.inputs == ExternalInputs::Stored && request.prefix.is_none() {
            return Err(ServiceError::BadRequest(
                "inputs=stored needs the prefix the inputs are stored under (prefix=)".into(),
            ));
        }
        let time_scale = request.time_scale.unwrap_or(1.0);
        let size_scale = request.size_scale.unwrap_or(1.0);
        check_scale("time_scale", time_scale).map_err(bad)?;
        check_scale("size_scale", size_scale).map_err(bad)?;
        Ok(Options {
            emulate: request.emulate,
            time_scale,
            size_scale,
            prefix: prefix_of(request.prefix.as_deref())?,
            max_attempts: 3,
            external: None,
        })
    }

    /// The application of `wf`, and the emulated inputs to create for it.
    async fn workflow_spec(
        &self,
        who: &Principal,
        wf: Workflow,
        request: &WorkflowRequest,
        mut opts: Options,
    ) -> Result<(AppSpec, Vec<Upload>), ServiceError> {
        let mut emulated = Vec::new();
        // An application file says where each file lives: nothing is created for it, as
        // `hetpilot submit FILE --emulate` creates nothing.
        if request.emulate && !wf.literal_files {
            emulated = inputs::emulated_within_bound(
                &wf,
                opts.size_scale,
                &opts.prefix,
                "send it with a smaller size_scale",
            )
            .map_err(bad)?;
            // Every name checked before any file is created: a refusal stores nothing.
            for u in &emulated {
                self.user_file(who, &u.name)?;
            }
            opts.external = Some(inputs::staged_sizes(&emulated));
        } else if request.inputs == ExternalInputs::Stored {
            opts.external = Some(self.stored_inputs(who, &wf, &opts.prefix).await?);
        }
        let name = request.name.clone();
        let format = request.format;
        let spec = tokio::task::spawn_blocking(move || {
            let mut spec = wf.into_spec(&opts).map_err(|e| match format {
                // As the file's other errors, named by the file.
                WorkflowFormat::Tasks => bad(e.context(workflow_tasks::LABEL)),
                _ => bad(e),
            })?;
            if let Some(name) = name {
                spec.name = name;
                spec.validate()
                    .map_err(|e| ServiceError::BadRequest(format!("name: {e}")))?;
            }
            Ok::<_, ServiceError>(spec)
        })
        .await??;
        Ok((spec, emulated))
    }

    /// The size of each of `wf`'s external inputs among the caller's files under
    /// `prefix`; every missing one is listed.
    async fn stored_inputs(
        &self,
        who: &Principal,
        wf: &Workflow,
        prefix: &str,
    ) -> Result<HashMap<String, u64>, ServiceError> {
        let files = inputs::external(wf);
        let stored = files
            .iter()
            .map(|f| self.user_file(who, &staged_name(prefix, &f.name)))
            .collect::<Result<Vec<_>, _>>()?;
        // One blocking worker stats them all (a workflow may read many).
        let found: Vec<Option<u64>> = tokio::task::spawn_blocking(move || {
            stored
                .iter()
                .map(|file| {
                    beneath::open_read(&file.root, &file.rel)
                        .and_then(|f| f.metadata())
                        .ok()
                        .map(|m| m.len())
                })
                .collect()
        })
        .await?;
        let mut sizes = HashMap::with_capacity(files.len());
        let mut missing: Vec<&str> = Vec::new();
        for (f, size) in files.iter().zip(found) {
            match size {
                Some(size) => {
                    sizes.insert(f.name.clone(), size);
                }
                None => missing.push(&f.name),
            }
        }
        if !missing.is_empty() {
            return Err(ServiceError::BadRequest(format!(
                "inputs=stored: {} of the workflow's {} external inputs are not among your \
                 files under `{prefix}/` (POST /v1/workflows/inputs names them): {}",
                missing.len(),
                files.len(),
                inputs::listed(&missing)
            )));
        }
        let total = sizes.values().fold(0u64, |a, &b| a.saturating_add(b));
        inputs::check_total(
            total,
            "the workflow's external inputs",
            "put them on a filesystem the nodes share and send inputs=tasks",
        )
        .map_err(bad)?;
        Ok(sizes)
    }

    /// Creates each emulated input among the caller's files: a sparse file of zeros of
    /// its size, counted against the caller's file quota.
    async fn store_emulated(
        &self,
        who: &Principal,
        uploads: Vec<Upload>,
    ) -> Result<(), ServiceError> {
        let Some(first) = uploads.first() else {
            return Ok(());
        };
        let allowance = self.upload_allowance(&self.user_file(who, &first.name)?)?;
        let total = uploads.iter().fold(0u64, |a, u| a.saturating_add(u.bytes));
        if total > allowance {
            return Err(ServiceError::Quota(format!(
                "the emulated workflow's {} external inputs total {total} bytes, more than \
                 the {allowance} bytes left of your file quota (quotas.file_service_gib_per_user); \
                 send it with a smaller size_scale or remove files first",
                uploads.len()
            )));
        }
        let files = uploads
            .iter()
            .map(|u| self.user_file(who, &u.name))
            .collect::<Result<Vec<_>, _>>()?;
        let owner = user(who)?.0.to_string();
        // One blocking worker creates them all; each is counted as it is made.
        let made: Vec<std::io::Result<(u64, u64)>> = tokio::task::spawn_blocking(move || {
            uploads
                .iter()
                .zip(&files)
                .map(|(u, file)| zeros(&file.root, &file.rel, u.bytes).map(|old| (u.bytes, old)))
                .collect()
        })
        .await?;
        let mut failed = None;
        for result in made {
            match result {
                Ok((written, replaced)) => self.file_stored(&owner, written, replaced),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        if let Some(e) = failed {
            return Err(ServiceError::Io(format!("creating an emulated input: {e}")));
        }
        Ok(())
    }
}

/// Makes `rel` beneath `root` a sparse file of `bytes` zeros (replacing any file there);
/// returns the bytes of the file it replaced.
fn zeros(root: &Path, rel: &Path, bytes: u64) -> std::io::Result<u64> {
    let replaced = beneath::open_read(root, rel)
        .and_then(|f| f.metadata())
        .map_or(0, |m| m.len());
    let dir = beneath::Dir::parent_of(root, rel)?;
    let name = rel
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let file = dir.create_replacing(name, 0o600)?;
    file.set_len(bytes)?;
    file.sync_all()?;
    dir.sync()?;
    Ok(replaced)
}

#[cfg(test)]
#[path = "workflow_submit_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "workflow_tasks_tests.rs"]
mod tasks_tests;
