//! Live fairshare accounting: every recorded run charges its application's owner through
//! the pure [`fairshare`](crate::fairshare) ledger, and the first level weights users by
//! their fairshare priority. Rebuilt from the store's runs at start-up.
//!
//! A run's charge is walltime × SPEC × P(j) (the multi-resource paper, eq. 6/9): SPEC is the
//! relative speed of the run's platform from the online profile, and P(j) the penalty of
//! one node request (the task's cores and memory) on the agent's node, e.g. eq. 4:
//! PE = max(reqCPU / availCPU, reqRAM / availRAM) × availCPU. Charges decay with a
//! half-life; the priority is the fairshare factor 2^(-U/S).
//!
//! What each application's runs cost is kept beside the ledger, so that when an ended
//! application is forgotten (its runs leave the store) its charges can be carried over
//! ([`CarriedUsage`]) and its owner's usage survives a restart.

use super::FairshareConfig;
use super::{AgentResources, AppResources, CarriedUsage, Run};
use crate::fairshare::{
    priorities, JobRequest, Machine, MachinePool, PenaltyFunction, Shares, UsageAccount,
    UsageLedger, UsageRecord,
};
use hetpilot_protocol::views::UserUsage;
use hetpilot_protocol::{AgentId, AppId};
use std::collections::HashMap;

/// The lowest weight a user gets, so that a heavy user still gets some cores.
const MIN_WEIGHT: f64 = 1e-3;

/// Usage per user, and what pricing a run needs.
pub(crate) struct Usage {
    enabled: bool,
    shares: Shares,
    ledger: UsageLedger,
    penalty: Box<dyn PenaltyFunction>,
    apps: HashMap<AppId, AppResources>,
    /// What each application's runs were charged, to carry over when it is forgotten.
    charged: HashMap<AppId, UsageAccount>,
    /// Each agent's node as a one-machine platform.
    nodes: HashMap<AgentId, MachinePool>,
}

/// An agent's node as the penalty sees it (a node that did not say its memory has so
/// much that memory never dominates).
fn node(agent: &AgentResources) -> MachinePool {
    // Unknown (0) or absurd sizes mean memory never dominates; `memory_mb` is bounded at
    // registration, but rows stored by earlier versions are not.
    let ram = match agent.memory_mb.checked_mul(1 << 20) {
        Some(bytes) if bytes > 0 => bytes.min(u64::MAX / 2),
        _ => u64::MAX / 2,
    };
    let machine = Machine::new(&agent.platform, 1, agent.slots.max(1), ram);
    MachinePool::new(vec![machine]).expect("one machine with CPUs, RAM and a node")
}

impl Usage {
    pub(crate) fn new(config: &FairshareConfig) -> Usage {
        let half_life = (config.half_life_hours > 0.0).then_some(config.half_life_hours * 3600.0);
        Usage {
            enabled: config.enabled,
            shares: Shares {
                default: 1.0,
                by_user: config.shares.clone(),
            },
            ledger: UsageLedger::new(half_life),
            penalty: config.penalty.build(),
            apps: HashMap::new(),
            charged: HashMap::new(),
            nodes: HashMap::new(),
        }
    }

    pub(crate) fn app(&mut self, app: AppResources) {
        self.apps.insert(app.app, app);
    }

    /// Charges carried over from forgotten applications (start-up).
    pub(crate) fn carry(&mut self, carried: &CarriedUsage) {
        self.ledger.carry(&carried.user, &carried.usage);
    }

    /// Forgets `app`: its owner's usage stays in the ledger; what its runs cost comes
    /// back, to be stored as carried over (`None` when they cost nothing).
    pub(crate) fn forget(&mut self, app: AppId) -> Option<CarriedUsage> {
        let resources = self.apps.remove(&app)?;
        let usage = self.charged.remove(&app)?;
        Some(CarriedUsage {
            user: resources.owner,
            usage,
        })
    }

    /// The half-life charges decay with, seconds (None: no decay).
    pub(crate) fn half_life(&self) -> Option<f64> {
        self.ledger.half_life()
    }

    pub(crate) fn agent(&mut self, agent: &AgentResources) {
        self.nodes.insert(agent.agent, node(agent));
    }

    /// Charges a run's owner; `speed` is the relative speed of the run's platform.
    pub(crate) fn charge(&mut self, run: &Run, speed: f64) {
        let (Some(app), Some(node)) = (self.apps.get(&run.app), self.nodes.get(&run.agent)) else {
            return;
        };
        let m = &node.machines()[0];
        // The task ran there, so it had at most the node.
        let request = JobRequest::uniform(
            1,
            app.cores.clamp(1, m.cpus_per_node),
            app.memory_mb.saturating_mul(1 << 20).min(m.ram_per_node),
            0,
        );
        let record = UsageRecord {
            user: app.owner.clone(),
            request,
            walltime: run.wall_ms.max(0.0) / 1000.0,
            speed,
            start: run.started_ms as f64 / 1000.0,
        };
        match self.ledger.record(node, self.penalty.as_ref(), &record) {
            Ok(amount) => {
                let half_life = self.ledger.half_life();
                self.charged
                    .entry(run.app)
                    .or_default()
                    .add(amount, record.start, half_life);
            }
            Err(e) => tracing::warn!(app = %run.app, error = %e, "run not charged to its owner"),
        }
    }

