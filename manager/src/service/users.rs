//! What users and admins can do: submit, list, inspect, cancel; create users and agent
//! registration tokens. A user sees only their own applications; admins see all.

use super::{auth, next, now_ms, Manager, Principal, ServiceError};
use crate::queue::AppEntry;
use crate::store::{AppResources, Write};
use hetpilot_shared::protocol::{
    AgentInfo, AppReport, AppSummary, AttemptRecord, NewAgentToken, NewUser, SubmitResponse,
    TaskInfo, TaskState, TokenResponse,
};
use hetpilot_shared::spec::AppSpec;
use hetpilot_shared::{AppId, TaskRef};
use std::sync::Arc;

/// The calling user (agents and registration tokens are refused).
fn user(who: &Principal) -> Result<(&str, bool), ServiceError> {
    match who {
        Principal::User { name, admin } => Ok((name, *admin)),
        _ => Err(ServiceError::Forbidden(
            "this call needs a user token, not an agent credential".into(),
        )),
    }
}

pub(super) fn admin(who: &Principal) -> Result<&str, ServiceError> {
    match user(who)? {
        (name, true) => Ok(name),
        _ => Err(ServiceError::Forbidden(
            "this call needs the admin token".into(),
        )),
    }
}

fn summary(app: &AppEntry) -> AppSummary {
    AppSummary {
        app: app.id,
        name: app.runtime.name.clone(),
        owner: app.owner.clone(),
        submitted_at_ms: app.submitted_ms,
        cancelled: app.cancelled,
        counts: app.counts,
    }
}

impl Manager {
    /// Checks that `who` may see `app` (foreign applications look like missing ones).
    fn visible(&self, who: &Principal, app: AppId) -> Result<AppSummary, ServiceError> {
        let (name, is_admin) = user(who)?;
        let queues = self.queues();
        match queues.app(app) {
            Some(a) if is_admin || a.owner == name => Ok(summary(a)),
            _ => Err(ServiceError::NotFound(format!("no application {app}"))),
        }
    }

    /// Stores an application (committed before this returns) and queues its tasks.
    pub async fn submit(
        &self,
        who: &Principal,
        spec: AppSpec,
    ) -> Result<SubmitResponse, ServiceError> {
        let (owner, _) = user(who)?;
        let template = spec
            .validate()
            .map_err(|e| ServiceError::BadRequest(e.to_string()))?;
        self.check_stores(&spec)?;
        let app = AppId(next(&self.next_app));
        let resources = AppResources {
            app,
            owner: owner.to_string(),
            cores: spec.cores,
            memory_mb: spec.memory_mb,
        };
        let tasks = spec.tasks.len();
        let spec = Arc::new(spec);
        let now = now_ms();
        self.writer
            .commit(Write::Submit {
                app,
                owner: owner.to_string(),
                spec: spec.clone(),
                now_ms: now,
            })
            .await?;
        let spec = Arc::try_unwrap(spec).unwrap_or_else(|shared| (*shared).clone());
        let entry = AppEntry::new(app, owner.to_string(), spec, template, now);
        self.queues().insert_app(entry);
        self.work.notify_waiters();
        self.app_submitted(resources);
        tracing::info!(%app, tasks, owner, "application submitted");
        Ok(SubmitResponse { app, tasks })
    }

    pub fn list_apps(&self, who: &Principal) -> Result<Vec<AppSummary>, ServiceError> {
        let (name, is_admin) = user(who)?;
        Ok(self
            .queues()
            .apps()
            .filter(|a| is_admin || a.owner == name)
            .map(summary)
            .collect())
    }

    pub fn app(&self, who: &Principal, app: AppId) -> Result<AppSummary, ServiceError> {
        self.visible(who, app)
    }

    pub async fn report(&self, who: &Principal, app: AppId) -> Result<AppReport, ServiceError> {
        let summary = self.visible(who, app)?;
        let (platforms, span) = self
            .read(move |r| Ok((r.platform_stats(app)?, r.span(app)?)))
            .await?;
        Ok(AppReport {
            summary,
            platforms,
            makespan_ms: span.map(|(first, last)| last.saturating_sub(first)),
        })
    }

