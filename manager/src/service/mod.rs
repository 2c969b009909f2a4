//! The live manager: the queues, the store and the tokens behind one handle, with the
//! operations the HTTP API exposes. It answers only after what it promises is committed.

mod agent_protocol;
mod agent_resources;
mod agents;
pub mod auth;
mod bounds;
mod control_lock;
mod dashboard;
mod data_checks;
#[cfg(test)]
mod disk_full_tests;
mod error;
mod event_streams;
mod events;
mod file_listing;
mod files;
#[cfg(test)]
mod group_hold_tests;
mod history;
mod parallel_check;
mod pilots;
mod platform_checks;
mod platform_state;
mod platforms;
mod register_source;
mod registration_retry;
#[cfg(test)]
mod registration_retry_tests;
mod resource_check;
#[cfg(test)]
mod resource_tests;
mod retention;
#[cfg(test)]
mod retention_tests;
mod rounds;
mod staging_plan;
mod store_grants;
mod task_outputs;
mod task_quotas;
#[cfg(test)]
mod test_support;
mod users;
#[cfg(test)]
mod variant_tests;
mod wake;
#[cfg(test)]
mod wanted_tests;
mod workflow;
mod workflow_submit;
mod workflow_tasks;

pub use crate::clock::now_ms;
pub use crate::provision::AgentActivity;
pub use auth::Principal;
pub use error::ServiceError;
pub use events::{EventFollower, KEEPALIVE};
pub use files::ServiceFile;
pub use hetpilot_protocol::pilots::PlatformStatus;
pub use platform_checks::ReloadReply;
pub use staging_plan::StagingStatus;
pub use task_outputs::StoredOutput;
pub use users::{TaskPage, MAX_TASK_PAGE};
pub use workflow_submit::{
    ExternalInput, ExternalInputs, WorkflowFormat, WorkflowInputs, WorkflowRequest,
};

use crate::config::ManagerConfig;
use crate::control::{Control, ControlSettings};
use crate::db::{self, Reader, Write, Writer};
use auth::Tokens;
use control_lock::{ControlGuard, JournalFile};
use hetpilot_protocol::AgentId;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use wake::Waiters;

pub struct Manager {
    pub settings: ManagerConfig,
    /// Every decision: the queues and the policies (see `control`). Planning runs off
    /// this lock (`rounds`, `staging_plan`).
    control: Mutex<Control>,
    /// Where the control plane's inputs are journaled, when asked (`--journal`).
    journal: Option<JournalFile>,
    writer: Writer,
    reader: Arc<Reader>,
    tokens: Tokens,
    /// Agents and clients in a long poll, woken as the control plane decides (`wake`).
    waiters: Waiters,
    /// What each agent's reports since its last pull answer said it wants (see
    /// `agents::pull`).
    wanted: dashmap::DashMap<AgentId, u32>,
    /// Agents not heard from since they registered, with their keys (see
    /// `registration_retry`).
    unanswered: registration_retry::UnansweredRegistrations,
    next_app: AtomicU64,
    next_agent: AtomicU64,
    /// Tasks of submits between their quota check and the queues (see `task_quotas`).
    quota_reservations: task_quotas::Reservations,
    /// Woken when something that matters to scheduling changes.
    replan: Arc<Notify>,
    /// The profiled platforms' statuses, shapes and checks (see `platform_state`).
    platforms: Mutex<platform_state::PlatformState>,
    /// Each non-final pilot's registration credential hash (see `pilots`).
    pilot_credentials: pilots::PilotCredentials,
    /// The number in the next pilot's name.
    next_pilot: AtomicU64,
    /// Where reloads of the platform profiles go (`serve` sets it; see `platform_checks`).
    platform_reloads: std::sync::OnceLock<tokio::sync::mpsc::Sender<ReloadReply>>,
    /// The secrets of `[[storage]]`, for grants to agents.
    stores: store_grants::StoreKeys,
    /// Bytes each user keeps in the file service.
    file_usage: files::FileUsage,
    /// Task outputs asked of agents for readers (`task_outputs`).
    output_requests: task_outputs::OutputRequests,
    /// The background Het-HPS planner (see `staging_plan`).
    staging_planner: staging_plan::StagingPlanner,
    /// What the dashboard charts over time (see `history`).
    history: history::HistoryRing,
    /// Task-event streams open per user (`events`).
    event_streams: event_streams::StreamSlots,
    /// Event counters and histograms for `GET /metrics`.
    pub metrics: crate::metrics::Metrics,
}

/// Where the admin token of a data directory is kept (mode 0600).
pub fn admin_token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.token")
}

