//! The manager's side of pilots: the control plane decides every change to a pilot (see
//! `hetpilot_core::control::PilotEvent`); here each decision's record is queued for the
//! store under the control lock, in the order the changes were made, and each pilot's own
//! registration credential (one use per node of its allocation, see the core's
//! `pilot_groups`) is kept, narrowed and revoked as the decisions say. Also what the
//! provisioner reads (demand, agents' idleness). Listing pilots and platforms is for
//! admins only.

use super::users::admin;
use super::{auth, now_ms, Manager, Principal, ServiceError};
use crate::control::{queued_pilot, CredentialFate, PilotEvent, PilotOutcome};
use crate::db::{PilotCredential, Queued, StoredPilot, Write};
use crate::provision::{AgentActivity, CheckFailure, PilotHost};
use crate::queue::AgentState;
use hetpilot_protocol::pilots::PilotRecord;
use hetpilot_protocol::pilots::PlatformStatus;
use hetpilot_protocol::AgentId;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;

/// Each non-final pilot's registration credential hash, by pilot.
pub(super) type PilotCredentials = dashmap::DashMap<String, String>;

/// Gives the control plane the pilots the store recorded and `window_ms`, their
/// registration window; returns the credentials still to be accepted, to arm, and the
/// credential hash of each pilot they belong to.
pub(super) fn restore_pilots(
    control: &mut crate::control::Control,
    stored: Vec<StoredPilot>,
    window_ms: u64,
    now_ms: u64,
) -> (Vec<(String, Principal)>, PilotCredentials) {
    let mut credentials = Vec::new();
    let records = stored
        .into_iter()
        .map(|s| {
            if let Some(c) = s.credential {
                credentials.push((s.record.name.clone(), s.record.platform.clone(), c));
            }
            s.record
        })
        .collect();
    control.restore_pilots(records);
    control.set_pilot_window(window_ms);
    let by_pilot = PilotCredentials::default();
    let mut principals = Vec::new();
    for (pilot, platform, c) in credentials {
        // Admitting agents, or answering its agents' retried registrations until its
        // window closes.
        if let Some(expires_ms) = control.pilot_credential_until(&pilot, c.expires_ms, now_ms) {
            principals.push((
                c.hash.clone(),
                Principal::PilotRegistration {
                    platform,
                    pilot: pilot.clone(),
                    expires_ms,
                },
            ));
            by_pilot.insert(pilot, c.hash);
        }
    }
    (principals, by_pilot)
}

/// A registration a pilot's group refuses, as the API says it.
pub(super) fn refused(e: crate::control::PilotRefused) -> ServiceError {
    ServiceError::Forbidden(e.to_string())
}

impl Manager {
    /// Has the control plane decide `event` at `now`, its changed record queued for the
    /// store as the lock is released (so the store receives the records in the order they
    /// changed: a change made a moment earlier on another thread, e.g. the provisioner
    /// seeing the batch job start while the agent registers, can never land after, and
    /// undo, a later one), then does what the decision says to the pilot's credential and
    /// metrics. Returns the outcome and the wait for its commit.
    pub(super) fn decide_pilot(
        &self,
        event: PilotEvent,
        now: u64,
    ) -> Result<(PilotOutcome, Queued), ServiceError> {
        let name = event.pilot().to_string();
        let mut control = self.control();
        let outcome = control.pilot(event, now).map_err(refused)?;
        let stored = control.release();
        self.pilot_decided(&name, &outcome);
        Ok((outcome, stored))
    }

    /// After the control lock: what pilot `name`'s decided `outcome` says to its
    /// credential and to the metrics.
    pub(super) fn pilot_decided(&self, name: &str, outcome: &PilotOutcome) {
        if let (Some(waited), Some(r)) = (outcome.queue_wait_ms, &outcome.changed) {
            let waited = std::time::Duration::from_millis(waited);
            self.metrics.pilot_started(&r.platform, waited);
        }
        match outcome.credential {
            CredentialFate::Kept => {}
            CredentialFate::ExpiresBy(ms) => {
                if let Some(hash) = self.pilot_credentials.get(name) {
                    self.tokens.expire_by(&hash, ms);
                }
            }
            CredentialFate::Revoked => {
                if let Some((_, hash)) = self.pilot_credentials.remove(name) {
                    self.tokens.remove(&hash);
                }
            }
        }
    }

