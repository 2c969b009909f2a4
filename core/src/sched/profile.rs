//! The runtime profile table: mean task runtimes per (application, platform, co-runner
//! combination), plus each application's runtime distribution.
//!
//! This is the table that off-line profiling (the paper, Section 5.3.3) or hetpilot's
//! online profiling fills. Platform affinities (Section 4.1) read the OneCore column,
//! co-runner affinities (Section 4.2) and the second level (Algorithm 3) read the
//! combinations. A combination is a set of distinct applications sharing one node, the
//! node's cores split evenly among them (AllCore = a set of one application filling the node;
//! TwoApp / FourApp = two / four applications).

use std::collections::HashMap;

use serde::Deserialize;

use super::error::RuntimeProfileError;

/// One application of the profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplicationProfile {
    /// The application's name.
    pub name: String,
    /// Spread of individual task runtimes around the mean of the current combination.
    pub distribution: RuntimeDistribution,
}

/// One platform as the runtime profile knows it (a homogeneous set of nodes); not the
/// provisioner's platform profile (`profiles/platforms/*.toml`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProfiledPlatform {
    /// Platform name, unique in the profile.
    pub name: String,
    /// Cores of each node (at least 1); a combination splits them evenly.
    pub cores_per_node: u32,
    /// Nodes the platform has, when known; scenarios may not ask for more.
    pub max_nodes: Option<u32>,
}

/// How the runtime of one task varies around the mean of its (application, platform,
/// combination) cell: the runtime is `mean × factor`, with `E[factor] = 1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RuntimeDistribution {
    /// Every task takes exactly the mean.
    Constant,
    /// Log-normal factor with mean 1 and the given coefficient of variation (σ/μ).
    LogNormal {
        /// The coefficient of variation.
        cv: f64,
    },
}

/// A set of applications co-running on one node of a platform, with the mean task
/// runtime of each member in that combination.
#[derive(Debug, Clone, PartialEq)]
pub struct Combination {
    /// Application indices, sorted, distinct.
    pub members: Vec<usize>,
    /// `runtimes[k]` is the mean runtime (seconds) of `members[k]` in this combination.
    pub runtimes: Vec<f64>,
}

impl Combination {
    /// Mean runtime of `app` in this combination, if it is a member.
    pub fn runtime_of(&self, app: usize) -> Option<f64> {
        self.members
            .binary_search(&app)
            .ok()
            .map(|k| self.runtimes[k])
    }
}

/// The whole table. Build it with [`RuntimeProfile::new`] (validated) or parse a TOML
/// file with [`RuntimeProfile::from_toml_str`].
#[derive(Debug, Clone)]
pub struct RuntimeProfile {
    applications: Vec<ApplicationProfile>,
    platforms: Vec<ProfiledPlatform>,
    /// `one_core[app][platform]`: mean solo-run (OneCore) runtime in seconds.
    one_core: Vec<Vec<f64>>,
    /// `combinations[platform]`: every profiled combination on that platform.
    combinations: Vec<Vec<Combination>>,
    /// `lookup[platform]`: member set → index into `combinations[platform]`.
    lookup: Vec<HashMap<Vec<usize>, usize>>,
    /// `containing[platform][app]`: indices of the combinations that include `app`.
    containing: Vec<Vec<Vec<usize>>>,
}

/// A combination as given to [`RuntimeProfile::new`]: platform and (application, mean runtime)
/// pairs, by index.
#[derive(Debug, Clone, PartialEq)]
pub struct CombinationSpec {
    /// The platform, by index.
    pub platform: usize,
    /// (application index, mean runtime in seconds) of each co-runner.
    pub runtimes: Vec<(usize, f64)>,
}

