//! Provisioning: getting agents (pilot jobs) onto platforms.
//!
//! - [`profile`]: platform profiles (`profiles/*.toml`): batch system, login, queue, node
//!   shape, caps, agent binary, environment setup.
//! - [`runner`]: where batch commands run: locally, or over one reused SSH session per
//!   login host ([`CommandRunner`], [`for_login`]).
//! - [`adapter`]: one small module per batch system behind [`BatchAdapter`]: render a job
//!   script, submit it, poll many jobs in one call, cancel ([`adapter_for`]). Job scripts
//!   come from `deploy/templates/`.
//! - [`catalog`]: the configured platforms' profiles, with `${VAR}` substitution.
//! - `[provision]`, the provisioner's knobs, is `config::ProvisionConfig`.
//! - A pilot's record and states are wire types: `hetpilot_protocol::pilots`.
//! - [`provisioner`]: the I/O loop per platform that polls, decides and acts.
//! - [`shutdown`]: a manager stopping cleanly stops the loops and cancels its pilots.
//! - `pilot_dirs`: ended pilots' directories removed after their retention, their batch
//!   output kept by the manager.
//! - [`host`]: the narrow trait through which the provisioner talks to the manager.
//! - [`reconcile`]: the pure decision core: per platform, which pilots to submit, cancel,
//!   drain or mark failed.
//!
//! Everything here does I/O only through a [`CommandRunner`], so adapters are tested on
//! exact rendered scripts and recorded command outputs as well as against the real lab.

pub mod adapter;
pub mod catalog;
pub mod host;
mod pilot_dirs;
pub mod profile;
pub mod provisioner;
pub mod reconcile;
pub mod runner;
pub mod shutdown;

pub use crate::config::ProvisionConfig;
pub use adapter::{
    adapter_for, AdapterError, BatchAdapter, BatchJobId, JobScript, JobState, PilotSpec,
};
pub use host::{AgentActivity, CheckFailure, PilotHost};
pub use profile::{AdapterKind, Login, PlatformProfile, ProfileError};
pub use runner::{for_login, CommandOutput, CommandRunner, LocalRunner, RunnerError, SshRunner};
