//! SSH host-key checking for every SSH connection hetpilot makes (the manager to a
//! platform's login host and the ssh adapter's hosts, an agent to `sftp://` servers):
//! the key a server presents in the handshake is looked up in an OpenSSH known_hosts file.
//! A listed key connects; a host listed with another key is refused; an unknown host (or
//! a missing file) is refused unless the policy is [`HostKeyPolicy::AcceptNew`], which
//! appends its key to the file first. Refusals say how to add or replace the key.

mod error;
mod known_hosts_file;
mod offered;
mod policy;

pub use error::HostKeyError;
pub use known_hosts_file::Listing;
pub use offered::OfferedKey;
pub use policy::{HostKeyPolicy, UnknownPolicy};

use ssh2::Session;
use std::path::{Path, PathBuf};

/// Which known_hosts file to trust and what to do with hosts it does not list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostKeyCheck {
    pub known_hosts: PathBuf,
    pub policy: HostKeyPolicy,
}

/// Why a host was let through.
#[derive(Debug, Clone)]
pub enum Trusted {
    /// known_hosts lists it with this key.
    Listed,
    /// It was unknown; under accept-new its key was just appended to known_hosts.
    AddedNow(OfferedKey),
}

/// `~/.ssh/known_hosts` (relative to `HOME`; the literal `~/...` path, which does not
/// exist, when `HOME` is unset).
pub fn default_known_hosts() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".ssh/known_hosts"),
        None => PathBuf::from("~/.ssh/known_hosts"),
    }
}

impl HostKeyCheck {
    /// Strict checking against `known_hosts`.
    pub fn strict(known_hosts: &Path) -> HostKeyCheck {
        HostKeyCheck {
            known_hosts: known_hosts.to_path_buf(),
            policy: HostKeyPolicy::Strict,
        }
    }

    /// What the known_hosts file says about the key the session's server presented.
    pub fn look_up(
        &self,
        session: &Session,
        host: &str,
        port: u16,
    ) -> Result<(Listing, OfferedKey), HostKeyError> {
        let offered = OfferedKey::of(session).ok_or_else(|| HostKeyError::NoKey {
            place: format!("{host}:{port}"),
        })?;
        let listing = known_hosts_file::look_up(session, &self.known_hosts, host, port, &offered)?;
        Ok((listing, offered))
    }

    /// The error strict checking gives for `listing`, or `None` if the key matches.
    pub fn refusal(
        &self,
        host: &str,
        port: u16,
        listing: Listing,
        offered: &OfferedKey,
    ) -> Option<HostKeyError> {
        let place = format!("{host}:{port}");
        let file = self.known_hosts.clone();
        let unknown = |why: &'static str| HostKeyError::Unknown {
            add: error::add_command(host, port, offered, &file),
            place: place.clone(),
            file: file.clone(),
            why,
            offered: offered.clone(),
        };
        match listing {
            Listing::Matches => None,
            Listing::NoFile => Some(unknown("does not exist, so no host is known")),
            Listing::NotListed => Some(unknown("does not list it")),
            Listing::Differs => Some(HostKeyError::Changed {
                replace: error::replace_command(host, port, offered, &file),
                place,
                file,
                offered: offered.clone(),
            }),
        }
    }

    /// Checks the key the session's server presented (call right after the handshake,
    /// before authenticating): a listed key passes; a changed key is refused; an unknown
    /// host is refused, or under accept-new appended to the file and let through.
    pub fn verify(
        &self,
        session: &Session,
        host: &str,
        port: u16,
    ) -> Result<Trusted, HostKeyError> {
        let (listing, offered) = self.look_up(session, host, port)?;
        let unknown = matches!(listing, Listing::NoFile | Listing::NotListed);
        if unknown && self.policy == HostKeyPolicy::AcceptNew {
            known_hosts_file::append(session, &self.known_hosts, host, port, &offered)?;
            return Ok(Trusted::AddedNow(offered));
        }
        match self.refusal(host, port, listing, &offered) {
            None => Ok(Trusted::Listed),
            Some(refused) => Err(refused),
        }
    }
}

#[cfg(test)]
mod tests;
