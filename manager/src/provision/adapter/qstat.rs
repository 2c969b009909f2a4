//! Parser for `qstat -f` and `qstat -Q -f` (PBS Professional, TORQUE, and Slurm's TORQUE
//! wrapper): blocks starting `Job Id: <id>` (or `Queue: <name>`), then `name = value`
//! attributes, long values wrapped onto continuation lines.

use std::collections::HashMap;

/// One job's attributes, by name (`job_state`, `Exit_status`, `Resource_List.nodect`, ...).
pub type Attributes = HashMap<String, String>;

/// `1234.server.domain` -> `1234`; `1234[].server` -> `1234[]`.
pub fn strip_server(id: &str) -> &str {
    id.trim().split('.').next().unwrap_or("")
}

/// Jobs by id (server suffix stripped), from `qstat -f`.
pub fn parse(stdout: &str) -> HashMap<String, Attributes> {
    blocks(stdout, "Job Id:", strip_server)
}

/// Queues by name, from `qstat -Q -f`.
pub fn queues(stdout: &str) -> HashMap<String, Attributes> {
    blocks(stdout, "Queue:", str::trim)
}

/// The blocks of `stdout` that start with a line `<header> <name>`, by `name_of(name)`.
///
/// A line is a new attribute when it reads `<indent><name> = <value>` with a name made of
/// letters, digits, `_` and `.`; any other indented line continues the previous value
/// (PBS Pro and TORQUE wrap long values onto tab-indented lines, cutting anywhere, even
/// inside a word, so the pieces are joined without a separator).
fn blocks(
    stdout: &str,
    header: &str,
    name_of: impl Fn(&str) -> &str,
) -> HashMap<String, Attributes> {
    let mut jobs: HashMap<String, Attributes> = HashMap::new();
    let mut current: Option<String> = None;
    let mut last_key: Option<String> = None;
    for line in stdout.lines() {
        if let Some(id) = line.strip_prefix(header) {
            let id = name_of(id).to_string();
            jobs.entry(id.clone()).or_default();
            current = Some(id);
            last_key = None;
            continue;
        }
        let Some(job) = current.as_ref().and_then(|id| jobs.get_mut(id)) else {
            continue;
        };
        if line.trim().is_empty() {
            last_key = None;
            continue;
        }
        if let Some((key, value)) = attribute(line) {
            job.insert(key.to_string(), value.to_string());
            last_key = Some(key.to_string());
        } else if let Some(value) = last_key.as_ref().and_then(|k| job.get_mut(k)) {
            value.push_str(line.trim());
        }
    }
    jobs
}

fn attribute(line: &str) -> Option<(&str, &str)> {
    if !line.starts_with([' ', '\t']) {
        return None;
    }
    let (key, value) = line.trim_start().split_once(" = ")?;
    let name_ok = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
    name_ok.then_some((key, value.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAB: &str = include_str!("fixtures/qstat-f-slurm-torque-wrapper.txt");
    const TORQUE: &str = include_str!("fixtures/qstat-f-torque.txt");
    const PBS_PRO: &str = include_str!("fixtures/qstat-f-pbspro.txt");

    #[test]
    fn parses_the_lab_wrapper_output() {
        let jobs = parse(LAB);
        assert_eq!(jobs.len(), 5);
        assert_eq!(jobs["8"]["job_state"], "R");
        assert_eq!(jobs["8"]["Job_Name"], "fix-run");
        assert_eq!(jobs["8"]["exec_host"], "n1/2");
        assert_eq!(jobs["9"]["job_state"], "Q");
        assert_eq!(jobs["10"]["exec_host"], "n2/2+n3/2");
        assert_eq!(jobs["1"]["job_state"], "C");
        assert_eq!(jobs["7"]["job_state"], "C");
    }

    #[test]
    fn joins_torque_continuation_lines_and_strips_the_server() {
        let jobs = parse(TORQUE);
        let job = &jobs["548"];
        assert_eq!(job["job_state"], "R");
        assert_eq!(job["Resource_List.nodes"], "1:ppn=2");
        let vars = &job["Variable_List"];
        assert!(
            vars.starts_with("PBS_O_QUEUE=batch,PBS_O_HOME=/home/fred,"),
            "{vars}"
        );
        assert!(
            vars.contains("/opt/moab/bin:/opt/mam/bin:/usr/local/bin:/bin:/usr/bin"),
            "{vars}"
        );
        assert!(vars.ends_with("PBS_O_SERVER=moab"), "{vars}");
        assert_eq!(job["euser"], "fred");
    }

    #[test]
    fn joins_pbs_pro_continuations_cut_inside_words() {
        let jobs = parse(PBS_PRO);
        let job = &jobs["7600424"];
        assert_eq!(job["job_state"], "F");
        assert_eq!(job["Exit_status"], "0");
        assert_eq!(
            job["Output_Path"],
            "login001.palmetto.clemson.edu:/home/username/MPI/pi-mpi.o7600424"
        );
        assert!(job["exec_vnode"].contains("(node0094:ncpus=2:mem=1048576kb:ngpus=0:nphis=0)"));
        assert_eq!(jobs["7600425"]["job_state"], "Q");
    }

    #[test]
    fn server_suffixes_are_stripped() {
        assert_eq!(strip_server("1234.pbs02.example.org\n"), "1234");
        assert_eq!(strip_server("77[].server"), "77[]");
        assert_eq!(strip_server("49"), "49");
    }
}
