//! The certificate and key `hetpilot serve` serves, checked before use: a file that does not
//! parse, a key that does not match its certificate, or a reused self-signed certificate
//! whose fingerprint is not the one the manager last served (`tls.fingerprint`, which
//! clients pin) stops start-up with one line naming the files and what to do. A damaged
//! pair is never replaced by a new one behind the admin's back.

use super::connect::fingerprint_file;
use anyhow::anyhow;
use hetpilot_transport::tls;
use std::path::Path;
use std::sync::Arc;

/// What the server serves: its TLS configuration and the certificate's fingerprint.
pub struct ServedTls {
    pub config: Arc<tls::ServerConfig>,
    pub fingerprint: String,
}

/// Where the pair came from, which decides what to do about damage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PairOrigin {
    /// `tls_cert` and `tls_key` in the configuration.
    Configured,
    /// The self-signed pair made now in the data directory.
    SelfSignedNew,
    /// The self-signed pair of an earlier start, reused.
    SelfSignedReused,
}

/// Loads and checks the pair `cert` and `key`.
pub fn load(
    cert: &Path,
    key: &Path,
    origin: PairOrigin,
    data_dir: &Path,
) -> anyhow::Result<ServedTls> {
    let remedy = match origin {
        PairOrigin::Configured => format!(
            "put back good copies of both (configuration `tls_cert` {} and `tls_key` {})",
            cert.display(),
            key.display()
        ),
        PairOrigin::SelfSignedNew | PairOrigin::SelfSignedReused => format!(
            "restore {} and {} from a backup of the data directory, or remove both to make a \
             new self-signed pair (clients that pinned the old fingerprint must then pin the \
             new one)",
            cert.display(),
            key.display()
        ),
    };
    let unusable = |e: tls::TlsError| {
        anyhow!(
            "the TLS certificate {} and key {} cannot be served ({e}): {remedy}",
            cert.display(),
            key.display()
        )
    };
    let fingerprint = tls::fingerprint_of(cert).map_err(unusable)?;
    let config = tls::server_config(cert, key).map_err(unusable)?;
    if origin == PairOrigin::SelfSignedReused {
        let pinned_file = fingerprint_file(data_dir);
        if let Ok(text) = std::fs::read_to_string(&pinned_file) {
            let pinned = text.trim();
            if pinned != fingerprint {
                return Err(anyhow!(
                    "the TLS certificate {} is not the one this manager last served, whose \
                     fingerprint {} records ({fingerprint} is not {pinned:?}): one of them was \
                     altered or damaged; {remedy} (if only {} is damaged, remove it)",
                    cert.display(),
                    pinned_file.display(),
                    pinned_file.display()
                ));
            }
        }
    }
    Ok(ServedTls {
        config,
        fingerprint,
    })
}
