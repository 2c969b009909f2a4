//! Types shared by the hetpilot manager and its agents: identifiers, the application and
//! task model, command templates, the JSON messages of the `/v1` HTTP protocol, and the
//! SSH host-key check both use.

pub mod beneath;
pub mod byte_range;
pub mod files;
pub mod host_keys;
pub mod http;
pub mod http_file;
pub mod ids;
pub mod live;
pub mod pilots;
pub mod protocol;
pub mod serve;
pub mod spec;
pub mod store_grant;
pub mod template;
pub mod tls;

pub use ids::{AgentId, AppId, TaskRef};
