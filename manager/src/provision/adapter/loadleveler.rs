//! IBM LoadLeveler: `llsubmit` of a job command file (`# @` keywords), one standard
//! `llq -j` listing for every tracked job (then one long `llq -l -j` for the exit codes of
//! those that just finished), `llcancel`. LoadLeveler cannot be installed here: the tests check
//! exact job command files and parse `llq` output recorded on real systems.

use super::llq;
use super::script::{render_batch, LOADLEVELER};
use super::{
    command_failed, write_and_submit, AdapterError, BatchAdapter, BatchJobId, JobScript, JobState,
    PilotSpec,
};
use crate::provision::profile::{AdapterKind, PlatformProfile};
use crate::provision::runner::CommandRunner;
use std::collections::HashMap;

/// The LoadLeveler adapter.
#[derive(Debug, Clone, Copy)]
pub struct LoadLeveler;

const NO_STATUS: &str = "There is currently no job status to report";

impl BatchAdapter for LoadLeveler {
    fn kind(&self) -> AdapterKind {
        AdapterKind::LoadLeveler
    }

    fn render(
        &self,
        profile: &PlatformProfile,
        pilot: &PilotSpec,
    ) -> Result<JobScript, AdapterError> {
        render_batch(LOADLEVELER, profile, pilot)
    }

    fn submit(
        &self,
        runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        script: &JobScript,
    ) -> Result<BatchJobId, AdapterError> {
        let stdout = write_and_submit(runner, script, &["llsubmit", &script.path])?;
        parse_llsubmit(&stdout)
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
        let ids: Vec<&str> = jobs.iter().map(|j| j.0.as_str()).collect();
        let Some(out) = llq_run(runner, &["llq", "-j"], &ids)? else {
            return Ok(jobs
                .iter()
                .map(|j| (j.clone(), JobState::Vanished))
                .collect());
        };
        let codes = llq::parse_standard(&out);
        let mut states = HashMap::new();
        let mut finished = Vec::new();
        for job in jobs {
            let state = match codes.get(&llq::job_key(&job.0)) {
                Some(code) => llq::state_of_code(code, None)?,
                // Finished jobs leave the queue: llq no longer knows them.
                None => JobState::Vanished,
            };
            if matches!(state, JobState::Ended { .. }) {
                finished.push(job.0.as_str());
            }
            states.insert(job.clone(), state);
        }
        // The long listing has the exit codes the standard one lacks.
        if !finished.is_empty() {
            if let Some(out) = llq_run(runner, &["llq", "-l", "-j"], &finished)? {
                for (key, step) in llq::parse_long(&out) {
                    if let Some(job) = jobs.iter().find(|j| llq::job_key(&j.0) == key) {
                        states.insert(job.clone(), llq::state_of_status(&step)?);
                    }
                }
            }
        }
        Ok(states)
    }

    fn cancel(
        &self,
        runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        job: &BatchJobId,
    ) -> Result<(), AdapterError> {
        let argv = ["llcancel", &job.0];
        let out = runner.run(&argv, None)?;
        let text = format!("{}{}", out.stdout, out.stderr);
        if out.status != 0 && !text.contains("not found") && !text.contains(NO_STATUS) {
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
        super::queue_check::loadleveler(runner, profile, pilot)
    }
}

/// Runs `llq <options> <ids>`; `None` when llq has nothing to report on any of them.
fn llq_run(
    runner: &dyn CommandRunner,
    options: &[&str],
    ids: &[&str],
) -> Result<Option<String>, AdapterError> {
    let argv: Vec<&str> = options.iter().chain(ids).copied().collect();
    let out = runner.run(&argv, None)?;
    if out.stdout.contains(NO_STATUS) || out.stderr.contains(NO_STATUS) {
        return Ok(None);
    }
    if out.status != 0 {
        return Err(command_failed(&argv, &out));
    }
    Ok(Some(out.stdout))
}

/// `llsubmit: The job "host.123" has been submitted.` (other lines, e.g. from a submit
/// filter, may come first).
fn parse_llsubmit(stdout: &str) -> Result<BatchJobId, AdapterError> {
    stdout
        .lines()
        .filter(|l| l.contains("has been submitted"))
        .find_map(|l| l.split('"').nth(1))
        .filter(|id| !id.is_empty() && !id.contains(char::is_whitespace))
        .map(|id| BatchJobId(id.to_string()))
        .ok_or_else(|| AdapterError::Parse {
            command: "llsubmit".into(),
            problem: format!("no `The job \"...\" has been submitted` line in {stdout:?}"),
        })
}

#[cfg(test)]
#[path = "loadleveler_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::super::testing::{pilot, profile, FakeRunner};
    use super::*;

