//! Variants of an application's command: the same work run another way (one GPU and a
//! core, or eight cores). An application that declares them lets the scheduler pick, per
//! platform, which variant each task runs as, by the runtimes it measures; one that
//! declares none runs its tasks the one way its `command`, `cores` and `gpus` say.

use crate::resource_fields::request_of;
use crate::resources::{ResourceAmount, ResourceRequest};
use crate::spec::{AppSpec, SpecError};
use crate::template::{Inputs, Template};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The most variants one application may declare.
pub const MAX_VARIANTS: usize = 8;

/// The longest variant name, in characters.
pub const MAX_VARIANT_NAME: usize = 32;

fn one() -> u32 {
    1
}

/// One way to run an application's tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VariantSpec {
    /// Its name (`gpu`, `cpu`): 1-32 letters, digits, `-` or `_`, unique in the
    /// application; `hetpilot tasks` shows it.
    pub name: String,
    /// Its command template (default: the application's `command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Cores each task of this variant takes.
    #[serde(default = "one")]
    pub cores: u32,
    /// GPUs each task of this variant takes: whole devices or a share of one; `None`: a
    /// CPU-only variant.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::resource_fields::de_gpus"
    )]
    pub gpus: Option<ResourceAmount>,
}

impl VariantSpec {
    /// What a task of this variant asks for besides cores.
    pub fn request(&self) -> ResourceRequest {
        let mut request = ResourceRequest::default();
        if let Some(g) = self.gpus {
            request.0.insert(crate::resources::GPUS.to_string(), g);
        }
        request
    }

    /// Its command template, parsed against the tasks' placeholders.
    pub fn template(&self, app_command: &str, inputs: &Inputs) -> Result<Template, SpecError> {
        Template::parse(self.command.as_deref().unwrap_or(app_command), inputs).map_err(|e| {
            SpecError::Field {
                field: "variants",
                problem: format!("variant `{}`: command: {e}", self.name),
            }
        })
    }
}

fn bad(problem: String) -> SpecError {
    SpecError::Field {
        field: "variants",
        problem,
    }
}

