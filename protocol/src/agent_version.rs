//! The version of the protocol between agents and the manager. An agent sends the version
//! it speaks when it registers; the manager takes the versions from
//! [`OLDEST_AGENT_PROTOCOL`] to [`AGENT_PROTOCOL`] and refuses any other with a message
//! naming them, so an agent of another release stops with that message instead of
//! misreading the manager. A change the other side could misread takes a new version;
//! a field the other side may ignore does not.

/// The agent protocol version this build speaks.
pub const AGENT_PROTOCOL: u32 = 1;

/// The oldest agent protocol version this build's manager takes.
pub const OLDEST_AGENT_PROTOCOL: u32 = 1;

/// The version of an agent that sends none: agents from before versions were sent speak
/// version 1.
pub fn unversioned_agent() -> u32 {
    1
}

/// Whether a manager of this build takes agents that speak `version`.
pub fn is_supported(version: u32) -> bool {
    (OLDEST_AGENT_PROTOCOL..=AGENT_PROTOCOL).contains(&version)
}

/// The versions this build's manager takes, in words: `version 1`, `versions 1 to 2`.
pub fn supported_versions() -> String {
    if OLDEST_AGENT_PROTOCOL == AGENT_PROTOCOL {
        format!("version {AGENT_PROTOCOL}")
    } else {
        format!("versions {OLDEST_AGENT_PROTOCOL} to {AGENT_PROTOCOL}")
    }
}
