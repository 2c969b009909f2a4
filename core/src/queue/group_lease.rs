//! Group leases: one run of a parallel task (`nodes` / `procs`) held by several agents at
//! once. The first agent (the head) is leased the task as usual and starts it; every
//! other member keeps the run's slots there busy (it runs nothing for it) until the head
//! reports. A group lease is made whole or not at all, only through the task's
//! reservation (see `queue::group_reserve`), so two wide tasks never each hold part of
//! what the other needs. When the head's lease ends (a result, a lease never delivered,
//! the head lost) the members' slots are released; when a member is lost, the run is
//! killed on the head and the task goes back to its queue, whole.

use super::changes::Change;
use super::queues::{AgentState, LeaseBatch, Queues};
use hetpilot_protocol::parallel::{HostSlots, ParallelSize};
use hetpilot_protocol::protocol::{TaskAttempt, TaskState};
use hetpilot_protocol::resources::ResourceGrant;
use hetpilot_protocol::{AgentId, AppId, TaskRef};

/// One agent of a group lease and the slots the run holds there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    /// The agent.
    pub agent: AgentId,
    /// Its host name, as the run's host file names it.
    pub host: String,
    /// The slots the run holds there.
    pub slots: u32,
}

/// The agents of one attempt of a parallel task, the head first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLease {
    /// The attempt they hold.
    pub attempt: u32,
    /// The head (which runs it), then the agents that keep slots for it.
    pub members: Vec<Member>,
}

/// A member's hold on an agent that is not the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemberHold {
    /// The run it holds slots for.
    pub(crate) at: TaskAttempt,
    /// The slots it holds.
    pub(crate) slots: u32,
    /// When the group was leased (unix ms; 0 when restored from the store).
    pub(crate) leased_ms: u64,
}

/// The agents (with their slots) a run of `size` takes from `candidates` (agent, its
/// slots), in their order of preference; `None` when they are not enough.
pub(crate) fn choose_members(
    size: ParallelSize,
    candidates: &[(AgentId, u32)],
) -> Option<Vec<(AgentId, u32)>> {
    match size {
        ParallelSize::Nodes(n) => {
            let chosen: Vec<(AgentId, u32)> = candidates.iter().take(n as usize).copied().collect();
            (chosen.len() == n as usize).then_some(chosen)
        }
        ParallelSize::NodesOf { nodes, per_node } => {
            let chosen: Vec<(AgentId, u32)> = candidates
                .iter()
                .filter(|(_, slots)| *slots >= per_node)
                .take(nodes as usize)
                .map(|(a, _)| (*a, per_node))
                .collect();
            (chosen.len() == nodes as usize).then_some(chosen)
        }
        ParallelSize::Procs(p) => {
            let mut rest = p;
            let mut chosen = Vec::new();
            for &(agent, slots) in candidates {
                if rest == 0 {
                    break;
                }
                let take = slots.min(rest);
                if take > 0 {
                    chosen.push((agent, take));
                    rest -= take;
                }
            }
            (rest == 0).then_some(chosen)
        }
    }
}

impl Queues {
    /// Leases a waiting task of parallel `app` to the agents of its reservation, `head`
    /// (which asked) first, if every one has its slots free now; returns the head's slots
    /// (0: nothing leased).
    pub(super) fn lease_group(
        &mut self,
        head: AgentId,
        app_id: AppId,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) -> u32 {
        let Some(reservation) = self.reservation(app_id) else {
            return 0;
        };
        let mut members: Vec<(AgentId, u32)> = Vec::with_capacity(reservation.agents.len());
        for &a in &reservation.agents {
            let Some(hold) = self.hold(a).filter(|h| h.app == app_id) else {
                return 0;
            };
            let live = self
                .agents
                .get(&a)
                .is_some_and(|e| e.state == AgentState::Active);
            if !live || hold.cores > self.free_slots(a) {
                return 0;
            }
            members.push((a, hold.cores));
        }
        let Some(pos) = members.iter().position(|(a, _)| *a == head) else {
            return 0;
        };
        members.swap(0, pos);
        let app = self
            .apps
            .get_mut(&app_id)
            .expect("reserved applications exist");
        if app.cancelled {
            return 0;
        }
        let Some(index) = app.pop_for_group(head) else {
            return 0;
        };
        let task = TaskRef { app: app_id, index };
        let members: Vec<Member> = members
            .into_iter()
            .map(|(agent, slots)| Member {
                agent,
                host: self.agents[&agent].hostname.clone(),
                slots,
            })
            .collect();
        let head_slots = members[0].slots;
        // The group first: the head's lease counts its slots from it.
        let attempt = app.tasks[index as usize].attempt + 1;
        app.groups.insert(
            index,
            GroupLease {
                attempt,
                members: members.clone(),
            },
        );
        let mut budget = (*remaining).max(head_slots);
        let before = budget;
        self.lease_task(
            head,
            app_id,
            index,
            head_slots,
            ResourceGrant::default(),
            &mut budget,
            now_ms,
            batch,
        );
        *remaining = remaining.saturating_sub(before - budget);
        let at = TaskAttempt { task, attempt };
        if let Some(assignment) = batch.tasks.last_mut().filter(|a| a.task == task) {
            assignment.cores = Some(head_slots);
            assignment.hosts = members
                .iter()
                .map(|m| HostSlots {
                    host: m.host.clone(),
                    slots: m.slots,
                })
                .collect();
        }
        for m in &members[1..] {
            if let Some(agent) = self.agents.get_mut(&m.agent) {
                agent.member_of.push(MemberHold {
                    at,
                    slots: m.slots,
                    leased_ms: batch.lease_ms,
                });
            }
        }
        tracing::debug!(%task, attempt, members = members.len(), "group leased");
        batch.changes.push(Change::GroupLeased { at, members });
        head_slots
    }

