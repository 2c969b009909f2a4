//! Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive, and for
//! Alea's 21-field extension used by the MetaCentrum traces.
//!
//! Quirks of the archive handled here (all counted in [`SwfStats`]):
//! - `;` header/comment lines (kept in [`SwfTrace::header`]) and blank lines;
//! - `-1` means "unknown" in any field: numeric fields become `Option`s;
//! - requested processors missing (`-1`): [`SwfJob::procs`] falls back to the allocated count;
//! - jobs that ran longer than they requested are kept as they are and counted;
//! - submit times out of order: jobs are sorted by submit time (stable, so ties keep file order);
//! - lines with a wrong field count (fewer than 18, or more than 21) or a non-numeric field are
//!   **skipped**; the count and the first few line numbers are reported, so a reader can
//!   decide whether the trace is usable ([`SwfOptions::strict`] turns them into an error).
//!
//! Pure: parsing takes `impl BufRead`; decompression (`.gz`) belongs to the caller.

use std::io::BufRead;

/// Number of standard SWF fields.
pub(crate) const SWF_FIELDS: usize = 18;
/// Fields of Alea's extended format (18 + node ids, queue name, PBS nodespec).
pub(crate) const ALEA_FIELDS: usize = 21;
/// How many skipped line numbers are kept for the report.
const SKIPPED_LINES_KEPT: usize = 10;

/// One job record. Field numbers follow the SWF definition (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct SwfJob {
    /// The line of the file it was read from, counting from 1.
    pub line: usize,
    /// 1: job number.
    pub id: i64,
    /// 2: submit time, seconds.
    pub submit: f64,
    /// 3: wait time, seconds.
    pub wait: Option<f64>,
    /// 4: run time, seconds (None when the job never ran, e.g. cancelled in the queue).
    pub run: Option<f64>,
    /// 5: allocated processors.
    pub allocated_procs: Option<u32>,
    /// 7: used memory, KB.
    pub used_mem_kb: Option<f64>,
    /// 8: requested processors.
    pub requested_procs: Option<u32>,
    /// 9: requested time (walltime limit), seconds.
    pub requested_time: Option<f64>,
    /// 10: requested memory: KB per processor in standard SWF, **bytes** per job in Alea's
    /// MetaCentrum traces (see [`SwfTrace::extended`]).
    pub requested_mem: Option<f64>,
    /// 11: status (1 completed, 0 failed, 5 cancelled, ...).
    pub status: Option<i64>,
    /// 12: user id.
    pub user: Option<i64>,
    /// 13: group id.
    pub group: Option<i64>,
    /// 15: queue number.
    pub queue: Option<i64>,
    /// 16: partition number.
    pub partition: Option<i64>,
    /// 19 (Alea): node ids used, the text between `{}`.
    pub node_ids: Option<String>,
    /// 20 (Alea): queue name.
    pub queue_name: Option<String>,
    /// 21 (Alea): PBS nodespec, e.g. `1:ppn=64:x86_64:cl_zewura#excl`.
    pub nodespec: Option<String>,
}

impl SwfJob {
    /// Processors the job asked for, falling back to the allocated count when the request is
    /// unknown (a common archive quirk). None when both are unknown.
    pub fn procs(&self) -> Option<u32> {
        self.requested_procs
            .filter(|&p| p > 0)
            .or(self.allocated_procs.filter(|&p| p > 0))
    }

    /// True when the recorded run time exceeds the requested time.
    pub(crate) fn overran_request(&self) -> bool {
        matches!((self.run, self.requested_time), (Some(r), Some(q)) if r > q)
    }
}

/// Counts of the quirks met while reading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwfStats {
    /// `;` header lines read.
    pub header_lines: usize,
    /// Job records read (the length of [`SwfTrace::jobs`]).
    pub jobs: usize,
    /// Lines skipped for a wrong field count or an unparsable field.
    pub skipped_lines: usize,
    /// First few skipped line numbers (1-based) with the reason.
    pub skipped_examples: Vec<(usize, String)>,
    /// Jobs whose requested processors were unknown and replaced by the allocated count.
    pub(crate) procs_from_allocated: usize,
    /// Jobs whose run time is unknown (never ran).
    pub(crate) missing_run: usize,
    /// Jobs whose requested time is unknown.
    pub(crate) missing_requested_time: usize,
    /// Jobs that ran longer than they requested.
    pub overran_request: usize,
    /// True when the file's submit times were not monotonic (the jobs were sorted).
    pub(crate) resorted: bool,
}

