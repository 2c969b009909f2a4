//! Registration refuses an agent that speaks another version of the agent protocol than
//! this manager takes (`hetpilot_protocol::agent_version`), with a message naming the
//! versions that work and what to upgrade, so the agent stops instead of misreading the
//! manager's answers.

use super::ServiceError;
use hetpilot_protocol::agent_version::{is_supported, supported_versions, AGENT_PROTOCOL};

/// Refuses an agent that speaks protocol `version` unless this manager takes it.
pub(super) fn check_agent_protocol(version: u32) -> Result<(), ServiceError> {
    if is_supported(version) {
        return Ok(());
    }
    let what_to_do = if version > AGENT_PROTOCOL {
        "upgrade the manager first, or run the hetpilot-agent of the manager's release"
    } else {
        "upgrade the agent to the manager's release"
    };
    Err(ServiceError::BadRequest(format!(
        "protocol_version: this agent speaks agent protocol version {version}; this manager \
         (hetpilot {}) takes agent protocol {}: {what_to_do}",
        env!("CARGO_PKG_VERSION"),
        supported_versions()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::agent_version::OLDEST_AGENT_PROTOCOL;

    fn refusal(version: u32) -> String {
        match check_agent_protocol(version) {
            Err(ServiceError::BadRequest(message)) => message,
            other => panic!("version {version}: {other:?}"),
        }
    }

    #[test]
    fn the_versions_this_build_speaks_are_taken() {
        for version in OLDEST_AGENT_PROTOCOL..=AGENT_PROTOCOL {
            assert!(check_agent_protocol(version).is_ok(), "{version}");
        }
    }

    #[test]
    fn a_newer_agent_is_told_which_versions_work_and_to_upgrade_the_manager() {
        for version in [AGENT_PROTOCOL + 1, u32::MAX] {
            let message = refusal(version);
            assert!(
                message.contains(&format!("speaks agent protocol version {version}"))
                    && message.contains(&format!("takes agent protocol {}", supported_versions()))
                    && message.contains("upgrade the manager"),
                "{message}"
            );
        }
    }

    #[test]
    fn an_older_agent_is_told_to_upgrade() {
        let message = refusal(OLDEST_AGENT_PROTOCOL - 1);
        assert!(message.contains("upgrade the agent"), "{message}");
    }
}