impl RuntimeProfile {
    /// Validate and index a profile. `source` names where the data came from (a file
    /// path, or `"<memory>"`) and appears in every error.
    pub fn new(
        source: &str,
        applications: Vec<ApplicationProfile>,
        platforms: Vec<ProfiledPlatform>,
        one_core: Vec<Vec<f64>>,
        combinations: Vec<CombinationSpec>,
    ) -> Result<Self, RuntimeProfileError> {
        check_applications(source, &applications)?;
        check_platforms(source, &platforms)?;
        check_one_core(source, &applications, &platforms, &one_core)?;
        let index = CombinationIndex::build(source, &applications, &platforms, combinations)?;
        Ok(Self {
            applications,
            platforms,
            one_core,
            combinations: index.by_platform,
            lookup: index.lookup,
            containing: index.containing,
        })
    }

    /// Parse the TOML profile format documented in `profiles/two-level/profile.toml`.
    /// `source` (the file path) is named in every error.
    pub fn from_toml_str(source: &str, text: &str) -> Result<Self, RuntimeProfileError> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| RuntimeProfileError::Syntax {
            file: source.to_string(),
            message: e.to_string(),
        })?;
        file.into_profile(source)
    }

    /// The profile's applications, by index.
    pub fn applications(&self) -> &[ApplicationProfile] {
        &self.applications
    }

    /// The platforms, in profile order (the columns of the OneCore table).
    pub fn platforms(&self) -> &[ProfiledPlatform] {
        &self.platforms
    }

    /// Index of the application called `name`.
    pub fn application_index(&self, name: &str) -> Option<usize> {
        self.applications.iter().position(|a| a.name == name)
    }

    /// Index of the platform called `name`.
    pub fn platform_index(&self, name: &str) -> Option<usize> {
        self.platforms.iter().position(|p| p.name == name)
    }

    /// Mean OneCore (solo-run) runtime of `app` on `platform`, seconds.
    pub fn one_core(&self, app: usize, platform: usize) -> f64 {
        self.one_core[app][platform]
    }

    /// All profiled combinations on `platform`.
    pub fn combinations(&self, platform: usize) -> &[Combination] {
        &self.combinations[platform]
    }

    /// Indices (into [`Self::combinations`]) of the combinations on `platform` that include `app`.
    pub fn combinations_with(&self, platform: usize, app: usize) -> &[usize] {
        &self.containing[platform][app]
    }

    /// The combination with exactly these (sorted, distinct) members, if profiled.
    pub fn combination(&self, platform: usize, members: &[usize]) -> Option<&Combination> {
        self.lookup[platform]
            .get(members)
            .map(|&c| &self.combinations[platform][c])
    }

    /// Mean runtime of `app` on a node of `platform` whose cores are shared by `members`
    /// (sorted, distinct, containing `app`); `solo` says that `app` holds the node alone
    /// with a single task (OneCore).
    ///
    /// When the exact set was never profiled (e.g. a three-application leftover node) the
    /// estimate is the mean slowdown of `app` over the profiled combinations whose members
    /// are a subset of `members` (co-runners that were seen), then its AllCore entry,
    /// then OneCore.
    pub fn runtime_in(&self, app: usize, platform: usize, members: &[usize], solo: bool) -> f64 {
        let base = self.one_core[app][platform];
        if solo {
            return base;
        }
        if let Some(r) = self
            .combination(platform, members)
            .and_then(|c| c.runtime_of(app))
        {
            return r;
        }
        let mut sum = 0.0;
        let mut count = 0usize;
        for &c in &self.containing[platform][app] {
            let combo = &self.combinations[platform][c];
            if combo.members.len() > 1
                && combo
                    .members
                    .iter()
                    .all(|m| members.binary_search(m).is_ok())
            {
                sum += combo.runtime_of(app).unwrap_or(base) / base;
                count += 1;
            }
        }
        if count > 0 {
            return base * sum / count as f64;
        }
        self.combination(platform, &[app])
            .and_then(|c| c.runtime_of(app))
            .unwrap_or(base)
    }
}

/// An error about `field` of the profile from `source`.
fn invalid(source: &str, field: String, problem: String) -> RuntimeProfileError {
    RuntimeProfileError::Invalid {
        file: source.to_string(),
        field,
        problem,
    }
}

