//! Grants to a file store (`hetpilot-agent serve-files`): stateless, per user, expiring
//! credentials, like presigned S3 credentials. The store and the manager share a secret;
//! the manager issues, the store verifies, and neither keeps a list of tokens.
//!
//! A token is `OWNER.EXPIRES.MAC`, where `EXPIRES` is unix seconds and `MAC` the lowercase
//! hex HMAC-SHA256, keyed with the secret, of `hetpilot-store-v1\nSTORE\nOWNER\nEXPIRES`.
//! Binding the store's name means a token for one store is worthless at another even if
//! they share a secret; binding the owner means it opens only that user's files.
//!
//! The secret is a file's content, trailing whitespace removed: at least 32 bytes, and a
//! file others may read is refused (as ssh refuses a world-readable key).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use thiserror::Error;

/// Fewest bytes a secret may have.
pub const MIN_SECRET_BYTES: usize = 32;

const DOMAIN: &str = "hetpilot-store-v1";

/// The secret a store shares with the manager. Its `Debug` never shows it.
#[derive(Clone)]
pub struct StoreSecret(Vec<u8>);

impl fmt::Debug for StoreSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreSecret({} bytes)", self.0.len())
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SecretError {
    #[error("cannot read the secret file {path}: {problem}")]
    Unreadable { path: String, problem: String },
    #[error("the secret file {path} can be read by any user (mode {mode:o}): `chmod 600` it")]
    WorldReadable { path: String, mode: u32 },
    #[error("the secret in {path} has {len} bytes; at least {MIN_SECRET_BYTES} are needed (e.g. `openssl rand -hex 32`)")]
    TooShort { path: String, len: usize },
}

impl StoreSecret {
    /// Reads a secret file, refusing short secrets and world-readable files.
    pub fn load(path: &Path) -> Result<StoreSecret, SecretError> {
        let shown = path.display().to_string();
        let unreadable = |e: std::io::Error| SecretError::Unreadable {
            path: shown.clone(),
            problem: e.to_string(),
        };
        let mode = std::fs::metadata(path)
            .map_err(unreadable)?
            .permissions()
            .mode();
        if mode & 0o004 != 0 {
            return Err(SecretError::WorldReadable {
                path: shown,
                mode: mode & 0o7777,
            });
        }
        let mut bytes = std::fs::read(path).map_err(unreadable)?;
        while bytes.last().is_some_and(u8::is_ascii_whitespace) {
            bytes.pop();
        }
        StoreSecret::new(bytes).map_err(|len| SecretError::TooShort { path: shown, len })
    }

    /// A secret from bytes; `Err(length)` when it is too short.
    pub fn new(bytes: Vec<u8>) -> Result<StoreSecret, usize> {
        match bytes.len() {
            n if n < MIN_SECRET_BYTES => Err(n),
            _ => Ok(StoreSecret(bytes)),
        }
    }

    fn mac(&self, store: &str, owner: &str, expires: u64) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes keys of any length");
        mac.update(format!("{DOMAIN}\n{store}\n{owner}\n{expires}").as_bytes());
        mac
    }

    /// A token opening `owner`'s files on `store` until `expires` (unix seconds).
    pub fn issue(&self, store: &str, owner: &str, expires: u64) -> String {
        let tag = self.mac(store, owner, expires).finalize().into_bytes();
        format!("{owner}.{expires}.{}", hex::encode(tag))
    }

    /// The owner a token opens on `store` at `now` (unix seconds).
    pub fn verify(&self, store: &str, token: &str, now: u64) -> Result<String, GrantError> {
        let mut parts = token.rsplitn(3, '.');
        let (Some(tag), Some(expires), Some(owner)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(GrantError::Malformed);
        };
        let expires: u64 = expires.parse().map_err(|_| GrantError::Malformed)?;
        let tag = hex::decode(tag).map_err(|_| GrantError::Malformed)?;
        self.mac(store, owner, expires)
            .verify_slice(&tag)
            .map_err(|_| GrantError::BadSignature)?;
        if expires <= now {
            return Err(GrantError::Expired { expires });
        }
        Ok(owner.to_string())
    }
}

/// Why a store refuses a token.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum GrantError {
    #[error("the token is not OWNER.EXPIRES.MAC")]
    Malformed,
    #[error("the token was not issued for this store (or the secrets differ)")]
    BadSignature,
    #[error("the token expired at {expires} (unix seconds)")]
    Expired { expires: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(fill: u8) -> StoreSecret {
        StoreSecret::new(vec![fill; 32]).unwrap()
    }

    #[test]
    fn a_token_opens_its_owners_files_until_it_expires() {
        let s = secret(7);
        let t = s.issue("lustre", "alice", 1_000);
        assert!(t.starts_with("alice.1000."), "{t}");
        assert_eq!(s.verify("lustre", &t, 999), Ok("alice".into()));
        assert_eq!(
            s.verify("lustre", &t, 1_000),
            Err(GrantError::Expired { expires: 1_000 })
        );
    }

    #[test]
    fn tampered_foreign_or_malformed_tokens_are_refused() {
        let s = secret(7);
        let t = s.issue("lustre", "alice", 1_000);
        let bad = GrantError::BadSignature;
        assert_eq!(s.verify("gpfs", &t, 1), Err(bad.clone()), "another store");
        assert_eq!(secret(8).verify("lustre", &t, 1), Err(bad.clone()));
        let bob = t.replacen("alice", "bob", 1);
        assert_eq!(
            s.verify("lustre", &bob, 1),
            Err(bad.clone()),
            "another owner"
        );
        let later = t.replacen("1000", "9000", 1);
        assert_eq!(s.verify("lustre", &later, 1), Err(bad.clone()), "extended");
        let mut flipped = t.clone();
        let last = if flipped.ends_with('0') { "1" } else { "0" };
        flipped.replace_range(flipped.len() - 1.., last);
        assert_eq!(s.verify("lustre", &flipped, 1), Err(bad), "tampered MAC");
        for junk in ["", "alice", "alice.x.00", "alice.5.zz"] {
            assert_eq!(s.verify("lustre", junk, 1), Err(GrantError::Malformed));
        }
        // Owners may contain dots.
        let dotted = s.issue("lustre", "a.b", 1_000);
        assert_eq!(s.verify("lustre", &dotted, 1), Ok("a.b".into()));
    }

    #[test]
    fn weak_or_world_readable_secret_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, format!("{}\n", "k".repeat(32))).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let s = StoreSecret::load(&file).unwrap();
        assert_eq!(
            format!("{s:?}"),
            "StoreSecret(32 bytes)",
            "newline trimmed, never shown"
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = StoreSecret::load(&file).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::write(&file, "short").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = StoreSecret::load(&file).unwrap_err();
        assert!(matches!(e, SecretError::TooShort { len: 5, .. }), "{e}");
        let e = StoreSecret::load(&dir.path().join("missing")).unwrap_err();
        assert!(matches!(e, SecretError::Unreadable { .. }), "{e}");
    }
}
