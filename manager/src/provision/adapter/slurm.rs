//! Slurm: `sbatch --parsable`, one `squeue` for every tracked job (then one `sacct -c` for
//! the jobs squeue has forgotten), `scancel`.

use super::script::{render_batch, SLURM};
use super::{
    command_failed, run_ok, wait_status_code, write_and_submit, AdapterError, BatchAdapter,
    BatchJobId, JobScript, JobState, PilotSpec,
};
use crate::provision::profile::{AdapterKind, PlatformProfile};
use crate::provision::runner::CommandRunner;
use std::collections::HashMap;

/// The Slurm adapter.
#[derive(Debug, Clone, Copy)]
pub struct Slurm;

/// `squeue` fields: id, long state name, reason, raw wait status.
const SQUEUE_FORMAT: &str = "JobID:|,State:|,Reason:|,exit_code:";

impl BatchAdapter for Slurm {
    fn kind(&self) -> AdapterKind {
        AdapterKind::Slurm
    }

    fn render(
        &self,
        profile: &PlatformProfile,
        pilot: &PilotSpec,
    ) -> Result<JobScript, AdapterError> {
        render_batch(SLURM, profile, pilot)
    }

    fn submit(
        &self,
        runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        script: &JobScript,
    ) -> Result<BatchJobId, AdapterError> {
        let stdout = write_and_submit(runner, script, &["sbatch", "--parsable", &script.path])?;
        parse_sbatch(&stdout)
    }

    fn poll(
        &self,
        runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        jobs: &[BatchJobId],
    ) -> Result<HashMap<BatchJobId, JobState>, AdapterError> {
        if jobs.is_empty() {
            return Ok(HashMap::new());
        }
        let ids = join_ids(jobs);
        let argv = ["squeue", "-h", "-t", "all", "-O", SQUEUE_FORMAT, "-j", &ids];
        let out = runner.run(&argv, None)?;
        let mut states = if out.status == 0 {
            parse_squeue(&out.stdout)?
        } else if out.stderr.contains("Invalid job id") {
            // Some Slurm versions refuse the whole list when one id is unknown: list every
            // job squeue shows instead, and pick ours.
            let argv = ["squeue", "-h", "-t", "all", "-O", SQUEUE_FORMAT];
            parse_squeue(&run_ok(runner, &argv, None)?.stdout)?
        } else {
            return Err(command_failed(&argv, &out));
        };
        let missing: Vec<BatchJobId> = jobs
            .iter()
            .filter(|j| !states.contains_key(*j))
            .cloned()
            .collect();
        if !missing.is_empty() {
            states.extend(sacct_end_states(runner, &missing));
        }
        Ok(jobs
            .iter()
            .map(|j| (j.clone(), states.remove(j).unwrap_or(JobState::Vanished)))
            .collect())
    }

    fn cancel(
        &self,
        runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        job: &BatchJobId,
    ) -> Result<(), AdapterError> {
        // scancel of a finished or unknown job prints a message and exits 0 (or 1 on older
        // versions with "Invalid job id"): both mean there is nothing left to cancel.
        let argv = ["scancel", &job.0];
        let out = runner.run(&argv, None)?;
        if out.status != 0 && !out.stderr.contains("Invalid job id") {
            return Err(command_failed(&argv, &out));
        }
        Ok(())
    }

    fn check_queue(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        pilot: &PilotSpec,
    ) -> Vec<super::queue_check::Finding> {
        super::queue_check::slurm(runner, profile, pilot)
    }
}

fn join_ids(jobs: &[BatchJobId]) -> String {
    jobs.iter()
        .map(|j| j.0.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// `sbatch --parsable` prints `id` or `id;cluster`.
fn parse_sbatch(stdout: &str) -> Result<BatchJobId, AdapterError> {
    let first = stdout.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let id = first.split(';').next().unwrap_or("").trim();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AdapterError::Parse {
            command: "sbatch --parsable".into(),
            problem: format!("expected a job id, got {stdout:?}"),
        });
    }
    Ok(BatchJobId(id.to_string()))
}