/// Applications have distinct, non-empty names and valid runtime distributions.
fn check_applications(
    source: &str,
    applications: &[ApplicationProfile],
) -> Result<(), RuntimeProfileError> {
    let mut seen = HashMap::new();
    for (i, a) in applications.iter().enumerate() {
        if a.name.trim().is_empty() {
            return Err(invalid(
                source,
                format!("application[{i}].name"),
                "is empty".into(),
            ));
        }
        if seen.insert(a.name.clone(), i).is_some() {
            return Err(invalid(
                source,
                format!("application[{i}].name"),
                format!("duplicate application `{}`", a.name),
            ));
        }
        if let RuntimeDistribution::LogNormal { cv } = a.distribution {
            if !(cv.is_finite() && cv >= 0.0) {
                return Err(invalid(
                    source,
                    format!("application `{}`.runtime_distribution.cv", a.name),
                    format!("must be a finite number >= 0, got {cv}"),
                ));
            }
        }
    }
    Ok(())
}

/// Platforms have distinct, non-empty names and at least one core per node.
fn check_platforms(
    source: &str,
    platforms: &[ProfiledPlatform],
) -> Result<(), RuntimeProfileError> {
    let mut seen = HashMap::new();
    for (j, p) in platforms.iter().enumerate() {
        if p.name.trim().is_empty() {
            return Err(invalid(
                source,
                format!("platform[{j}].name"),
                "is empty".into(),
            ));
        }
        if seen.insert(p.name.clone(), j).is_some() {
            return Err(invalid(
                source,
                format!("platform[{j}].name"),
                format!("duplicate platform `{}`", p.name),
            ));
        }
        if p.cores_per_node == 0 {
            return Err(invalid(
                source,
                format!("platform `{}`.cores_per_node", p.name),
                "must be at least 1".into(),
            ));
        }
    }
    Ok(())
}

/// The OneCore table has one row per application, one valid runtime per platform.
fn check_one_core(
    source: &str,
    applications: &[ApplicationProfile],
    platforms: &[ProfiledPlatform],
    one_core: &[Vec<f64>],
) -> Result<(), RuntimeProfileError> {
    if one_core.len() != applications.len() {
        return Err(invalid(
            source,
            "one_core".into(),
            format!(
                "has {} rows for {} applications",
                one_core.len(),
                applications.len()
            ),
        ));
    }
    for (i, row) in one_core.iter().enumerate() {
        let app = &applications[i].name;
        if row.len() != platforms.len() {
            return Err(invalid(
                source,
                format!("application `{app}`.one_core"),
                format!(
                    "has {} runtimes for {} platforms",
                    row.len(),
                    platforms.len()
                ),
            ));
        }
        for (j, &r) in row.iter().enumerate() {
            check_runtime(r).map_err(|problem| {
                invalid(
                    source,
                    format!("application `{app}`.one_core.{}", platforms[j].name),
                    problem,
                )
            })?;
        }
    }
    Ok(())
}

/// The checked combinations of a profile, indexed per platform.
struct CombinationIndex {
    /// `by_platform[platform]`: the platform's combinations in the given order.
    by_platform: Vec<Vec<Combination>>,
    /// `lookup[platform]`: member set → index into `by_platform[platform]`.
    lookup: Vec<HashMap<Vec<usize>, usize>>,
    /// `containing[platform][app]`: indices of the combinations that include `app`.
    containing: Vec<Vec<Vec<usize>>>,
}

