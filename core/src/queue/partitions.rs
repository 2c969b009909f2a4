//! Het-HPS partitions of one data-intensive application: an ordered list of task indices
//! per agent (the planner's per-node list, bound to that agent) and a pool of tasks no
//! agent owns (the lists of agents that left). An agent takes from its own list in planned
//! order, then from the pool, then steals from the tail of the most loaded list. Entries
//! are only hints: a task is handed out only if it still waits, so a stale entry is skipped.

use hetpilot_protocol::AgentId;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

/// The Het-HPS plan of one application, bound to its agents (see the module doc).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partitions {
    /// The agent-set version the plan was made for (see `Queues::agent_generation`).
    pub generation: u64,
    lists: HashMap<AgentId, VecDeque<u64>>,
    pool: VecDeque<u64>,
}

impl Partitions {
    /// A plan: each agent's ordered task indices, plus tasks to share out first come first
    /// served.
    pub fn new(generation: u64, lists: Vec<(AgentId, Vec<u64>)>, pool: Vec<u64>) -> Self {
        Partitions {
            generation,
            lists: lists
                .into_iter()
                .map(|(agent, list)| (agent, list.into()))
                .collect(),
            pool: pool.into(),
        }
    }

    /// The next task for `agent` among those for which `waiting` holds.
    pub(crate) fn next(&mut self, agent: AgentId, waiting: impl Fn(u64) -> bool) -> Option<u64> {
        if let Some(own) = self.lists.get_mut(&agent) {
            if let Some(t) = pop_front_where(own, &waiting) {
                return Some(t);
            }
        }
        if let Some(t) = pop_front_where(&mut self.pool, &waiting) {
            return Some(t);
        }
        loop {
            // Steal from the tail of the most loaded list (ties: the smallest agent id).
            let victim = self
                .lists
                .iter()
                .filter(|(_, l)| !l.is_empty())
                .max_by_key(|(a, l)| (l.len(), std::cmp::Reverse(**a)))
                .map(|(a, _)| *a)?;
            let list = self.lists.get_mut(&victim).expect("chosen above");
            while let Some(t) = list.pop_back() {
                if waiting(t) {
                    return Some(t);
                }
            }
        }
    }

    /// An agent left: its unstarted tasks go to the pool, in its planned order.
    pub(crate) fn release(&mut self, agent: AgentId) {
        if let Some(list) = self.lists.remove(&agent) {
            self.pool.extend(list);
        }
    }

    /// Tasks still listed for `agent` (stale entries included).
    #[cfg(test)]
    pub(crate) fn listed(&self, agent: AgentId) -> usize {
        self.lists.get(&agent).map_or(0, VecDeque::len)
    }
}

fn pop_front_where(list: &mut VecDeque<u64>, waiting: &impl Fn(u64) -> bool) -> Option<u64> {
    while let Some(t) = list.pop_front() {
        if waiting(t) {
            return Some(t);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Partitions {
        Partitions::new(
            1,
            vec![
                (AgentId(1), vec![0, 1, 2]),
                (AgentId(2), vec![3, 4, 5, 6, 7]),
            ],
            vec![],
        )
    }

    #[test]
    fn own_list_in_planned_order_then_steal_from_the_tail_of_the_most_loaded() {
        let mut p = two();
        let all = |_| true;
        let got: Vec<u64> = (0..3).filter_map(|_| p.next(AgentId(1), all)).collect();
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(p.next(AgentId(2), all), Some(3));
        // Agent 1's list is empty: it steals agent 2's last task.
        assert_eq!(p.next(AgentId(1), all), Some(7));
        assert_eq!(p.next(AgentId(2), all), Some(4));
        assert_eq!(p.listed(AgentId(2)), 2);
    }

    #[test]
    fn stale_entries_are_skipped() {
        let mut p = two();
        assert_eq!(p.next(AgentId(1), |t| t != 0), Some(1));
        assert_eq!(p.next(AgentId(3), |t| t != 7), Some(6));
        assert_eq!(p.next(AgentId(3), |_| false), None);
    }

    #[test]
    fn a_lost_agent_returns_its_list_to_the_pool_which_comes_before_stealing() {
        let mut p = two();
        p.release(AgentId(2));
        assert_eq!(p.listed(AgentId(2)), 0);
        let got: Vec<u64> = (0..3)
            .filter_map(|_| p.next(AgentId(3), |_| true))
            .collect();
        assert_eq!(got, vec![3, 4, 5]);
        assert_eq!(p.next(AgentId(1), |_| true), Some(0));
    }
}
