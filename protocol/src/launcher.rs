//! A platform's launcher template: the command a parallel task starts its ranks with
//! (`srun --overlap --jobid={job_id} --nodelist={hosts} --ntasks={procs}`, `mpiexec
//! -hostfile {nodefile} -n {procs}`). The manager checks it when it reads a platform
//! profile and sends it with a parallel run; the run's first agent fills it in and gives
//! it to the task as `HETPILOT_LAUNCH`, one line of words a shell splits back exactly:
//! `$HETPILOT_LAUNCH python3 hello.py`.
//!
//! Host names come from agents and job ids from the batch system, so nothing in the
//! rendered words may be shell syntax to a word split: a template's text is kept to
//! letters, digits and `-_.,:/=+@%^` (no blank, no glob character, no quote, nothing a
//! shell reads after expanding a variable), and a host name or job id of anything but
//! letters, digits and `-_.`, or starting with `-`, is refused rather than rendered.

use serde::{Deserialize, Serialize};

/// The placeholders a template may use, as written in it.
pub const PLACEHOLDERS: [&str; 5] = ["{hosts}", "{nodefile}", "{nodes}", "{procs}", "{job_id}"];

/// The most words, and bytes, a template may have.
const MAX_WORDS: usize = 64;
const MAX_BYTES: usize = 4096;

/// A launcher template: its words, each checked (literal text in the safe set, only known
/// placeholders).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct LaunchTemplate(Vec<String>);

/// What a run's launcher is filled in with.
#[derive(Debug, Clone, Copy)]
pub struct LaunchValues<'a> {
    /// The run's hosts, head first, each once.
    pub hosts: &'a [&'a str],
    /// The run's host file.
    pub nodefile: &'a str,
    /// Its slots in all.
    pub procs: u64,
    /// The head agent's batch job id, if a batch system started it.
    pub job_id: Option<&'a str>,
}

/// Why a template cannot be used, or cannot be filled in for a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The template has no command.
    #[error("names no command")]
    Empty,
    /// More words or bytes than a launcher needs.
    #[error("more than {MAX_WORDS} words or {MAX_BYTES} bytes")]
    TooLong,
    /// A `{...}` that is not a placeholder.
    #[error(
        "{0:?} is not a placeholder (use {{hosts}}, {{nodefile}}, {{nodes}}, {{procs}} or \
         {{job_id}})"
    )]
    UnknownPlaceholder(String),
    /// Literal text outside the characters a word split keeps as they are.
    #[error(
        "the word {0:?} has characters a shell would split or expand: use letters, \
         digits and `-_.,:/=+@%^`"
    )]
    UnsafeText(String),
    /// A value to fill in that a word split would break, or that reads as an option.
    #[error(
        "{what} {value:?} cannot go into a launcher: it must be letters, digits and \
         {allowed}, not starting with `-`"
    )]
    UnsafeValue {
        /// What the value is (a host name, the host file's path, the job id).
        what: &'static str,
        /// The value.
        value: String,
        /// The other characters it may have.
        allowed: &'static str,
    },
    /// `{job_id}` used where no batch system started the agent.
    #[error(
        "it uses {{job_id}} and this agent has no batch job id (it was not started by a \
         batch system)"
    )]
    NoJobId,
}

/// A byte of a template's text that a word split leaves alone: no blank, quote, glob or
/// shell metacharacter.
fn safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.,:/=+@%^".contains(&b)
}

/// The other bytes of a host name or a batch job id.
const NAME_BYTES: &str = "`-_.`";
/// The other bytes of the host file's path.
const PATH_BYTES: &str = "`-_./,:=+@%`";

/// `value` is not empty, does not read as an option, and has letters, digits and
/// `allowed` only.
fn safe_value(what: &'static str, value: &str, allowed: &'static str) -> Result<(), LaunchError> {
    let others = allowed.trim_matches('`').as_bytes();
    if value.is_empty()
        || value.starts_with('-')
        || !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || others.contains(&b))
    {
        return Err(LaunchError::UnsafeValue {
            what,
            value: value.into(),
            allowed,
        });
    }
    Ok(())
}