/// Checks an application's variants: 1 to [`MAX_VARIANTS`] of them, unique valid names,
/// at least one core each, GPUs as whole devices or a share of one, at most one CPU-only
/// and one GPU variant, each command parses; and that nothing else in the application
/// decides how a task runs (top-level `gpus`/`resources`, a workflow, parallel sizes,
/// Het-HPS partitions). No variants: nothing to check.
pub(crate) fn check(spec: &AppSpec) -> Result<(), SpecError> {
    let variants = &spec.variants;
    if variants.is_empty() {
        return Ok(());
    }
    if variants.len() > MAX_VARIANTS {
        return Err(bad(format!(
            "{} variants is more than the limit of {MAX_VARIANTS}",
            variants.len()
        )));
    }
    let conflict = [
        (spec.gpus.is_some(), "gpus"),
        (!spec.resources.is_empty(), "resources"),
        (spec.dag.is_some(), "dag"),
        (spec.nodes.is_some(), "nodes"),
        (spec.procs.is_some(), "procs"),
        (spec.data_intensive, "data_intensive"),
    ];
    if let Some((_, field)) = conflict.iter().find(|(set, _)| *set) {
        return Err(SpecError::Field {
            field,
            problem: "an application with variants declares what a task takes in each \
                      variant; leave this field out"
                .into(),
        });
    }
    let mut names = BTreeSet::new();
    let mut kinds = BTreeMap::new();
    for (i, v) in variants.iter().enumerate() {
        let name_ok = (1..=MAX_VARIANT_NAME).contains(&v.name.chars().count())
            && v.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            return Err(bad(format!(
                "variant {i}: a name is 1-{MAX_VARIANT_NAME} letters, digits, `-` or `_`, got \
                 `{}`",
                v.name.chars().take(40).collect::<String>().escape_debug()
            )));
        }
        if !names.insert(v.name.as_str()) {
            return Err(bad(format!("variant `{}` is declared twice", v.name)));
        }
        if v.cores == 0 {
            return Err(bad(format!(
                "variant `{}`: cores must be at least 1",
                v.name
            )));
        }
        if v.command.as_deref().is_some_and(|c| c.contains('\0')) {
            return Err(bad(format!(
                "variant `{}`: command contains a NUL byte",
                v.name
            )));
        }
        request_of(v.gpus, &BTreeMap::new(), &format!("variant `{}`: ", v.name)).map_err(|e| {
            match e {
                SpecError::Field { problem, .. } => bad(problem),
                other => other,
            }
        })?;
        let kind = if v.gpus.is_some() { "GPU" } else { "CPU-only" };
        if let Some(other) = kinds.insert(kind, v.name.as_str()) {
            return Err(bad(format!(
                "variants `{other}` and `{}` are both {kind}: declare at most one CPU-only and \
                 one GPU variant",
                v.name
            )));
        }
        v.template(&spec.command, &spec.tasks.inputs())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TaskSource;

    fn spec(variants: Vec<VariantSpec>) -> AppSpec {
        AppSpec {
            name: "a".into(),
            command: "run {}".into(),
            tasks: TaskSource::Array { start: 0, end: 3 },
            cores: 1,
            memory_mb: 0,
            env: BTreeMap::new(),
            workdir: None,
            max_attempts: 3,
            timeout_secs: None,
            output_dir: None,
            inputs: vec![],
            outputs: vec![],
            data_intensive: false,
            dag: None,
            gpus: None,
            resources: BTreeMap::new(),
            nodes: None,
            procs: None,
            variants,
        }
    }

    fn variant(name: &str, cores: u32, gpus: Option<f64>) -> VariantSpec {
        VariantSpec {
            name: name.into(),
            command: None,
            cores,
            gpus: gpus.map(|g| ResourceAmount::parse(g).unwrap()),
        }
    }

    fn refusal(s: AppSpec) -> String {
        s.validate().unwrap_err().to_string()
    }

    #[test]
    fn a_gpu_and_a_cpu_variant_are_accepted() {
        let s = spec(vec![variant("gpu", 1, Some(1.0)), variant("cpu", 8, None)]);
        assert!(s.validate().is_ok());
        assert_eq!(
            s.variants[0].request().gpus(),
            ResourceAmount::whole(1).unwrap()
        );
        assert!(s.variants[1].request().is_empty());
    }

    #[test]
    fn hostile_variants_are_refused_naming_the_field() {
        let many = (0..9).map(|i| variant(&format!("v{i}"), 1, None)).collect();
        assert!(refusal(spec(many)).starts_with("field `variants`: 9 variants is more"));
        let twice = spec(vec![variant("x", 1, None), variant("x", 1, Some(1.0))]);
        assert_eq!(
            refusal(twice),
            "field `variants`: variant `x` is declared twice"
        );
        let zero = spec(vec![variant("cpu", 0, None)]);
        assert!(refusal(zero).contains("cores must be at least 1"));
        let two_cpu = spec(vec![variant("a", 1, None), variant("b", 2, None)]);
        assert!(refusal(two_cpu).contains("both CPU-only"));
        let split = spec(vec![variant("g", 1, Some(1.5))]);
        assert!(refusal(split).starts_with("field `variants`: variant `g`: "));
        let bad_name = spec(vec![variant("a b", 1, None)]);
        assert!(refusal(bad_name).contains("a name is 1-32"));
        let mut command = variant("c", 1, None);
        command.command = Some("run {nope}".into());
        assert!(refusal(spec(vec![command])).contains("variant `c`: command:"));
        let mut with_gpus = spec(vec![variant("c", 1, None)]);
        with_gpus.gpus = ResourceAmount::whole(1);
        assert!(refusal(with_gpus).starts_with("field `gpus`: an application with variants"));
        // NaN, negative and 2^64 GPUs never get past reading the field.
        for hostile in ["NaN", "-1", "18446744073709551616"] {
            let json = format!(
                r#"{{"name":"g","gpus":{}}}"#,
                if hostile == "NaN" { "\"NaN\"" } else { hostile }
            );
            assert!(
                serde_json::from_str::<VariantSpec>(&json).is_err(),
                "{hostile}"
            );
        }
    }
}
