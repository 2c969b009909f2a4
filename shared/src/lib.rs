//! Types shared by the hetpilot manager and its agents: identifiers, the application and
//! task model, command templates, and the JSON messages of the `/v1` HTTP protocol.

pub mod byte_range;
pub mod files;
pub mod http;
pub mod ids;
pub mod live;
pub mod protocol;
pub mod spec;
pub mod store_grant;
pub mod template;

pub use ids::{AgentId, AppId, TaskRef};
