//! The speed side of `hetpilot-research simulate fairshare`: Fig. 6 of the multi-resource fairshare
//! paper (the slowest and fastest suitable cluster's speed per job, and their difference)
//! and the walltime-normalization study (each user's usage under two placements, with
//! eq. 9's normalization off and on), written as Markdown and SVG into the output folder.

use std::path::Path;

use anyhow::Context;

use hetpilot_core::fairshare::{MachinePool, MultiResource};
use hetpilot_research::report::fairshare;
use hetpilot_research::sim::fairshare::FairshareJob;
use hetpilot_research::sim::fairshare_normalization::{
    placement_sensitivity, placement_sensitivity_markdown,
};
use hetpilot_research::sim::fairshare_suitability::{speed_spread, speed_spread_markdown};

fn write(dir: &Path, name: &str, text: String) -> anyhow::Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Fig. 6: `speed_spread.md`, `spec_min_max_cdf.svg` (left), `spec_difference_cdf.svg`
/// (right), for the jobs against `pool` (named `file` in the text).
pub fn write_speed_spread(
    dir: &Path,
    jobs: &[FairshareJob],
    pool: &MachinePool,
    file: &str,
) -> anyhow::Result<()> {
    let spread = speed_spread(jobs, pool);
    let md = format!(
        "Speed spread of the suitable clusters (Fig. 6): the {} jobs against the {} clusters of {file}, speeds as the file gives them.\n\n{}",
        jobs.len(),
        pool.machines().len(),
        speed_spread_markdown(&spread, pool)
    );
    write(dir, "speed_spread.md", md)?;
    let column = |f: &dyn Fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = spread.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    write(
        dir,
        "spec_min_max_cdf.svg",
        fairshare::cdf_svg(
            "CDFs of the slowest and fastest suitable cluster's speed (Fig. 6 left)",
            "speed (the machines file's speed column)",
            &[
                ("SPEC_j,min", column(&|p| p.0)),
                ("SPEC_j,max", column(&|p| p.1)),
            ],
            false,
        )?,
    )?;
    write(
        dir,
        "spec_difference_cdf.svg",
        fairshare::cdf_svg(
            "CDF of SPEC_j,max - SPEC_j,min (Fig. 6 right)",
            "speed difference (the machines file's speed column)",
            &[("max - min", column(&|p| p.1 - p.0))],
            false,
        )?,
    )
}

/// The normalization study on `platform` (multi-resource penalty): prints its table and
/// writes `placement_study.md` and `usage_ratio_cdf.svg` when `dir` is given.
pub fn placement_study(
    dir: Option<&Path>,
    jobs: &[FairshareJob],
    platform: &MachinePool,
) -> anyhow::Result<()> {
    let study = placement_sensitivity(platform, &MultiResource, jobs)?;
    let md = format!(
        "Walltime normalization (eq. 9) against the placement: the {} jobs replayed twice, first-fit on the fastest machines first and on the slowest first; runtimes = recorded runtime / speed of the slowest used machine; multi-resource penalty; no decay. Per user: usage with slowest-first over usage with fastest-first.\n\n{}",
        jobs.len(),
        placement_sensitivity_markdown(&study)
    );
    println!("\n== walltime normalization vs placement (runtime / speed, no decay) ==\n{md}");
    if let Some(dir) = dir {
        write(dir, "placement_study.md", md)?;
        let series: Vec<(&str, Vec<f64>)> = study
            .iter()
            .map(|s| {
                let label = if s.normalize_walltime {
                    "normalization on"
                } else {
                    "normalization off"
                };
                (label, s.ratios())
            })
            .collect();
        write(
            dir,
            "usage_ratio_cdf.svg",
            fairshare::cdf_svg(
                "Per-user usage, slowest-first over fastest-first placement",
                "usage ratio",
                &series,
                false,
            )?,
        )?;
    }
    Ok(())
}