    /// The head's lease of `task` ended: the members' slots are free again.
    pub(super) fn end_group(&mut self, task: TaskRef) {
        let Some(group) = self
            .apps
            .get_mut(&task.app)
            .and_then(|a| a.groups.remove(&task.index))
        else {
            return;
        };
        for m in &group.members[1..] {
            if let Some(agent) = self.agents.get_mut(&m.agent) {
                agent.member_of.retain(|h| h.at.task != task);
            }
        }
    }

    /// Agent `id` left while keeping slots for other agents' runs: each such run is
    /// killed on its head and its task goes back to its queue, whole.
    pub(super) fn lose_member(&mut self, id: AgentId, now_ms: u64) -> Vec<Change> {
        let holds = match self.agents.get_mut(&id) {
            Some(agent) if !agent.member_of.is_empty() => std::mem::take(&mut agent.member_of),
            _ => return Vec::new(),
        };
        let mut changes = Vec::new();
        for hold in holds {
            let task = hold.at.task;
            let Some(head) = self
                .apps
                .get(&task.app)
                .and_then(|a| a.groups.get(&task.index))
                .filter(|g| g.attempt == hold.at.attempt)
                .map(|g| g.members[0].agent)
            else {
                continue;
            };
            if let Some(agent) = self.agents.get_mut(&head) {
                if agent.drop_lease(task) {
                    agent.kill.push(hold.at);
                }
            }
            let reason = format!("agent {id}, a member of the run's group, was lost");
            changes.extend(self.give_back(head, &[task], &reason, now_ms));
            self.end_group(task);
        }
        changes
    }

    /// After loading: gives the members of each stored group lease whose head still
    /// holds its task their slots back. A group with a member that is gone is not
    /// restored half: the task's run is killed on its head and the task goes back to its
    /// queue (the changes say so).
    pub(crate) fn restore_groups(
        &mut self,
        groups: Vec<(TaskAttempt, Vec<Member>)>,
        now_ms: u64,
    ) -> Vec<Change> {
        let mut changes = Vec::new();
        for (at, members) in groups {
            let Some(head) = members.first().map(|m| m.agent) else {
                continue;
            };
            let current = self
                .apps
                .get(&at.task.app)
                .and_then(|a| a.tasks.get(at.task.index as usize))
                .is_some_and(|s| {
                    s.attempt == at.attempt
                        && s.agent == Some(head)
                        && matches!(s.state, TaskState::Leased | TaskState::Running)
                });
            if !current {
                continue;
            }
            let live = |q: &Queues, a: AgentId| {
                q.agents
                    .get(&a)
                    .is_some_and(|e| matches!(e.state, AgentState::Active | AgentState::Draining))
            };
            let whole = members.iter().all(|m| live(self, m.agent));
            let app = self.apps.get_mut(&at.task.app).expect("checked above");
            app.groups.insert(
                at.task.index,
                GroupLease {
                    attempt: at.attempt,
                    members: members.clone(),
                },
            );
            for m in &members[1..] {
                if let Some(agent) = self.agents.get_mut(&m.agent) {
                    agent.member_of.push(MemberHold {
                        at,
                        slots: m.slots,
                        leased_ms: 0,
                    });
                }
            }
            if !whole {
                if let Some(agent) = self.agents.get_mut(&head) {
                    if agent.drop_lease(at.task) {
                        agent.kill.push(at);
                    }
                }
                let reason = "a member of the run's group was gone when the manager restarted";
                changes.extend(self.give_back(head, &[at.task], reason, now_ms));
                self.end_group(at.task);
            }
        }
        changes
    }

    /// The parallel runs agent `id` keeps slots for while their heads run them.
    pub fn member_runs(&self, id: AgentId) -> Vec<TaskRef> {
        self.agents.get(&id).map_or_else(Vec::new, |a| {
            a.member_of.iter().map(|h| h.at.task).collect()
        })
    }

    /// The group leases of the parallel runs agent `id` heads, in task order.
    pub fn head_groups(&self, id: AgentId) -> Vec<(TaskRef, &GroupLease)> {
        let Some(agent) = self.agents.get(&id) else {
            return Vec::new();
        };
        let mut groups: Vec<(TaskRef, &GroupLease)> = agent
            .held
            .keys()
            .filter_map(|&t| Some((t, self.group_lease(t)?)))
            .filter(|(_, g)| g.members.first().is_some_and(|m| m.agent == id))
            .collect();
        groups.sort_by_key(|(t, _)| *t);
        groups
    }

    /// The group lease of task `task`'s current run, if it is a parallel run.
    pub fn group_lease(&self, task: TaskRef) -> Option<&GroupLease> {
        self.apps.get(&task.app)?.groups.get(&task.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_chosen_in_order_until_the_size_is_met() {
        let c = [(AgentId(1), 2), (AgentId(2), 4), (AgentId(3), 2)];
        assert_eq!(
            choose_members(ParallelSize::Procs(4), &c),
            Some(vec![(AgentId(1), 2), (AgentId(2), 2)])
        );
        assert_eq!(choose_members(ParallelSize::Procs(9), &c), None);
        assert_eq!(
            choose_members(ParallelSize::Nodes(2), &c),
            Some(vec![(AgentId(1), 2), (AgentId(2), 4)])
        );
        assert_eq!(choose_members(ParallelSize::Nodes(4), &c), None);
        assert_eq!(
            choose_members(
                ParallelSize::NodesOf {
                    nodes: 1,
                    per_node: 3
                },
                &c
            ),
            Some(vec![(AgentId(2), 3)])
        );
    }
}
