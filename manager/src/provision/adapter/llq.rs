//! Parsers for LoadLeveler's `llq`: the standard listing (`llq -j ...`, state codes I, R,
//! ST, H, NQ, C, CA, RM, ...) and the long listing (`llq -l -j ...`, `Status: Running`).
//! Both are keyed by [`job_key`]: the job id without step number or domain.

use super::{wait_status_code, AdapterError, JobState};
use std::collections::HashMap;

/// The step `host.domain.123.0` -> [`job_key`] `host.123`.
pub fn step_key(step: &str) -> String {
    job_key(job_of_step(step))
}

/// `host.123.0` -> `host.123`.
fn job_of_step(step: &str) -> &str {
    match step.rsplit_once('.') {
        Some((job, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => job,
        _ => step,
    }
}

/// The job `host.domain.123` -> `host.123`: the standard listing may print hosts without
/// their domain, so jobs are matched on this key.
pub fn job_key(job: &str) -> String {
    match job.rsplit_once('.') {
        Some((host, number)) => format!("{}.{number}", host.split('.').next().unwrap_or(host)),
        None => job.to_string(),
    }
}

/// Standard listing: rows `<step id> <owner> <date> <time> <ST> <PRI> <class> [running on]`
/// under a `Id  Owner  Submitted  ST ...` header. Returns the ST code of each job's first
/// step.
pub fn parse_standard(stdout: &str) -> HashMap<String, String> {
    let mut jobs = HashMap::new();
    let mut in_table = false;
    for line in stdout.lines() {
        if line.starts_with("---") {
            in_table = true;
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        // The closing summary ("5 job step(s) in queue, ...") is not a step id.
        if !in_table || words.len() < 6 || !words[0].contains('.') {
            continue;
        }
        jobs.entry(step_key(words[0]))
            .or_insert_with(|| words[4].to_string());
    }
    jobs
}

/// What the long listing says about a job's first step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepStatus {
    pub status: String,
    pub completion_code: Option<i32>,
}

/// Long listing: `Job Step Id: host.123.0` starts a step; `Status:` and `Completion Code:`
/// lines follow.
pub fn parse_long(stdout: &str) -> HashMap<String, StepStatus> {
    let mut jobs: HashMap<String, StepStatus> = HashMap::new();
    let mut current: Option<String> = None;
    for line in stdout.lines().map(str::trim) {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "Job Step Id" => {
                let job = step_key(value);
                current = (!jobs.contains_key(&job)).then(|| job.clone());
                if current.is_some() {
                    jobs.insert(
                        job,
                        StepStatus {
                            status: String::new(),
                            completion_code: None,
                        },
                    );
                }
            }
            "Status" => {
                if let Some(s) = current.as_ref().and_then(|j| jobs.get_mut(j)) {
                    s.status = value.to_string();
                }
            }
            "Completion Code" => {
                if let Some(s) = current.as_ref().and_then(|j| jobs.get_mut(j)) {
                    s.completion_code = value.parse::<i32>().ok().map(wait_status_code);
                }
            }
            _ => {}
        }
    }
    jobs
}

/// A state code of the standard listing.
pub fn state_of_code(code: &str, exit_code: Option<i32>) -> Result<JobState, AdapterError> {
    let ended = |what: &str| JobState::Ended {
        exit_code,
        reason: format!("{what} ({code})"),
    };
    Ok(match code {
        "I" | "NQ" | "D" | "V" | "VP" => JobState::Queued,
        "H" | "HS" | "S" | "E" | "EP" | "MP" => JobState::Held,
        "P" | "ST" | "R" | "CK" => JobState::Running,
        "C" | "CP" => ended("completed"),
        "CA" => ended("canceled"),
        "RM" | "RP" => ended("removed"),
        "X" | "XP" | "SX" => ended("rejected"),
        "NR" => ended("will never run"),
        "TX" => ended("terminated"),
        other => {
            return Err(AdapterError::Parse {
                command: "llq".into(),
                problem: format!("unknown LoadLeveler state code {other:?}"),
            })
        }
    })
}

/// A `Status:` word of the long listing (`Running`, `User Hold`, `Not Queued`, ...).
pub fn state_of_status(step: &StepStatus) -> Result<JobState, AdapterError> {
    let code = match step.status.as_str() {
        "Idle" => "I",
        "Not Queued" => "NQ",
        "Deferred" => "D",
        "Vacated" => "V",
        "Vacate Pending" => "VP",
        s if s.contains("Hold") => "H",
        "Preempted" => "E",
        "Preempt Pending" => "EP",
        "Resume Pending" => "MP",
        "Pending" => "P",
        "Starting" => "ST",
        "Running" => "R",
        "Checkpointing" => "CK",
        "Completed" => "C",
        "Complete Pending" => "CP",
        "Canceled" => "CA",
        "Removed" => "RM",
        "Remove Pending" => "RP",
        "Rejected" => "X",
        "Reject Pending" => "XP",
        "Submission Error" => "SX",
        "Not Run" => "NR",
        "Terminated" => "TX",
        other => {
            return Err(AdapterError::Parse {
                command: "llq -l".into(),
                problem: format!("unknown LoadLeveler status {other:?}"),
            })
        }
    };
    state_of_code(code, step.completion_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_listing_from_a_real_system() {
        let jobs = parse_standard(include_str!("fixtures/llq-standard.txt"));
        assert_eq!(jobs.len(), 5);
        assert_eq!(jobs[&job_key("fen1.example.org.10985723")], "R");
        assert_eq!(jobs["fen1.10984639"], "I");
        assert_eq!(jobs["fen1.10986275"], "I");
        assert_eq!(
            state_of_code(&jobs["fen1.10985723"], None).unwrap(),
            JobState::Running
        );
        assert_eq!(
            state_of_code(&jobs["fen1.10984685"], None).unwrap(),
            JobState::Queued
        );
    }

    #[test]
    fn long_listing_from_a_real_system() {
        let jobs = parse_long(include_str!("fixtures/llq-l-running.txt"));
        assert_eq!(jobs.len(), 1);
        let step = &jobs[&job_key("meso-d.16250")];
        assert_eq!(step.status, "Running");
        assert_eq!(step.completion_code, None);
        assert_eq!(state_of_status(step).unwrap(), JobState::Running);
    }

    #[test]
    fn no_job_status_to_report_is_an_empty_answer() {
        let none = include_str!("fixtures/llq-none.txt");
        assert!(parse_long(none).is_empty());
        assert!(parse_standard(none).is_empty());
    }

    #[test]
    fn every_documented_code_maps_and_unknown_ones_fail() {
        for (code, want) in [
            ("NQ", "Queued"),
            ("H", "Held"),
            ("ST", "Running"),
            ("CA", "Ended"),
            ("RM", "Ended"),
            ("C", "Ended"),
        ] {
            let got = format!("{:?}", state_of_code(code, None).unwrap());
            assert!(got.starts_with(want), "{code}: {got}");
        }
        assert!(state_of_code("??", None).is_err());
        let held = StepStatus {
            status: "User & System Hold".into(),
            completion_code: None,
        };
        assert_eq!(state_of_status(&held).unwrap(), JobState::Held);
        let done = StepStatus {
            status: "Completed".into(),
            completion_code: Some(2),
        };
        assert_eq!(
            state_of_status(&done).unwrap(),
            JobState::Ended {
                exit_code: Some(2),
                reason: "completed (C)".into()
            }
        );
    }

    #[test]
    fn step_numbers_and_domains_are_removed() {
        assert_eq!(job_of_step("meso-d.16250.0"), "meso-d.16250");
        assert_eq!(
            step_key("c197blade1b03.ppd.pok.ibm.com.123.0"),
            "c197blade1b03.123"
        );
        assert_eq!(
            job_key("c197blade1b03.ppd.pok.ibm.com.123"),
            "c197blade1b03.123"
        );
    }
}