/// Where a rotation writes the new admin token before the database takes it; renamed over
/// [`admin_token_path`] once it does (start-up finishes a rotation cut short there).
pub fn new_admin_token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.token.new")
}

pub fn database_path(data_dir: &Path) -> PathBuf {
    data_dir.join("hetpilot.db")
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot use data directory {dir}: {source}")]
    DataDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the database {path}: {source}")]
    Database {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// A schema version this build does not open (a newer release wrote the database).
    #[error("cannot open the database {}: {problem}", path.display())]
    Schema {
        path: PathBuf,
        problem: db::SchemaError,
    },
    #[error(
        "the database {} is damaged ({problem}); nothing was read from it: stop restarting \
         the manager and restore the file from a backup of the data directory", path.display()
    )]
    DamagedDatabase { path: PathBuf, problem: String },
    #[error(
        "the admin token file {} is damaged ({problem}): restore it from a backup of the \
         data directory (the database keeps only the token's hash)", path.display()
    )]
    DamagedAdminToken { path: PathBuf, problem: String },
    #[error(
        "the database {} has lost its contents (it is missing or empty, or holds no users), \
         but {} shows this data directory was started before: restore the database from a \
         backup of the data directory (if its first start was cut short instead, remove {} \
         and start again)",
        database.display(), admin_token.display(), admin_token.display()
    )]
    UsersLost {
        database: PathBuf,
        admin_token: PathBuf,
    },
    #[error("cannot write the admin token {path}: {source}")]
    AdminToken {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("configuration `[[storage]]`: {0}")]
    Storage(#[from] hetpilot_transport::store_grant::SecretError),
    #[error("configuration `[scheduler]`: {0}")]
    Scheduler(#[from] crate::sched::SchedError),
    #[error("cannot write the journal {path}: {source}")]
    Journal {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the control plane is configured with, from the manager's configuration.
pub fn control_settings(settings: &ManagerConfig) -> ControlSettings {
    ControlSettings {
        scheduler: settings.scheduler.clone(),
        fairshare: settings.fairshare.clone(),
        lease_timeout_ms: settings.lease_timeout_ms(),
        heartbeats_per_second: Some(settings.heartbeats_per_second),
        store_io_mib_per_s: settings
            .storage
            .iter()
            .filter_map(|s| Some((format!("store:{}", s.name), s.io_mib_per_s?)))
            .collect(),
    }
}

impl Manager {
    /// Opens (or creates) the data directory and recovers the state recorded there.
    /// On first start an admin token is created and written to `admin.token` (mode 0600).
    pub fn open(settings: ManagerConfig) -> Result<Arc<Manager>, OpenError> {
        Self::open_journaled(settings, None)
    }

    /// [`Manager::open`], journaling every input of the control plane to `journal` (one
    /// JSON object a line; `hetpilot simulate live --replay` reads it).
    pub fn open_journaled(
        settings: ManagerConfig,
        journal: Option<&Path>,
    ) -> Result<Arc<Manager>, OpenError> {
        let dir = settings.data_dir.clone();
        private_data_dir(&dir).map_err(|source| OpenError::DataDir {
            dir: dir.clone(),
            source,
        })?;
        let db_path = database_path(&dir);
        let depth = if settings.full_check {
            db::Depth::Full
        } else {
            db::Depth::Quick
        };
        data_checks::check_database(&dir, &db_path, depth)?;
        private_files(&db_path).map_err(|source| OpenError::DataDir {
            dir: dir.clone(),
            source,
        })?;
        let db_err = |source| data_checks::database_error(&db_path, source);
        let conn = db::open(&db_path).map_err(|e| match e {
            db::SchemaError::Sqlite(source) => db_err(source),
            problem => OpenError::Schema {
                path: db_path.clone(),
                problem,
            },
        })?;
        let now = now_ms();
        let loaded = db::load(&conn, now).map_err(db_err)?;
        data_checks::check_admin_token(&dir, &loaded.users)?;
        for row in &loaded.skipped {
            tracing::error!(%row, "a stored row cannot be read back and was skipped; the rest of the state is recovered");
        }
        let stores = store_grants::StoreKeys::load(&settings)?;
        let control_settings = control_settings(&settings);
        let mut control = Control::new(&control_settings, db::measured(&conn).map_err(db_err)?)?;
        let journal = match journal {
            Some(path) => Some(
                JournalFile::create(path).map_err(|source| OpenError::Journal {
                    path: path.to_path_buf(),
                    source,
                })?,
            ),
            None => None,
        };
        let reader = Arc::new(Reader::open(&db_path).map_err(db_err)?);
        let tokens = Tokens::default();
        let first_start = loaded.users.is_empty();
        for u in &loaded.users {
            tokens.insert(
                u.token_hash.clone(),
                Principal::User {
                    name: u.name.clone(),
                    admin: u.admin,
                },
            );
        }
        for t in &loaded.agent_tokens {
            tokens.insert(
                t.token_hash.clone(),
                Principal::AgentRegistration {
                    platform: t.platform.clone(),
                    expires_ms: t.expires_ms,
                    token_id: auth::token_id(&t.token_hash),
                    register_from: t.register_from.clone(),
                },
            );
        }
        let apps = loaded.apps.len();
        // A per-user pilot's agent stays its user's after a restart.
        let pilot_users: std::collections::HashMap<u64, String> = loaded
            .pilots
            .iter()
            .filter_map(|p| Some((p.record.agent?, p.record.user.clone()?)))
            .collect();
        let mut agents = Vec::with_capacity(loaded.agents.len());
        let unanswered = registration_retry::UnansweredRegistrations::default();
        for mut a in loaded.agents {
            a.entry.only_user = pilot_users.get(&a.entry.id.0).cloned();
            if a.active {
                // Until it calls, it may be one whose registration's answer was lost.
                if let Some(key_hash) = a.registration_key_hash {
                    unanswered.recorded(a.entry.id, key_hash, a.credential_hash.clone());
                }
                tokens.insert(a.credential_hash, Principal::Agent(a.entry.id));
            }
            agents.push(a.entry);
        }
        if apps > 0 || !agents.is_empty() {
            control.restore(loaded.apps, agents, &loaded.grants, loaded.groups, now);
            // Nobody waits yet: only the changes matter, stored before anything else.
            let changes = control.take_effects().changes;
            if !changes.is_empty() {
                let tx = conn.unchecked_transaction().map_err(db_err)?;
                // Numbers ends past those stored (the writer thread reads them again).
                let mut ends = crate::db::EndSequences::default();
                Write::Changes(changes)
                    .apply(&tx, &mut ends)
                    .map_err(db_err)?;
                tx.commit().map_err(db_err)?;
            }
        }
        let next_pilot = loaded.pilots.len() as u64 + 1;
        let (pilot_principals, pilot_credentials) = pilots::restore_pilots(
            &mut control,
            loaded.pilots,
            crate::config::provision::ms(settings.provision.register_timeout_secs),
            now,
        );
        if journal.is_some() {
            control.start_journal(&control_settings);
        }
        for (hash, who) in pilot_principals {
            tokens.insert(hash, who);
        }
        if first_start {
            let token = auth::new_token("hpu_");
            let path = admin_token_path(&dir);
            write_secret(&path, &token).map_err(|source| OpenError::AdminToken {
                path: path.clone(),
                source,
            })?;
            let hash = auth::hash(&token);
            let tx = conn.unchecked_transaction().map_err(db_err)?;
            Write::User {
                name: "admin".into(),
                token_hash: hash.clone(),
                admin: true,
                now_ms: now,
            }
            .apply(&tx, &mut db::EndSequences::default())
            .map_err(db_err)?;
            tx.commit().map_err(db_err)?;
            tokens.insert(
                hash,
                Principal::User {
                    name: "admin".into(),
                    admin: true,
                },
            );
            tracing::info!(path = %path.display(), "first start: admin token created");
        }
        tracing::info!(applications = apps, data_dir = %dir.display(), "state recovered");
        Ok(Arc::new(Manager {
            control: Mutex::new(control),
            journal,
            writer: Writer::spawn(conn),
            reader,
            tokens,
            waiters: Waiters::default(),
            wanted: dashmap::DashMap::new(),
            unanswered,
            next_app: AtomicU64::new(loaded.next_app),
            next_agent: AtomicU64::new(loaded.next_agent),
            quota_reservations: Default::default(),
            replan: Arc::new(Notify::new()),
            platforms: Mutex::default(),
            pilot_credentials,
            next_pilot: AtomicU64::new(next_pilot),
            platform_reloads: Default::default(),
            stores,
            file_usage: files::FileUsage::default(),
            output_requests: Default::default(),
            staging_planner: Default::default(),
            history: Default::default(),
            event_streams: Default::default(),
            metrics: Default::default(),
            settings,
        }))
    }

    /// The control plane, locked; what it journaled meanwhile is written out on unlock.
    fn control(&self) -> ControlGuard<'_> {
        ControlGuard::new(
            self.control.lock().unwrap_or_else(|p| p.into_inner()),
            self.journal.as_ref(),
            &self.writer,
            &self.waiters,
            control_lock::Planners {
                round: &self.replan,
                staging: self.staging_planner.wanted(),
            },
        )
    }

    /// The principal of a bearer token.
    pub fn authenticate(&self, token: Option<&str>) -> Result<Principal, ServiceError> {
        token
            .and_then(|t| self.tokens.resolve(t, now_ms()))
            .ok_or(ServiceError::Unauthorized)
    }

    /// Completes once `token` no longer authenticates: re-issued, rotated, revoked, or the
    /// credential of an agent that left or was lost (expiry counts when a revocation wakes
    /// the check). Long polls race their wait against it.
    pub async fn until_revoked(&self, token: &str) {
        loop {
            let next = self.tokens.next_revocation();
            tokio::pin!(next);
            next.as_mut().enable();
            if self.tokens.resolve(token, now_ms()).is_none() {
                return;
            }
            next.await;
        }
    }

    /// Runs a read query on the blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Reader) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, ServiceError> {
        let reader = self.reader.clone();
        tokio::task::spawn_blocking(move || f(&reader))
            .await?
            .map_err(ServiceError::from)
    }

    /// Declares silent agents lost, every quarter lease timeout, until the manager is dropped.
    pub fn spawn_sweeper(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let period = Duration::from_millis((self.settings.lease_timeout_ms() / 4).max(50));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tick.tick().await;
                let Some(manager) = weak.upgrade() else { break };
                manager.expire_silent_agents();
            }
        });
    }

    fn expire_silent_agents(&self) {
        let changed = self.release_agents(|control| control.expire(now_ms()));
        if changed > 0 {
            tracing::warn!(
                changes = changed,
                "agents lost; their tasks went back to their queues"
            );
        }
    }

    /// Declares `agent` lost now (its pilot's batch job ended under it, `reason`): what it
    /// held goes back to the queues at once.
    pub(super) fn lose_agent(&self, agent: AgentId, reason: &str) {
        let changed = self.release_agents(|control| control.pilot_ended(agent, reason, now_ms()));
        if changed > 0 {
            tracing::info!(
                agent = agent.0,
                reason,
                changes = changed,
                "agent lost with its pilot; its tasks went back to their queues"
            );
        }
    }

    /// Applies `release` (agents leaving the queues), stores its changes, revokes the
    /// credentials of the agents it ended and wakes whoever waits for work; returns how
    /// many changes it made.
    fn release_agents(&self, release: impl FnOnce(&mut Control) -> usize) -> usize {
        let (changed, ended) = {
            let mut control = self.control();
            let changed = release(&mut control);
            let ended: Vec<AgentId> = control
                .effects()
                .changes
                .iter()
                .filter_map(|change| match change {
                    crate::queue::Change::AgentEnded { agent, .. } => Some(*agent),
                    _ => None,
                })
                .collect();
            // Stored in the background (as the lock is released), in order with every
            // other change.
            (changed, ended)
        };
        for agent in ended {
            self.revoke_agent_credential(agent);
        }
        changed
    }
}

