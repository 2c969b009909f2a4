//! hetpilot's wire types, shared by the manager, its agents and the CLI: identifiers, the
//! application and task model, command templates, file declarations, the JSON messages of
//! the `/v1` HTTP protocol and the views the CLI shows. Pure: no I/O, no async runtime, no
//! HTTP, SSH or TLS crate (`deploy/test-all.sh` checks its `cargo tree`); the transport
//! that carries these types is `hetpilot-transport`.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod affinity_view;
pub mod agent_resources;
pub mod agent_version;
pub mod byte_range;
pub mod dag;
pub mod dashboard;
pub mod error_code;
pub mod events;
pub mod file_listing;
pub mod files;
mod ids;
pub mod launcher;
pub mod listing;
pub mod named;
pub mod parallel;
pub mod pilots;
pub mod protocol;
pub mod resource_fields;
pub mod resources;
pub mod spec;
pub mod task_output;
pub mod template;
pub mod variants;
pub mod views;

pub use ids::{AgentId, AppId, TaskRef};
