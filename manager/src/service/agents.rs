//! What agents do: register with a registration token, then long-poll for tasks, report
//! results, heartbeat and deregister with their own credential.

use super::{auth, next, now_ms, Manager, Principal, ServiceError};
use crate::queue::{AgentEntry, ReportCheck};
use crate::store::{AgentResources, Write};
use hetpilot_shared::protocol::{
    HeartbeatRequest, HeartbeatResponse, PullRequest, PullResponse, RegisterRequest,
    RegisterResponse, ReportRequest, ReportResponse, TaskResult,
};
use hetpilot_shared::AgentId;
use std::time::Duration;

/// Longest a pull may wait for work.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// Most results in one report.
const MAX_RESULTS: usize = 10_000;

/// The agent a credential belongs to, which must be the one named in the path.
fn agent(who: &Principal, path_agent: AgentId) -> Result<AgentId, ServiceError> {
    match who {
        Principal::Agent(id) if *id == path_agent => Ok(*id),
        Principal::Agent(id) => Err(ServiceError::Forbidden(format!(
            "this credential belongs to agent {id}"
        ))),
        _ => Err(ServiceError::Forbidden(
            "this call needs an agent credential".into(),
        )),
    }
}

impl Manager {
    pub async fn register(
        &self,
        who: &Principal,
        req: RegisterRequest,
    ) -> Result<RegisterResponse, ServiceError> {
        let (platform, pilot) = match who {
            Principal::AgentRegistration { platform, .. } => (platform, None),
            Principal::PilotRegistration {
                platform, pilot, ..
            } => (platform, Some(pilot)),
            _ => {
                return Err(ServiceError::Forbidden(
                    "registering an agent needs an agent registration token".into(),
                ))
            }
        };
        match (pilot, &req.pilot) {
            (Some(p), named) if named.as_ref() != Some(p) => {
                return Err(ServiceError::Forbidden(format!(
                    "this registration token is for pilot `{p}` only"
                )))
            }
            (None, Some(p)) => {
                return Err(ServiceError::Forbidden(format!(
                    "registering as pilot `{p}` needs that pilot's own token"
                )))
            }
            _ => {}
        }
        if let Some(p) = pilot {
            if !self.pilot_may_register(p) {
                return Err(ServiceError::Forbidden(format!(
                    "pilot `{p}` is no longer waiting for its agent"
                )));
            }
        }
        if self.settings.platform(&req.platform).is_none() {
            return Err(self.unknown_platform(&req.platform));
        }
        if *platform != req.platform {
            return Err(ServiceError::Forbidden(format!(
                "this registration token is for platform `{platform}`, not `{}`",
                req.platform
            )));
        }
        let slots = req.slots.unwrap_or(req.cores).max(1);
        if slots > 4096 || req.hostname.is_empty() || req.hostname.len() > 255 {
            return Err(ServiceError::BadRequest(
                "fields `slots` (1-4096) and `hostname` (1-255 bytes)".into(),
            ));
        }
        let id = AgentId(next(&self.next_agent));
        let credential = auth::new_token("hpa_");
        let hash = auth::hash(&credential);
        let now = now_ms();
        self.writer
            .commit(Write::Agent {
                agent: id,
                credential_hash: hash.clone(),
                request: req.clone(),
                slots,
                now_ms: now,
            })
            .await?;
        let mut entry = AgentEntry::new(id, req.platform.clone(), req.hostname.clone(), slots, now);
        entry.batch_job_id = req.batch_job_id.clone();
        self.queues().insert_agent(entry);
        self.tokens.insert(hash, Principal::Agent(id));
        self.agent_registered(AgentResources {
            agent: id,
            platform: req.platform.clone(),
            slots,
            memory_mb: req.memory_mb,
        });
        if let Some(p) = pilot {
            self.pilot_registered(p, id, req.walltime_end).await?;
        }
        tracing::info!(agent = %id, platform = %req.platform, host = %req.hostname, slots, "agent registered");
        let lease = self.settings.lease_timeout_ms();
        Ok(RegisterResponse {
            agent: id,
            credential,
            slots,
            heartbeat_interval_ms: (lease / 4).max(50),
            lease_timeout_ms: lease,
        })
    }