    /// Admits the agent registering on node `hostname` with pilot `name`'s credential:
    /// of concurrent registrations beyond the pilot's nodes, or from one node, one wins
    /// and the others are refused. After its last admission the credential answers only
    /// its agents' retried registrations, until the window closes (see
    /// `registration_retry`).
    pub(super) fn claim_pilot_registration(
        &self,
        name: &str,
        hostname: &str,
    ) -> Result<(), ServiceError> {
        let event = PilotEvent::Claimed {
            pilot: name.to_string(),
            hostname: hostname.to_string(),
        };
        let (_, stored) = self.decide_pilot(event, now_ms())?;
        drop(stored);
        Ok(())
    }

    /// Every pilot, oldest first (admin).
    pub fn list_pilots(&self, who: &Principal) -> Result<Vec<PilotRecord>, ServiceError> {
        admin(who)?;
        let mut pilots: Vec<PilotRecord> = self.control().pilot_records().cloned().collect();
        pilots.sort_by(|a, b| (a.submitted_ms, &a.name).cmp(&(b.submitted_ms, &b.name)));
        Ok(pilots)
    }

    /// The profiled platforms whose login host or batch system fails now.
    pub(super) fn unavailable_platforms(&self) -> HashSet<String> {
        self.platform_state()
            .platforms
            .values()
            .filter(|s| !s.available)
            .map(|s| s.name.clone())
            .collect()
    }

    /// The provisioning status of every platform with a profile (admin).
    pub fn list_platform_status(
        &self,
        who: &Principal,
    ) -> Result<Vec<PlatformStatus>, ServiceError> {
        admin(who)?;
        let mut statuses: Vec<PlatformStatus> =
            self.platform_state().platforms.values().cloned().collect();
        for s in &mut statuses {
            s.demand_cores = self.demand_cores(&s.name);
        }
        Ok(statuses)
    }
}

impl PilotHost for Manager {
    type Error = ServiceError;

    /// Creates a pilot of `nodes` nodes on `platform` with its own registration credential,
    /// valid for `ttl_ms`, only for this pilot and one agent per node; the record is
    /// committed before the control plane hears of it (a full data directory refuses it
    /// and nothing remains). Returns the record and the credential (to be written on the
    /// platform, mode 0600). A pilot of a `per-user` platform names its `user`.
    async fn new_pilot(
        &self,
        platform: &str,
        ttl_ms: u64,
        user: Option<&str>,
        nodes: u32,
    ) -> Result<(PilotRecord, String), ServiceError> {
        if nodes == 0 {
            return Err(ServiceError::BadRequest(
                "field `nodes_per_pilot`: a pilot has at least one node".into(),
            ));
        }
        let now = now_ms();
        let name = format!(
            "{platform}-p{}",
            self.next_pilot.fetch_add(1, Ordering::Relaxed)
        );
        if !crate::provision::profile::is_safe_name(&name) {
            return Err(ServiceError::BadRequest(format!(
                "pilot name `{name}` is too long: use a platform name of at most 50 characters"
            )));
        }
        let token = auth::new_token("hpr_");
        let hash = auth::hash(&token);
        let expires_ms = now.saturating_add(ttl_ms);
        let record = queued_pilot(&name, platform, user, nodes, now);
        self.writer
            .commit(Write::Pilot {
                record: record.clone(),
                credential: Some(PilotCredential {
                    hash: hash.clone(),
                    expires_ms,
                }),
            })
            .await?;
        self.pilot_credentials.insert(name.clone(), hash.clone());
        let event = PilotEvent::Created {
            pilot: name.clone(),
            platform: platform.to_string(),
            user: user.map(str::to_string),
            nodes,
        };
        // Committed above: nothing more to store.
        let _ = self.control().pilot(event, now);
        self.tokens.insert(
            hash,
            Principal::PilotRegistration {
                platform: platform.to_string(),
                pilot: name,
                expires_ms,
            },
        );
        Ok((record, token))
    }