    #[test]
    fn renders_the_exact_job_command_file() {
        let script = LoadLeveler
            .render(&profile(AdapterKind::LoadLeveler), &pilot())
            .unwrap();
        let expected = r#"#!/bin/sh
# @ job_name = darth-p17
# @ job_type = parallel
# @ class = batch
# @ account_no = proj42
# @ node = 1
# @ tasks_per_node = 8
# @ wall_clock_limit = 01:30:00
# @ output = /scratch/hetpilot/darth-p17.out
# @ error = /scratch/hetpilot/darth-p17.err
# @ environment = COPY_ALL
# @ queue
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
    }

    #[test]
    fn without_class_or_account_those_keywords_are_left_out() {
        let mut p = profile(AdapterKind::LoadLeveler);
        p.queue = None;
        p.account = None;
        let text = LoadLeveler.render(&p, &pilot()).unwrap().text;
        assert!(
            !text.contains("# @ class") && !text.contains("# @ account_no"),
            "{text}"
        );
        assert!(text.contains("# @ node = 1\n# @ tasks_per_node = 8\n"));
    }

    #[test]
    fn submit_parses_the_llsubmit_message() {
        let out = "llsubmit: Processed command file through Submit Filter: \"/etc/ll/filter\".\n\
                   llsubmit: The job \"meso-d.16247\" has been submitted.\n";
        let runner = FakeRunner::new(&[(0, out, "")]);
        let p = profile(AdapterKind::LoadLeveler);
        let script = LoadLeveler.render(&p, &pilot()).unwrap();
        let id = LoadLeveler.submit(&runner, &p, &script).unwrap();
        assert_eq!(id.0, "meso-d.16247");
        assert_eq!(
            runner.calls()[0],
            [
                "sh",
                "-c",
                "umask 077 && exec \"$@\"",
                "hetpilot-submit",
                "llsubmit",
                "/scratch/hetpilot/darth-p17.job"
            ]
        );
        assert!(parse_llsubmit("llsubmit: 2512-... syntax error\n").is_err());
    }

    #[test]
    fn one_llq_for_all_jobs_gone_ones_vanish() {
        let standard = include_str!("fixtures/llq-standard.txt");
        let runner = FakeRunner::new(&[(0, standard, "")]);
        let jobs: Vec<BatchJobId> = ["fen1.10985723", "fen1.example.org.10984639", "fen1.42"]
            .iter()
            .map(|s| BatchJobId(s.to_string()))
            .collect();
        let states = LoadLeveler
            .poll(&runner, &profile(AdapterKind::LoadLeveler), &jobs)
            .unwrap();
        assert_eq!(
            runner.calls(),
            vec![vec![
                "llq",
                "-j",
                "fen1.10985723",
                "fen1.example.org.10984639",
                "fen1.42"
            ]]
        );
        assert_eq!(states[&jobs[0]], JobState::Running);
        assert_eq!(states[&jobs[1]], JobState::Queued);
        assert_eq!(states[&jobs[2]], JobState::Vanished);
    }

    #[test]
    fn finished_jobs_get_their_exit_code_from_one_long_listing() {
        let standard = "Id                       Owner      Submitted   ST PRI Class        Running On\n\
                        ------------------------ ---------- ----------- -- --- ------------ -----------\n\
                        meso-d.16250.0           diet        7/24 10:19 C  50  parall\n";
        let long = include_str!("fixtures/llq-l-running.txt")
            .replace("Status: Running", "Status: Completed")
            .replace("Completion Code:", "Completion Code: 256");
        let runner = FakeRunner::new(&[(0, standard, ""), (0, &long, "")]);
        let jobs = [BatchJobId("meso-d.16250".into())];
        let states = LoadLeveler
            .poll(&runner, &profile(AdapterKind::LoadLeveler), &jobs)
            .unwrap();
        assert_eq!(runner.calls()[1], ["llq", "-l", "-j", "meso-d.16250"]);
        assert_eq!(
            states[&jobs[0]],
            JobState::Ended {
                exit_code: Some(1),
                reason: "completed (C)".into()
            }
        );
    }

    #[test]
    fn nothing_to_report_means_every_job_vanished() {
        let none = include_str!("fixtures/llq-none.txt");
        let runner = FakeRunner::new(&[
            (1, none, ""),
            (1, "", "llq: 2539-463 Cannot connect to central manager\n"),
        ]);
        let jobs = [BatchJobId("meso-d.16247".into())];
        let p = profile(AdapterKind::LoadLeveler);
        assert_eq!(
            LoadLeveler.poll(&runner, &p, &jobs).unwrap()[&jobs[0]],
            JobState::Vanished
        );
        assert!(LoadLeveler.poll(&runner, &p, &jobs).is_err());
    }

    #[test]
    fn cancel_runs_llcancel() {
        let runner = FakeRunner::new(&[(
            0,
            "llcancel: Cancel command has been sent to the central manager.\n",
            "",
        )]);
        LoadLeveler
            .cancel(
                &runner,
                &profile(AdapterKind::LoadLeveler),
                &BatchJobId("meso-d.16250".into()),
            )
            .unwrap();
        assert_eq!(runner.calls()[0], ["llcancel", "meso-d.16250"]);
    }
}
