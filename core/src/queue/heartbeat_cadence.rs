//! How often agents beat and how long one may stay silent, as the number of agents grows
//! (as slurmctld spaces its pings over many nodes). Agents beat every quarter lease
//! timeout until that would bring the manager more than `heartbeats_per_second`; beyond
//! that the interval grows with the agents, and the lease timeout with it (four
//! intervals), so the manager's heartbeat load stays flat however many agents join.
//! The queues follow the most agents live at once since they started, so the interval an
//! agent was told never outlasts the timeout that judges it.

/// Heartbeats per lease timeout: one late or lost heartbeat never loses an agent.
pub const BEATS_PER_LEASE: u64 = 4;

/// The shortest interval agents are asked to beat at, milliseconds.
pub const MIN_INTERVAL_MS: u64 = 50;

/// The longest interval the agent count alone stretches the cadence to, milliseconds
/// (past it, more agents mean more heartbeats per second again).
pub const MAX_SPREAD_INTERVAL_MS: u64 = 60_000;

/// What agents are told when they register and in each heartbeat answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    /// How often each agent beats, milliseconds.
    pub heartbeat_interval_ms: u64,
    /// How long an agent may stay silent before it is lost, milliseconds: at least the
    /// configured lease timeout.
    pub lease_timeout_ms: u64,
}

/// The cadence of `agents` live agents under a configured lease timeout of
/// `configured_lease_ms`, aiming for at most `heartbeats_per_second` (none: a fixed
/// cadence of four beats per configured lease timeout).
pub fn cadence(
    configured_lease_ms: u64,
    heartbeats_per_second: Option<u32>,
    agents: u64,
) -> Cadence {
    let fixed = (configured_lease_ms / BEATS_PER_LEASE).max(MIN_INTERVAL_MS);
    let spread = heartbeats_per_second.map_or(0, |per_s| {
        agents
            .saturating_mul(1000)
            .div_ceil(u64::from(per_s.max(1)))
            .min(MAX_SPREAD_INTERVAL_MS)
    });
    let interval = fixed.max(spread);
    Cadence {
        heartbeat_interval_ms: interval,
        lease_timeout_ms: configured_lease_ms.max(interval.saturating_mul(BEATS_PER_LEASE)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_agents_beat_four_times_per_configured_lease() {
        let c = cadence(8_000, Some(2_500), 1_000);
        assert_eq!(c.heartbeat_interval_ms, 2_000);
        assert_eq!(c.lease_timeout_ms, 8_000);
        assert_eq!(cadence(8_000, None, 1_000_000), c, "no budget: fixed");
        assert_eq!(cadence(100, Some(2_500), 1).heartbeat_interval_ms, 50);
    }

    #[test]
    fn many_agents_stretch_the_interval_and_the_lease_with_it() {
        let c = cadence(8_000, Some(2_500), 10_000);
        assert_eq!(c.heartbeat_interval_ms, 4_000, "10,000 / 2,500 per second");
        assert_eq!(c.lease_timeout_ms, 16_000);
        let c = cadence(30_000, Some(2_500), 10_000);
        assert_eq!(
            c.heartbeat_interval_ms, 7_500,
            "the configured cadence is slower"
        );
        assert_eq!(c.lease_timeout_ms, 30_000);
    }

    #[test]
    fn extreme_counts_and_budgets_stay_bounded() {
        let c = cadence(8_000, Some(1), u64::MAX);
        assert_eq!(c.heartbeat_interval_ms, MAX_SPREAD_INTERVAL_MS);
        assert_eq!(c.lease_timeout_ms, MAX_SPREAD_INTERVAL_MS * BEATS_PER_LEASE);
        assert_eq!(cadence(8_000, Some(0), 10).heartbeat_interval_ms, 10_000);
        assert_eq!(cadence(u64::MAX, Some(1), 10).lease_timeout_ms, u64::MAX);
    }

    /// The queues judge silence by the stretched timeout, and keep it when agents leave.
    #[test]
    fn the_queues_lose_agents_by_the_stretched_timeout_only() {
        use crate::queue::{AgentEntry, Queues};
        use hetpilot_protocol::AgentId;
        let mut q = Queues::new(1_000);
        q.set_heartbeats_per_second(Some(1));
        for i in 0..3 {
            q.insert_agent(AgentEntry::new(AgentId(i), "p".into(), "h".into(), 1, 0));
        }
        let c = q.cadence();
        assert_eq!(c.heartbeat_interval_ms, 3_000, "3 agents at 1 per second");
        assert_eq!(c.lease_timeout_ms, 12_000);
        assert!(q.expire(5_000).is_empty(), "silent 5 s < 12 s: not lost");
        q.heartbeat(AgentId(0), 12_000).unwrap();
        assert!(!q.expire(12_001).is_empty(), "silent > 12 s: lost");
        assert_eq!(q.cadence(), c, "the cadence follows the most agents seen");
    }
}
