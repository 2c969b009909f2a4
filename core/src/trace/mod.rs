//! Pure readers of workload traces and platform descriptions: the Standard Workload Format
//! (with the archive's quirks and Alea's MetaCentrum extension), PBS nodespecs, Alea machine
//! files and the minimal `[[machine]]` platform profile. Every reader takes `&str` or
//! `impl BufRead`; opening files and decompressing `.gz` is the CLI loader's job.

pub(crate) mod machines;
pub(crate) mod nodespec;
mod nodespec_request;
pub(crate) mod platform_profile;
pub(crate) mod size;
pub(crate) mod swf;

pub use machines::{parse_alea_machines, MachinesError};
pub use nodespec::{parse_nodespec, NodespecError, NodespecGroup};
pub use nodespec_request::job_request;
pub use platform_profile::{parse_platform_profile, PlatformProfileError};
pub use size::{parse_size, SizeError};
pub use swf::{parse_swf, SwfError, SwfJob, SwfOptions, SwfStats, SwfTrace};

#[cfg(test)]
mod fuzz_tests;