    pub async fn tasks(
        &self,
        who: &Principal,
        app: AppId,
        state: Option<TaskState>,
        limit: u64,
        offset: u64,
    ) -> Result<Vec<TaskInfo>, ServiceError> {
        self.visible(who, app)?;
        self.read(move |r| r.tasks(app, state, limit.min(100_000), offset))
            .await
    }

    /// One task with every attempt (`hetpilot logs`).
    pub async fn task(
        &self,
        who: &Principal,
        task: TaskRef,
    ) -> Result<(TaskInfo, Vec<AttemptRecord>), ServiceError> {
        self.visible(who, task.app)?;
        let (info, attempts) = self
            .read(move |r| {
                Ok((
                    r.tasks(task.app, None, 1, task.index)?.pop(),
                    r.attempts(task)?,
                ))
            })
            .await?;
        match info {
            Some(info) if info.task == task => Ok((info, attempts)),
            _ => Err(ServiceError::NotFound(format!("no task {task}"))),
        }
    }

    pub async fn cancel(&self, who: &Principal, app: AppId) -> Result<AppSummary, ServiceError> {
        self.visible(who, app)?;
        let changes = self.queues().cancel(app);
        if !changes.is_empty() {
            self.writer.commit(Write::Changes(changes)).await?;
            self.replan();
        }
        self.visible(who, app)
    }

    pub async fn create_user(
        &self,
        who: &Principal,
        new: NewUser,
    ) -> Result<TokenResponse, ServiceError> {
        admin(who)?;
        let valid = !new.name.is_empty()
            && new.name.len() <= 64
            && new
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !valid {
            return Err(ServiceError::BadRequest(
                "field `name`: 1-64 characters from a-z, A-Z, 0-9, `.`, `_`, `-`".into(),
            ));
        }
        let token = auth::new_token("hpu_");
        let hash = auth::hash(&token);
        self.writer
            .commit(Write::User {
                name: new.name.clone(),
                token_hash: hash.clone(),
                admin: false,
                now_ms: now_ms(),
            })
            .await?;
        self.tokens.insert(
            hash,
            Principal::User {
                name: new.name,
                admin: false,
            },
        );
        Ok(TokenResponse { token })
    }

    pub async fn create_agent_token(
        &self,
        who: &Principal,
        req: NewAgentToken,
    ) -> Result<TokenResponse, ServiceError> {
        let by = admin(who)?.to_string();
        if self.settings.platform(&req.platform).is_none() {
            return Err(self.unknown_platform(&req.platform));
        }
        let token = auth::new_token("hpr_");
        let hash = auth::hash(&token);
        let expires_ms = now_ms() + req.ttl_secs.unwrap_or(7 * 24 * 3600).saturating_mul(1000);
        self.writer
            .commit(Write::AgentToken {
                token_hash: hash.clone(),
                platform: req.platform.clone(),
                expires_ms,
                created_by: by,
            })
            .await?;
        self.tokens.insert(
            hash,
            Principal::AgentRegistration {
                platform: req.platform,
                expires_ms,
            },
        );
        Ok(TokenResponse { token })
    }

    pub fn list_agents(&self, who: &Principal) -> Result<Vec<AgentInfo>, ServiceError> {
        admin(who)?;
        let mut agents: Vec<AgentInfo> = self
            .queues()
            .agents()
            .map(|a| AgentInfo {
                agent: a.id,
                platform: a.platform.clone(),
                hostname: a.hostname.clone(),
                slots: a.slots,
                state: a.state.as_str().to_string(),
                batch_job_id: a.batch_job_id.clone(),
                registered_at_ms: a.registered_ms,
                last_seen_ms: a.last_seen_ms,
                tasks_held: a.held.len() as u64,
            })
            .collect();
        agents.sort_by_key(|a| a.agent);
        Ok(agents)
    }

    pub(super) fn unknown_platform(&self, name: &str) -> ServiceError {
        let known: Vec<&str> = self
            .settings
            .platforms
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        ServiceError::BadRequest(format!(
            "unknown platform `{name}`; configured platforms: {}",
            known.join(", ")
        ))
    }
}
