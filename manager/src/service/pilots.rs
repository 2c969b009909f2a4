//! The manager's side of pilots: their records (persisted through the writer), each
//! pilot's own registration credential (one use per node of its allocation: see
//! `pilot_groups`), the link between a pilot and the agents it brought up, the platforms' provisioning status, and what the provisioner reads
//! (demand, agents' idleness). Listing pilots and platforms is for admins only.

use super::pilot_groups::{no_longer_waiting, Groups};
use super::platforms::Shape;
use super::users::admin;
use super::{auth, now_ms, Manager, Principal, ServiceError};
use crate::db::{PilotCredential, StoredPilot, Write};
use crate::provision::{AgentActivity, CheckFailure, PilotHost};
use crate::queue::AgentState;
use hetpilot_protocol::pilots::PlatformStatus;
use hetpilot_protocol::pilots::{PilotMember, PilotRecord, PilotState};
use hetpilot_protocol::AgentId;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Pilots and platform statuses held by the manager.
#[derive(Default)]
pub struct PilotBook {
    pub(super) records: BTreeMap<String, PilotRecord>,
    /// Registration credential hash of each pilot that is not final (see `pilot_groups`
    /// for what it admits).
    pub(super) credentials: HashMap<String, String>,
    /// Registrations under way and each agent's pilot.
    pub(super) groups: Groups,
    pub(super) platforms: BTreeMap<String, PlatformStatus>,
    /// Each profiled platform's shape, from its profile.
    pub(super) shapes: BTreeMap<String, Shape>,
    /// The cores per pilot each profiled platform is planned with (see `platforms`).
    pub(super) planned_cores: BTreeMap<String, u32>,
    /// What each profiled platform's pilots offer besides cores (see `resource_check`).
    pub(super) resources: BTreeMap<String, super::resource_check::PlatformResources>,
    /// The round of platform checks under way (see `platform_checks`).
    pub(super) check_round: u64,
    /// Why each platform that failed the latest round of checks failed.
    pub(super) check_failures: BTreeMap<String, CheckFailure>,
    next: u64,
}

impl PilotBook {
    /// The book recovered from the store (`window_ms`: how long after a group's first
    /// agent the others may join); returns the usable credentials to re-arm.
    pub fn restore(
        stored: Vec<StoredPilot>,
        now_ms: u64,
        window_ms: u64,
    ) -> (PilotBook, Vec<(String, Principal)>) {
        let mut book = PilotBook {
            next: stored.len() as u64 + 1,
            ..PilotBook::default()
        };
        book.groups.window_ms = window_ms;
        let mut principals = Vec::new();
        for s in stored {
            let r = s.record;
            if let Some(c) = s.credential.filter(|c| c.expires_ms > now_ms) {
                // Admitting agents, or answering its agents' retried registrations until
                // its window closes.
                let expires_ms = if book.groups.admitting(&r, now_ms) {
                    c.expires_ms
                } else {
                    r.registered_ms
                        .map_or(0, |first| book.groups.window_end(first))
                        .min(c.expires_ms)
                };
                if expires_ms > now_ms && !r.state.is_final() {
                    principals.push((
                        c.hash.clone(),
                        Principal::PilotRegistration {
                            platform: r.platform.clone(),
                            pilot: r.name.clone(),
                            expires_ms,
                        },
                    ));
                    book.credentials.insert(r.name.clone(), c.hash);
                }
            }
            book.records.insert(r.name.clone(), r);
        }
        book.groups.index(book.records.values());
        (book, principals)
    }
}

impl Manager {
    pub(super) fn book(&self) -> std::sync::MutexGuard<'_, PilotBook> {
        self.pilots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pilot's batch job started at `now` (its first sign of life: the batch system's
    /// state or its agent's registration); its batch-queue wait goes to the metrics once.
    fn pilot_job_started(&self, r: &mut PilotRecord, now: u64) {
        if r.job_started_ms.is_none() {
            let waited = std::time::Duration::from_millis(now.saturating_sub(r.submitted_ms));
            self.metrics.pilot_started(&r.platform, waited);
            r.job_started_ms = Some(now);
        }
    }

