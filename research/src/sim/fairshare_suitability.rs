//! Job-to-cluster suitability (Section 4, Fig. 4 right of the multi-resource fairshare
//! paper): for every job, how many clusters of a platform could run it — a cluster is
//! suitable when each of the job's node requests fits it (CPUs, RAM, GPUs and node count
//! per node, the requested properties, the eligible speed range) — and, for Fig. 6, the
//! slowest and fastest suitable cluster's speed (SPEC_{j,min}, SPEC_{j,max}) and their
//! difference.

use hetpilot_core::fairshare::MachinePool;

use super::fairshare::FairshareJob;

/// `histogram[n]`: the number of jobs that `n` clusters of `pool` can run.
pub fn suitability_histogram(jobs: &[FairshareJob], pool: &MachinePool) -> Vec<usize> {
    let mut histogram = vec![0usize; pool.machines().len() + 1];
    for job in jobs {
        histogram[suitable_clusters(job, pool)] += 1;
    }
    histogram
}

/// The clusters of `pool` that can run `job`.
pub fn suitable_clusters(job: &FairshareJob, pool: &MachinePool) -> usize {
    let r = &job.request;
    pool.machines()
        .iter()
        .filter(|m| r.speed_ok(m) && r.nodes.iter().all(|n| n.fits(m)))
        .count()
}

/// Per job with at least one suitable cluster: (SPEC_{j,min}, SPEC_{j,max}), the slowest
/// and the fastest suitable cluster's speed (Section 4, Fig. 6).
pub fn speed_spread(jobs: &[FairshareJob], pool: &MachinePool) -> Vec<(f64, f64)> {
    jobs.iter()
        .filter_map(|job| {
            let r = &job.request;
            let speeds = pool
                .machines()
                .iter()
                .filter(|m| r.speed_ok(m) && r.nodes.iter().all(|n| n.fits(m)))
                .map(|m| m.speed);
            speeds.fold(None, |acc: Option<(f64, f64)>, s| {
                Some(acc.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))))
            })
        })
        .collect()
}

/// Fig. 6 in numbers: quantiles of SPEC_{j,min}, SPEC_{j,max} and of the difference, the
/// share of jobs whose difference exceeds the paper's two thresholds (11 and 22, in SPEC
/// CFP2006 rate per core), and the share that sees the platform's whole speed range.
pub fn speed_spread_markdown(spread: &[(f64, f64)], pool: &MachinePool) -> String {
    let sorted = |f: &dyn Fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = spread.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (lo, hi, diff) = (sorted(&|p| p.0), sorted(&|p| p.1), sorted(&|p| p.1 - p.0));
    let q = |v: &[f64], p: f64| {
        v.get(((p * (v.len().max(1) - 1) as f64).round()) as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let n = spread.len().max(1) as f64;
    let share = |pred: &dyn Fn(&(f64, f64)) -> bool| {
        100.0 * spread.iter().filter(|p| pred(p)).count() as f64 / n
    };
    let speeds = pool.machines().iter().map(|m| m.speed);
    let (pmin, pmax) = speeds.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), s| {
        (a.min(s), b.max(s))
    });
    let mut md = String::from("| | p10 | p25 | median | p75 | p90 |\n|---|---|---|---|---|---|\n");
    for (name, v) in [
        ("SPEC_{j,min}", &lo),
        ("SPEC_{j,max}", &hi),
        ("SPEC_{j,max} − SPEC_{j,min}", &diff),
    ] {
        md.push_str(&format!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
            q(v, 0.1),
            q(v, 0.25),
            q(v, 0.5),
            q(v, 0.75),
            q(v, 0.9)
        ));
    }
    md.push_str(&format!(
        "\n{} jobs; platform speeds {pmin} to {pmax}; difference > 11: {:.1} % of jobs (paper 89 %), > 22: {:.1} % (paper 50 %); difference 0 (one speed suitable): {:.1} %; the whole platform range: {:.1} %.\n",
        spread.len(),
        share(&|p| p.1 - p.0 > 11.0),
        share(&|p| p.1 - p.0 > 22.0),
        share(&|p| p.1 - p.0 == 0.0),
        share(&|p| p.0 == pmin && p.1 == pmax),
    ));
    md
}

