//! [`OfferedKey`]: the host key a server presented in the SSH handshake, with what a person
//! needs to recognise it: its type and SHA256 fingerprint as `ssh-keygen -lf` prints them.

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};
use ssh2::{HostKeyType, KnownHostKeyFormat};
use std::fmt;

/// A server's host key: the raw key blob and its type.
#[derive(Debug, Clone)]
pub struct OfferedKey {
    blob: Vec<u8>,
    kind: HostKeyType,
}

impl OfferedKey {
    pub fn new(blob: &[u8], kind: HostKeyType) -> OfferedKey {
        OfferedKey {
            blob: blob.to_vec(),
            kind,
        }
    }

    /// The key the session's server sent, if any (there is one after a handshake).
    pub fn of(session: &ssh2::Session) -> Option<OfferedKey> {
        session
            .host_key()
            .map(|(blob, kind)| OfferedKey::new(blob, kind))
    }

    /// The raw key, as libssh2's known-hosts functions take it.
    pub fn blob(&self) -> &[u8] {
        &self.blob
    }

    /// How libssh2 records a key of this type in known_hosts.
    pub fn known_hosts_format(&self) -> KnownHostKeyFormat {
        self.kind.into()
    }

    /// `SHA256:<base64 without padding>`, as `ssh-keygen -lf` prints it.
    pub fn fingerprint(&self) -> String {
        format!(
            "SHA256:{}",
            STANDARD_NO_PAD.encode(Sha256::digest(&self.blob))
        )
    }

    /// The type as `ssh-keygen -lf` prints it, e.g. `ED25519`.
    pub fn type_label(&self) -> &'static str {
        match self.kind {
            HostKeyType::Rsa => "RSA",
            HostKeyType::Dss => "DSA",
            HostKeyType::Ecdsa256 | HostKeyType::Ecdsa384 | HostKeyType::Ecdsa521 => "ECDSA",
            HostKeyType::Ed25519 => "ED25519",
            HostKeyType::Unknown => "unknown-type",
        }
    }

    /// The type as `ssh-keyscan -t` takes it, e.g. `ed25519`.
    pub fn keyscan_type(&self) -> Option<&'static str> {
        match self.kind {
            HostKeyType::Rsa => Some("rsa"),
            HostKeyType::Dss => Some("dsa"),
            HostKeyType::Ecdsa256 | HostKeyType::Ecdsa384 | HostKeyType::Ecdsa521 => Some("ecdsa"),
            HostKeyType::Ed25519 => Some("ed25519"),
            HostKeyType::Unknown => None,
        }
    }
}

/// `ED25519 key SHA256:...`
impl fmt::Display for OfferedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} key {}", self.type_label(), self.fingerprint())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn the_fingerprint_is_the_one_ssh_keygen_prints() {
        // `ssh-keygen -lf` on this public key printed
        // `256 SHA256:GJwrMSE+1NJIbPSJl4gMDj5mHRDZYZDkJ1mvEOrxhKQ t (ED25519)`.
        let blob = STANDARD
            .decode("AAAAC3NzaC1lZDI1NTE5AAAAIOMrhPGtonMnitBKrNZFO7vnROH//AmrhxGuA8Kk7TCq")
            .unwrap();
        let key = OfferedKey::new(&blob, HostKeyType::Ed25519);
        assert_eq!(
            key.to_string(),
            "ED25519 key SHA256:GJwrMSE+1NJIbPSJl4gMDj5mHRDZYZDkJ1mvEOrxhKQ"
        );
        assert_eq!(key.keyscan_type(), Some("ed25519"));
    }
}