impl CombinationIndex {
    /// Checks every combination (see [`checked_runtimes`]) and indexes it; the same member
    /// set may appear once per platform.
    fn build(
        source: &str,
        applications: &[ApplicationProfile],
        platforms: &[ProfiledPlatform],
        combinations: Vec<CombinationSpec>,
    ) -> Result<Self, RuntimeProfileError> {
        let m = platforms.len();
        let n = applications.len();
        let mut index = CombinationIndex {
            by_platform: vec![Vec::new(); m],
            lookup: vec![HashMap::new(); m],
            containing: vec![vec![Vec::new(); n]; m],
        };
        for (c, spec) in combinations.into_iter().enumerate() {
            let field = format!("combination[{c}]");
            let platform = spec.platform;
            let pairs = checked_runtimes(source, &field, spec, applications, platforms)?;
            let members: Vec<usize> = pairs.iter().map(|&(a, _)| a).collect();
            let runtimes = pairs.iter().map(|&(_, r)| r).collect();
            let id = index.by_platform[platform].len();
            if index.lookup[platform].insert(members.clone(), id).is_some() {
                return Err(invalid(
                    source,
                    field,
                    format!(
                        "the same applications on `{}` are listed twice",
                        platforms[platform].name
                    ),
                ));
            }
            for &a in &members {
                index.containing[platform][a].push(id);
            }
            index.by_platform[platform].push(Combination { members, runtimes });
        }
        Ok(index)
    }
}

/// One combination's (application, runtime) pairs sorted by application, checked: a known
/// platform, known and distinct applications that split its nodes' cores evenly, valid
/// runtimes. `field` (`combination[c]`) prefixes the errors' fields.
fn checked_runtimes(
    source: &str,
    field: &str,
    spec: CombinationSpec,
    applications: &[ApplicationProfile],
    platforms: &[ProfiledPlatform],
) -> Result<Vec<(usize, f64)>, RuntimeProfileError> {
    let Some(platform) = platforms.get(spec.platform) else {
        return Err(invalid(
            source,
            format!("{field}.platform"),
            format!("unknown platform index {}", spec.platform),
        ));
    };
    if spec.runtimes.is_empty() {
        return Err(invalid(
            source,
            format!("{field}.runtimes"),
            "names no application".into(),
        ));
    }
    let size = spec.runtimes.len() as u32;
    if size > platform.cores_per_node || platform.cores_per_node % size != 0 {
        return Err(invalid(
            source,
            format!("{field}.runtimes"),
            format!(
                "{size} applications cannot split the {} cores of a `{}` node evenly",
                platform.cores_per_node, platform.name
            ),
        ));
    }
    let mut pairs = spec.runtimes;
    pairs.sort_by_key(|&(a, _)| a);
    for w in pairs.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(invalid(
                source,
                format!("{field}.runtimes"),
                format!("application index {} appears twice", w[0].0),
            ));
        }
    }
    for &(a, r) in &pairs {
        let Some(app) = applications.get(a) else {
            return Err(invalid(
                source,
                format!("{field}.runtimes"),
                format!("unknown application index {a}"),
            ));
        };
        check_runtime(r).map_err(|problem| {
            invalid(source, format!("{field}.runtimes.{}", app.name), problem)
        })?;
    }
    Ok(pairs)
}

fn check_runtime(r: f64) -> Result<(), String> {
    if r.is_finite() && r > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "runtime must be a positive number of seconds, got {r}"
        ))
    }
}

/// The TOML layout of a profile file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    platform: Vec<PlatformEntry>,
    #[serde(default)]
    application: Vec<ApplicationEntry>,
    #[serde(default)]
    combination: Vec<CombinationEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlatformEntry {
    name: String,
    cores_per_node: u32,
    #[serde(default)]
    max_nodes: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplicationEntry {
    name: String,
    /// Mean OneCore runtime (seconds) per platform name.
    one_core: HashMap<String, f64>,
    #[serde(default)]
    runtime_distribution: Option<DistributionEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "kebab-case")]
