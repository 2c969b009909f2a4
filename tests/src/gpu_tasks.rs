//! GPU tasks that run together: each marks itself started, waits until the others have
//! (and the test releases them), and reports the devices it was bound to, its share and how
//! many ran at once, so a test can check binding and sharing from the files they leave.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What each of the `n` tasks reporting to `dir` wrote: `CUDA_VISIBLE_DEVICES
/// HETPILOT_GPU_SHARE RUNNING`.
pub fn reports(dir: &Path, n: usize) -> Vec<(String, String, usize)> {
    (0..n)
        .map(|i| {
            let text = std::fs::read_to_string(dir.join(format!("{i}.env")))
                .unwrap_or_else(|e| panic!("task {i} left no report: {e}"));
            let mut f = text.split_whitespace();
            let mut next = || f.next().unwrap_or_default().to_string();
            (next(), next(), next().parse().unwrap_or(0))
        })
        .collect()
}

/// A task command that marks itself started, waits (bounded) until `n` tasks have and the
/// file `release` is in `dir`, and reports its devices, its share and how many tasks were
/// running together (the shell's `${VAR:--}` braces doubled, as the command template reads
/// `{{` as a literal brace).
pub fn together(dir: &Path, n: usize) -> String {
    let d = dir.display();
    format!(
        "touch {d}/$HETPILOT_INDEX.started; i=0; \
         while ( [ $(ls {d}/*.started | wc -l) -lt {n} ] || [ ! -e {d}/release ] ) && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; \
         echo \"${{{{CUDA_VISIBLE_DEVICES:--}}}} ${{{{HETPILOT_GPU_SHARE:--}}}} $(ls {d}/*.started | wc -l)\" > {d}/$HETPILOT_INDEX.env"
    )
}

/// A directory for the reports of tasks that run [`together`], released at once when
/// `released`.
pub fn report_dir(parent: &Path, name: &str, released: bool) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    if released {
        std::fs::write(dir.join("release"), "").unwrap();
    }
    dir
}

/// How many of the tasks each device served, from their [`reports`], which must all show
/// the share `share` and all `n` tasks running together.
pub fn tasks_per_device(
    reports: &[(String, String, usize)],
    share: &str,
    n: usize,
) -> BTreeMap<String, usize> {
    assert!(
        reports
            .iter()
            .all(|(_, shown, running)| shown == share && *running == n),
        "each task's share is {share}, with {n} running together: {reports:?}"
    );
    let mut per_device = BTreeMap::new();
    for (devices, _, _) in reports {
        *per_device.entry(devices.clone()).or_default() += 1;
    }
    per_device
}

/// `[(device, tasks)]` as [`tasks_per_device`] returns it.
pub fn devices(counts: &[(&str, usize)]) -> BTreeMap<String, usize> {
    counts.iter().map(|&(d, n)| (d.to_string(), n)).collect()
}