/// Lines `id|STATE|reason|wait-status`.
fn parse_squeue(stdout: &str) -> Result<HashMap<BatchJobId, JobState>, AdapterError> {
    let mut states = HashMap::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('|').map(str::trim).collect();
        let [id, state, reason, raw, ..] = fields[..] else {
            return Err(AdapterError::Parse {
                command: "squeue".into(),
                problem: format!("expected id|state|reason|exit_code, got {line:?}"),
            });
        };
        let exit_code = raw.parse::<i32>().ok().map(wait_status_code);
        states.insert(
            BatchJobId(id.to_string()),
            job_state("squeue", state, reason, exit_code)?,
        );
    }
    Ok(states)
}

/// Slurm's long state names (as `squeue %T` and `sacct` print them).
fn job_state(
    command: &str,
    state: &str,
    reason: &str,
    exit_code: Option<i32>,
) -> Result<JobState, AdapterError> {
    // sacct prints e.g. "CANCELLED by 0".
    let state = state.split_whitespace().next().unwrap_or("");
    Ok(match state {
        "PENDING" if reason.starts_with("JobHeld") => JobState::Held,
        "PENDING" | "REQUEUED" | "REQUEUE_FED" | "CONFIGURING" => JobState::Queued,
        "REQUEUE_HOLD" | "SUSPENDED" | "STOPPED" => JobState::Held,
        "RUNNING" | "RESIZING" | "SIGNALING" | "STAGE_OUT" => JobState::Running,
        // Still cleaning up: the final state (CANCELLED, FAILED...) is still to come.
        "COMPLETING" => JobState::Ending {
            reason: state.to_string(),
        },
        "COMPLETED" | "FAILED" | "CANCELLED" | "TIMEOUT" | "NODE_FAIL" | "PREEMPTED"
        | "BOOT_FAIL" | "DEADLINE" | "OUT_OF_MEMORY" | "SPECIAL_EXIT" | "REVOKED" => {
            JobState::Ended {
                exit_code,
                reason: if reason.is_empty() || reason == "None" {
                    state.to_string()
                } else {
                    format!("{state} ({reason})")
                },
            }
        }
        other => {
            return Err(AdapterError::Parse {
                command: command.into(),
                problem: format!("unknown Slurm job state {other:?}"),
            })
        }
    })
}

/// End states of jobs that left `squeue` (after MinJobAge), from the job-completion log.
/// Without one (`sacct` fails) the jobs are simply absent: the caller reports them
/// Vanished.
fn sacct_end_states(
    runner: &dyn CommandRunner,
    jobs: &[BatchJobId],
) -> HashMap<BatchJobId, JobState> {
    let ids = join_ids(jobs);
    let argv = [
        "sacct",
        "-c",
        "-n",
        "-P",
        "-o",
        "JobID,State,ExitCode",
        "-j",
        &ids,
    ];
    match run_ok(runner, &argv, None) {
        Ok(out) => parse_sacct(&out.stdout),
        Err(e) => {
            tracing::debug!(error = %e, "sacct -c has no end states");
            HashMap::new()
        }
    }
}

