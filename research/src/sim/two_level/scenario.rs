//! Scenario files (`profiles/two-level/scenarios/*.toml`): which platforms with how many
//! nodes, which applications with how many tasks (and owners, user weights, arrivals),
//! against which runtime profile. Parsing is pure (`&str` in); the CLI reads the files.

use std::collections::HashMap;

use hetpilot_protocol::named::UnknownName;
use serde::Deserialize;
use thiserror::Error;

use super::engine::{Arrivals, SimApplication, SimulationInput};
use hetpilot_core::sched::PlatformState;
use hetpilot_core::sched::SchedulerSettings;
use hetpilot_core::sched::{CoRunnerAffinity, PlatformAffinity};
use hetpilot_core::sched::{ProfiledPlatform, RuntimeProfile};

/// A scenario file that cannot be used; always names the file and the field.
#[derive(Debug, Error)]
pub enum ScenarioError {
    /// The text is not TOML, or not the scenario's layout.
    #[error("{file}: not valid scenario TOML: {message}")]
    Syntax {
        /// The scenario file's path.
        file: String,
        /// The TOML parser's message.
        message: String,
    },
    /// The scenario parses but one of its values is wrong or contradicts the profile.
    #[error("{file}: field `{field}`: {problem}")]
    Invalid {
        /// The scenario file's path.
        file: String,
        /// Path of the wrong value, e.g. `application[1].tasks`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// A parsed (not yet resolved) scenario.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The scenario's name, shown in reports.
    pub name: String,
    /// Scenario type of Table 8 (`Default`, `W/o Plat.`, `S/L Plat.`, `W/o App.`, `S/L App.`).
    #[serde(default)]
    pub kind: String,
    /// Profile file, relative to the scenario file.
    pub profile: String,
    #[serde(default, rename = "platform")]
    pub(crate) platforms: Vec<ScenarioPlatform>,
    /// The `[[application]]` tables, in file order.
    #[serde(default, rename = "application")]
    pub applications: Vec<ScenarioApplication>,
    /// Optional per-user weights (user name → weight > 0); unlisted users weigh 1.
    #[serde(default)]
    pub(crate) users: HashMap<String, f64>,
    /// Optional dynamic submission.
    #[serde(default)]
    pub(crate) arrivals: Option<ScenarioArrivals>,
    /// Optional scheduler settings for single runs (command-line flags override them).
    #[serde(default)]
    pub(crate) scheduler: ScenarioScheduler,
    /// Where the text came from (set by [`Scenario::from_toml_str`]).
    #[serde(skip)]
    pub(crate) source: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioPlatform {
    pub(crate) name: String,
    /// Nodes to use; alternatively `cores` (a multiple of the cores per node).
    #[serde(default)]
    pub(crate) nodes: Option<i64>,
    #[serde(default)]
    pub(crate) cores: Option<i64>,
}

/// One `[[application]]` table: an application of the profile and its task count.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScenarioApplication {
    /// A profile application's name.
    pub name: String,
    pub(crate) tasks: i64,
    /// Owning user (default: the application's own name, one user per application).
    #[serde(default)]
    pub(crate) owner: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioArrivals {
    /// Mean time between submissions, seconds (Poisson process).
    pub(crate) poisson_mean_interarrival_s: f64,
}

/// The `[scheduler]` table: any subset of [`SchedulerSettings`], by the CLI's names.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioScheduler {
    pub(crate) first_level: Option<String>,
    pub(crate) second_level: Option<String>,
    pub(crate) platform_affinity: Option<String>,
    pub(crate) co_runner_affinity: Option<String>,
    pub(crate) top_k_percent: Option<i64>,
    pub(crate) d_unit: Option<i64>,
    pub(crate) p_unit: Option<i64>,
    pub(crate) pairwise: Option<bool>,
    pub(crate) recompute_co_runner_affinity: Option<bool>,
}

impl Scenario {
    /// The scenario's `[scheduler]` table applied over the defaults, checked; errors name
    /// the file and the `scheduler.*` field.
    pub fn scheduler_settings(&self) -> Result<SchedulerSettings, ScenarioError> {
        let invalid = |field: &str, problem: String| ScenarioError::Invalid {
            file: self.source.clone(),
            field: format!("scheduler.{field}"),
            problem,
        };
        let t = &self.scheduler;
        let mut s = SchedulerSettings::default();
        if let Some(v) = &t.first_level {
            s.first_level = v
                .parse()
                .map_err(|e: UnknownName| invalid("first_level", e.to_string()))?;
        }
        if let Some(v) = &t.second_level {
            s.second_level = v
                .parse()
                .map_err(|e: UnknownName| invalid("second_level", e.to_string()))?;
        }
        if let Some(v) = &t.platform_affinity {
            s.platform_affinity = v
                .parse::<PlatformAffinity>()
                .map_err(|e| invalid("platform_affinity", e.to_string()))?;
        }
        if let Some(v) = &t.co_runner_affinity {
            s.co_runner_affinity = v
                .parse::<CoRunnerAffinity>()
                .map_err(|e| invalid("co_runner_affinity", e.to_string()))?;
        }
        let unit = |field: &str,
                    v: Option<i64>,
                    lo: i64,
                    hi: i64,
                    what: &str|
         -> Result<Option<u32>, ScenarioError> {
            match v {
                None => Ok(None),
                Some(x) if (lo..=hi).contains(&x) => Ok(Some(x as u32)),
                Some(x) => Err(invalid(field, format!("{what}, got {x}"))),
            }
        };
        if let Some(k) = unit(
            "top_k_percent",
            t.top_k_percent,
            1,
            50,
            "k must be an integer between 1 and 50 (Section 5.1.1)",
        )? {
            s.top_k_percent = k;
        }
        if let Some(d) = unit(
            "d_unit",
            t.d_unit,
            1,
            i64::from(u32::MAX),
            "D_unit must be at least 1 core",
        )? {
            s.d_unit = d;
        }
        if let Some(p) = unit(
            "p_unit",
            t.p_unit,
            1,
            i64::from(u32::MAX),
            "P_unit must be at least 1 node",
        )? {
            s.p_unit = p;
        }
        if let Some(v) = t.pairwise {
            s.pairwise = v;
        }
        if let Some(v) = t.recompute_co_runner_affinity {
            s.recompute_co_runner_affinity = v;
        }
        Ok(s)
    }