    /// Leases tasks, waiting up to `wait_ms` for some to appear.
    pub async fn pull(
        &self,
        who: &Principal,
        path: AgentId,
        req: PullRequest,
    ) -> Result<PullResponse, ServiceError> {
        let id = agent(who, path)?;
        if !req.started.is_empty() {
            let changes = self.queues().started(id, &req.started, now_ms())?;
            self.writer.send(Write::Changes(changes));
        }
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(req.wait_ms).min(MAX_WAIT);
        loop {
            let notified = self.work.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            self.plan_staging();
            let (batch, drain, kill) = {
                let mut queues = self.queues();
                let batch = queues.lease(id, req.max.min(8192), now_ms())?;
                let (drain, kill) = queues.heartbeat(id, now_ms())?;
                (batch, drain, kill)
            };
            if !batch.tasks.is_empty()
                || drain
                || !kill.is_empty()
                || tokio::time::Instant::now() >= deadline
            {
                if !batch.changes.is_empty() {
                    // The agent learns of its leases only once they are durable.
                    self.writer.commit(Write::Changes(batch.changes)).await?;
                }
                let grants = self.store_grants(batch.tasks.iter().map(|t| t.task.app));
                return Ok(PullResponse {
                    grants,
                    apps: batch.apps,
                    tasks: batch.tasks,
                    drain,
                    kill,
                    lease_ms: batch.lease_ms,
                });
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    /// Records results: each is the current lease of this agent, a late result of one of its
    /// earlier leases, or an already recorded duplicate. Anything else refuses the whole
    /// report, changing nothing.
    pub async fn record(
        &self,
        who: &Principal,
        path: AgentId,
        req: ReportRequest,
    ) -> Result<ReportResponse, ServiceError> {
        let id = agent(who, path)?;
        if req.results.len() > MAX_RESULTS {
            return Err(ServiceError::BadRequest(format!(
                "at most {MAX_RESULTS} results per report"
            )));
        }
        let checks = {
            let queues = self.queues();
            req.results
                .iter()
                .map(|r| queues.check_result(id, r))
                .collect::<Result<Vec<_>, _>>()?
        };
        let to_look_up: Vec<(usize, TaskResult)> = checks
            .iter()
            .zip(&req.results)
            .enumerate()
            .filter(|(_, (c, _))| **c == ReportCheck::NeedsHistory)
            .map(|(i, (_, r))| (i, r.clone()))
            .collect();
        let owners = self
            .read(move |reader| {
                to_look_up
                    .into_iter()
                    .map(|(i, r)| {
                        Ok((
                            i,
                            r.task,
                            r.attempt,
                            reader.attempt_owner(r.task, r.attempt)?,
                        ))
                    })
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        let mut duplicate = vec![false; req.results.len()];
        for (i, task, attempt, owner) in owners {
            match owner {
                Some(o) if o.agent == id => duplicate[i] = o.recorded,
                _ => {
                    return Err(crate::queue::ReportError::Foreign {
                        task,
                        attempt,
                        agent: id,
                    }
                    .into())
                }
            }
        }
        let duplicates = duplicate.iter().filter(|d| **d).count() as u32;
        let recorded = req.results.len() as u32 - duplicates;
        let runs = super::live::runs(id, &req.results, &duplicate);
        let changes = {
            let mut queues = self.queues();
            let mut changes = Vec::new();
            for (result, dup) in req.results.into_iter().zip(duplicate) {
                if !dup {
                    changes.extend(queues.apply_result(id, result));
                }
            }
            changes
        };
        if !changes.is_empty() {
            self.writer.commit(Write::Changes(changes)).await?;
            self.work.notify_waiters();
        }
        self.runs_recorded(&runs);
        Ok(ReportResponse {
            recorded,
            duplicates,
        })
    }

    pub fn heartbeat(
        &self,
        who: &Principal,
        path: AgentId,
        req: HeartbeatRequest,
    ) -> Result<HeartbeatResponse, ServiceError> {
        let id = agent(who, path)?;
        let (changes, drain, kill) = {
            let mut queues = self.queues();
            let mut changes = queues.started(id, &req.started, now_ms())?;
            changes.extend(queues.reconcile(id, req.seen_up_to_ms, &req.held, now_ms())?);
            let (drain, kill) = queues.heartbeat(id, now_ms())?;
            (changes, drain, kill)
        };
        if !changes.is_empty() {
            tracing::warn!(agent = %id, changes = changes.len(), "leases that never reached their agent went back to their queues");
            self.writer.send(Write::Changes(changes));
            self.work.notify_waiters();
        }
        let grants = self.store_grants(req.held.iter().map(|h| h.task.app));
        Ok(HeartbeatResponse {
            drain,
            kill,
            grants,
        })
    }

    pub async fn deregister(&self, who: &Principal, path: AgentId) -> Result<(), ServiceError> {
        let id = agent(who, path)?;
        let changes = self.queues().deregister(id, now_ms())?;
        self.writer.commit(Write::Changes(changes)).await?;
        self.work.notify_waiters();
        self.replan();
        tracing::info!(agent = %id, "agent deregistered");
        Ok(())
    }

    /// Asks an agent to finish its tasks and leave (admin).
    pub fn drain(&self, who: &Principal, id: AgentId) -> Result<(), ServiceError> {
        match who {
            Principal::User { admin: true, .. } => {}
            _ => {
                return Err(ServiceError::Forbidden(
                    "this call needs the admin token".into(),
                ))
            }
        }
        if self.queues().agent(id).is_none() {
            return Err(ServiceError::NotFound(format!("no agent {id}")));
        }
        self.queues().drain(id);
        Ok(())
    }
}
