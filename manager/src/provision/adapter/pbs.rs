//! PBS Professional (`qsub -l select=N:ncpus=K`) and TORQUE (`qsub -l
//! nodes=N:ppn=K,walltime=...`): one module, two flavours. `qsub` with `-o`/`-e` on the
//! command line, one `qstat -f` for every tracked job, `qdel`.

use super::qstat::{self, Attributes};
use super::script::{render_batch, PBS_PRO, TORQUE};
use super::{
    command_failed, write_and_submit, AdapterError, BatchAdapter, BatchJobId, JobScript, JobState,
    PilotSpec,
};
use crate::provision::profile::{AdapterKind, PlatformProfile};
use crate::provision::runner::CommandRunner;
use std::collections::HashMap;

/// Which PBS dialect the job script speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PbsFlavour {
    /// PBS Professional / OpenPBS: `-l select=N:ncpus=K`.
    Pro,
    /// TORQUE / OpenPBS 2.x: `-l nodes=N:ppn=K`.
    Torque,
}

/// The PBS adapter in one flavour.
#[derive(Debug, Clone, Copy)]
pub struct Pbs(pub PbsFlavour);

/// `qstat` exit status when a requested job id is unknown (PBS Pro and TORQUE).
const UNKNOWN_JOB: i32 = 153;

impl BatchAdapter for Pbs {
    fn kind(&self) -> AdapterKind {
        match self.0 {
            PbsFlavour::Pro => AdapterKind::Pbs,
            PbsFlavour::Torque => AdapterKind::Torque,
        }
    }

    fn render(
        &self,
        profile: &PlatformProfile,
        pilot: &PilotSpec,
    ) -> Result<JobScript, AdapterError> {
        let template = match self.0 {
            PbsFlavour::Pro => PBS_PRO,
            PbsFlavour::Torque => TORQUE,
        };
        render_batch(template, profile, pilot)
    }

    fn submit(
        &self,
        runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        script: &JobScript,
    ) -> Result<BatchJobId, AdapterError> {
        // -o/-e on the command line too: Slurm's qsub wrapper ignores them in the script.
        // `-W umask=077` makes the job's output files private (PBS Pro, TORQUE, and
        // Slurm's qsub wrapper, which passes it on as SLURM_UMASK).
        let argv = [
            "qsub",
            "-W",
            "umask=077",
            "-o",
            &script.stdout_path,
            "-e",
            &script.stderr_path,
            &script.path,
        ];
        let stdout = write_and_submit(runner, script, &argv)?;
        parse_qsub(&stdout)
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
        let mut argv = vec!["qstat", "-f"];
        argv.extend(jobs.iter().map(|j| j.0.as_str()));
        let out = runner.run(&argv, None)?;
        // Unknown ids make qstat exit 153 ("Unknown Job Id") while it still prints the
        // others; any other failure (server down, ...) is an error, not vanished jobs.
        let unknown_only =
            out.status == UNKNOWN_JOB || (out.status != 0 && out.stderr.contains("Unknown Job Id"));
        if out.status != 0 && !unknown_only {
            return Err(command_failed(&argv, &out));
        }
        let found = qstat::parse(&out.stdout);
        jobs.iter()
            .map(|job| {
                let state = match found.get(qstat::strip_server(&job.0)) {
                    Some(attrs) => job_state(attrs)?,
                    None => JobState::Vanished,
                };
                Ok((job.clone(), state))
            })
            .collect()
    }

    fn cancel(
        &self,
        runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        job: &BatchJobId,
    ) -> Result<(), AdapterError> {
        let argv = ["qdel", &job.0];
        let out = runner.run(&argv, None)?;
        let text = format!("{}{}", out.stdout, out.stderr);
        // Already gone: PBS says "Unknown Job Id" (153) or "Request invalid for state of
        // job"; Slurm's wrapper exits 1 without a word.
        let gone = out.status == UNKNOWN_JOB
            || text.contains("Unknown Job Id")
            || text.contains("invalid for state")
            || (out.status == 1 && text.trim().is_empty());
        if out.status != 0 && !gone {
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
        super::queue_check::pbs(runner, profile, pilot)
    }
}

/// `qsub` prints the id, with the server name on real PBS (`1234.server`).
fn parse_qsub(stdout: &str) -> Result<BatchJobId, AdapterError> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty());
    let id = line.map(qstat::strip_server).unwrap_or("");
    if !id.starts_with(|c: char| c.is_ascii_digit()) || id.contains(char::is_whitespace) {
        return Err(AdapterError::Parse {
            command: "qsub".into(),
            problem: format!("expected a job id, got {stdout:?}"),
        });
    }
    Ok(BatchJobId(id.to_string()))
}

