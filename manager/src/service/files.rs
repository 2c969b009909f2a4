//! The file service's rules: each user's files live under `DATA_DIR/files/USER/`. A user
//! reads and writes only their own; an agent reads and writes those of an application's
//! owner only while it holds a lease of one of that application's tasks. Names are checked
//! like declared files (relative, no `..`, no NUL), and the server opens them strictly
//! beneath the owner's directory (`hetpilot_transport::beneath`). Each user's bytes are
//! counted against `quotas.file_service_gib_per_user`.

use super::{bounds, Manager, Principal, ServiceError};
use crate::queue::AgentState;
use hetpilot_protocol::files::{parse_output, Source};
use hetpilot_protocol::AppId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A file of the file service: the owner's directory and the name beneath it.
#[derive(Debug, Clone)]
pub struct ServiceFile {
    pub owner: String,
    pub root: PathBuf,
    pub rel: PathBuf,
}

/// Bytes each user keeps in the file service, counted once per manager run from disk and
/// kept up to date by uploads.
#[derive(Default)]
pub struct FileUsage {
    bytes: Mutex<HashMap<String, u64>>,
}

fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => bytes_under(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

impl Manager {
    /// The root of every user's files.
    pub fn files_root(&self) -> PathBuf {
        self.settings.data_dir.join("files")
    }

    /// `name` among `who`'s own files.
    pub fn user_file(&self, who: &Principal, name: &str) -> Result<ServiceFile, ServiceError> {
        match who {
            Principal::User { name: user, .. } => self.owned_file(user, name),
            _ => Err(ServiceError::Forbidden(
                "this call needs a user token (agents use /v1/apps/APP/files/NAME)".into(),
            )),
        }
    }

    /// `name` among the files of `app`'s owner, for the owner, an admin, or an agent that
    /// holds a lease of one of `app`'s tasks now.
    pub fn app_file(
        &self,
        who: &Principal,
        app: AppId,
        name: &str,
    ) -> Result<ServiceFile, ServiceError> {
        let owner = {
            let control = self.control();
            let queues = control.queues();
            let owner = queues.app(app).map(|a| a.owner.clone());
            let allowed = match (who, &owner) {
                (Principal::Agent(id), Some(_)) => queues.agent(*id).is_some_and(|a| {
                    matches!(a.state, AgentState::Active | AgentState::Draining)
                        && a.held.keys().any(|t| t.app == app)
                }),
                (Principal::User { name, admin }, Some(o)) => *admin || name == o,
                _ => false,
            };
            owner.filter(|_| allowed)
        };
        match owner {
            Some(owner) => self.owned_file(&owner, name),
            None if matches!(
                who,
                Principal::AgentRegistration { .. } | Principal::PilotRegistration { .. }
            ) =>
            {
                Err(ServiceError::Forbidden(
                    "a registration token cannot read files".into(),
                ))
            }
            None if matches!(who, Principal::Agent(_)) => Err(ServiceError::Forbidden(format!(
                "this agent holds no task of application {app} now; agents reach only the \
                 files of tasks leased to them"
            ))),
            None => Err(ServiceError::NotFound(format!("no application {app}"))),
        }
    }

    fn owned_file(&self, owner: &str, name: &str) -> Result<ServiceFile, ServiceError> {
        if !bounds::is_user_name(owner) {
            // A user stored before names were checked (e.g. `..`) has no file directory.
            return Err(ServiceError::Forbidden(format!(
                "user `{}` has a name the file service cannot hold; recreate the user",
                owner.escape_debug()
            )));
        }
        if name.len() > 4096 {
            return Err(ServiceError::NameTooLong(
                "file names are at most 4096 bytes".into(),
            ));
        }
        match parse_output(name) {
            Ok((Source::Service(rel), _)) => Ok(ServiceFile {
                owner: owner.to_string(),
                root: self.files_root().join(owner),
                rel: PathBuf::from(rel),
            }),
            Ok(_) => Err(ServiceError::BadRequest(format!(
                "`{}` is not a file name",
                name.escape_debug()
            ))),
            Err(e) => Err(ServiceError::BadRequest(e.to_string())),
        }
    }

    /// The most bytes an upload of `file` may have now: what is left of its owner's quota
    /// (the per-file limit is the HTTP layer's `max_file_mib`). Creates the owner's
    /// directory (0700) if needed.
    pub fn upload_allowance(&self, file: &ServiceFile) -> Result<u64, ServiceError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&file.root)
            .map_err(|e| ServiceError::Io(format!("creating {}: {e}", file.root.display())))?;
        let quotas = &self.settings.quotas;
        let used = self.file_bytes_used(&file.owner, &file.root);
        let left = quotas.file_service_bytes_per_user().saturating_sub(used);
        if left == 0 {
            return Err(ServiceError::Quota(format!(
                "{} keeps {used} bytes in the file service, the quota \
                 (quotas.file_service_gib_per_user); remove files first",
                file.owner
            )));
        }
        Ok(left)
    }

    fn file_bytes_used(&self, owner: &str, root: &Path) -> u64 {
        let mut bytes = self
            .file_usage
            .bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *bytes
            .entry(owner.to_string())
            .or_insert_with(|| bytes_under(root))
    }

    /// Counts an upload of `written` bytes that replaced `replaced` bytes.
    pub fn file_stored(&self, owner: &str, written: u64, replaced: u64) {
        let mut bytes = self
            .file_usage
            .bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(b) = bytes.get_mut(owner) {
            *b = b.saturating_add(written).saturating_sub(replaced);
        }
    }
}
