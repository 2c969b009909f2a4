//! What users and admins can do: submit, list, inspect, cancel; create users and agent
//! registration tokens. A user sees only their own applications; admins see all.

use super::agent_resources;
use super::platforms::Offers;
use super::{auth, bounds, next, now_ms, Manager, Principal, ServiceError};
use crate::db::Write;
use crate::queue::AppEntry;
use crate::source_ranges::SourceRanges;
use hetpilot_protocol::parallel::{GroupLeaseView, GroupMember};
use hetpilot_protocol::protocol::{
    AgentInfo, AgentTokenInfo, AppReport, AppSummary, AttemptRecord, NewAgentToken, NewUser,
    SubmitResponse, TaskInfo, TaskState, TokenResponse,
};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AppId, TaskRef};
use std::path::Path;
use std::sync::Arc;

/// The calling user (agents and registration tokens are refused).
pub(super) fn user(who: &Principal) -> Result<(&str, bool), ServiceError> {
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

/// Longest an application's summary waits for progress.
pub const MAX_APP_WAIT_MS: u64 = 60_000;

/// Most task rows one `GET /v1/apps/ID/tasks` answers: longer listings page on with
/// `after`.
pub const MAX_TASK_PAGE: u64 = 100_000;

/// Which of an application's task rows to list, in index order.
#[derive(Debug, Clone, Copy)]
pub struct TaskPage {
    /// At most this many (1 to [`MAX_TASK_PAGE`]).
    pub limit: u64,
    /// Skipping this many first.
    pub offset: u64,
    /// Only tasks whose index is greater (the cursor of the page before).
    pub after: Option<u64>,
}

fn summary(app: &AppEntry, offers: &Offers) -> AppSummary {
    AppSummary {
        app: app.id,
        name: app.runtime.name.clone(),
        owner: app.owner.clone(),
        submitted_at_ms: app.submitted_ms,
        cancelled: app.cancelled,
        ended_at_ms: app.ended_ms,
        counts: app.counts,
        lost_attempts: app.lost_attempts,
        blocked: offers.blocked(app),
        workflow: app.workflow_progress(),
    }
}

impl Manager {
    /// Checks that `who` may see `app` (foreign applications look like missing ones).
    pub(super) fn visible(&self, who: &Principal, app: AppId) -> Result<AppSummary, ServiceError> {
        let (name, is_admin) = user(who)?;
        let book = self.platform_book();
        let control = self.control();
        let queues = control.queues();
        match queues.app(app) {
            Some(a) if is_admin || a.owner == name => Ok(summary(a, &self.offers(&book, queues))),
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
        bounds::check_spec(&spec)?;
        let template = spec
            .validate()
            .map_err(|e| ServiceError::BadRequest(e.to_string()))?;
        self.check_stores(&spec)?;
        self.check_resources(&spec)?;
        self.check_parallel(&spec)?;
        let reserved = self.reserve_tasks(owner, spec.tasks.len())?;
        let app = AppId(next(&self.next_app));
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
        // Wakes the idle agents (a data-intensive application's once its Het-HPS plan is
        // bound, see `staging_plan`).
        self.control()
            .submit(app, owner.to_string(), spec, template, now);
        // In the queues now: they count there, not as reserved.
        drop(reserved);
        tracing::info!(%app, tasks, owner, "application submitted");
        Ok(SubmitResponse { app, tasks })
    }

    pub fn list_apps(&self, who: &Principal) -> Result<Vec<AppSummary>, ServiceError> {
        let (name, is_admin) = user(who)?;
        let book = self.platform_book();
        let control = self.control();
        let offers = self.offers(&book, control.queues());
        Ok(control
            .queues()
            .apps()
            .filter(|a| is_admin || a.owner == name)
            .map(|a| summary(a, &offers))
            .collect())
    }

    pub fn app(&self, who: &Principal, app: AppId) -> Result<AppSummary, ServiceError> {
        self.visible(who, app)
    }

    /// An application's summary once it has finished, or once more than `seen` of its
    /// tasks have ended, or after `wait_ms` (a long poll, so clients follow progress
    /// without polling). What it returns is committed.
    pub async fn app_wait(
        &self,
        who: &Principal,
        app: AppId,
        seen: u64,
        wait_ms: u64,
    ) -> Result<AppSummary, ServiceError> {
        let deadline = tokio::time::Instant::now()
            + std::time::Duration::from_millis(wait_ms.min(MAX_APP_WAIT_MS));
        loop {
            let progress = self.waiters.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            let s = self.visible(who, app)?;
            if s.is_finished()
                || s.counts.finished() > seen
                || tokio::time::Instant::now() >= deadline
            {
                // The queues count a result just before it is committed: wait for every
                // write queued so far, so that nothing this answer shows can be lost.
                self.writer.commit(Write::Changes(Vec::new())).await?;
                return Ok(s);
            }
            let _ = tokio::time::timeout_at(deadline, progress).await;
        }
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
        page: TaskPage,
    ) -> Result<Vec<TaskInfo>, ServiceError> {
        self.visible(who, app)?;
        let TaskPage {
            limit,
            offset,
            after,
        } = page;
        if !(1..=MAX_TASK_PAGE).contains(&limit) {
            return Err(ServiceError::BadRequest(format!(
                "field `limit`: {limit} is not in 1-{MAX_TASK_PAGE}; page on with `after`                  (the last task index of the page before)"
            )));
        }
        let mut tasks = self
            .read(move |r| r.tasks(app, state, limit, offset, after))
            .await?;
        self.annotate_workflow_tasks(app, &mut tasks);
        self.fill_array_inputs(app, &mut tasks);
        Ok(tasks)
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
                    r.tasks(task.app, None, 1, task.index, None)?.pop(),
                    r.attempts(task)?,
                ))
            })
            .await?;
        match info {
            Some(mut info) if info.task == task => {
                self.fill_array_inputs(task.app, std::slice::from_mut(&mut info));
                Ok((info, attempts))
            }
            _ => Err(ServiceError::NotFound(format!("no task {task}"))),
        }
    }

    pub async fn cancel(&self, who: &Principal, app: AppId) -> Result<AppSummary, ServiceError> {
        self.visible(who, app)?;
        let (cancelled, stored) = {
            let mut control = self.control();
            let cancelled = control.cancel(app, now_ms());
            (cancelled, control.release())
        };
        if cancelled {
            stored.await?;
        }
        self.visible(who, app)
    }

    /// Creates a user, or gives an existing one a new token: the old token stops working at
    /// once. Administrators are not re-issued here (`rotate_admin_token`).
    pub async fn create_user(
        &self,
        who: &Principal,
        new: NewUser,
    ) -> Result<TokenResponse, ServiceError> {
        admin(who)?;
        if !bounds::is_user_name(&new.name) {
            return Err(ServiceError::BadRequest(format!(
                "field `name`: `{}` is not a user name: 1-32 characters, a lowercase letter or `_` \
                 first, then a-z, 0-9, `_` or `-`",
                new.name.escape_debug()
            )));
        }
        if new.name == "admin" || self.is_admin_user(&new.name) {
            return Err(ServiceError::Conflict(format!(
                "`{}` is an administrator; rotate its token with `hetpilot token rotate-admin`",
                new.name
            )));
        }
        let token = self.issue_user_token(&new.name, false).await?;
        Ok(TokenResponse { token })
    }

    /// Gives the calling administrator a new token; the old one stops working at once. The
    /// `admin` user's token file in the data directory is rewritten.
    ///
    /// The file is never left disagreeing with the database: the new token is written to
    /// `admin.token.new` first, the database takes its hash, then the file is renamed over
    /// `admin.token`; a manager stopped between the last two finishes the rename at its
    /// next start (`data_checks`).
    pub async fn rotate_admin_token(&self, who: &Principal) -> Result<TokenResponse, ServiceError> {
        let name = admin(who)?.to_string();
        let token = auth::new_token("hpu_");
        let io = |what: &str, path: &Path, e: std::io::Error| {
            ServiceError::Io(format!("{what} {}: {e}", path.display()))
        };
        let dir = &self.settings.data_dir;
        let (current, next) = (
            super::admin_token_path(dir),
            super::new_admin_token_path(dir),
        );
        if name == "admin" {
            super::write_secret(&next, &token)
                .map_err(|e| io("the new admin token could not be written to", &next, e))?;
        }
        self.issue_user_token_as(&name, true, token.clone()).await?;
        if name == "admin" {
            std::fs::rename(&next, &current).map_err(|e| {
                io(
                    "the new admin token is in force (kept in admin.token.new) but could not \
                     replace",
                    &current,
                    e,
                )
            })?;
        }
        tracing::info!(user = %name, "admin token rotated");
        Ok(TokenResponse { token })
    }

    fn is_admin_user(&self, name: &str) -> bool {
        self.tokens
            .any(|who| matches!(who, Principal::User { name: n, admin: true } if n == name))
    }

    /// Stores a new token for `name` (committed first), then revokes the old ones.
    async fn issue_user_token(&self, name: &str, admin: bool) -> Result<String, ServiceError> {
        self.issue_user_token_as(name, admin, auth::new_token("hpu_"))
            .await
    }

    /// [`Self::issue_user_token`] with the token made by the caller.
    async fn issue_user_token_as(
        &self,
        name: &str,
        admin: bool,
        token: String,
    ) -> Result<String, ServiceError> {
        let hash = auth::hash(&token);
        self.writer
            .commit(Write::User {
                name: name.to_string(),
                token_hash: hash.clone(),
                admin,
                now_ms: now_ms(),
            })
            .await?;
        let revoked = self
            .tokens
            .revoke_where(|who| matches!(who, Principal::User { name: n, .. } if n == name));
        if revoked > 0 {
            tracing::info!(user = %name, "user token re-issued; the old one is revoked");
        }
        self.tokens.insert(
            hash,
            Principal::User {
                name: name.to_string(),
                admin,
            },
        );
        Ok(token)
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
        let max = self.settings.agent_token_max_ttl_secs;
        let ttl = req.ttl_secs.unwrap_or(self.settings.agent_token_ttl_secs);
        if ttl == 0 || ttl > max {
            return Err(ServiceError::BadRequest(format!(
                "field `ttl_secs`: {ttl} is not in 1-{max} (agent_token_max_ttl_secs)"
            )));
        }
        let register_from = req
            .register_from
            .as_deref()
            .map(SourceRanges::parse)
            .transpose()
            .map_err(|e| ServiceError::BadRequest(format!("field `register_from`: {e}")))?;
        let token = auth::new_token("hpr_");
        let hash = auth::hash(&token);
        let now = now_ms();
        let expires_ms = now.saturating_add(ttl.saturating_mul(1000));
        self.writer
            .commit(Write::AgentToken {
                token_hash: hash.clone(),
                platform: req.platform.clone(),
                expires_ms,
                created_by: by,
                now_ms: now,
                register_from: register_from.as_ref().map(SourceRanges::to_string),
            })
            .await?;
        self.tokens.insert(
            hash.clone(),
            Principal::AgentRegistration {
                platform: req.platform,
                expires_ms,
                token_id: auth::token_id(&hash),
                register_from,
            },
        );
        Ok(TokenResponse { token })
    }

    /// The registration tokens still valid (admin).
    pub async fn list_agent_tokens(
        &self,
        who: &Principal,
    ) -> Result<Vec<AgentTokenInfo>, ServiceError> {
        admin(who)?;
        let now = now_ms();
        self.read(move |r| r.agent_tokens(now)).await
    }

    /// Revokes the registration token whose id (a prefix of its SHA-256, at least 8 hex
    /// digits) is `id` (admin). Agents it already registered keep their own credentials.
    pub async fn revoke_agent_token(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<AgentTokenInfo, ServiceError> {
        admin(who)?;
        let valid = (8..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid {
            return Err(ServiceError::BadRequest(format!(
                "`{}` is not a token id: 8-64 hex digits, as `hetpilot token list` shows",
                id.escape_debug()
            )));
        }
        let id = id.to_ascii_lowercase();
        let info = self
            .list_agent_tokens(who)
            .await?
            .into_iter()
            .find(|t| id.starts_with(&t.id) || t.id.starts_with(&id));
        let hashes = self.tokens.registration_hashes(&id);
        let hash = match hashes.as_slice() {
            [hash] => hash.clone(),
            [] => {
                return Err(ServiceError::NotFound(format!(
                    "no valid registration token {id}"
                )))
            }
            _ => {
                return Err(ServiceError::BadRequest(format!(
                    "{id} matches {} tokens; give more digits",
                    hashes.len()
                )))
            }
        };
        self.writer
            .commit(Write::RevokeAgentToken {
                token_hash: hash.clone(),
            })
            .await?;
        self.tokens.remove(&hash);
        tracing::info!(token = %id, "registration token revoked");
        info.ok_or_else(|| ServiceError::NotFound(format!("no valid registration token {id}")))
    }

    pub fn list_agents(&self, who: &Principal) -> Result<Vec<AgentInfo>, ServiceError> {
        admin(who)?;
        let control = self.control();
        let pilots = control.agent_pilots();
        let queues = control.queues();
        let mut agents: Vec<AgentInfo> = queues
            .agents()
            .map(|a| AgentInfo {
                agent: a.id,
                platform: a.platform.clone(),
                hostname: a.hostname.clone(),
                slots: a.slots,
                state: a.state.as_str().to_string(),
                batch_job_id: a.batch_job_id.clone(),
                pilot: pilots.get(&a.id.0).cloned(),
                registered_at_ms: a.registered_ms,
                last_seen_ms: a.last_seen_ms,
                tasks_held: a.held.len() as u64,
                apps: {
                    let mut apps: Vec<_> = a.held.keys().map(|t| t.app).collect();
                    apps.sort_unstable();
                    apps.dedup();
                    apps
                },
                gpus: agent_resources::gpus(a),
                resources: agent_resources::named(a),
                reserved_slots: queues.hold(a.id).map_or(0, |h| h.cores),
                reserved_idle_slots: queues.reserved_free_slots(a.id),
                free_slots: queues.free_slots_of(a.id).unwrap_or(0),
                member_of: queues.member_runs(a.id),
                group_leases: queues
                    .head_groups(a.id)
                    .into_iter()
                    .map(|(task, g)| GroupLeaseView {
                        task,
                        attempt: g.attempt,
                        members: g
                            .members
                            .iter()
                            .map(|m| GroupMember {
                                agent: m.agent,
                                host: m.host.clone(),
                                slots: m.slots,
                            })
                            .collect(),
                    })
                    .collect(),
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
