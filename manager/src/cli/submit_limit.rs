//! How large a submission `hetpilot submit` sends: the manager's submit limit (`[limits]
//! max_submit_mib`) as the CLI knows it — `--max-submit-mib`, else the configuration named
//! with `--config`, else the manager's default — which the application's JSON must fit, and
//! the bound it implies on a workflow file, checked before the file is parsed.

use super::connect::Connect;
use anyhow::bail;
use hetpilot::config::LimitsConfig;
pub use hetpilot::workflow::FileKind;
use hetpilot_protocol::spec::AppSpec;
use std::path::Path;

/// The submit limit and where it comes from.
#[derive(Debug, Clone)]
pub struct SubmitLimit {
    /// The limit, MiB.
    pub mib: u64,
    /// Where it comes from, for messages.
    source: String,
}

impl SubmitLimit {
    /// `--max-submit-mib` if given, else the configuration's `[limits] max_submit_mib`,
    /// else the manager's default.
    pub fn resolve(flag: Option<u64>, connect: &Connect) -> anyhow::Result<Self> {
        if let Some(mib) = flag {
            return Ok(SubmitLimit {
                mib,
                source: format!("--max-submit-mib {mib}"),
            });
        }
        if let (Some(settings), Some(file)) = (connect.settings()?, &connect.config) {
            let mib = settings.limits.max_submit_mib;
            return Ok(SubmitLimit {
                mib,
                source: format!("[limits] max_submit_mib = {mib} of {}", file.display()),
            });
        }
        let mib = LimitsConfig::default().max_submit_mib;
        Ok(SubmitLimit {
            mib,
            source: format!("the manager's default [limits] max_submit_mib = {mib}"),
        })
    }

    /// The submit limit, bytes.
    pub fn bytes(&self) -> u64 {
        self.mib.saturating_mul(1 << 20)
    }

    /// The largest file of `kind` read, bytes.
    pub fn file_bytes(&self, kind: FileKind) -> u64 {
        self.bytes().saturating_mul(kind.per_submit())
    }

    /// The error for a file of `kind` past its bound: `len` bytes, or (`None`) one that
    /// grew past it while it was read.
    pub fn file_too_large(&self, path: &Path, kind: FileKind, len: Option<u64>) -> anyhow::Error {
        let size = len.map_or(String::new(), |l| {
            format!("{} MiB is ", l.div_ceil(1 << 20))
        });
        anyhow::anyhow!(
            "{}: {size}more than the {} MiB {} may be ({} × the manager's submit limit, {}); \
             if the manager accepts more, give its limit with --max-submit-mib (or \
             HETPILOT_MAX_SUBMIT_MIB)",
            path.display(),
            self.file_bytes(kind) >> 20,
            kind.name(),
            kind.per_submit(),
            self.source
        )
    }

    /// Refuses an application whose JSON is larger than the manager accepts, before anything
    /// is sent.
    pub fn check(&self, spec: &AppSpec) -> anyhow::Result<()> {
        let mut counter = ByteCount(0);
        serde_json::to_writer(&mut counter, spec)?;
        if counter.0 > self.bytes() {
            bail!(
                "the application is {} MiB of JSON, more than the manager's submit limit ({}): \
                 split it into smaller applications, or if the manager accepts more, give its \
                 limit with --max-submit-mib (or HETPILOT_MAX_SUBMIT_MIB)",
                counter.0.div_ceil(1 << 20),
                self.source
            );
        }
        Ok(())
    }
}

/// Counts the bytes written to it (the size of a JSON body without building it).
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len() as u64);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