impl Manager {
    /// Whether the last commit was refused for want of space in the data directory (new
    /// work is refused with [`crate::db::StoreError::Full`] meanwhile).
    pub fn data_dir_full(&self) -> bool {
        self.writer.data_dir_full()
    }

    /// An agent that left, was drained out or was declared lost loses its credential: a
    /// copy of it (in a task's hands, say) reaches nothing any more. What its reports said
    /// it wants is forgotten with it.
    fn revoke_agent_credential(&self, id: hetpilot_protocol::AgentId) {
        self.tokens
            .revoke_where(|who| matches!(who, Principal::Agent(a) if *a == id));
        self.wanted.remove(&id);
        self.unanswered.ended(id);
    }
}

/// Creates the data directory, or tightens an existing one we own, to mode 0700: it holds
/// every user's commands, environments and files.
pub fn private_data_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::metadata(dir)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "it belongs to uid {}, not to this user (uid {me}); choose a data directory of your own",
                meta.uid()
            ),
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        tracing::warn!(dir = %dir.display(), "the data directory was readable by others; it is now 0700");
    }
    Ok(())
}

/// The database and its WAL files readable by their owner only (SQLite gives new WAL and
/// shared-memory files the database file's mode).
fn private_files(db: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(db)?;
    for suffix in ["", "-wal", "-shm"] {
        let path = PathBuf::from(format!("{}{suffix}", db.display()));
        match std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Writes a secret readable by its owner only.
pub fn write_secret(path: &Path, secret: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(secret.as_bytes())?;
    f.write_all(b"\n")?;
    f.sync_all()
}

fn next(counter: &AtomicU64) -> u64 {
    counter.fetch_add(1, Ordering::Relaxed)
}
