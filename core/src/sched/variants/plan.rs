//! The variant first level: builds the (platform, variant kind) columns, their measured
//! affinities and capacities, and runs the configured first-level policy over them.

use rand::RngCore;

use super::columns::{capacities, columns, variant_on, Column, VariantKind};
use super::model::VariantSnapshot;
use crate::sched::affinity::affinities_with_gaps;
use crate::sched::error::SchedError;
use crate::sched::first_level::{FirstLevelInput, FirstLevelPolicy};
use crate::sched::settings::SchedulerSettings;

/// A first-level policy over variant columns. Cheap to keep across rounds.
#[derive(Debug)]
pub struct VariantScheduler {
    settings: SchedulerSettings,
    first: Box<dyn FirstLevelPolicy>,
}

/// What one round decided: task slots per application and column.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantPlan {
    /// The columns, GPU before CPU on each platform.
    pub columns: Vec<Column>,
    /// Task slots of each column.
    pub capacity: Vec<u64>,
    /// `slots[app][column]`: tasks snapshot application `app` may run at once there.
    pub slots: Vec<Vec<u64>>,
    /// `affinity[app][column]` the policy ranked by (0 where the application cannot run).
    pub affinity: Vec<Vec<f64>>,
    /// `variant[app][column]`: the index of the application's variant that runs there.
    pub variant: Vec<Vec<Option<usize>>>,
}

impl VariantPlan {
    /// The variants `app` runs on `platform` and how many tasks of each at once, by the
    /// plan (what a lease on that platform hands out).
    pub fn variants_on(&self, app: usize, platform: usize) -> Vec<(usize, u64)> {
        self.columns
            .iter()
            .enumerate()
            .filter(|(c, col)| col.platform == platform && self.slots[app][*c] > 0)
            .filter_map(|(c, _)| self.variant[app][c].map(|v| (v, self.slots[app][c])))
            .collect()
    }

    /// GPU slots `app` holds over all platforms.
    pub fn gpu_slots(&self, app: usize) -> u64 {
        self.columns
            .iter()
            .zip(&self.slots[app])
            .filter(|(col, _)| col.kind == VariantKind::Gpu)
            .map(|(_, &s)| s)
            .sum()
    }
}

impl VariantScheduler {
    /// Checks the settings and builds the first-level policy they name.
    pub fn new(settings: SchedulerSettings) -> Result<Self, SchedError> {
        settings.validate()?;
        let first = settings.first_level.build(&settings);
        Ok(Self { settings, first })
    }

    /// The settings it was built with.
    pub fn settings(&self) -> &SchedulerSettings {
        &self.settings
    }

    /// One round. The policy runs over the columns with GPU slots holding their cores;
    /// where it leaves GPU slots unallocated it runs once more with those slots' cores
    /// given to the CPU column, so no core waits for a GPU task that will not come.
    pub fn plan(
        &self,
        snapshot: &VariantSnapshot,
        rng: &mut dyn RngCore,
    ) -> Result<VariantPlan, SchedError> {
        snapshot.validate()?;
        let apps = snapshot.applications;
        let active: Vec<usize> = (0..apps.len())
            .filter(|&a| apps[a].remaining_tasks > 0)
            .collect();
        let columns = columns(snapshot.platforms, apps, &active);
        let variant: Vec<Vec<Option<usize>>> = apps
            .iter()
            .map(|app| {
                columns
                    .iter()
                    .map(|c| variant_on(app, &snapshot.platforms[c.platform], c.kind))
                    .collect()
            })
            .collect();
        let runtime: Vec<Vec<Option<f64>>> = active
            .iter()
            .map(|&a| {
                columns
                    .iter()
                    .zip(&variant[a])
                    .map(|(c, v)| v.map(|v| apps[a].runtime_s[v][c.platform]))
                    .collect()
            })
            .collect();
        let affinity = affinities_with_gaps(&runtime, self.settings.platform_affinity);
        let fastest: Vec<f64> = runtime
            .iter()
            .map(|row| row.iter().flatten().copied().fold(f64::INFINITY, f64::min))
            .collect();
        let speed = if self.first.uses_speed() {
            runtime
                .iter()
                .zip(&fastest)
                .map(|(row, f)| row.iter().map(|r| r.map_or(0.0, |r| f / r)).collect())
                .collect()
        } else {
            Vec::new()
        };
        let mut input = FirstLevelInput {
            apps: active.clone(),
            platforms: (0..columns.len()).collect(),
            demand: active.iter().map(|&a| apps[a].remaining_tasks).collect(),
            capacity: capacities(
                snapshot.platforms,
                &columns,
                &vec![None; snapshot.platforms.len()],
            ),
            affinity: affinity.clone(),
            speed,
            entitlement: active.iter().map(|&a| apps[a].weight).collect(),
            completed_tasks: active.iter().map(|&a| apps[a].completed_tasks).collect(),
            age_s: active.iter().map(|&a| apps[a].age_s).collect(),
            fastest_runtime: fastest,
            previous: vec![vec![0; columns.len()]; active.len()],
            feasible: runtime
                .iter()
                .map(|row| row.iter().map(Option::is_some).collect())
                .collect(),
        };
        let mut local = if active.is_empty() || columns.is_empty() {
            vec![vec![0; columns.len()]; active.len()]
        } else {
            self.first.allocate(&input, rng)
        };
        let mut held: Vec<Option<u64>> = vec![None; snapshot.platforms.len()];
        let mut idle_gpu_slots = false;
        for (c, col) in columns.iter().enumerate() {
            if col.kind == VariantKind::Gpu {
                let used: u64 = local.iter().map(|row| row[c]).sum();
                idle_gpu_slots |= used < input.capacity[c];
                held[col.platform] = Some(used);
            }
        }
        if idle_gpu_slots {
            input.capacity = capacities(snapshot.platforms, &columns, &held);
            local = self.first.allocate(&input, rng);
        }
        let mut slots = vec![vec![0; columns.len()]; apps.len()];
        let mut full_affinity = vec![vec![0.0; columns.len()]; apps.len()];
        for (i, &a) in active.iter().enumerate() {
            slots[a].clone_from(&local[i]);
            full_affinity[a].clone_from(&affinity[i]);
        }
        Ok(VariantPlan {
            columns,
            capacity: input.capacity,
            slots,
            affinity: full_affinity,
            variant,
        })
    }
}
