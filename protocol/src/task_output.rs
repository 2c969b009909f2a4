//! A finished run's stdout or stderr sent to the manager on request, so `hetpilot logs` on
//! another machine than the agent's can read it: the manager asks in a pull or heartbeat
//! answer (`send_output`), the agent sends the stream (at most its last `max_bytes`) to
//! `PUT /v1/agents/{agent}/outputs/{app}/{index}/{attempt}/{stream}`, and the owner reads
//! it with `GET /v1/apps/{app}/tasks/{index}/output?attempt=N&stream=out`.

use crate::protocol::TaskAttempt;
use serde::{Deserialize, Serialize};

/// Which of a run's output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum OutputStream {
    /// Standard output.
    #[serde(rename = "out")]
    Stdout,
    /// Standard error.
    #[serde(rename = "err")]
    Stderr,
}

impl OutputStream {
    /// Its name in URLs and file names: `out` or `err`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "out",
            OutputStream::Stderr => "err",
        }
    }
}

impl std::str::FromStr for OutputStream {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "out" => Ok(OutputStream::Stdout),
            "err" => Ok(OutputStream::Stderr),
            _ => Err(format!(
                "stream `{}` is neither `out` nor `err`",
                s.escape_debug()
            )),
        }
    }
}

/// The manager asks the agent for one stream of one of its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutputWanted {
    /// The run.
    pub run: TaskAttempt,
    /// Which stream.
    pub stream: OutputStream,
    /// The most bytes the manager keeps: a longer stream is sent from its last `max_bytes`.
    pub max_bytes: u64,
}

/// Header of the agent's upload: bytes left out at the start of the stream (it was longer
/// than `max_bytes`). The manager's answer to a read carries it too.
pub const SKIPPED_HEADER: &str = "x-hetpilot-output-skipped";
