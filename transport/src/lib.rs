//! How hetpilot's manager, agents and CLI reach each other and their files: the HTTP(S)
//! accept loop and client calls, TLS trust, files served and stored beneath a root
//! (`openat2`), the SSH host-key check, and file-store grants. The messages it carries are
//! the pure types of `hetpilot-protocol`.

pub mod beneath;
pub mod host_keys;
pub mod http;
pub mod http_file;
pub mod http_version;
pub mod serve;
pub mod store_grant;
pub mod tls;