    /// Has the control plane decide `event` (see [`Manager::decide_pilot`]) without
    /// waiting for the commit (`flush` does): whether it changed the pilot.
    fn pilot_event(&self, event: PilotEvent, now: u64) -> bool {
        match self.decide_pilot(event, now) {
            Ok((outcome, stored)) => {
                drop(stored);
                outcome.changed.is_some()
            }
            Err(e) => {
                tracing::warn!(error = %e, "a pilot change was refused");
                false
            }
        }
    }

    /// Waits until every pilot change sent so far is committed (an empty write queues
    /// behind them).
    async fn flush(&self) {
        if let Err(e) = self.writer.commit(Write::Changes(Vec::new())).await {
            tracing::warn!(error = %e, "pilot changes may not be stored");
        }
    }

    /// The non-final pilots of `platform`.
    fn tracked_pilots(&self, platform: &str) -> Vec<PilotRecord> {
        self.control()
            .pilot_records()
            .filter(|r| r.platform == platform && !r.state.is_final())
            .cloned()
            .collect()
    }

    fn ended_pilot_dirs(&self, platform: &str, ended_by_ms: u64) -> Vec<PilotRecord> {
        let mut due: Vec<PilotRecord> = self
            .control()
            .pilot_records()
            .filter(|r| {
                r.platform == platform
                    && r.state.is_final()
                    && r.dir_removed_ms.is_none()
                    && r.ended_ms.is_some_and(|end| end <= ended_by_ms)
            })
            .cloned()
            .collect();
        due.sort_by_key(|r| r.ended_ms);
        due
    }

