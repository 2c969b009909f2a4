//! What agents do: register with a registration token, then long-poll for tasks, report
//! results, heartbeat and deregister with their own credential.

use super::{auth, bounds, next, now_ms, Manager, Principal, ServiceError};
use crate::control::{AgentJoin, PilotEvent};
use crate::control::{ReportAnswer, ReportHistory, ResultClass};
use crate::db::Write;
use crate::metrics::ReportSummary;
use crate::queue::heartbeat_cadence::Cadence;
use crate::queue::Change;
use hetpilot_protocol::protocol::{
    HeartbeatRequest, HeartbeatResponse, PullRequest, PullResponse, RegisterRequest,
    RegisterResponse, ReportRequest, ReportResponse, TaskResult,
};
use hetpilot_protocol::{AgentId, TaskRef};
use std::net::IpAddr;
use std::time::Duration;

/// Longest a pull may wait for work.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// Most results in one report.
const MAX_RESULTS: usize = 10_000;

/// The agent a credential belongs to, which must be the one named in the path.
pub(super) fn agent(who: &Principal, path_agent: AgentId) -> Result<AgentId, ServiceError> {
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

/// The answer to a registration: the agent's id and credential, its slots, its cadence.
pub(super) fn register_answer(
    agent: AgentId,
    credential: String,
    slots: u32,
    cadence: Cadence,
) -> RegisterResponse {
    RegisterResponse {
        agent,
        credential,
        slots,
        heartbeat_interval_ms: cadence.heartbeat_interval_ms,
        lease_timeout_ms: cadence.lease_timeout_ms,
        // The accept loop (`hetpilot_transport::serve`) serves HTTP/2 on every port.
        http2: true,
    }
}

impl Manager {
    /// Registers an agent with `who`'s registration token, from `source` (the peer address
    /// the request came from; `None` if unknown).
    pub async fn register(
        &self,
        who: &Principal,
        source: Option<IpAddr>,
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
        self.check_registration_source(who, source)?;
        super::agent_protocol::check_agent_protocol(req.protocol_version)?;
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
        bounds::check_register(&req)?;
        if let Some(again) = self
            .registration_retried(&req, pilot.map(String::as_str))
            .await?
        {
            return Ok(again);
        }
        super::resource_check::check_offer(&req.resources)?;
        if req.zero_work && !self.settings.allow_zero_work {
            return Err(ServiceError::Forbidden(
                "this manager does not take zero-work agents (their tasks end without \
                 running); allow them with `allow_zero_work = true` in its configuration, \
                 on a manager used for measurements only"
                    .into(),
            ));
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
        if slots > 4096 {
            return Err(ServiceError::BadRequest(format!(
                "field `slots`: {slots} is not in 1-4096"
            )));
        }
        if let Some(p) = pilot {
            self.claim_pilot_registration(p, &req.hostname)?;
        }
        let id = AgentId(next(&self.next_agent));
        let credential = auth::new_token("hpa_");
        let hash = auth::hash(&credential);
        let key_hash = req.registration_key.as_deref().map(auth::hash);
        let now = now_ms();
        self.writer
            .commit(Write::Agent {
                agent: id,
                credential_hash: hash.clone(),
                registration_key_hash: key_hash.clone(),
                request: req.clone(),
                slots,
                now_ms: now,
            })
            .await?;
        let mut join = AgentJoin {
            agent: id,
            platform: req.platform.clone(),
            hostname: req.hostname.clone(),
            slots,
            cores: req.cores.max(slots),
            memory_mb: req.memory_mb,
            batch_job_id: req.batch_job_id.clone(),
            only_user: None,
            resources: req.resources.clone(),
        };
        // The agent joins and, with a pilot's credential, joins its pilot, in one section.
        let (cadence, linked, stored) = {
            let mut control = self.control();
            join.only_user = pilot.and_then(|p| control.pilot_record(p)?.user.clone());
            control.agent_joined(join, now);
            let cadence = control.queues().cadence();
            let linked = pilot.map(|p| {
                let event = PilotEvent::Registered {
                    pilot: p.clone(),
                    agent: id.0,
                    hostname: req.hostname.clone(),
                    walltime_end_s: req.walltime_end,
                };
                (p, control.pilot(event, now))
            });
            (cadence, linked, control.release())
        };
        match linked {
            Some((p, Ok(outcome))) => {
                self.pilot_decided(p, &outcome);
                // The link is committed before the agent is answered: a restart keeps it.
                stored.await?;
                // Its agent's slots may say more truly than the profile what a pilot brings.
                self.plan_capacities();
            }
            Some((_, Err(e))) => {
                // The pilot ended while its agent joined: the agent leaves at once.
                self.agent_left(id).await?;
                return Err(super::pilots::refused(e));
            }
            None => {}
        }
        if let Some(key_hash) = key_hash {
            self.unanswered.recorded(id, key_hash, hash.clone());
        }
        self.tokens.insert(hash, Principal::Agent(id));
        tracing::info!(agent = %id, platform = %req.platform, host = %req.hostname, slots, "agent registered");
        if req.zero_work {
            tracing::warn!(agent = %id, "a zero-work agent registered: its tasks end without running");
        }
        Ok(register_answer(id, credential, slots, cadence))
    }

    /// Leases tasks, waiting up to `wait_ms` for some to appear.
    pub async fn pull(
        &self,
        who: &Principal,
        path: AgentId,
        req: PullRequest,
    ) -> Result<PullResponse, ServiceError> {
        let id = agent(who, path)?;
        self.unanswered.heard_from(id);
        let arrived = std::time::Instant::now();
        bounds::check_listed("started", req.started.len())?;
        if !req.started.is_empty() {
            // Stored as the lock is released.
            self.control().started(id, &req.started, now_ms())?;
        }
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(req.wait_ms).min(MAX_WAIT);
        loop {
            let notified = self.waiters.work.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (mut batch, leased, leases_stored, drain, kill, platform) = {
                let mut control = self.control();
                // Runs that ended since the agent's last pull answer freed slots it did not
                // ask for: lease up to what its reports since say it wants, within the slots
                // the manager counts free (every held task counts until reported), so a
                // wide task does not wait out the pull. (Counting the free slots walks the
                // agent's held tasks: only when a report asked for more than the pull.)
                // A multi-node pilot's agents get nothing until its group is whole.
                let reported = self.wanted.get(&id).map_or(0, |w| *w);
                let max = if reported > req.max {
                    let free = control.queues().free_slots_of(id).unwrap_or(0);
                    req.max.max(reported.min(free))
                } else {
                    req.max
                };
                let batch = control.lease(id, max.min(8192), now_ms())?;
                let leased = !control.effects().nothing_to_persist();
                let (drain, kill) = control.heartbeat(id, now_ms())?;
                let platform = (!batch.tasks.is_empty())
                    .then(|| control.queues().agent(id).map(|a| a.platform.clone()))
                    .flatten();
                (batch, leased, control.release(), drain, kill, platform)
            };
            self.add_launchers(platform.as_deref(), &mut batch.tasks);
            let send_output = self.outputs_to_send(id);
            if !batch.tasks.is_empty()
                || drain
                || !kill.is_empty()
                || !send_output.is_empty()
                || tokio::time::Instant::now() >= deadline
            {
                if leased {
                    // The agent learns of its leases only once they are durable.
                    let committing = std::time::Instant::now();
                    leases_stored.await?;
                    self.metrics.store_commit(committing.elapsed());
                }
                if let Some(platform) = &platform {
                    self.metrics
                        .leased(platform, batch.tasks.len(), arrived.elapsed());
                }
                let grants = self.store_grants(batch.tasks.iter().map(|t| t.task));
                // Answered: the agent's next pull says what it wants after this answer.
                self.wanted.remove(&id);
                return Ok(PullResponse {
                    grants,
                    apps: batch.apps,
                    tasks: batch.tasks,
                    drain,
                    kill,
                    send_output,
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
        for r in &req.results {
            bounds::check_result(r)?;
        }
        let count = req.results.len() as u32;
        let mut results = req.results;
        let mut history = ReportHistory::new();
        let mut wanted = self.control().history_wanted(id, &results)?;
        // Each turn looks up more results; a result's lease ends at most once, so this
        // ends after at most one turn per result.
        let (classes, summary, stored, platform) = loop {
            history.extend(self.attempts_of(&results, wanted).await?);
            let mut control = self.control();
            let platform = control.queues().agent(id).map(|a| a.platform.clone());
            match control.record_report(id, results, &history, now_ms())? {
                ReportAnswer::Recorded { classes, clamped } => {
                    for task in clamped {
                        tracing::warn!(agent = %id, %task, "a result claimed more time than its lease had; clamped");
                    }
                    let changes = &control.effects().changes;
                    let summary = ReportSummary::of(changes.iter().filter_map(|c| match c {
                        Change::Result { result } => Some(&**result),
                        _ => None,
                    }));
                    let stored = (!changes.is_empty()).then(|| control.release());
                    break (classes, summary, stored, platform.unwrap_or_default());
                }
                // A lease ended between the look-up and now: look those up too.
                ReportAnswer::NeedsHistory {
                    missing,
                    results: back,
                } => {
                    wanted = missing;
                    results = back;
                }
            }
        };
        if let Some(stored) = stored {
            let committing = std::time::Instant::now();
            stored.await?;
            self.metrics.store_commit(committing.elapsed());
        }
        if let Some(wanted) = req.wanted {
            self.wanted.insert(id, wanted.min(8192));
        }
        let duplicates = classes
            .iter()
            .filter(|c| **c == ResultClass::Duplicate)
            .count() as u32;
        let recorded = count - duplicates;
        self.metrics.reported(&platform, &summary);
        Ok(ReportResponse {
            recorded,
            duplicates,
        })
    }

    /// The store's attempts of `results` at the indexes `wanted`.
    async fn attempts_of(
        &self,
        results: &[TaskResult],
        wanted: Vec<usize>,
    ) -> Result<ReportHistory, ServiceError> {
        if wanted.is_empty() {
            return Ok(ReportHistory::new());
        }
        let asked: Vec<(usize, TaskRef, u32)> = wanted
            .into_iter()
            .filter_map(|i| results.get(i).map(|r| (i, r.task, r.attempt)))
            .collect();
        let found = self
            .read(move |reader| {
                asked
                    .into_iter()
                    .map(|(i, task, attempt)| Ok((i, reader.attempt_owner(task, attempt)?)))
                    .collect::<rusqlite::Result<ReportHistory>>()
            })
            .await?;
        Ok(found)
    }

    pub fn heartbeat(
        &self,
        who: &Principal,
        path: AgentId,
        req: HeartbeatRequest,
    ) -> Result<HeartbeatResponse, ServiceError> {
        let id = agent(who, path)?;
        self.unanswered.heard_from(id);
        bounds::check_listed("started", req.started.len())?;
        bounds::check_listed("held", req.held.len())?;
        let (given_back, drain, kill, held, cadence) = {
            // What these change is stored as the lock is released.
            let mut control = self.control();
            control.started(id, &req.started, now_ms())?;
            let before = control.effects().changes.len();
            control.reconcile(id, req.seen_up_to_ms, &req.held, now_ms())?;
            let given_back_count = control.effects().changes.len() - before;
            let (drain, kill) = control.heartbeat(id, now_ms())?;
            // Grants go by what the manager leased to this agent, not by what it claims.
            let held: Vec<TaskRef> = control
                .queues()
                .agent(id)
                .map(|a| a.held.keys().copied().collect())
                .unwrap_or_default();
            let cadence = control.queues().cadence();
            (given_back_count, drain, kill, held, cadence)
        };
        if given_back > 0 {
            tracing::warn!(agent = %id, tasks = given_back, "leases that never reached their agent went back to their queues");
        }
        let grants = self.store_grants(held);
        Ok(HeartbeatResponse {
            drain,
            kill,
            send_output: self.outputs_to_send(id),
            grants,
            heartbeat_interval_ms: Some(cadence.heartbeat_interval_ms),
            lease_timeout_ms: Some(cadence.lease_timeout_ms),
        })
    }

    pub async fn deregister(&self, who: &Principal, path: AgentId) -> Result<(), ServiceError> {
        self.agent_left(agent(who, path)?).await
    }

    /// Agent `id` leaves: its credential is revoked (first, so its own long polls end with
    /// 401 rather than waking to find it gone), and what it holds goes back.
    async fn agent_left(&self, id: AgentId) -> Result<(), ServiceError> {
        self.revoke_agent_credential(id);
        let stored = {
            let mut control = self.control();
            control.deregister(id, now_ms())?;
            control.release()
        };
        stored.await?;
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
        let mut control = self.control();
        if control.queues().agent(id).is_none() {
            return Err(ServiceError::NotFound(format!("no agent {id}")));
        }
        control.drain(id);
        Ok(())
    }
}
