//! EASY backfilling's arithmetic on one agent: when a reserved wide run could start if
//! nothing more were leased there (its *shadow time*), and whether leasing a narrower run
//! now would move that start later. Pure: runs' expected ends and `now` come in.
//!
//! A run without an expected end (no timeout and too few measured runs) is taken to
//! run for ever: a reservation that needs its slots has no shadow time until it ends, and
//! until then nothing narrower may be leased to that agent. A run with an expected end
//! already past is taken to end now. A started run's end counts from its lease (the
//! queues keep no start time), so a run that queued on its agent first ends up to that
//! wait later than estimated.
//!
//! A narrower run may be leased while a reservation waits when the shadow time with it is
//! no later than without it: it ends by the shadow time (EASY's first rule), or it takes
//! only slots and resources the reservation will not need at the shadow time (the
//! "extra" slots, EASY's second rule), whatever its runtime.

use super::resource_pool::ResourcePool;
use hetpilot_protocol::resources::{ResourceGrant, ResourceRequest};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Where a held run is, as the manager knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The agent started it; it is expected to end at `end_ms` (`None`: no estimate).
    Started { end_ms: Option<u64> },
    /// Leased and queued on the agent (prefetched): the agent starts its queue in lease
    /// order as slots free; the run then lasts `len_ms` (`None`: no estimate).
    Queued { len_ms: Option<u64> },
}

/// A run an agent holds, as the shadow computation sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeldRun<'a> {
    /// The slots it takes.
    pub(crate) cores: u32,
    /// What it was granted from the agent's pool, if anything.
    pub(crate) grant: Option<&'a ResourceGrant>,
    /// Started or queued, with how long it is expected to last.
    pub(crate) phase: Phase,
}

/// What a reservation needs of one agent: slots and resources at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Need<'a> {
    pub(crate) cores: u32,
    pub(crate) request: &'a ResourceRequest,
}

/// One agent as the computation sees it: its slots, its pool with what its runs hold,
/// and those runs, queued ones in the order the agent starts them.
#[derive(Debug, Clone)]
pub(crate) struct AgentLoad<'a> {
    pub(crate) slots: u32,
    pub(crate) pool: &'a ResourcePool,
    pub(crate) runs: Vec<HeldRun<'a>>,
}

/// When `need` fits on the agent at the earliest (the agent's held runs, started or
/// queued, leave room for its slots and its pool can grant its request) if the runs end
/// as expected and nothing more is leased there: `now_ms` when it fits now; `None` when it
/// can only fit after some run without an expected end ends (or never, on an agent too
/// small). Queued runs start in order as the agent's slots free.
pub(crate) fn shadow_ms(load: &AgentLoad<'_>, need: Need<'_>, now_ms: u64) -> Option<u64> {
    let slots = u64::from(load.slots);
    let mut pool = load.pool.clone();
    // Cores of runs not ended (they count against the agent's slots until they end).
    let mut outstanding: u64 = load.runs.iter().map(|r| u64::from(r.cores)).sum();
    // Cores of runs executing.
    let mut running: u64 = 0;
    let mut ends: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    for (i, run) in load.runs.iter().enumerate() {
        match run.phase {
            Phase::Started { end_ms } => {
                running = running.saturating_add(u64::from(run.cores));
                if let Some(end) = end_ms {
                    ends.push(Reverse((end.max(now_ms), i)));
                }
            }
            Phase::Queued { .. } => queue.push_back(i),
        }
    }
    let mut t = now_ms;
    loop {
        while let Some(&i) = queue.front() {
            let run = &load.runs[i];
            // The agent starts a run wider than itself alone (it clamps it to its slots).
            if running > 0 && u64::from(run.cores) > slots.saturating_sub(running) {
                break;
            }
            queue.pop_front();
            running = running.saturating_add(u64::from(run.cores));
            if let Phase::Queued { len_ms: Some(len) } = run.phase {
                ends.push(Reverse((t.saturating_add(len), i)));
            }
        }
        if slots.saturating_sub(outstanding) >= u64::from(need.cores)
            && pool.can_grant(need.request)
        {
            return Some(t);
        }
        let Reverse((at, _)) = *ends.peek()?;
        t = t.max(at);
        // Runs ending at the same moment free their slots together.
        while let Some(&Reverse((end, i))) = ends.peek() {
            if end > at {
                break;
            }
            ends.pop();
            let run = &load.runs[i];
            running = running.saturating_sub(u64::from(run.cores));
            outstanding = outstanding.saturating_sub(u64::from(run.cores));
            if let Some(grant) = run.grant {
                pool.release(grant);
            }
        }
    }
}

/// Whether leasing `candidate` to the agent now would start the reservation that needs
/// `need` later than its shadow time. `load.pool` already holds the candidate's grant
/// (taken before asking); `load.runs` does not list it (it would queue behind them).
/// Always true while the reservation has no shadow time.
pub(crate) fn delays(
    load: &AgentLoad<'_>,
    need: Need<'_>,
    candidate: HeldRun<'_>,
    now_ms: u64,
) -> bool {
    let mut before_pool = load.pool.clone();
    if let Some(grant) = candidate.grant {
        before_pool.release(grant);
    }
    let before = AgentLoad {
        slots: load.slots,
        pool: &before_pool,
        runs: load.runs.clone(),
    };
    let Some(shadow) = shadow_ms(&before, need, now_ms) else {
        return true;
    };
    let mut runs = load.runs.clone();
    runs.push(candidate);
    let after = AgentLoad {
        slots: load.slots,
        pool: load.pool,
        runs,
    };
    shadow_ms(&after, need, now_ms).is_none_or(|s| s > shadow)
}

/// Whether leasing `candidate` to the agent now would make `need` fit there later than
/// `start_ms`: the start of a reservation spanning several agents (the latest of their
/// shadow times), which this agent's share need not meet any earlier. `load` as for
/// [`delays`]. Always true while the reservation has no start time.
pub(crate) fn delays_past(
    load: &AgentLoad<'_>,
    need: Need<'_>,
    candidate: HeldRun<'_>,
    now_ms: u64,
    start_ms: Option<u64>,
) -> bool {
    let Some(start) = start_ms else {
        return true;
    };
    let mut runs = load.runs.clone();
    runs.push(candidate);
    let after = AgentLoad {
        slots: load.slots,
        pool: load.pool,
        runs,
    };
    shadow_ms(&after, need, now_ms).is_none_or(|s| s > start)
}

#[cfg(test)]
#[path = "easy_tests.rs"]
mod tests;
