//! `hetpilot fairshare ...`: inspect the multi-resource fairshare model.
//! `hetpilot fairshare penalty` prints PE_k(j, i) for every machine (suitable or not), the
//! paper's P(j) (eq. 8), the CPU-only penalty and Moab's system-wide PE (eq. 3).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args as ClapArgs, Subcommand};

use hetpilot::fairshare::{
    Constraint, CpuOnly, JobRequest, Machine, MachinePool, MultiResource, NodeRequest,
    PenaltyFunction, ProcessorEquivalent,
};
use hetpilot::trace::{parse_alea_machines, parse_platform_profile, parse_size};

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    command: FairshareCommand,
}

#[derive(Debug, Subcommand)]
enum FairshareCommand {
    /// Price one job request on a platform: PE per machine and P(j).
    Penalty(PenaltyArgs),
}

#[derive(Debug, ClapArgs)]
struct PenaltyArgs {
    /// Platform: an Alea machines file (6 or 8 tab-separated fields) or a platform profile
    /// TOML with [[machine]] tables (chosen by the .toml extension).
    #[arg(long)]
    machines: PathBuf,
    /// CPUs per node.
    #[arg(long)]
    cpus: u32,
    /// Memory per node, e.g. 512GB, 16G, 2048MB (binary multiples).
    #[arg(long)]
    mem: String,
    /// GPUs per node.
    #[arg(long, default_value_t = 0)]
    gpus: u32,
    /// Number of nodes with this request (each is one k of eq. 8).
    #[arg(long, default_value_t = 1)]
    nodes: u32,
    /// Required machine property (repeatable), e.g. cl_zewura.
    #[arg(long = "property")]
    properties: Vec<String>,
    /// Reserve whole nodes (PBS #excl).
    #[arg(long)]
    exclusive: bool,
    /// queue_cost_j of eq. 5/8.
    #[arg(long, default_value_t = 1.0)]
    queue_cost: f64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        FairshareCommand::Penalty(a) => penalty(a),
    }
}

/// Read a machine pool: `.toml` is a `[[machine]]` profile, anything else an Alea machines
/// file.
pub(crate) fn load_machine_pool(path: &Path) -> anyhow::Result<MachinePool> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let machines: Vec<Machine> = if path.extension().is_some_and(|e| e == "toml") {
        parse_platform_profile(&text).with_context(|| format!("{}", path.display()))?
    } else {
        parse_alea_machines(&text).with_context(|| format!("{}", path.display()))?
    };
    MachinePool::new(machines).with_context(|| format!("{}", path.display()))
}

fn penalty(a: PenaltyArgs) -> anyhow::Result<()> {
    let platform = load_machine_pool(&a.machines)?;
    let ram = parse_size(&a.mem).context("--mem")?;
    if !(a.queue_cost.is_finite() && a.queue_cost > 0.0) {
        bail!(
            "--queue-cost must be a positive number, got {}",
            a.queue_cost
        );
    }
    let mut request = NodeRequest::new(a.nodes, a.cpus, ram, a.gpus);
    request.exclusive = a.exclusive;
    request.constraints = a
        .properties
        .iter()
        .map(|p| Constraint::Property(p.clone()))
        .collect();
    let mut job = JobRequest::from_requests(vec![request.clone()]);
    job.queue_cost = a.queue_cost;
    let prices = MultiResource.breakdown(&platform, &job)?;
    println!(
        "request: {} node(s) x {} CPUs, {}, {} GPUs, queue cost {}",
        a.nodes,
        a.cpus,
        human_bytes(ram),
        a.gpus,
        a.queue_cost
    );
    println!(
        "{:<16} {:>6} {:>6} {:>12} {:>5} {:>6} {:>10}",
        "machine", "nodes", "CPUs", "RAM/node", "GPUs", "cost", "PE(j,i)"
    );
    for (i, m) in platform.machines().iter().enumerate() {
        let pe = prices[0]
            .suitable
            .iter()
            .find(|p| p.machine == i)
            .map(|p| p.pe);
        println!(
            "{:<16} {:>6} {:>6} {:>12} {:>5} {:>6} {:>10}",
            m.name,
            m.nodes,
            m.cpus_per_node,
            human_bytes(m.ram_per_node),
            m.gpus_per_node,
            m.node_cost,
            pe.map_or_else(|| "unsuitable".to_string(), format_number)
        );
    }
    let p = MultiResource.penalty(&platform, &job)?;
    println!("P(j) multi-resource (eq. 8) = {}", format_number(p));
    println!(
        "P(j) CPU-only               = {}",
        format_number(CpuOnly.penalty(&platform, &job)?)
    );
    println!(
        "PE(j) system-wide (eq. 3)   = {}   (availCPU {}, availRAM {})",
        format_number(ProcessorEquivalent.penalty(&platform, &job)?),
        platform.total_cpus(),
        human_bytes(platform.total_ram())
    );
    Ok(())
}

/// Up to one decimal, trailing zeros dropped: 121.904... -> 121.9, 80.0 -> 80, 2.5 -> 2.5.
pub(crate) fn format_number(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

pub(crate) fn human_bytes(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let gib = bytes as f64 / GIB;
    if gib >= 1.0 {
        format!("{} GB", format_number(gib))
    } else {
        format!("{} MB", format_number(bytes as f64 / (1u64 << 20) as f64))
    }
}