    /// Changes a pilot's record and queues the write that persists it; returns the wait
    /// for its commit, or `None` when there is no such pilot or `change` left it as it
    /// was (nothing to write). The write is queued under the book's lock, so the store receives
    /// the records in the order they changed: a change made a moment earlier on another
    /// thread (e.g. the provisioner seeing the batch job start while the agent registers)
    /// can never land after, and undo, a later one.
    fn change_pilot(
        &self,
        name: &str,
        change: impl FnOnce(&mut PilotRecord),
    ) -> Option<crate::db::Queued> {
        let (committed, revoked) = {
            let mut book = self.book();
            let r = book.records.get_mut(name)?;
            let before = r.clone();
            change(r);
            if *r == before {
                return None;
            }
            if r.state.is_final() && r.ended_ms.is_none() {
                r.ended_ms = Some(now_ms());
            }
            let record = r.clone();
            let revoked = if record.state.is_final() {
                book.credentials.remove(name)
            } else {
                None
            };
            if record.state.is_final() {
                book.disband(&record);
            }
            let committed = self.writer.queue(Write::Pilot {
                record,
                credential: None,
            });
            (committed, revoked)
        };
        if let Some(hash) = revoked {
            self.tokens.remove(&hash);
        }
        Some(committed)
    }

    /// Called when an agent registered, on node `hostname`, with pilot `name`'s
    /// credential: the first makes the pilot running, each joins its group. The link is
    /// committed before the agent is answered, so a restart keeps it. Refused when the
    /// pilot stopped waiting meanwhile (the provisioner gave up on it or cancelled it).
    pub(super) async fn pilot_registered(
        &self,
        name: &str,
        agent: AgentId,
        hostname: &str,
        walltime_end_s: Option<u64>,
    ) -> Result<(), ServiceError> {
        let now = now_ms();
        let mut linked = false;
        let committed = self.change_pilot(name, |r| {
            match r.state {
                PilotState::Queued => {
                    r.state = PilotState::Running;
                    r.reason = String::new();
                    r.registered_ms = Some(now);
                    self.pilot_job_started(r, now);
                    r.agent = Some(agent.0);
                    if let Some(end) = walltime_end_s {
                        r.walltime_end_ms = Some(end.saturating_mul(1000));
                    }
                }
                PilotState::Running if r.awaits_members() => {}
                _ => return,
            }
            r.members.push(PilotMember {
                agent: agent.0,
                hostname: hostname.to_string(),
            });
            linked = true;
        });
        if !linked {
            return Err(no_longer_waiting(name));
        }
        let whole = {
            let mut book = self.book();
            book.join(
                name,
                PilotMember {
                    agent: agent.0,
                    hostname: hostname.to_string(),
                },
            );
            book.records.get(name).is_some_and(|r| !r.awaits_members())
        };
        if let Some(committed) = committed {
            committed.await?;
        }
        if whole {
            // The group's agents may be leased tasks now.
            self.waiters.work.notify_waiters();
        }
        // Its agent's slots may say more truly than the profile what a pilot brings.
        self.plan_capacities();
        Ok(())
    }

    /// Whether `agent` belongs to a pilot whose credential still admits agents: it is
    /// leased nothing until then (see `pilot_groups`).
    pub(super) fn held_for_its_group(&self, agent: AgentId) -> bool {
        let book = self.book();
        let Some(pilot) = book.groups.pilot_of(agent.0) else {
            return false;
        };
        book.records
            .get(pilot)
            .is_some_and(|r| book.groups.admitting(r, now_ms()))
    }

    /// The pilot each agent of a non-final pilot belongs to.
    pub(super) fn agent_pilots(&self) -> HashMap<u64, String> {
        self.book().groups.agent_pilots()
    }

    /// The one user whose tasks pilot `name` may run, if it is a per-user pilot.
    pub(super) fn pilot_user(&self, name: &str) -> Option<String> {
        self.book().records.get(name).and_then(|r| r.user.clone())
    }

    /// Admits the agent registering on node `hostname` with pilot `name`'s credential (see
    /// [`PilotBook::claim`]): of concurrent registrations beyond the pilot's nodes, or from
    /// one node, one wins and the others are refused. After its last admission the
    /// credential answers only its agents' retried registrations, until the window closes
    /// (see `registration_retry`).
    pub(super) fn claim_pilot_registration(
        &self,
        name: &str,
        hostname: &str,
    ) -> Result<(), ServiceError> {
        let last = self.book().claim(name, hostname, now_ms())?;
        if let Some((hash, window_end)) = last {
            self.tokens.expire_by(&hash, window_end);
        }
        Ok(())
    }

