//! Job-to-cluster suitability (Section 4, Fig. 4 right of the multi-resource fairshare
//! paper): for every job, how many clusters of a platform could run it — a cluster is
//! suitable when each of the job's node requests fits it (CPUs, RAM, GPUs and node count
//! per node, the requested properties, the eligible speed range).

use crate::fairshare::MachinePool;

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
    use crate::fairshare::{JobRequest, Machine};

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
}