/// The histogram as a Markdown table (per cent of jobs per count) with the paper's
/// summary numbers: jobs with at least 2 and at least 7 suitable clusters, the maximum.
pub fn suitability_markdown(histogram: &[usize]) -> String {
    let total: usize = histogram.iter().sum();
    let pct = |n: usize| 100.0 * n as f64 / total.max(1) as f64;
    let at_least = |k: usize| pct(histogram.iter().skip(k).sum());
    let max = histogram.iter().rposition(|&n| n > 0).unwrap_or(0);
    let mut md = String::from("| suitable clusters | jobs | % of jobs |\n|---|---|---|\n");
    for (n, &jobs) in histogram.iter().enumerate() {
        if jobs > 0 {
            md.push_str(&format!("| {n} | {jobs} | {:.1} |\n", pct(jobs)));
        }
    }
    md.push_str(&format!(
        "\n{total} jobs; at least 2 clusters: {:.1} % (paper 93.6 %); at least 7: {:.1} % (paper > 50 %); at most {max} clusters (paper 13, about 20 % of jobs); no suitable cluster: {:.1} %.\n",
        at_least(2),
        at_least(7),
        pct(histogram[0])
    ));
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::fairshare::{JobRequest, Machine};

    fn job(cpus: u32, ram: u64) -> FairshareJob {
        FairshareJob {
            id: 1,
            user: "u".into(),
            submit: 0.0,
            runtime: 1.0,
            walltime_limit: 1.0,
            request: JobRequest::uniform(1, cpus, ram, 0),
        }
    }

    #[test]
    fn counts_the_clusters_whose_nodes_fit() {
        let pool = MachinePool::new(vec![
            Machine::new("small", 4, 8, 16),
            Machine::new("big", 2, 64, 512),
            Machine::new("fat", 1, 16, 1024),
        ])
        .unwrap();
        assert_eq!(suitable_clusters(&job(8, 16), &pool), 3);
        assert_eq!(suitable_clusters(&job(32, 16), &pool), 1);
        assert_eq!(suitable_clusters(&job(8, 600), &pool), 1);
        assert_eq!(suitable_clusters(&job(128, 1), &pool), 0);
        let h = suitability_histogram(&[job(8, 16), job(32, 16), job(128, 1)], &pool);
        assert_eq!(h, [1, 1, 0, 1]);
        let md = suitability_markdown(&h);
        assert!(md.contains("at least 2 clusters: 33.3 %"), "{md}");
    }

    #[test]
    fn the_speed_spread_spans_the_suitable_clusters_only() {
        let mut machines = vec![
            Machine::new("small", 4, 8, 16),
            Machine::new("big", 2, 64, 512),
            Machine::new("fat", 1, 16, 1024),
        ];
        machines[0].speed = 10.0;
        machines[1].speed = 40.0;
        machines[2].speed = 25.0;
        let pool = MachinePool::new(machines).unwrap();
        let spread = speed_spread(&[job(8, 16), job(32, 16), job(8, 600), job(128, 1)], &pool);
        // Fits all three (10..40), only big (40), only fat (25); the last fits none.
        assert_eq!(spread, [(10.0, 40.0), (40.0, 40.0), (25.0, 25.0)]);
        let md = speed_spread_markdown(&spread, &pool);
        assert!(md.contains("difference > 11: 33.3 % of jobs"), "{md}");
        assert!(
            md.contains("difference 0 (one speed suitable): 66.7 %"),
            "{md}"
        );
        assert!(md.contains("the whole platform range: 33.3 %"), "{md}");
    }
}