/// Lines `id|STATE|exit:signal`; steps (`id.batch`) are skipped, the last record of a
/// job (after requeues) wins.
fn parse_sacct(stdout: &str) -> HashMap<BatchJobId, JobState> {
    let mut states = HashMap::new();
    for line in stdout.lines() {
        let mut fields = line.split('|');
        let (Some(id), Some(state), Some(code)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if id.contains('.') || id.trim().is_empty() {
            continue;
        }
        let exit_code = match code.split_once(':') {
            Some((c, s)) => match (c.parse::<i32>(), s.parse::<i32>()) {
                // A signal number past i32::MAX - 128 is nonsense, not an exit code.
                (Ok(_), Ok(sig)) if sig != 0 => 128i32.checked_add(sig),
                (Ok(c), _) => Some(c),
                _ => None,
            },
            None => code.parse().ok(),
        };
        if let Ok(s) = job_state("sacct", state, "", exit_code) {
            states.insert(BatchJobId(id.trim().to_string()), s);
        }
    }
    states
}

#[cfg(test)]
#[path = "slurm_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::super::testing::{pilot, profile, FakeRunner};
    use super::*;

    #[test]
    fn renders_the_exact_script() {
        let script = Slurm
            .render(&profile(AdapterKind::Slurm), &pilot())
            .unwrap();
        let expected = r#"#!/bin/sh
#SBATCH --job-name=darth-p17
#SBATCH --partition=batch
#SBATCH --account=proj42
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --time=01:30:00
#SBATCH --output=/scratch/hetpilot/darth-p17.out
#SBATCH --error=/scratch/hetpilot/darth-p17.err
set -eu
umask 077
module load gcc/12
export HETPILOT_URL='http://manager.example:8080' HETPILOT_PLATFORM='darth' HETPILOT_PILOT='darth-p17'
export HETPILOT_AGENT_TOKEN_FILE='/scratch/hetpilot/darth-p17.token' HETPILOT_WORK_DIR='/scratch/hetpilot'
export HETPILOT_WALLTIME_END=$(( $(date +%s) + 5400 ))
agent='/opt/hetpilot/bin/hetpilot-agent'
if [ ! -x "$agent" ]; then
    echo "hetpilot: the agent binary $agent is missing or not executable on $(hostname); fix agent_binary in the platform profile" >&2
    exit 127
fi
exec "$agent" --delete-token-file
"#;
        assert_eq!(script.text, expected);
        assert_eq!(script.path, "/scratch/hetpilot/darth-p17.job");
    }

    #[test]
    fn lines_without_queue_account_or_setup_are_dropped() {
        let mut p = profile(AdapterKind::Slurm);
        p.queue = None;
        p.account = None;
        p.setup.clear();
        let text = Slurm.render(&p, &pilot()).unwrap().text;
        assert!(
            !text.contains("--partition") && !text.contains("--account"),
            "{text}"
        );
        assert!(
            text.contains("set -eu\numask 077\nexport HETPILOT_URL="),
            "{text}"
        );
    }

    #[test]
    fn submit_writes_the_script_0700_then_parses_id_and_cluster() {
        let runner = FakeRunner::new(&[(0, "4242;lab\n", "")]);
        let p = profile(AdapterKind::Slurm);
        let script = Slurm.render(&p, &pilot()).unwrap();
        let id = Slurm.submit(&runner, &p, &script).unwrap();
        assert_eq!(id, BatchJobId("4242".into()));
        let files = runner.files.lock().unwrap().clone();
        assert_eq!(
            files,
            vec![(script.path.clone(), script.text.clone(), 0o700)]
        );
        assert_eq!(
            runner.calls(),
            vec![vec![
                "sh",
                "-c",
                "umask 077 && exec \"$@\"",
                "hetpilot-submit",
                "sbatch",
                "--parsable",
                "/scratch/hetpilot/darth-p17.job"
            ]],
            "sbatch runs under umask 077: Slurm creates the job's output files with it"
        );
    }

    #[test]
    fn submit_failures_carry_the_batch_system_message() {
        let runner =
            FakeRunner::new(&[(1, "", "sbatch: error: invalid partition specified: batch\n")]);
        let p = profile(AdapterKind::Slurm);
        let script = Slurm.render(&p, &pilot()).unwrap();
        let err = Slurm.submit(&runner, &p, &script).unwrap_err();
        assert!(
            err.to_string().contains("invalid partition specified"),
            "{err}"
        );
        assert!(parse_sbatch("Submitted batch job 12\n").is_err());
    }

    #[test]
    fn a_completing_job_is_still_ending_not_ended() {
        assert_eq!(
            job_state("squeue", "COMPLETING", "None", None).unwrap(),
            JobState::Ending {
                reason: "COMPLETING".into()
            }
        );
    }

    #[test]
    fn sacct_signals_past_i32_do_not_overflow() {
        // `128 + sig` overflowed (a panic in debug builds) for this line.
        let states = parse_sacct("7|CANCELLED|0:2147483647\n");
        assert_eq!(
            states[&BatchJobId("7".into())],
            JobState::Ended {
                exit_code: None,
                reason: "CANCELLED".into()
            }
        );
        let states = parse_sacct("8|CANCELLED|0:9\n");
        assert!(matches!(
            states[&BatchJobId("8".into())],
            JobState::Ended {
                exit_code: Some(137),
                ..
            }
        ));
    }

    #[test]
    fn one_squeue_for_all_jobs_then_sacct_for_the_forgotten() {
        let squeue = "11|RUNNING|None|0\n12|PENDING|JobHeldUser|0\n13|PENDING|Resources|0\n\
                      14|FAILED|NonZeroExitCode|768\n15|CANCELLED|None|15\n";
        let sacct = "16|COMPLETED|0:0\n16.batch|COMPLETED|0:0\n";
        let runner = FakeRunner::new(&[(0, squeue, ""), (0, sacct, "")]);
        let jobs: Vec<BatchJobId> = (11..=17).map(|i| BatchJobId(i.to_string())).collect();
        let states = Slurm
            .poll(&runner, &profile(AdapterKind::Slurm), &jobs)
            .unwrap();
        let calls = runner.calls();
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[0].last().unwrap(), "11,12,13,14,15,16,17");
        assert_eq!(calls[1].last().unwrap(), "16,17");
        let st = |i: &str| states[&BatchJobId(i.into())].clone();
        assert_eq!(st("11"), JobState::Running);
        assert_eq!(st("12"), JobState::Held);
        assert_eq!(st("13"), JobState::Queued);
        assert_eq!(
            st("14"),
            JobState::Ended {
                exit_code: Some(3),
                reason: "FAILED (NonZeroExitCode)".into()
            }
        );
        assert_eq!(
            st("15"),
            JobState::Ended {
                exit_code: Some(143),
                reason: "CANCELLED".into()
            }
        );
        assert_eq!(
            st("16"),
            JobState::Ended {
                exit_code: Some(0),
                reason: "COMPLETED".into()
            }
        );
        assert_eq!(st("17"), JobState::Vanished);
    }

    #[test]
    fn squeue_refusing_unknown_ids_falls_back_to_listing_all_jobs() {
        let runner = FakeRunner::new(&[
            (1, "", "slurm_load_jobs error: Invalid job id specified\n"),
            (0, "7|RUNNING|None|0\n8|PENDING|Priority|0\n", ""),
            (
                1,
                "",
                "sacct: error: Slurm accounting storage is disabled\n",
            ),
        ]);
        let jobs = [BatchJobId("7".into()), BatchJobId("99".into())];
        let states = Slurm
            .poll(&runner, &profile(AdapterKind::Slurm), &jobs)
            .unwrap();
        assert_eq!(states.len(), 2);
        assert_eq!(states[&jobs[0]], JobState::Running);
        assert_eq!(states[&jobs[1]], JobState::Vanished);
        let calls = runner.calls();
        assert!(!calls[1].contains(&"-j".to_string()), "{calls:?}");
        assert_eq!(calls[2].last().unwrap(), "99");
    }

    #[test]
    fn a_down_controller_is_an_error_not_vanished_jobs() {
        let runner = FakeRunner::new(&[(
            1,
            "",
            "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
        )]);
        let err = Slurm
            .poll(
                &runner,
                &profile(AdapterKind::Slurm),
                &[BatchJobId("1".into())],
            )
            .unwrap_err();
        assert!(err.to_string().contains("Unable to contact"), "{err}");
    }

    #[test]
    fn polling_nothing_runs_nothing() {
        let runner = FakeRunner::new(&[]);
        let states = Slurm
            .poll(&runner, &profile(AdapterKind::Slurm), &[])
            .unwrap();
        assert!(states.is_empty() && runner.calls().is_empty());
    }

    #[test]
    fn cancel_of_an_unknown_job_is_fine_other_failures_are_not() {
        let runner = FakeRunner::new(&[
            (
                1,
                "",
                "scancel: error: Kill job error on job id 9: Invalid job id specified\n",
            ),
            (
                1,
                "",
                "scancel: error: Unable to contact slurm controller\n",
            ),
        ]);
        let p = profile(AdapterKind::Slurm);
        Slurm.cancel(&runner, &p, &BatchJobId("9".into())).unwrap();
        assert!(Slurm.cancel(&runner, &p, &BatchJobId("9".into())).is_err());
        assert_eq!(runner.calls()[0], vec!["scancel", "9"]);
    }
}
