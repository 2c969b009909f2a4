//! The file service's rules: each user's files live under `DATA_DIR/files/USER/`. A user
//! reads and writes only their own; an agent reads and writes those of the owner of an
//! application it runs tasks of. Names are checked like declared files (relative, no `..`,
//! no NUL), so no request reaches outside its owner's directory.

use super::{Manager, Principal, ServiceError};
use hetpilot_shared::files::{parse_output, Source};
use hetpilot_shared::AppId;
use std::path::PathBuf;

impl Manager {
    /// The root of every user's files.
    pub fn files_root(&self) -> PathBuf {
        self.settings.data_dir.join("files")
    }

    /// The path of `name` among `who`'s own files.
    pub fn user_file(&self, who: &Principal, name: &str) -> Result<PathBuf, ServiceError> {
        match who {
            Principal::User { name: user, .. } => self.owned_file(user, name),
            _ => Err(ServiceError::Forbidden(
                "this call needs a user token (agents use /v1/apps/APP/files/NAME)".into(),
            )),
        }
    }

    /// The path of `name` among the files of `app`'s owner, for an agent or the owner.
    pub fn app_file(
        &self,
        who: &Principal,
        app: AppId,
        name: &str,
    ) -> Result<PathBuf, ServiceError> {
        let owner = self.queues().app(app).map(|a| a.owner.clone());
        let allowed = match (who, &owner) {
            (Principal::Agent(_), Some(_)) => true,
            (Principal::User { name, admin }, Some(o)) => *admin || name == o,
            _ => false,
        };
        match owner {
            Some(owner) if allowed => self.owned_file(&owner, name),
            _ if matches!(who, Principal::AgentRegistration { .. }) => Err(
                ServiceError::Forbidden("a registration token cannot read files".into()),
            ),
            _ => Err(ServiceError::NotFound(format!("no application {app}"))),
        }
    }

    fn owned_file(&self, owner: &str, name: &str) -> Result<PathBuf, ServiceError> {
        match parse_output(name) {
            Ok((Source::Service(rel), _)) => Ok(self.files_root().join(owner).join(rel)),
            Ok(_) => Err(ServiceError::BadRequest(format!(
                "`{name}` is not a file name"
            ))),
            Err(e) => Err(ServiceError::BadRequest(e.to_string())),
        }
    }
}