/// `job_state` letters: Q/W/T/M queued, H/S/U held or suspended, R/B running, E exiting,
/// C (TORQUE) / F (PBS Pro) / X finished.
fn job_state(attrs: &Attributes) -> Result<JobState, AdapterError> {
    let letter = attrs.get("job_state").map(String::as_str).unwrap_or("");
    let exit_code = ["exit_status", "Exit_status"]
        .iter()
        .find_map(|k| attrs.get(*k))
        .and_then(|v| v.trim().parse::<i32>().ok());
    let ended = |what: &str| JobState::Ended {
        exit_code,
        reason: format!("{what} ({letter})"),
    };
    Ok(match letter {
        "Q" | "W" | "T" | "M" => JobState::Queued,
        "H" | "S" | "U" => JobState::Held,
        "R" | "B" => JobState::Running,
        "E" => ended("exiting"),
        "C" | "F" => ended("finished"),
        "X" => ended("subjob finished"),
        other => {
            return Err(AdapterError::Parse {
                command: "qstat -f".into(),
                problem: format!("unknown job_state {other:?}"),
            })
        }
    })
}

#[cfg(test)]
#[path = "pbs_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::super::testing::{pilot, profile, FakeRunner};
    use super::*;

    fn directives(text: &str) -> Vec<&str> {
        text.lines().filter(|l| l.starts_with("#PBS")).collect()
    }

    #[test]
    fn pbs_pro_asks_with_select() {
        let text = Pbs(PbsFlavour::Pro)
            .render(&profile(AdapterKind::Pbs), &pilot())
            .unwrap()
            .text;
        assert_eq!(
            directives(&text),
            [
                "#PBS -N darth-p17",
                "#PBS -q batch",
                "#PBS -A proj42",
                "#PBS -l select=1:ncpus=8",
                "#PBS -l walltime=01:30:00",
                "#PBS -o /scratch/hetpilot/darth-p17.out",
                "#PBS -e /scratch/hetpilot/darth-p17.err",
            ]
        );
        assert!(text.starts_with("#!/bin/sh\n#PBS"));
        assert!(text.ends_with("exec \"$agent\" --delete-token-file\n"));
    }

    #[test]
    fn torque_asks_with_nodes_ppn_and_walltime() {
        let text = Pbs(PbsFlavour::Torque)
            .render(&profile(AdapterKind::Torque), &pilot())
            .unwrap()
            .text;
        assert_eq!(
            directives(&text),
            [
                "#PBS -N darth-p17",
                "#PBS -q batch",
                "#PBS -A proj42",
                "#PBS -l nodes=1:ppn=8,walltime=01:30:00",
                "#PBS -o /scratch/hetpilot/darth-p17.out",
                "#PBS -e /scratch/hetpilot/darth-p17.err",
            ]
        );
    }

    #[test]
    fn submit_passes_output_paths_and_strips_the_server() {
        let runner = FakeRunner::new(&[(0, "1234.pbs02.example.org\n", "")]);
        let p = profile(AdapterKind::Torque);
        let script = Pbs(PbsFlavour::Torque).render(&p, &pilot()).unwrap();
        let id = Pbs(PbsFlavour::Torque)
            .submit(&runner, &p, &script)
            .unwrap();
        assert_eq!(id.0, "1234");
        assert_eq!(
            runner.calls()[0],
            [
                "sh",
                "-c",
                "umask 077 && exec \"$@\"",
                "hetpilot-submit",
                "qsub",
                "-W",
                "umask=077",
                "-o",
                "/scratch/hetpilot/darth-p17.out",
                "-e",
                "/scratch/hetpilot/darth-p17.err",
                "/scratch/hetpilot/darth-p17.job"
            ]
        );
        assert_eq!(runner.files.lock().unwrap()[0].2, 0o700);
    }

    #[test]
    fn the_wrappers_error_on_stdout_is_reported() {
        let out = "There was an error running the Slurm sbatch command.\n";
        let runner = FakeRunner::new(&[(1, out, "")]);
        let p = profile(AdapterKind::Torque);
        let script = Pbs(PbsFlavour::Torque).render(&p, &pilot()).unwrap();
        let err = Pbs(PbsFlavour::Torque)
            .submit(&runner, &p, &script)
            .unwrap_err();
        assert!(
            err.to_string().contains("error running the Slurm sbatch"),
            "{err}"
        );
    }

    #[test]
    fn one_qstat_for_all_jobs_on_real_torque_output() {
        let torque = include_str!("fixtures/qstat-f-torque.txt");
        let runner = FakeRunner::new(&[(153, torque, "qstat: Unknown Job Id 549.moab\n")]);
        let jobs = [BatchJobId("548".into()), BatchJobId("549.moab".into())];
        let states = Pbs(PbsFlavour::Torque)
            .poll(&runner, &profile(AdapterKind::Torque), &jobs)
            .unwrap();
        assert_eq!(runner.calls(), vec![vec!["qstat", "-f", "548", "549.moab"]]);
        assert_eq!(states[&jobs[0]], JobState::Running);
        assert_eq!(states[&jobs[1]], JobState::Vanished);
    }

    #[test]
    fn pbs_pro_finished_jobs_carry_their_exit_status() {
        let pro = include_str!("fixtures/qstat-f-pbspro.txt");
        let runner = FakeRunner::new(&[(0, pro, "")]);
        let jobs = [BatchJobId("7600424".into()), BatchJobId("7600425".into())];
        let states = Pbs(PbsFlavour::Pro)
            .poll(&runner, &profile(AdapterKind::Pbs), &jobs)
            .unwrap();
        assert_eq!(
            states[&jobs[0]],
            JobState::Ended {
                exit_code: Some(0),
                reason: "finished (F)".into()
            }
        );
        assert_eq!(states[&jobs[1]], JobState::Queued);
    }

    #[test]
    fn the_lab_wrapper_states_map() {
        let lab = include_str!("fixtures/qstat-f-slurm-torque-wrapper.txt");
        let runner = FakeRunner::new(&[(0, lab, "")]);
        let jobs: Vec<BatchJobId> = ["1", "8", "9"]
            .iter()
            .map(|i| BatchJobId(i.to_string()))
            .collect();
        let states = Pbs(PbsFlavour::Torque)
            .poll(&runner, &profile(AdapterKind::Torque), &jobs)
            .unwrap();
        assert_eq!(
            states[&jobs[0]],
            JobState::Ended {
                exit_code: None,
                reason: "finished (C)".into()
            }
        );
        assert_eq!(states[&jobs[1]], JobState::Running);
        assert_eq!(states[&jobs[2]], JobState::Queued);
    }

    #[test]
    fn held_exiting_and_unknown_letters() {
        let attrs = |s: &str| Attributes::from([("job_state".to_string(), s.to_string())]);
        assert_eq!(job_state(&attrs("H")).unwrap(), JobState::Held);
        assert_eq!(job_state(&attrs("S")).unwrap(), JobState::Held);
        assert_eq!(job_state(&attrs("W")).unwrap(), JobState::Queued);
        assert!(matches!(
            job_state(&attrs("E")).unwrap(),
            JobState::Ended { .. }
        ));
        assert!(job_state(&attrs("Z")).is_err());
    }

    #[test]
    fn a_dead_server_is_an_error_and_qdel_of_a_gone_job_is_not() {
        let runner = FakeRunner::new(&[
            (
                1,
                "",
                "slurm_load_jobs error: Unable to contact slurm controller\n",
            ),
            (1, "", ""),
            (153, "", "qdel: Unknown Job Id 12.server\n"),
            (2, "", "qdel: Server could not connect\n"),
        ]);
        let p = profile(AdapterKind::Pbs);
        let pbs = Pbs(PbsFlavour::Pro);
        assert!(pbs.poll(&runner, &p, &[BatchJobId("1".into())]).is_err());
        pbs.cancel(&runner, &p, &BatchJobId("12".into())).unwrap();
        pbs.cancel(&runner, &p, &BatchJobId("12".into())).unwrap();
        assert!(pbs.cancel(&runner, &p, &BatchJobId("12".into())).is_err());
    }
}