impl SwfStats {
    /// What to warn a reader of `source` about: the lines skipped, with the first few
    /// reasons; `None` when none was.
    pub fn skipped_warning(&self, source: &str) -> Option<String> {
        (self.skipped_lines > 0).then(|| {
            let first: Vec<String> = self
                .skipped_examples
                .iter()
                .map(|(line, reason)| format!("line {line}: {reason}"))
                .collect();
            format!(
                "{source}: skipped {} malformed line(s), first at {first:?}",
                self.skipped_lines
            )
        })
    }
}

/// A parsed trace.
#[derive(Debug, Clone, Default)]
pub struct SwfTrace {
    /// `;` lines, without the leading `;` and surrounding blanks.
    pub(crate) header: Vec<String>,
    /// Jobs sorted by submit time.
    pub jobs: Vec<SwfJob>,
    /// True when at least one line had Alea's 21 fields.
    pub(crate) extended: bool,
    /// What the reader met on the way.
    pub stats: SwfStats,
}

impl SwfTrace {
    /// Value of a `; Key: value` header line (e.g. `MaxProcs`), if present.
    #[cfg(test)]
    pub(crate) fn header_value(&self, key: &str) -> Option<&str> {
        self.header.iter().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| v.trim())
        })
    }
}

/// Reader options.
#[derive(Debug, Clone, Copy, Default)]
pub struct SwfOptions {
    /// Reject the file at the first malformed line instead of skipping it.
    pub strict: bool,
}

/// Errors of the SWF reader.
#[derive(Debug, thiserror::Error)]
pub enum SwfError {
    /// The reader failed.
    #[error("reading the trace failed at line {line}: {source}")]
    Io {
        /// The line being read, counting from 1.
        line: usize,
        /// The reader's error.
        #[source]
        source: std::io::Error,
    },
    /// A malformed line, in strict mode.
    #[error(
        "line {line}: {reason} (strict mode rejects malformed lines; drop --strict to skip them)"
    )]
    Malformed {
        /// Line number, counting from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// No job record at all.
    #[error("the trace holds no job records ({skipped} malformed lines skipped)")]
    Empty {
        /// Malformed lines skipped.
        skipped: usize,
    },
}

/// Parse an SWF (or Alea extended SWF) trace.
pub fn parse_swf(reader: impl BufRead, options: SwfOptions) -> Result<SwfTrace, SwfError> {
    let mut trace = SwfTrace::default();
    let mut last_submit = f64::NEG_INFINITY;
    for (index, line) in reader.lines().enumerate() {
        let line_no = index + 1;
        let line = line.map_err(|source| SwfError::Io {
            line: line_no,
            source,
        })?;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix(';') {
            trace.header.push(comment.trim().to_string());
            trace.stats.header_lines += 1;
            continue;
        }
        match parse_record(trimmed) {
            Ok(mut job) => {
                job.line = line_no;
                if job.submit < last_submit {
                    trace.stats.resorted = true;
                }
                last_submit = last_submit.max(job.submit);
                trace.extended |= job.nodespec.is_some();
                count_quirks(&mut trace.stats, &job);
                trace.jobs.push(job);
            }
            Err(reason) => {
                if options.strict {
                    return Err(SwfError::Malformed {
                        line: line_no,
                        reason,
                    });
                }
                trace.stats.skipped_lines += 1;
                if trace.stats.skipped_examples.len() < SKIPPED_LINES_KEPT {
                    trace.stats.skipped_examples.push((line_no, reason));
                }
            }
        }
    }
    if trace.jobs.is_empty() {
        return Err(SwfError::Empty {
            skipped: trace.stats.skipped_lines,
        });
    }
    if trace.stats.resorted {
        trace.jobs.sort_by(|a, b| a.submit.total_cmp(&b.submit));
    }
    trace.stats.jobs = trace.jobs.len();
    Ok(trace)
}

fn count_quirks(stats: &mut SwfStats, job: &SwfJob) {
    if job.requested_procs.filter(|&p| p > 0).is_none() && job.procs().is_some() {
        stats.procs_from_allocated += 1;
    }
    stats.missing_run += usize::from(job.run.is_none());
    stats.missing_requested_time += usize::from(job.requested_time.is_none());
    stats.overran_request += usize::from(job.overran_request());
}