enum DistributionEntry {
    Constant,
    #[serde(rename = "lognormal")]
    LogNormal {
        cv: f64,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CombinationEntry {
    platform: String,
    /// Mean runtime (seconds) of each member application in this combination.
    runtimes: HashMap<String, f64>,
}

impl ProfileFile {
    fn into_profile(self, source: &str) -> Result<RuntimeProfile, RuntimeProfileError> {
        let invalid = |field: String, problem: String| RuntimeProfileError::Invalid {
            file: source.to_string(),
            field,
            problem,
        };
        if self.platform.is_empty() {
            return Err(invalid(
                "platform".into(),
                "no [[platform]] is defined".into(),
            ));
        }
        let platforms: Vec<ProfiledPlatform> = self
            .platform
            .iter()
            .map(|p| ProfiledPlatform {
                name: p.name.clone(),
                cores_per_node: p.cores_per_node,
                max_nodes: p.max_nodes,
            })
            .collect();
        let platform_index = |name: &str| platforms.iter().position(|p| p.name == name);
        let mut applications = Vec::new();
        let mut one_core = Vec::new();
        for a in &self.application {
            for name in a.one_core.keys() {
                if platform_index(name).is_none() {
                    return Err(invalid(
                        format!("application `{}`.one_core.{name}", a.name),
                        format!("unknown platform `{name}`"),
                    ));
                }
            }
            let mut row = Vec::with_capacity(platforms.len());
            for p in &platforms {
                let Some(&r) = a.one_core.get(&p.name) else {
                    return Err(invalid(
                        format!("application `{}`.one_core.{}", a.name, p.name),
                        "missing: every application needs a OneCore runtime on every platform"
                            .into(),
                    ));
                };
                row.push(r);
            }
            one_core.push(row);
            applications.push(ApplicationProfile {
                name: a.name.clone(),
                distribution: match a.runtime_distribution {
                    None | Some(DistributionEntry::Constant) => RuntimeDistribution::Constant,
                    Some(DistributionEntry::LogNormal { cv }) => {
                        RuntimeDistribution::LogNormal { cv }
                    }
                },
            });
        }
        let app_index = |name: &str| applications.iter().position(|a| a.name == name);
        let mut combos = Vec::new();
        for (c, entry) in self.combination.iter().enumerate() {
            let Some(platform) = platform_index(&entry.platform) else {
                return Err(invalid(
                    format!("combination[{c}].platform"),
                    format!("unknown platform `{}`", entry.platform),
                ));
            };
            let mut runtimes = Vec::new();
            for (name, &r) in &entry.runtimes {
                let Some(a) = app_index(name) else {
                    return Err(invalid(
                        format!("combination[{c}].runtimes.{name}"),
                        format!("unknown application `{name}`"),
                    ));
                };
                runtimes.push((a, r));
            }
            combos.push(CombinationSpec { platform, runtimes });
        }
        RuntimeProfile::new(source, applications, platforms, one_core, combos)
    }
}

#[cfg(test)]
#[path = "profile_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::affinity_tables::AffinityTables;

    /// The reconstructed profile shipped in the repository.
    const PAPER_PROFILE: &str = include_str!("../../../profiles/two-level/profile.toml");

    const MINIMAL: &str = r#"
[[platform]]
name = "a"
cores_per_node = 2

[[application]]
name = "x"
one_core = { a = 10.0 }

[[combination]]
platform = "a"
runtimes = { x = 12.0 }
"#;

    fn error(text: &str) -> String {
        RuntimeProfile::from_toml_str("p.toml", text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn minimal_profile_parses() {
        let p = RuntimeProfile::from_toml_str("p.toml", MINIMAL).unwrap();
        assert_eq!(p.one_core(0, 0), 10.0);
        assert_eq!(p.runtime_in(0, 0, &[0], false), 12.0);
        assert_eq!(p.runtime_in(0, 0, &[0], true), 10.0);
    }

    #[test]
    fn bad_values_name_file_and_field() {
        let e = error(&MINIMAL.replace("a = 10.0", "a = -1.0"));
        assert!(
            e.contains("p.toml") && e.contains("one_core.a") && e.contains("positive"),
            "{e}"
        );
        let e = error(&MINIMAL.replace("a = 10.0", "a = 0.0"));
        assert!(e.contains("one_core.a"), "{e}");
        let e = error(&MINIMAL.replace("one_core = { a = 10.0 }", "one_core = { }"));
        assert!(e.contains("one_core.a") && e.contains("missing"), "{e}");
        let e = error(&MINIMAL.replace("runtimes = { x = 12.0 }", "runtimes = { y = 12.0 }"));
        assert!(
            e.contains("combination[0].runtimes.y") && e.contains("unknown application"),
            "{e}"
        );
        let e = error(&MINIMAL.replace("platform = \"a\"", "platform = \"b\""));
        assert!(e.contains("combination[0].platform"), "{e}");
        let e = error(&MINIMAL.replace("cores_per_node = 2", "cores_per_node = 0"));
        assert!(e.contains("cores_per_node"), "{e}");
        let e = error("[[platform]]\nname = \"a\"\ncores_per_node = \"two\"\n");
        assert!(e.contains("p.toml") && e.contains("line 3"), "{e}");
    }

    #[test]
    fn unprofiled_combinations_fall_back_to_seen_co_runners() {
        let text = r#"
[[platform]]
name = "a"
cores_per_node = 2
[[application]]
name = "x"
one_core = { a = 10.0 }
[[application]]
name = "y"
one_core = { a = 20.0 }
[[combination]]
platform = "a"
runtimes = { x = 15.0 }
"#;
        let p = RuntimeProfile::from_toml_str("p.toml", text).unwrap();
        // {x, y} was never profiled: x falls back to its AllCore entry, y to OneCore.
        assert_eq!(p.runtime_in(0, 0, &[0, 1], false), 15.0);
        assert_eq!(p.runtime_in(1, 0, &[0, 1], false), 20.0);
    }

    #[test]
    fn paper_profile_reproduces_tables_3_and_4() {
        let p = RuntimeProfile::from_toml_str("profile.toml", PAPER_PROFILE).unwrap();
        let t = AffinityTables::of(&p);
        // Table 3 EPA and RPA, and Table 4 normalized difference, as printed in the paper.
        let epa = [
            [0.614, 1.532, 0.978, 1.214],
            [0.640, 1.308, 1.009, 1.284],
            [0.929, 1.080, 0.994, 1.006],
            [0.431, 1.234, 1.326, 1.883],
            [0.431, 1.822, 1.181, 1.428],
        ];
        let rpa = [
            [0.966, 1.169, 0.918, 0.974],
            [1.009, 0.997, 0.955, 1.042],
            [1.473, 0.854, 0.988, 0.847],
            [0.684, 0.892, 1.203, 1.484],
            [0.678, 1.341, 1.060, 1.102],
        ];
        let thr = [
            [7.49, 14.75, 10.37, 12.24],
            [56.28, 94.97, 77.66, 93.58],
            [9.57, 10.71, 10.06, 10.15],
            [11.64, 23.88, 25.28, 33.76],
            [17.98, 50.69, 35.62, 41.44],
        ];
        let norm = [
            [5.57, 9.86, 10.04, 8.66],
            [0.69, 33.76, 7.47, 12.01],
            [12.65, 0.27, 3.72, 0.37],
            [7.99, 70.78, 9.84, 12.73],
            [4.70, 6.22, 6.38, 4.34],
        ];
        let r = |v: f64, d: i32| (v * 10f64.powi(d)).round() / 10f64.powi(d);
        for a in 0..5 {
            for p in 0..4 {
                assert_eq!(r(t.egocentric[a][p], 3), epa[a][p], "EPA {a} {p}");
                assert_eq!(r(t.reciprocal[a][p], 3), rpa[a][p], "RPA {a} {p}");
                assert_eq!(r(t.throughput[a][p], 2), thr[a][p], "throughput {a} {p}");
                assert_eq!(
                    r(t.normalized_difference[a][p].unwrap(), 2),
                    norm[a][p],
                    "CA {a} {p}"
                );
            }
        }
    }
}