    /// Writes `DATA_DIR/pilot-logs/<pilot>/<file>` (0600, in 0700 directories).
    fn keep_pilot_log(&self, pilot: &str, file: &str, contents: &[u8]) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let safe = crate::provision::profile::is_safe_name;
        if !safe(pilot) || !safe(file) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("`{pilot}/{file}` is not a pilot's log file name"),
            ));
        }
        let dir = self.settings.data_dir.join("pilot-logs").join(pilot);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join(file))?
            .write_all(contents)
    }

    /// The cores a pilot of `platform` brings, as its agents registered them.
    fn registered_cores(&self, platform: &str) -> Option<u32> {
        self.pilot_cores(platform)
    }

    /// Cores' worth of waiting tasks `platform` should get pilots for: its part of the
    /// last provisioning round's split (`provision_demand`), or, before any round or
    /// without a scheduler, every application's waiting tasks × its cores.
    fn demand_cores(&self, platform: &str) -> u64 {
        self.demand_by_user(platform).values().sum()
    }

    /// [`Self::demand_cores`] per owner of the waiting applications (for per-user pilots).
    fn demand_by_user(&self, platform: &str) -> BTreeMap<String, u64> {
        self.control().demand_by_user(platform)
    }

    /// Whether each of `agents` holds no tasks, is draining, or was lost (a pilot's group:
    /// each of its agents).
    fn agent_activity(&self, agents: &[u64]) -> HashMap<u64, AgentActivity> {
        let control = self.control();
        let queues = control.queues();
        agents
            .iter()
            .filter_map(|&id| {
                let a = queues.agent(AgentId(id))?;
                Some((
                    id,
                    AgentActivity {
                        idle: a.held.is_empty(),
                        draining: a.state != AgentState::Active,
                        lost: a.state == AgentState::Lost,
                        live: matches!(a.state, AgentState::Active | AgentState::Draining),
                        drain_ordered: a.drain_ordered,
                    },
                ))
            })
            .collect()
    }

    /// Asks a pilot's agent to finish its tasks and leave.
    fn drain_agent(&self, agent: u64) {
        self.control().drain(AgentId(agent));
    }

    fn pilot_ended(&self, agent: u64, reason: &str) {
        self.lose_agent(AgentId(agent), reason);
    }

    fn set_platform_status(&self, status: PlatformStatus) {
        self.platform_state()
            .platforms
            .insert(status.name.clone(), status);
    }

    fn check_failure(&self, platform: &str) -> Option<CheckFailure> {
        self.platform_check_failure(platform)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ManagerConfig;
    use hetpilot_protocol::pilots::PilotState;
    use hetpilot_protocol::protocol::{NewAgentToken, RegisterRequest};
    use std::sync::Arc;

    /// A manager on a fresh data directory, and its settings (to reopen it).
    fn open_in(dir: &tempfile::TempDir) -> (ManagerConfig, Arc<Manager>) {
        let settings =
            ManagerConfig::load(None, &[("data_dir", dir.path().display().to_string())]).unwrap();
        (settings.clone(), Manager::open(settings).unwrap())
    }

    fn request(pilot: Option<&str>) -> RegisterRequest {
        RegisterRequest {
            cores: 2,
            batch_job_id: Some("42".into()),
            walltime_end: Some(5000),
            pilot: pilot.map(String::from),
            ..super::super::test_support::local_request("node1")
        }
    }

    #[tokio::test]
    async fn a_pilot_credential_registers_only_its_own_pilot_once_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (settings, m) = open_in(&dir);
        let admin_token =
            std::fs::read_to_string(super::super::admin_token_path(dir.path())).unwrap();
        let admin = m.authenticate(Some(admin_token.trim())).unwrap();
        let (p1, t1) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
        let (p2, _t2) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
        assert_eq!(
            (p1.name.as_str(), p2.name.as_str()),
            ("local-p1", "local-p2")
        );
        let who = m.authenticate(Some(&t1)).unwrap();

        let refuse = |r: Result<_, ServiceError>| match r {
            Err(ServiceError::Forbidden(msg)) => msg,
            other => panic!("expected 403, got {other:?}"),
        };
        let msg = refuse(m.register(&who, None, request(None)).await);
        assert!(msg.contains("for pilot `local-p1` only"), "{msg}");
        let msg = refuse(m.register(&who, None, request(Some("local-p2"))).await);
        assert!(msg.contains("local-p1"), "{msg}");
        let platform_token = m
            .create_agent_token(
                &admin,
                NewAgentToken {
                    platform: "local".into(),
                    ttl_secs: None,
                    register_from: None,
                },
            )
            .await
            .unwrap()
            .token;
        let plain = m.authenticate(Some(&platform_token)).unwrap();
        let msg = refuse(m.register(&plain, None, request(Some("local-p1"))).await);
        assert!(msg.contains("needs that pilot's own token"), "{msg}");

        let r = m
            .register(&who, None, request(Some("local-p1")))
            .await
            .unwrap();
        let listed = m.list_pilots(&admin).unwrap();
        let p = listed.iter().find(|p| p.name == "local-p1").unwrap();
        assert_eq!(p.state, PilotState::Running);
        assert_eq!(p.agent, Some(r.agent.0));
        assert_eq!(p.walltime_end_ms, Some(5_000_000));
        let msg = refuse(m.register(&who, None, request(Some("local-p1"))).await);
        assert!(msg.contains("no longer waiting"), "single use: {msg}");
        assert!(m.list_pilots(&who).is_err(), "admin only");

        // A commit after the pilot's update flushes it; then a restart recovers both.
        m.new_pilot("local", 60_000, None, 1).await.unwrap();
        drop(m);
        let m = Manager::open(settings).unwrap();
        let listed = m.list_pilots(&admin).unwrap();
        assert_eq!(listed.len(), 3);
        assert_eq!(listed[0].state, PilotState::Running);
        assert_eq!(listed[1].state, PilotState::Queued);
        let who = m
            .authenticate(Some(&t1))
            .expect("answers retried registrations for its window");
        let msg = refuse(m.register(&who, None, request(Some("local-p1"))).await);
        assert!(
            msg.contains("no longer waiting"),
            "still used up after a restart: {msg}"
        );
        let (p4, _) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
        assert_eq!(p4.name, "local-p4", "names are not reused");
    }

    /// A pilot's credential is single-use even when its agent's registrations race (a
    /// retry storm, or a copied token): exactly one agent is linked to the pilot.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_registrations_with_one_pilot_credential_link_one_agent() {
        let dir = tempfile::tempdir().unwrap();
        let (_, m) = open_in(&dir);
        let (pilot, token) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
        let who = m.authenticate(Some(&token)).unwrap();
        let mut racing = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let (m, who) = (m.clone(), who.clone());
            racing.spawn(async move { m.register(&who, None, request(Some("local-p1"))).await });
        }
        let outcomes = racing.join_all().await;
        let registered: Vec<AgentId> = outcomes
            .iter()
            .filter_map(|o| o.as_ref().ok().map(|r| r.agent))
            .collect();
        assert_eq!(registered.len(), 1, "{outcomes:?}");
        for refused in outcomes.iter().filter_map(|o| o.as_ref().err()) {
            assert!(
                matches!(refused, ServiceError::Forbidden(m) if m.contains("no longer waiting")),
                "{refused:?}"
            );
        }
        let record = m.control().pilot_record(&pilot.name).cloned().unwrap();
        assert_eq!(record.agent, Some(registered[0].0));
    }

    /// A two-node pilot's one credential admits one agent per node, two in all, and only
    /// for its own pilot; the group is held from tasks until whole, and a restart keeps
    /// the group and what the credential may still do.
    #[tokio::test]
    async fn a_multi_node_credential_admits_one_agent_per_node_and_no_more() {
        let dir = tempfile::tempdir().unwrap();
        let (settings, m) = open_in(&dir);
        let (pilot, token) = m.new_pilot("local", 60_000, None, 2).await.unwrap();
        let (other, _) = m.new_pilot("local", 60_000, None, 2).await.unwrap();
        let who = m.authenticate(Some(&token)).unwrap();
        let on = |host: &str, name: &str| RegisterRequest {
            hostname: host.into(),
            ..request(Some(name))
        };
        let refuse = |r: Result<_, ServiceError>| match r {
            Err(ServiceError::Forbidden(msg)) => msg,
            other => panic!("expected 403, got {other:?}"),
        };
        let msg = refuse(m.register(&who, None, on("n2", &other.name)).await);
        assert!(msg.contains("for pilot `local-p1` only"), "{msg}");

        let first = m.register(&who, None, on("n2", &pilot.name)).await.unwrap();
        assert!(
            m.control().held_for_its_group(first.agent, now_ms()),
            "no task before the group is whole"
        );
        let msg = refuse(m.register(&who, None, on("n2", &pilot.name)).await);
        assert!(msg.contains("already has an agent on node `n2`"), "{msg}");

        // A restart: the group and the open credential come back.
        drop(m);
        let m = Manager::open(settings).unwrap();
        let who = m
            .authenticate(Some(&token))
            .expect("still admits the second node");
        assert!(m.control().held_for_its_group(first.agent, now_ms()));
        let msg = refuse(m.register(&who, None, on("n2", &pilot.name)).await);
        assert!(msg.contains("already has an agent on node `n2`"), "{msg}");
        let second = m.register(&who, None, on("n3", &pilot.name)).await.unwrap();
        assert!(
            !m.control().held_for_its_group(first.agent, now_ms())
                && !m.control().held_for_its_group(second.agent, now_ms())
        );
        let msg = refuse(m.register(&who, None, on("n4", &pilot.name)).await);
        assert!(msg.contains("no longer waiting"), "a third agent: {msg}");

        let record = m.control().pilot_record(&pilot.name).cloned().unwrap();
        // Whole, it answers retried registrations until its window closes, no longer.
        let window_ms = crate::config::provision::ms(m.settings.provision.register_timeout_secs);
        let window_end = record.registered_ms.unwrap() + window_ms;
        match m.authenticate(Some(&token)) {
            Ok(Principal::PilotRegistration { expires_ms, .. }) => {
                assert!(expires_ms <= window_end, "{expires_ms} > {window_end}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(record.state, PilotState::Running);
        assert_eq!(record.agent, Some(first.agent.0));
        let members: Vec<(u64, &str)> = record
            .members
            .iter()
            .map(|g| (g.agent, g.hostname.as_str()))
            .collect();
        assert_eq!(members, [(first.agent.0, "n2"), (second.agent.0, "n3")]);
        assert_eq!(
            m.control().agent_pilots().get(&second.agent.0),
            Some(&pilot.name)
        );
    }

    /// Concurrent registrations from more nodes than the pilot has: exactly its nodes'
    /// worth are admitted, each from a distinct node.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_registrations_admit_at_most_the_pilots_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let (_, m) = open_in(&dir);
        let (pilot, token) = m.new_pilot("local", 60_000, None, 3).await.unwrap();
        let who = m.authenticate(Some(&token)).unwrap();
        let mut racing = tokio::task::JoinSet::new();
        for i in 0..12 {
            let (m, who, name) = (m.clone(), who.clone(), pilot.name.clone());
            racing.spawn(async move {
                let req = RegisterRequest {
                    hostname: format!("n{}", i % 5),
                    ..request(Some(&name))
                };
                m.register(&who, None, req).await
            });
        }
        let admitted = racing
            .join_all()
            .await
            .into_iter()
            .filter(|o| o.is_ok())
            .count();
        assert_eq!(admitted, 3);
        let record = m.control().pilot_record(&pilot.name).cloned().unwrap();
        let mut hosts: Vec<String> = record.members.iter().map(|g| g.hostname.clone()).collect();
        hosts.sort();
        hosts.dedup();
        assert_eq!(hosts.len(), 3, "{:?}", record.members);
    }

    /// An agent whose pilot the provisioner gave up on while it registered is refused and
    /// leaves: the pilot stays failed, not revived.
    #[tokio::test]
    async fn a_pilot_that_ended_while_its_agent_registered_stays_ended() {
        let dir = tempfile::tempdir().unwrap();
        let (_, m) = open_in(&dir);
        let (pilot, _) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
        m.claim_pilot_registration(&pilot.name, "node1").unwrap();
        let gave_up = PilotEvent::Moved {
            pilot: pilot.name.clone(),
            from: PilotState::Queued,
            to: PilotState::Failed,
            reason: "no agent registered in time".into(),
        };
        assert!(m.pilot_event(gave_up, now_ms()));
        let registered = PilotEvent::Registered {
            pilot: pilot.name.clone(),
            agent: 1,
            hostname: "node1".into(),
            walltime_end_s: None,
        };
        let refused = m.decide_pilot(registered, now_ms()).map(|_| ());
        assert!(
            matches!(&refused, Err(ServiceError::Forbidden(msg)) if msg.contains("no longer waiting")),
            "{refused:?}"
        );
        let record = m.control().pilot_record(&pilot.name).cloned().unwrap();
        assert_eq!(
            (record.state, record.agent, record.reason.as_str()),
            (PilotState::Failed, None, "no agent registered in time")
        );
    }

    /// The provisioner and the agents' requests change pilots from different threads; the
    /// store must end with each pilot's last change, never an earlier one that reached the
    /// writer late (a late "batch job running" once undid an agent's registration).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_pilot_changes_reach_the_store_in_the_order_they_were_made() {
        let dir = tempfile::tempdir().unwrap();
        let (settings, m) = open_in(&dir);
        let mut made = tokio::task::JoinSet::new();
        for _ in 0..10_000 {
            let m = m.clone();
            made.spawn(async move { m.new_pilot("local", 60_000, None, 1).await.unwrap().0.name });
        }
        let names: Arc<Vec<String>> = Arc::new(made.join_all().await);
        let racers: Vec<_> = (0..4)
            .map(|racer| {
                let (m, names) = (m.clone(), names.clone());
                std::thread::spawn(move || {
                    for name in names.iter() {
                        let submitted = PilotEvent::Submitted {
                            pilot: name.clone(),
                            batch_job_id: format!("racer {racer}"),
                        };
                        m.pilot_event(submitted, now_ms());
                    }
                })
            })
            .collect();
        for racer in racers {
            racer.join().unwrap();
        }
        m.flush().await;
        let admin_token =
            std::fs::read_to_string(super::super::admin_token_path(dir.path())).unwrap();
        let admin = m.authenticate(Some(admin_token.trim())).unwrap();
        let in_memory = m.list_pilots(&admin).unwrap();
        drop(m);
        let stored = Manager::open(settings)
            .unwrap()
            .list_pilots(&admin)
            .unwrap();
        let differ: Vec<_> = in_memory
            .iter()
            .zip(&stored)
            .filter(|(a, b)| a.batch_job_id != b.batch_job_id)
            .map(|(a, b)| {
                format!(
                    "{}: {:?} in memory, {:?} stored",
                    a.name, a.batch_job_id, b.batch_job_id
                )
            })
            .collect();
        assert_eq!(stored.len(), names.len());
        assert!(differ.is_empty(), "{differ:#?}");
    }
}
