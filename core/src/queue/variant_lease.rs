//! Leasing the tasks of an application with variants: each lease picks the variant the
//! task runs as. The last variant round (`control::variant_round`) says, per application
//! and platform, which variants run there and how many tasks of each one agent may hold
//! at once (GPU variants first); a lease takes the first of them that the agent's free
//! cores and GPUs can hold. Until an application has been through a variant round, its
//! tasks go to the first declared variant that fits (first fit). Exploration leases send a
//! few tasks of each variant to each platform it fits, so that every (platform, variant)
//! pair gets measured.

use super::queues::Queues;
use super::LeaseBatch;
use hetpilot_protocol::resources::ResourceRequest;
use hetpilot_protocol::spec::{AppSpec, SpecError};
use hetpilot_protocol::template::Template;
use hetpilot_protocol::{AgentId, AppId};
use std::collections::HashMap;

/// One variant of an application as the queues run it.
#[derive(Debug, Clone)]
pub struct LiveVariant {
    /// Its name (shown with the task's attempts).
    pub name: String,
    /// Cores one task of it takes.
    pub cores: u32,
    /// What one task of it takes besides cores.
    pub request: ResourceRequest,
    pub(crate) template: Template,
}

impl LiveVariant {
    /// The variants `spec` declares, their commands parsed (`spec.validate()` checked them).
    pub fn of(spec: &AppSpec) -> Result<Vec<LiveVariant>, SpecError> {
        let inputs = spec.tasks.inputs();
        spec.variants
            .iter()
            .map(|v| {
                Ok(LiveVariant {
                    name: v.name.clone(),
                    cores: v.cores,
                    request: v.request(),
                    template: v.template(&spec.command, &inputs)?,
                })
            })
            .collect()
    }
}

/// How many tasks of one variant one agent of a platform may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VariantQuota {
    /// The variant, by index in the application's variants.
    pub(crate) variant: usize,
    /// Tasks of it one agent may hold at once.
    pub(crate) per_agent: u32,
}

/// What the last variant round decided, as leases read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct VariantLeasePlan {
    /// Per application and platform name: the variants its tasks run as there, GPU first.
    /// An application absent from it was in no variant round yet (first fit).
    pub(crate) quotas: HashMap<AppId, HashMap<String, Vec<VariantQuota>>>,
    /// Per platform name: (application, variant, tasks) still to send there so that the
    /// variant gets measured on it.
    pub(crate) explore: HashMap<String, Vec<(AppId, usize, u32)>>,
}

impl super::app::AppEntry {
    /// Sets the variants its tasks may run as (none: the application's one way).
    pub(crate) fn set_variants(&mut self, variants: Vec<LiveVariant>) {
        if let Some(least) = variants.iter().map(|v| v.cores).min() {
            // What a round and the pilot demand count per task before a variant is chosen.
            self.runtime.cores = least;
        }
        self.variants = variants;
    }

    /// The variant task `index`'s current or last attempt runs as, if it has variants.
    pub(crate) fn task_variant(&self, index: u64) -> Option<&LiveVariant> {
        let v = self.tasks.get(usize::try_from(index).ok()?)?.variant?;
        self.variants.get(usize::from(v))
    }
}

impl Queues {
    /// The variants a task of `app` may run as on agent `id` now, in the order to try
    /// them: the plan's for the agent's platform that the agent holds fewer tasks of than
    /// its quota, or every declared variant before the application's first variant round.
    fn variant_choices(&self, id: AgentId, app: AppId) -> Vec<usize> {
        let entry = &self.apps[&app];
        let Some(by_platform) = self.variant_plan.quotas.get(&app) else {
            return (0..entry.variants.len()).collect();
        };
        let agent = &self.agents[&id];
        let Some(quotas) = by_platform.get(&agent.platform) else {
            return Vec::new();
        };
        quotas
            .iter()
            .filter(|q| {
                let held = agent
                    .held
                    .keys()
                    .filter(|t| t.app == app)
                    .filter(|t| {
                        entry.tasks[t.index as usize].variant.map(usize::from) == Some(q.variant)
                    })
                    .count();
                held < q.per_agent as usize
            })
            .map(|q| q.variant)
            .collect()
    }

    /// Leases one waiting task of `app_id`, which has variants, to `id`: as variant `only`
    /// (exploration) or as the first the plan allows that the agent can hold now; returns
    /// the cores it takes (0: nothing leased).
    pub(super) fn lease_variant(
        &mut self,
        id: AgentId,
        app_id: AppId,
        only: Option<usize>,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) -> u32 {
        let Some(app) = self.apps.get(&app_id) else {
            return 0;
        };
        if app.cancelled || app.counts.waiting == 0 {
            return 0;
        }
        if let Some(user) = &self.agents[&id].only_user {
            if app.owner != *user {
                return 0;
            }
        }
        let choices = match only {
            Some(v) if v < app.variants.len() => vec![v],
            Some(_) => return 0,
            None => self.variant_choices(id, app_id),
        };
        for v in choices {
            let variant = &self.apps[&app_id].variants[v];
            let (cores, request) = (variant.cores, variant.request.clone());
            if cores > *remaining || (request.is_empty() && !self.cpu_task_fits(id, cores)) {
                continue;
            }
            let agent = self.agents.get_mut(&id).expect("checked by the caller");
            let Some(grant) = agent.take_resources(app_id, &request, &self.plan.devices) else {
                continue;
            };
            if self.backfill_refused(id, app_id, cores, &grant, now_ms) {
                let agent = self.agents.get_mut(&id).expect("checked by the caller");
                agent.pool.release(&grant);
                continue;
            }
            let app = self.apps.get_mut(&app_id).expect("looked up above");
            let Some(index) = app.pop_waiting(id) else {
                let agent = self.agents.get_mut(&id).expect("checked by the caller");
                agent.pool.release(&grant);
                return 0;
            };
            // At most `MAX_VARIANTS` (8) variants: the index fits a byte.
            app.tasks[index as usize].variant = u8::try_from(v).ok();
            return self.lease_task(id, app_id, index, cores, grant, remaining, now_ms, batch);
        }
        0
    }

    /// The exploration part of a lease on platform `name`: a task of each variant still
    /// to be measured there, within its budget.
    pub(super) fn lease_variant_exploration(
        &mut self,
        id: AgentId,
        name: &str,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) {
        let Some(explore) = self.variant_plan.explore.get(name).cloned() else {
            return;
        };
        for (app, v, budget) in explore {
            let key = (app, name.to_string(), v);
            let sent = self.explored_variants.get(&key).copied().unwrap_or(0);
            if sent < budget && self.lease_variant(id, app, Some(v), remaining, now_ms, batch) > 0 {
                self.explored_variants.insert(key, sent + 1);
            }
        }
    }
}

impl Queues {
    /// The name of the variant `result`'s attempt ran as, when it is the current attempt
    /// of a task agent `id` holds (the lease decided it; the agent does not say).
    pub(crate) fn variant_of(
        &self,
        id: AgentId,
        result: &hetpilot_protocol::protocol::TaskResult,
    ) -> Option<String> {
        let app = self.apps.get(&result.task.app)?;
        let slot = app.task(result.task.index)?;
        (slot.agent == Some(id) && slot.attempt == result.attempt)
            .then(|| app.task_variant(result.task.index))
            .flatten()
            .map(|v| v.name.clone())
    }
}