    /// Parse a scenario; `source` (the file path) is named in every error.
    pub fn from_toml_str(source: &str, text: &str) -> Result<Self, ScenarioError> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Syntax {
            file: source.to_string(),
            message: e.to_string(),
        })?;
        s.source = source.to_string();
        Ok(s)
    }

    /// Check the scenario against `profile` (names, counts, and the platforms'
    /// `max_nodes`) and turn it into a simulation input.
    pub fn resolve<'p>(
        &self,
        profile: &'p RuntimeProfile,
    ) -> Result<SimulationInput<'p>, ScenarioError> {
        let platforms = self.resolve_platforms(profile)?;
        let (applications, owners) = self.resolve_applications(profile)?;
        let user_weights = self.resolve_user_weights(&owners)?;
        let arrivals = self.resolve_arrivals()?;
        Ok(SimulationInput {
            profile,
            platforms,
            applications,
            user_weights,
            arrivals,
        })
    }

    /// An error about `field` of this scenario's file.
    fn invalid(&self, field: String, problem: String) -> ScenarioError {
        ScenarioError::Invalid {
            file: self.source.clone(),
            field,
            problem,
        }
    }

    /// The `[[platform]]` tables: known, listed once, with a node count (given as nodes
    /// or as a multiple of the cores per node) within the profile's `max_nodes`.
    fn resolve_platforms(
        &self,
        profile: &RuntimeProfile,
    ) -> Result<Vec<PlatformState>, ScenarioError> {
        let mut platforms = Vec::new();
        for (j, p) in self.platforms.iter().enumerate() {
            let Some(index) = profile.platform_index(&p.name) else {
                return Err(self.invalid(
                    format!("platform[{j}].name"),
                    format!("platform `{}` is not in the profile", p.name),
                ));
            };
            if platforms
                .iter()
                .any(|q: &PlatformState| q.profile_index == index)
            {
                return Err(self.invalid(
                    format!("platform[{j}].name"),
                    format!("platform `{}` is listed twice", p.name),
                ));
            }
            let nodes = self.platform_nodes(j, p, &profile.platforms()[index])?;
            platforms.push(PlatformState {
                profile_index: index,
                nodes,
            });
        }
        Ok(platforms)
    }

    /// The node count of `platform[j]` (`p`), which is `profiled` in the profile.
    fn platform_nodes(
        &self,
        j: usize,
        p: &ScenarioPlatform,
        profiled: &ProfiledPlatform,
    ) -> Result<u32, ScenarioError> {
        let per_node = i64::from(profiled.cores_per_node);
        let nodes = match (p.nodes, p.cores) {
            (Some(n), None) => n,
            (None, Some(c)) => {
                if c >= 0 && c % per_node != 0 {
                    return Err(self.invalid(
                        format!("platform[{j}].cores"),
                        format!(
                            "{c} is not a multiple of {per_node} cores per node of `{}`",
                            p.name
                        ),
                    ));
                }
                c / per_node
            }
            _ => {
                return Err(self.invalid(
                    format!("platform[{j}]"),
                    "give exactly one of `nodes` or `cores`".into(),
                ))
            }
        };
        if nodes < 0 {
            return Err(self.invalid(
                format!("platform[{j}].nodes"),
                format!("must not be negative, got {nodes}"),
            ));
        }
        let nodes = u32::try_from(nodes).map_err(|_| {
            self.invalid(
                format!("platform[{j}].nodes"),
                format!("{nodes} is too large"),
            )
        })?;
        if let Some(max) = profiled.max_nodes {
            if nodes > max {
                return Err(self.invalid(
                    format!("platform[{j}].nodes"),
                    format!(
                        "requests {} cores ({nodes} nodes) but `{}` has only {} cores ({max} nodes)",
                        i64::from(nodes) * per_node,
                        p.name,
                        i64::from(max) * per_node
                    ),
                ));
            }
        }
        Ok(nodes)
    }

    /// The `[[application]]` tables: known, listed once, a task count >= 0; and the
    /// owners in order of first appearance (an application owns itself by default).
    fn resolve_applications(
        &self,
        profile: &RuntimeProfile,
    ) -> Result<(Vec<SimApplication>, Vec<String>), ScenarioError> {
        let mut owners: Vec<String> = Vec::new();
        let mut applications = Vec::new();
        for (i, a) in self.applications.iter().enumerate() {
            let Some(index) = profile.application_index(&a.name) else {
                return Err(self.invalid(
                    format!("application[{i}].name"),
                    format!("application `{}` is not in the profile", a.name),
                ));
            };
            if applications
                .iter()
                .any(|b: &SimApplication| b.profile_index == index)
            {
                return Err(self.invalid(
                    format!("application[{i}].name"),
                    format!("application `{}` is listed twice", a.name),
                ));
            }
            if a.tasks < 0 {
                return Err(self.invalid(
                    format!("application[{i}].tasks"),
                    format!("must not be negative, got {}", a.tasks),
                ));
            }
            let owner_name = a.owner.clone().unwrap_or_else(|| a.name.clone());
            let owner = match owners.iter().position(|o| *o == owner_name) {
                Some(o) => o,
                None => {
                    owners.push(owner_name);
                    owners.len() - 1
                }
            };
            applications.push(SimApplication {
                profile_index: index,
                tasks: a.tasks as u64,
                owner,
            });
        }
        Ok((applications, owners))
    }

    /// The `[users]` weights, checked (positive, of an owner), one per owner (default 1).
    fn resolve_user_weights(&self, owners: &[String]) -> Result<Vec<f64>, ScenarioError> {
        for (user, &w) in &self.users {
            if !(w.is_finite() && w > 0.0) {
                return Err(self.invalid(
                    format!("users.{user}"),
                    format!("weight must be a positive number, got {w}"),
                ));
            }
            if !owners.contains(user) {
                return Err(self.invalid(
                    format!("users.{user}"),
                    "no application has this owner".into(),
                ));
            }
        }
        Ok(owners
            .iter()
            .map(|o| self.users.get(o).copied().unwrap_or(1.0))
            .collect())
    }

    /// The `[arrivals]` table: all at once without one, else Poisson with a positive mean.
    fn resolve_arrivals(&self) -> Result<Arrivals, ScenarioError> {
        let Some(a) = &self.arrivals else {
            return Ok(Arrivals::AllAtOnce);
        };
        if !(a.poisson_mean_interarrival_s.is_finite() && a.poisson_mean_interarrival_s > 0.0) {
            return Err(self.invalid(
                "arrivals.poisson_mean_interarrival_s".into(),
                format!(
                    "must be a positive number of seconds, got {}",
                    a.poisson_mean_interarrival_s
                ),
            ));
        }
        Ok(Arrivals::Poisson {
            mean_interarrival_s: a.poisson_mean_interarrival_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROFILE: &str = r#"
[[platform]]
name = "a"
cores_per_node = 2
max_nodes = 10
[[application]]
name = "x"
one_core = { a = 10.0 }
"#;

    const SCENARIO: &str = r#"
name = "s"
profile = "p.toml"
[[platform]]
name = "a"
nodes = 4
[[application]]
name = "x"
tasks = 100
"#;

    fn resolve(text: &str) -> Result<usize, String> {
        let profile = RuntimeProfile::from_toml_str("p.toml", PROFILE).unwrap();
        Scenario::from_toml_str("s.toml", text)
            .and_then(|s| s.resolve(&profile).map(|i| i.platforms.len()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_good_scenario_resolves() {
        assert_eq!(resolve(SCENARIO), Ok(1));
        assert_eq!(resolve(&SCENARIO.replace("nodes = 4", "cores = 8")), Ok(1));
    }

    #[test]
    fn bad_scenarios_name_file_and_field() {
        let cases = [
            (
                SCENARIO.replace("name = \"x\"", "name = \"z\""),
                "application[0].name",
            ),
            (
                SCENARIO.replace("name = \"a\"", "name = \"b\""),
                "platform[0].name",
            ),
            (
                SCENARIO.replace("tasks = 100", "tasks = -5"),
                "application[0].tasks",
            ),
            (
                SCENARIO.replace("nodes = 4", "nodes = -1"),
                "platform[0].nodes",
            ),
            (
                SCENARIO.replace("nodes = 4", "nodes = 11"),
                "platform[0].nodes",
            ),
            (
                SCENARIO.replace("nodes = 4", "cores = 7"),
                "platform[0].cores",
            ),
            (
                SCENARIO.replace("nodes = 4", "nodes = 4\ncores = 8"),
                "platform[0]",
            ),
            (
                format!("{SCENARIO}\n[users]\nnobody = 2.0\n"),
                "users.nobody",
            ),
            (format!("{SCENARIO}\n[users]\nx = 0.0\n"), "users.x"),
            (
                format!("{SCENARIO}\n[arrivals]\npoisson_mean_interarrival_s = 0.0\n"),
                "arrivals.poisson_mean_interarrival_s",
            ),
        ];
        for (text, field) in cases {
            let e = resolve(&text).unwrap_err();
            assert!(
                e.contains("s.toml") && e.contains(field),
                "expected `{field}` in: {e}"
            );
        }
        for (table, field) in [
            ("top_k_percent = 51", "scheduler.top_k_percent"),
            ("d_unit = 0", "scheduler.d_unit"),
            ("p_unit = -1", "scheduler.p_unit"),
            ("first_level = \"best\"", "scheduler.first_level"),
            ("second_level = \"best\"", "scheduler.second_level"),
            (
                "platform_affinity = \"speed\"",
                "scheduler.platform_affinity",
            ),
        ] {
            let text = format!("{SCENARIO}\n[scheduler]\n{table}\n");
            let e = Scenario::from_toml_str("s.toml", &text)
                .unwrap()
                .scheduler_settings()
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("s.toml") && e.contains(field),
                "expected `{field}` in: {e}"
            );
        }
        let ok = format!("{SCENARIO}\n[scheduler]\nfirst_level = \"paf\"\ntop_k_percent = 20\n");
        let s = Scenario::from_toml_str("s.toml", &ok)
            .unwrap()
            .scheduler_settings()
            .unwrap();
        assert_eq!((s.first_level.as_str(), s.top_k_percent), ("paf", 20));
        let e = resolve("name = 3").unwrap_err();
        assert!(e.contains("s.toml") && e.contains("line 1"), "{e}");
    }
}