    /// Every pilot, oldest first (admin).
    pub fn list_pilots(&self, who: &Principal) -> Result<Vec<PilotRecord>, ServiceError> {
        admin(who)?;
        let mut pilots: Vec<PilotRecord> = self.book().records.values().cloned().collect();
        pilots.sort_by(|a, b| (a.submitted_ms, &a.name).cmp(&(b.submitted_ms, &b.name)));
        Ok(pilots)
    }

    /// The profiled platforms whose login host or batch system fails now.
    pub(super) fn unavailable_platforms(&self) -> HashSet<String> {
        self.book()
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
        let mut statuses: Vec<PlatformStatus> = self.book().platforms.values().cloned().collect();
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
    /// committed before this returns. Returns the record and the credential (to be written
    /// on the platform, mode 0600). A pilot of a `per-user` platform names its `user`.
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
        let name = {
            let mut book = self.book();
            let n = book.next;
            book.next += 1;
            format!("{platform}-p{n}")
        };
        if !crate::provision::profile::is_safe_name(&name) {
            return Err(ServiceError::BadRequest(format!(
                "pilot name `{name}` is too long: use a platform name of at most 50 characters"
            )));
        }
        let token = auth::new_token("hpr_");
        let hash = auth::hash(&token);
        let expires_ms = now.saturating_add(ttl_ms);
        let record = PilotRecord {
            name: name.clone(),
            platform: platform.to_string(),
            batch_job_id: None,
            state: PilotState::Queued,
            reason: "submitting".into(),
            submitted_ms: now,
            job_started_ms: None,
            registered_ms: None,
            ended_ms: None,
            agent: None,
            walltime_end_ms: None,
            user: user.map(str::to_string),
            dir_removed_ms: None,
            nodes,
            members: Vec::new(),
        };
        self.writer
            .commit(Write::Pilot {
                record: record.clone(),
                credential: Some(PilotCredential {
                    hash: hash.clone(),
                    expires_ms,
                }),
            })
            .await?;
        {
            let mut book = self.book();
            book.records.insert(name.clone(), record.clone());
            book.credentials.insert(name.clone(), hash.clone());
        }
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

    /// Changes a pilot's record and persists it (without waiting for the commit). A pilot
    /// that leaves `queued` loses its registration credential.
    fn job_started(&self, name: &str, now: u64) {
        self.update_pilot(name, |r| {
            self.pilot_job_started(r, now);
            if r.state == PilotState::Queued {
                r.reason = "batch job running; waiting for its agent to register".into();
            }
        });
    }

    fn update_pilot(&self, name: &str, change: impl FnOnce(&mut PilotRecord)) {
        // Queued already; `flush` waits for it.
        drop(self.change_pilot(name, change));
    }

    /// Waits until every pilot change sent so far is committed (an empty write queues
    /// behind them).
    async fn flush(&self) {
        if let Err(e) = self.writer.commit(Write::Changes(Vec::new())).await {
            tracing::warn!(error = %e, "pilot changes may not be stored");
        }
    }

    /// Moves pilot `name` from `from` to `to` with `reason`, unless its state changed in
    /// the meantime (e.g. its agent registered while the provisioner was deciding).
    /// Returns whether it moved.
    fn transition_pilot(&self, name: &str, from: PilotState, to: PilotState, reason: &str) -> bool {
        let mut moved = false;
        // Checked and changed under one lock: a registration cannot slip in between.
        self.update_pilot(name, |r| {
            if r.state == from {
                r.state = to;
                r.reason = reason.to_string();
                moved = true;
            }
        });
        moved
    }

    /// The non-final pilots of `platform`.
    fn tracked_pilots(&self, platform: &str) -> Vec<PilotRecord> {
        self.book()
            .records
            .values()
            .filter(|r| r.platform == platform && !r.state.is_final())
            .cloned()
            .collect()
    }

    fn ended_pilot_dirs(&self, platform: &str, ended_by_ms: u64) -> Vec<PilotRecord> {
        let mut due: Vec<PilotRecord> = self
            .book()
            .records
            .values()
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
        self.book().platforms.insert(status.name.clone(), status);
    }

    fn check_failure(&self, platform: &str) -> Option<CheckFailure> {
        self.platform_check_failure(platform)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ManagerConfig;
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
            platform: "local".into(),
            hostname: "node1".into(),
            cores: 2,
            memory_mb: 1024,
            slots: None,
            batch_job_id: Some("42".into()),
            walltime_end: Some(5000),
            pilot: pilot.map(String::from),
            zero_work: false,
            resources: Default::default(),
            protocol_version: hetpilot_protocol::agent_version::AGENT_PROTOCOL,
            registration_key: None,
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
        let record = m.book().records.get(&pilot.name).cloned().unwrap();
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
            m.held_for_its_group(first.agent),
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
        assert!(m.held_for_its_group(first.agent));
        let msg = refuse(m.register(&who, None, on("n2", &pilot.name)).await);
        assert!(msg.contains("already has an agent on node `n2`"), "{msg}");
        let second = m.register(&who, None, on("n3", &pilot.name)).await.unwrap();
        assert!(!m.held_for_its_group(first.agent) && !m.held_for_its_group(second.agent));
        let msg = refuse(m.register(&who, None, on("n4", &pilot.name)).await);
        assert!(msg.contains("no longer waiting"), "a third agent: {msg}");

        let record = m.book().records.get(&pilot.name).cloned().unwrap();
        // Whole, it answers retried registrations until its window closes, no longer.
        let window_end = m.book().groups.window_end(record.registered_ms.unwrap());
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
        assert_eq!(m.agent_pilots().get(&second.agent.0), Some(&pilot.name));
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
        let record = m.book().records.get(&pilot.name).cloned().unwrap();
        let mut hosts: Vec<String> = record.members.iter().map(|g| g.hostname.clone()).collect();
        hosts.sort();
        hosts.dedup();
        assert_eq!(hosts.len(), 3, "{:?}", record.members);
    }

    /// Past the registration window after the first agent, the credential admits no one
    /// and the group's agents are no longer held: it runs with the nodes it has.
    #[tokio::test]
    async fn a_group_stops_admitting_after_its_window() {
        let dir = tempfile::tempdir().unwrap();
        let (_, m) = open_in(&dir);
        let (pilot, token) = m.new_pilot("local", 60_000, None, 2).await.unwrap();
        let who = m.authenticate(Some(&token)).unwrap();
        let first = m
            .register(&who, None, request(Some(&pilot.name)))
            .await
            .unwrap();
        assert!(m.held_for_its_group(first.agent));
        let window = m.book().groups.window_ms;
        m.update_pilot(&pilot.name, |r| {
            r.registered_ms = Some(now_ms().saturating_sub(window + 1));
        });
        assert!(!m.held_for_its_group(first.agent));
        let late = RegisterRequest {
            hostname: "node2".into(),
            ..request(Some(&pilot.name))
        };
        let refused = m.register(&who, None, late).await;
        assert!(
            matches!(&refused, Err(ServiceError::Forbidden(msg)) if msg.contains("no longer waiting")),
            "{refused:?}"
        );
    }

    /// An agent whose pilot the provisioner gave up on while it registered is refused and
    /// leaves: the pilot stays failed, not revived.
    #[tokio::test]
    async fn a_pilot_that_ended_while_its_agent_registered_stays_ended() {
        let dir = tempfile::tempdir().unwrap();
        let (_, m) = open_in(&dir);
        let (pilot, _) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
        m.claim_pilot_registration(&pilot.name, "node1").unwrap();
        assert!(m.transition_pilot(
            &pilot.name,
            PilotState::Queued,
            PilotState::Failed,
            "no agent registered in time"
        ));
        let refused = m
            .pilot_registered(&pilot.name, AgentId(1), "node1", None)
            .await;
        assert!(
            matches!(&refused, Err(ServiceError::Forbidden(msg)) if msg.contains("no longer waiting")),
            "{refused:?}"
        );
        let record = m.book().records.get(&pilot.name).cloned().unwrap();
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
                        m.update_pilot(name, |r| {
                            r.reason = format!("racer {racer}");
                        });
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
            .filter(|(a, b)| a.reason != b.reason)
            .map(|(a, b)| {
                format!(
                    "{}: {:?} in memory, {:?} stored",
                    a.name, a.reason, b.reason
                )
            })
            .collect();
        assert_eq!(stored.len(), names.len());
        assert!(differ.is_empty(), "{differ:#?}");
    }
}