/// Parse one data line; the error is a human-readable reason.
fn parse_record(line: &str) -> Result<SwfJob, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < SWF_FIELDS || fields.len() > ALEA_FIELDS {
        return Err(format!(
            "expected {SWF_FIELDS} fields (or {ALEA_FIELDS} in Alea's extended format), found {}",
            fields.len()
        ));
    }
    let number = |i: usize| -> Result<f64, String> {
        fields[i - 1]
            .parse::<f64>()
            .map_err(|_| format!("field {i} is not a number: {:?}", fields[i - 1]))
    };
    let known = |i: usize| -> Result<Option<f64>, String> {
        number(i).map(|v| (v >= 0.0 && v.is_finite()).then_some(v))
    };
    let count = |i: usize| -> Result<Option<u32>, String> {
        Ok(known(i)?.map(|v| v.round().min(u32::MAX as f64) as u32))
    };
    let int = |i: usize| -> Result<Option<i64>, String> { Ok(known(i)?.map(|v| v as i64)) };
    let submit = known(2)?.ok_or_else(|| "field 2 (submit time) is unknown".to_string())?;
    let text = |i: usize| fields.get(i - 1).map(|s| s.to_string());
    Ok(SwfJob {
        line: 0,
        id: number(1)? as i64,
        submit,
        wait: known(3)?,
        run: known(4)?,
        allocated_procs: count(5)?,
        used_mem_kb: known(7)?,
        requested_procs: count(8)?,
        requested_time: known(9)?,
        requested_mem: known(10)?,
        status: int(11)?,
        user: int(12)?,
        group: int(13)?,
        queue: int(15)?,
        partition: int(16)?,
        node_ids: text(19).map(|s| s.trim_matches(|c| c == '{' || c == '}').to_string()),
        queue_name: text(20),
        nodespec: text(21),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "; Version: 2.2\n; MaxProcs: 128\n\n\
        2 20 5 100 4 -1 -1 -1 50 -1 1 7 1 -1 1 -1 -1 -1\n\
        1 10 0 30 -1 -1 -1 8 60 -1 1 3 1 -1 1 -1 -1 -1\n\
        3 30 1 2\n\
        4 40 -1 -1 -1 -1 -1 2 -1 -1 5 3 1 -1 1 -1 -1 -1\n";

    #[test]
    fn handles_archive_quirks() {
        let trace = parse_swf(SAMPLE.as_bytes(), SwfOptions::default()).unwrap();
        assert_eq!(trace.header_value("MaxProcs"), Some("128"));
        assert_eq!(trace.stats.header_lines, 2);
        let ids: Vec<i64> = trace.jobs.iter().map(|j| j.id).collect();
        assert_eq!(
            ids,
            vec![1, 2, 4],
            "sorted by submit, malformed line 6 skipped"
        );
        assert!(trace.stats.resorted);
        assert_eq!(trace.stats.skipped_lines, 1);
        assert_eq!(trace.stats.skipped_examples[0].0, 6);
        // Job 2: requested procs unknown, falls back to allocated 4; ran 100 > requested 50.
        assert_eq!(trace.jobs[1].procs(), Some(4));
        assert_eq!(trace.stats.procs_from_allocated, 1);
        assert_eq!(trace.stats.overran_request, 1);
        assert_eq!(trace.stats.missing_run, 1);
        assert_eq!(trace.stats.missing_requested_time, 1);
        assert!(!trace.extended);
    }

    #[test]
    fn strict_mode_names_the_line() {
        let err = parse_swf(SAMPLE.as_bytes(), SwfOptions { strict: true }).unwrap_err();
        assert!(matches!(err, SwfError::Malformed { line: 6, .. }), "{err}");
        assert!(err.to_string().contains("line 6"));
    }

    #[test]
    fn reads_alea_extended_fields() {
        let line = "0 1356996147 0 56011 64 1 1024 64 86400 68719476736 1 62 1 1 -1 1 1 1 {1241,1241} q_1d 1:ppn=64:x86_64:cl_zewura#excl\n";
        let trace = parse_swf(line.as_bytes(), SwfOptions::default()).unwrap();
        let job = &trace.jobs[0];
        assert!(trace.extended);
        assert_eq!(
            job.nodespec.as_deref(),
            Some("1:ppn=64:x86_64:cl_zewura#excl")
        );
        assert_eq!(job.queue_name.as_deref(), Some("q_1d"));
        assert_eq!(job.node_ids.as_deref(), Some("1241,1241"));
        assert_eq!(job.requested_mem, Some(68_719_476_736.0));
    }

    #[test]
    fn empty_trace_is_an_error() {
        let err = parse_swf("; only a header\n1 2 3\n".as_bytes(), SwfOptions::default());
        assert!(matches!(err, Err(SwfError::Empty { skipped: 1 })));
    }
}
