//! A variant scenario file: platforms with cores and GPUs per node, applications with
//! their variants and mean task runtimes, and the run settings, all fixed in the file.

use hetpilot_protocol::resources::ResourceAmount;
use serde::Deserialize;
use thiserror::Error;

use hetpilot_core::sched::variants::{
    Variant, VariantApplication, VariantPlatform, VariantSnapshot, MAX_VARIANTS,
};

/// The most platforms, applications, nodes per platform and tasks per application a
/// scenario may declare (the simulator keeps one entry per node and per task start).
const MAX_PLATFORMS: usize = 64;
const MAX_APPLICATIONS: usize = 64;
const MAX_NODES: u32 = 10_000;
const MAX_TASKS: u64 = 10_000_000;
const MAX_RUNS: u32 = 1_000;

/// Why a scenario file was refused.
#[derive(Debug, Error)]
pub enum VariantScenarioError {
    /// Not TOML of the expected shape.
    #[error("scenario: {0}")]
    Parse(#[from] toml::de::Error),
    /// A value out of range.
    #[error("scenario field `{field}`: {problem}")]
    Invalid {
        /// Where, e.g. `application[2].variant[0].runtime_s`.
        field: String,
        /// What is wrong and what is allowed.
        problem: String,
    },
}

/// One variant as the file declares it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioVariant {
    name: String,
    cores: u32,
    #[serde(default)]
    gpus: Option<ResourceAmount>,
    /// Mean seconds of one task of this variant (the same on every platform it fits).
    runtime_s: f64,
}

/// One application as the file declares it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioApplication {
    name: String,
    tasks: u64,
    #[serde(rename = "variant")]
    variants: Vec<ScenarioVariant>,
}

/// A whole scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantScenario {
    /// Its name, for the table.
    pub name: String,
    /// Run r uses seed `seed + r` (the same streams for every placement).
    pub seed: u64,
    /// Runs per placement.
    pub runs: u32,
    /// Coefficient of variation of each task's runtime (log-normal factor of mean 1).
    pub runtime_cv: f64,
    /// The affinity placements compared with first-fit, by first-level policy name.
    pub policies: Vec<String>,
    /// The platform-affinity metric the first level ranks columns with.
    pub platform_affinity: String,
    #[serde(rename = "platform", deserialize_with = "variant_platforms")]
    platforms: Vec<VariantPlatform>,
    #[serde(rename = "application")]
    applications: Vec<ScenarioApplication>,
}

/// The `[[platform]]` tables (the core's `VariantPlatform` is not `Deserialize`).
fn variant_platforms<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<VariantPlatform>, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        name: String,
        nodes: u32,
        cores_per_node: u32,
        #[serde(default)]
        gpus_per_node: u32,
    }
    let raw = Vec::<Raw>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|r| VariantPlatform {
            name: r.name,
            nodes: r.nodes,
            cores_per_node: r.cores_per_node,
            gpus_per_node: r.gpus_per_node,
        })
        .collect())
}

fn invalid(field: String, problem: impl Into<String>) -> VariantScenarioError {
    VariantScenarioError::Invalid {
        field,
        problem: problem.into(),
    }
}

impl VariantScenario {
    /// Parses and checks a scenario file's text.
    pub fn parse(text: &str) -> Result<Self, VariantScenarioError> {
        let s: VariantScenario = toml::from_str(text)?;
        s.check()?;
        Ok(s)
    }

    fn check(&self) -> Result<(), VariantScenarioError> {
        if !(1..=MAX_RUNS).contains(&self.runs) {
            return Err(invalid("runs".into(), format!("must be 1..={MAX_RUNS}")));
        }
        if !(self.runtime_cv.is_finite() && (0.0..=10.0).contains(&self.runtime_cv)) {
            return Err(invalid("runtime_cv".into(), "must be a number in 0..=10"));
        }
        if self.platforms.is_empty() || self.platforms.len() > MAX_PLATFORMS {
            return Err(invalid(
                "platform".into(),
                format!("declare 1 to {MAX_PLATFORMS} platforms"),
            ));
        }
        for (p, platform) in self.platforms.iter().enumerate() {
            if platform.nodes > MAX_NODES || platform.cores_per_node == 0 {
                return Err(invalid(
                    format!("platform[{p}]"),
                    format!("nodes must be at most {MAX_NODES} and cores_per_node at least 1"),
                ));
            }
            if ResourceAmount::whole(u64::from(platform.gpus_per_node)).is_none() {
                return Err(invalid(
                    format!("platform[{p}].gpus_per_node"),
                    "too many GPUs per node",
                ));
            }
        }
        if self.applications.is_empty() || self.applications.len() > MAX_APPLICATIONS {
            return Err(invalid(
                "application".into(),
                format!("declare 1 to {MAX_APPLICATIONS} applications"),
            ));
        }
        for (a, app) in self.applications.iter().enumerate() {
            if !(1..=MAX_TASKS).contains(&app.tasks) {
                return Err(invalid(
                    format!("application[{a}].tasks"),
                    format!("must be 1..={MAX_TASKS}"),
                ));
            }
            if app.variants.len() > MAX_VARIANTS {
                return Err(invalid(
                    format!("application[{a}].variant"),
                    format!("at most {MAX_VARIANTS} variants"),
                ));
            }
            for (v, variant) in app.variants.iter().enumerate() {
                if !(variant.runtime_s.is_finite() && variant.runtime_s > 0.0) {
                    return Err(invalid(
                        format!("application[{a}].variant[{v}].runtime_s"),
                        "must be a positive number of seconds",
                    ));
                }
            }
        }
        // The scheduler's own checks (one variant per kind, cores ≥ 1), with its field names.
        let apps = self.applications(&[]);
        VariantSnapshot {
            platforms: &self.platforms,
            applications: &apps,
        }
        .validate()
        .map_err(|e| invalid("application".into(), e.to_string()))
    }

    /// The platforms.
    pub fn platforms(&self) -> &[VariantPlatform] {
        &self.platforms
    }

    /// The applications as the scheduler sees them, `remaining[a]` tasks each left (all
    /// of them where `remaining` is empty), fresh.
    pub fn applications(&self, remaining: &[u64]) -> Vec<VariantApplication> {
        self.applications
            .iter()
            .enumerate()
            .map(|(a, app)| VariantApplication {
                name: app.name.clone(),
                variants: app
                    .variants
                    .iter()
                    .map(|v| Variant {
                        name: v.name.clone(),
                        cores: v.cores,
                        gpus: v.gpus.unwrap_or_default(),
                    })
                    .collect(),
                runtime_s: app
                    .variants
                    .iter()
                    .map(|v| vec![v.runtime_s; self.platforms.len()])
                    .collect(),
                remaining_tasks: remaining.get(a).copied().unwrap_or(app.tasks),
                completed_tasks: 0,
                age_s: 0.0,
                weight: 1.0,
            })
            .collect()
    }

    /// Tasks per application.
    pub fn tasks(&self) -> Vec<u64> {
        self.applications.iter().map(|a| a.tasks).collect()
    }
}
