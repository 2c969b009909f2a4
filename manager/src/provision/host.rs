//! What the provisioner needs of the manager, as one narrow trait: the pilots it tracks and
//! their records, the demand per platform (and per user), the activity of pilots' agents,
//! and where to post each platform's status. `service::Manager` implements it; the
//! provisioner never calls into the manager otherwise, so provisioning depends on no
//! service internals (and tests can drive it with a stand-in host).

use crate::control::PilotEvent;
use hetpilot_protocol::pilots::{PilotRecord, PlatformStatus};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;

/// A platform's failed checks: why, how many rounds in a row, and when they run again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    pub reason: String,
    pub backoff: super::reconcile::Backoff,
}

/// What the provisioner needs to know about one tracked pilot's agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentActivity {
    pub idle: bool,
    pub draining: bool,
    /// Declared lost after missing heartbeats.
    pub lost: bool,
    /// Still active or draining: neither lost nor gone.
    pub live: bool,
    /// The manager asked it to drain (it did not only stop on its own or on a signal).
    pub drain_ordered: bool,
}

/// The manager, as the provisioner sees it.
pub trait PilotHost: Send + Sync + 'static {
    /// Why a pilot could not be created.
    type Error: std::fmt::Display + Send;

    /// Creates a pilot of `nodes` nodes on `platform` (for `user` only, on a per-user
    /// platform) with its own registration credential valid for `ttl_ms` (for one agent per
    /// node), committed before it returns; returns the record and the credential to write
    /// on the platform.
    fn new_pilot(
        &self,
        platform: &str,
        ttl_ms: u64,
        user: Option<&str>,
        nodes: u32,
    ) -> impl Future<Output = Result<(PilotRecord, String), Self::Error>> + Send;

    /// Something happened to a pilot (see [`PilotEvent`]): the manager decides what it
    /// changes, in the order events come from every thread, and stores it (`flush` waits
    /// for that). Returns whether it changed the pilot (a move from a state the pilot
    /// left meanwhile, e.g. as its agent registered, changes nothing).
    fn pilot_event(&self, event: PilotEvent, now: u64) -> bool;

    /// Waits until every pilot change made so far is stored.
    fn flush(&self) -> impl Future<Output = ()> + Send;

    /// The non-final pilots of `platform`.
    fn tracked_pilots(&self, platform: &str) -> Vec<PilotRecord>;

    /// The cores a pilot of `platform` brings, as its agents registered them (`None` before
    /// any did: the profile's `cores_per_node` then).
    fn registered_cores(&self, platform: &str) -> Option<u32>;

    /// Cores' worth of waiting work `platform` should get pilots for.
    fn demand_cores(&self, platform: &str) -> u64;

    /// [`Self::demand_cores`] per owner of the waiting work.
    fn demand_by_user(&self, platform: &str) -> BTreeMap<String, u64>;

    /// Whether each of `agents` holds no tasks, is draining, or was lost.
    fn agent_activity(&self, agents: &[u64]) -> HashMap<u64, AgentActivity>;

    /// Asks a pilot's agent to finish its tasks and leave.
    fn drain_agent(&self, agent: u64);

    /// The batch job of `agent`'s pilot ended under it (`reason`): the agent is lost now
    /// and its tasks go back to their queues at once, not after the lease timeout.
    fn pilot_ended(&self, agent: u64, reason: &str);

    fn set_platform_status(&self, status: PlatformStatus);

    /// The final pilots of `platform` that ended at or before `ended_by_ms` and whose
    /// directory on the platform was not removed yet, oldest first.
    fn ended_pilot_dirs(&self, platform: &str, ended_by_ms: u64) -> Vec<PilotRecord>;

    /// Keeps `contents`, the end of pilot `pilot`'s batch output file `file` (a plain file
    /// name), in the manager's data directory.
    fn keep_pilot_log(&self, pilot: &str, file: &str, contents: &[u8]) -> std::io::Result<()>;

    /// Why `platform` failed its latest checks (`serve` runs them at start and on every
    /// reload, and again on the backoff schedule while they fail): no pilot is submitted to
    /// it meanwhile. `None` when it passed or was not checked.
    fn check_failure(&self, _platform: &str) -> Option<CheckFailure> {
        None
    }
}