/// Each word of safe literal text and known placeholders, the first (the program) of
/// literal text only: a template that starts with a placeholder would run a host name.
fn check_words(words: &[String]) -> Result<(), LaunchError> {
    let first = words.first().ok_or(LaunchError::Empty)?;
    if first.contains(['{', '}']) {
        return Err(LaunchError::UnsafeText(first.clone()));
    }
    for word in words {
        pieces(word, |piece| match piece {
            Piece::Text(t) if !t.bytes().all(safe_byte) => {
                Err(LaunchError::UnsafeText(word.clone()))
            }
            _ => Ok(()),
        })?;
    }
    Ok(())
}

/// Splits `word` into literal text and placeholders, calling `each` on both in order.
fn pieces<'w>(
    word: &'w str,
    mut each: impl FnMut(Piece<'w>) -> Result<(), LaunchError>,
) -> Result<(), LaunchError> {
    let mut rest = word;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => return each(Piece::Text(rest)),
            Some(0) => {
                let end = rest.find('}').map(|i| i + 1).unwrap_or(rest.len());
                let name = &rest[..end];
                let known = PLACEHOLDERS
                    .iter()
                    .find(|p| **p == name)
                    .ok_or_else(|| LaunchError::UnknownPlaceholder(name.into()))?;
                each(Piece::Placeholder(known))?;
                rest = &rest[end..];
            }
            Some(i) => {
                each(Piece::Text(&rest[..i]))?;
                rest = &rest[i..];
            }
        }
    }
    Ok(())
}

enum Piece<'w> {
    Text(&'w str),
    Placeholder(&'static str),
}

impl LaunchTemplate {
    /// Reads a template: words split at blanks, each of safe literal text and known
    /// placeholders.
    pub fn parse(text: &str) -> Result<LaunchTemplate, LaunchError> {
        let words: Vec<String> = text.split_ascii_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            return Err(LaunchError::Empty);
        }
        if words.len() > MAX_WORDS || text.len() > MAX_BYTES {
            return Err(LaunchError::TooLong);
        }
        check_words(&words)?;
        Ok(LaunchTemplate(words))
    }

    /// Slurm's default: a job step over the run's hosts within the head's allocation,
    /// next to the agents' step (`--overlap`), one CPU per rank, consecutive ranks on one
    /// node (block; Slurm numbers the nodes in its own order).
    pub fn slurm() -> LaunchTemplate {
        Self::parse(
            "srun --overlap --jobid={job_id} --nodes={nodes} --nodelist={hosts} \
             --ntasks={procs} --cpus-per-task=1 --distribution=block",
        )
        .expect("a valid template")
    }

    /// The default elsewhere: `mpiexec` with the host file (Open MPI's `host slots=N`
    /// format).
    pub fn mpiexec() -> LaunchTemplate {
        Self::parse("mpiexec -hostfile {nodefile} -n {procs}").expect("a valid template")
    }

    /// The template's words, as written.
    pub fn words(&self) -> &[String] {
        &self.0
    }

    /// The launcher for one run: its words with the placeholders filled in. Refuses a
    /// host name, host file path or job id a word split would break, and a template this
    /// side would not have accepted (it came over the network).
    pub fn render(&self, values: &LaunchValues) -> Result<Vec<String>, LaunchError> {
        for host in values.hosts {
            safe_value("the host name", host, NAME_BYTES)?;
        }
        safe_value("the host file's path", values.nodefile, PATH_BYTES)?;
        check_words(&self.0)?;
        let mut words = Vec::with_capacity(self.0.len());
        for word in &self.0 {
            let mut out = String::with_capacity(word.len());
            pieces(word, |piece| {
                match piece {
                    Piece::Text(t) => out.push_str(t),
                    Piece::Placeholder("{hosts}") => out.push_str(&values.hosts.join(",")),
                    Piece::Placeholder("{nodefile}") => out.push_str(values.nodefile),
                    Piece::Placeholder("{nodes}") => out.push_str(&values.hosts.len().to_string()),
                    Piece::Placeholder("{procs}") => out.push_str(&values.procs.to_string()),
                    // `{job_id}`, the only other one.
                    Piece::Placeholder(_) => {
                        let job = values.job_id.ok_or(LaunchError::NoJobId)?;
                        safe_value("the batch job id", job, NAME_BYTES)?;
                        out.push_str(job);
                    }
                }
                Ok(())
            })?;
            words.push(out);
        }
        Ok(words)
    }
}

#[cfg(test)]
#[path = "launcher_tests.rs"]
mod tests;
