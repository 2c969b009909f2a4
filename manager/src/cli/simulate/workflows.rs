//! `hetpilot simulate workflows`: what the live manager's workflow policy predicts for
//! given workflow files competing for `P` cores, all submitted at once. Each file becomes
//! the application `hetpilot submit` would make of it (with `--emulate --time-scale F`,
//! runtimes scaled as the emulator runs them), the live manager's model of it
//! ([`DagState::model`]), and the policy's paper algorithm schedules them as a round would
//! ([`ptg::algorithms::run`], backfilling included): per workflow its completion `C_i`
//! and its HCPA makespan alone on the cores `C*_i`, then the paper's average stretch
//! (ΣC/ΣC*), maximum stretch and makespan.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::super::workflow::{dax, tasks_file, wfcommons, Options};
use hetpilot::ptg::algorithms::{self, ClusterPtg, Instance};
use hetpilot::ptg::hcpa::HcpaSettings;
use hetpilot::ptg::live::WorkflowPolicy;
use hetpilot::queue::DagState;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Workflow files: WfCommons JSON (`.json`), Pegasus DAX (`.xml`) or application
    /// files with `[[task]]` tables (`.toml`).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The cores the workflows share (`P`).
    #[arg(long)]
    processors: u32,
    /// The workflow policy: cafm-k-shelves or cra-work-weight.
    #[arg(long, default_value = "cafm-k-shelves")]
    policy: String,
    /// Runtimes × F, as `hetpilot submit --emulate --time-scale F` runs them.
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Seeds the algorithms' random tie-breaking.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let policy = args.policy.parse::<WorkflowPolicy>()?;
    let Some(algorithm) = policy.algorithm() else {
        bail!(
            "`{}` is not a paper algorithm: nothing to simulate",
            args.policy
        );
    };
    if args.processors == 0 || args.processors > hetpilot::ptg::live::MAX_PLANNED_PROCESSORS {
        bail!(
            "--processors must be in 1..={}",
            hetpilot::ptg::live::MAX_PLANNED_PROCESSORS
        );
    }
    if !(args.time_scale.is_finite() && args.time_scale > 0.0) {
        bail!("--time-scale must be a number > 0");
    }
    let opts = Options {
        emulate: true,
        time_scale: args.time_scale,
        size_scale: 1.0,
        prefix: "simulated".into(),
        max_attempts: 1,
        external: None,
    };
    let mut names = Vec::new();
    let mut ptgs = Vec::new();
    for path in &args.files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let workflow = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => wfcommons::parse(&text),
            Some("xml") => dax::parse(&text),
            Some("toml") => tasks_file::parse(&text, path),
            _ => bail!("{}: not .json, .xml or .toml", path.display()),
        }
        .with_context(|| format!("{}", path.display()))?;
        let name = workflow.name.clone();
        let spec = workflow.into_spec(&opts)?;
        let dag = spec.dag.context("not a workflow")?;
        let graph = DagState::model(&dag).map_err(anyhow::Error::msg)?;
        names.push(name);
        ptgs.push(Arc::new(ClusterPtg::new(
            graph,
            args.processors,
            HcpaSettings::default(),
        )));
    }
    let instance = Instance {
        processors: args.processors,
        ptgs,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let out = algorithms::run(algorithm.as_ref(), &instance, &mut rng);
    let dedicated = instance.dedicated_makespans();
    let rows: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let c = out.schedule.completion(i);
            json!({"name": n, "completion_s": c, "dedicated_s": dedicated[i],
                   "stretch": c / dedicated[i].max(f64::MIN_POSITIVE)})
        })
        .collect();
    let m = out.metrics;
    if args.json {
        let v = json!({"policy": policy.as_str(), "algorithm": algorithm.name(),
            "processors": args.processors, "workflows": rows,
            "average_stretch": m.average_stretch, "maximum_stretch": m.maximum_stretch,
            "makespan_s": m.makespan, "utilization": m.utilization});
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{} on {} cores (time scale {})",
        algorithm.name(),
        args.processors,
        args.time_scale
    );
    println!(
        "{:<32} {:>10} {:>10} {:>8}",
        "workflow", "C (s)", "C* (s)", "stretch"
    );
    for r in &rows {
        println!(
            "{:<32} {:>10.2} {:>10.2} {:>8.2}",
            r["name"].as_str().unwrap_or(""),
            r["completion_s"].as_f64().unwrap_or(0.0),
            r["dedicated_s"].as_f64().unwrap_or(0.0),
            r["stretch"].as_f64().unwrap_or(0.0)
        );
    }
    println!(
        "average stretch {:.3}, maximum stretch {:.3}, makespan {:.2} s, utilization {:.2}",
        m.average_stretch, m.maximum_stretch, m.makespan, m.utilization
    );
    Ok(())
}