    /// First-level weights by owner at `now_ms` (empty, i.e. equal, when disabled).
    pub(crate) fn weights<'a>(
        &self,
        owners: impl IntoIterator<Item = &'a str>,
        now_ms: u64,
    ) -> HashMap<String, f64> {
        if !self.enabled {
            return HashMap::new();
        }
        self.table(owners, now_ms)
            .into_iter()
            .map(|u| {
                let weight = self.shares.of(&u.user) * u.priority;
                (u.user, weight.max(MIN_WEIGHT))
            })
            .collect()
    }

    /// Every charged user plus `users`, highest priority first.
    pub(crate) fn table<'a>(
        &self,
        users: impl IntoIterator<Item = &'a str>,
        now_ms: u64,
    ) -> Vec<UserUsage> {
        priorities(&self.ledger, &self.shares, users, now_ms as f64 / 1000.0)
            .into_iter()
            .map(|p| UserUsage {
                user: p.user,
                usage: p.raw_usage,
                decayed_usage: p.usage,
                priority: p.factor,
            })
            .collect()
    }

    /// Owners of every known application.
    pub(crate) fn owners(&self) -> impl Iterator<Item = &str> {
        self.apps.values().map(|a| a.owner.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::protocol::Outcome;

    fn setup(enabled: bool) -> Usage {
        let mut u = Usage::new(&FairshareConfig {
            enabled,
            ..FairshareConfig::default()
        });
        for (id, owner, cores, memory_mb) in
            [(1, "heavy", 2, 0), (2, "light", 1, 0), (3, "fat", 1, 3072)]
        {
            u.app(AppResources {
                app: AppId(id),
                owner: owner.into(),
                cores,
                memory_mb,
            });
        }
        u.agent(&AgentResources {
            agent: AgentId(7),
            platform: "p".into(),
            slots: 4,
            memory_mb: 4096,
        });
        u
    }

    fn run(app: u64, wall_s: f64) -> Run {
        Run {
            variant: None,
            app: AppId(app),
            agent: AgentId(7),
            outcome: Outcome::Success,
            wall_ms: wall_s * 1000.0,
            started_ms: 0,
            co_runners: Vec::new(),
            transfers: Vec::new(),
            device_co_runners: None,
        }
    }

    #[test]
    fn charges_follow_cores_memory_and_speed_and_order_users() {
        let mut u = setup(true);
        u.charge(&run(1, 100.0), 1.0);
        u.charge(&run(2, 100.0), 2.0);
        // 1 core but 3 GiB of a 4-GiB, 4-core node: 3 processor equivalents (eq. 4).
        u.charge(&run(3, 10.0), 1.0);
        let table = u.table(["idle"], 0);
        let row = |name: &str| table.iter().find(|r| r.user == name).unwrap().clone();
        assert_eq!(row("heavy").usage, 200.0, "2 cores × 100 s");
        assert_eq!(
            row("light").usage,
            200.0,
            "1 core × 100 s on a 2× faster platform"
        );
        assert_eq!(row("fat").usage, 30.0);
        assert_eq!(table[0].user, "idle");
        assert_eq!(table[0].priority, 1.0);
        assert!(row("fat").priority > row("heavy").priority);
        let w = u.weights(["idle"], 0);
        assert!(w["idle"] > w["fat"] && w["fat"] > w["heavy"]);
        assert!(
            setup(false).weights(["idle"], 0).is_empty(),
            "disabled: equal weights"
        );
    }

    #[test]
    fn bad_configuration_names_the_choices() {
        let e = toml::from_str::<FairshareConfig>("penalty = \"drf\"").unwrap_err();
        assert!(e.to_string().contains("multi-resource"), "{e}");
        assert!(FairshareConfig::default().problem().is_none());
        let c = FairshareConfig {
            shares: [("alice".to_string(), 0.0)].into(),
            ..FairshareConfig::default()
        };
        assert!(c.problem().unwrap().contains("`alice`"));
    }

    #[test]
    fn shares_scale_weights_and_raise_the_priority_of_equal_usage() {
        let mut u = Usage::new(&FairshareConfig {
            shares: [("big".to_string(), 3.0)].into(),
            ..FairshareConfig::default()
        });
        for (id, owner) in [(1, "big"), (2, "small")] {
            u.app(AppResources {
                app: AppId(id),
                owner: owner.into(),
                cores: 1,
                memory_mb: 0,
            });
        }
        u.agent(&AgentResources {
            agent: AgentId(7),
            platform: "p".into(),
            slots: 4,
            memory_mb: 0,
        });
        // Nothing used yet: weights are the shares.
        let w = u.weights(["big", "small"], 0);
        assert_eq!((w["big"], w["small"]), (3.0, 1.0));
        // Equal usage: the user with the larger share keeps the higher factor.
        u.charge(&run(1, 100.0), 1.0);
        u.charge(&run(2, 100.0), 1.0);
        let table = u.table(["big", "small"], 0);
        assert_eq!(table[0].user, "big");
        assert!(table[0].priority > table[1].priority);
    }
}
