//! TLS for the manager's API (rustls): the server's certificate and key from PEM files, or
//! a self-signed pair made once in the data directory (rcgen) and reused; the SHA-256
//! fingerprint clients pin; and how clients (CLI, agents) trust the server: a CA file, or a
//! pinned fingerprint checked by a certificate verifier of our own (signatures are still
//! checked by rustls' provider).

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use thiserror::Error;

pub use rustls::ServerConfig;

/// The self-signed certificate's file in the data directory.
pub const SELF_SIGNED_CERT: &str = "tls-cert.pem";
/// Its key's file (mode 0600).
pub const SELF_SIGNED_KEY: &str = "tls-key.pem";

#[derive(Debug, Error)]
pub enum TlsError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no PEM certificate or key in it ({problem})", path.display())]
    Pem { path: PathBuf, problem: String },
    #[error(
        "{} is missing while {} is there: restore it from a backup of the data directory, or \
         remove {} too to make a new self-signed pair (clients that pinned the old \
         fingerprint must then pin the new one)",
        missing.display(), present.display(), present.display()
    )]
    HalfPair { present: PathBuf, missing: PathBuf },
    #[error("TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("making a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("`{0}` is not a SHA-256 fingerprint (64 hex digits, colons allowed)")]
    Fingerprint(String),
    #[error("the CA file {}: {message}", path.display())]
    CaFile { path: PathBuf, message: String },
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The certificates in a PEM file, end-entity first.
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = |problem: String| TlsError::Pem {
        path: path.to_path_buf(),
        problem,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(e.to_string()))?;
    if certs.is_empty() {
        return Err(pem("no CERTIFICATE section".into()));
    }
    Ok(certs)
}

/// The server side: the certificate chain and key in PEM files, HTTP/2 or HTTP/1.1 (ALPN).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs = read_certs(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Pem {
        path: key.to_path_buf(),
        problem: e.to_string(),
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![
        crate::http_version::ALPN_H2.to_vec(),
        crate::http_version::ALPN_HTTP1.to_vec(),
    ];
    Ok(Arc::new(config))
}

/// The self-signed certificate and key in `dir` (made for `names` if both are missing, else
/// reused): returns their paths. One without the other is refused, not replaced.
pub fn self_signed(dir: &Path, names: &[String]) -> Result<(PathBuf, PathBuf), TlsError> {
    let (cert, key) = (dir.join(SELF_SIGNED_CERT), dir.join(SELF_SIGNED_KEY));
    match (cert.exists(), key.exists()) {
        (true, true) => return Ok((cert, key)),
        (false, false) => {}
        // A new pair would change the fingerprint clients pin; the admin decides.
        (true, false) => {
            return Err(TlsError::HalfPair {
                present: cert,
                missing: key,
            })
        }
        (false, true) => {
            return Err(TlsError::HalfPair {
                present: key,
                missing: cert,
            })
        }
    }
    let made = rcgen::generate_simple_self_signed(names.to_vec())?;
    let write = |path: &Path, text: String, mode: u32| -> Result<(), TlsError> {
        let io = |source| TlsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(path)
            .map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)
    };
    write(&key, made.signing_key.serialize_pem(), 0o600)?;
    write(&cert, made.cert.pem(), 0o644)?;
    Ok((cert, key))
}

/// The SHA-256 fingerprint of a DER certificate, as lowercase hex.
pub fn fingerprint(der: &[u8]) -> String {
    hex::encode(Sha256::digest(der))
}

/// The fingerprint of the end-entity (first) certificate of a PEM file.
pub fn fingerprint_of(cert: &Path) -> Result<String, TlsError> {
    Ok(fingerprint(&read_certs(cert)?[0]))
}

fn parse_fingerprint(text: &str) -> Result<[u8; 32], TlsError> {
    let digits: String = text.trim().chars().filter(|c| *c != ':').collect();
    let mut out = [0u8; 32];
    hex::decode_to_slice(&digits, &mut out).map_err(|_| TlsError::Fingerprint(text.to_string()))?;
    Ok(out)
}

/// Whether `e` (or one of its causes) is a server certificate that chains to no issuer the
/// client trusts: a self-signed manager reached without its fingerprint or CA file.
pub fn is_unknown_issuer(e: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(rustls::Error::InvalidCertificate(cert)) = e.downcast_ref::<rustls::Error>() {
        return matches!(cert, rustls::CertificateError::UnknownIssuer);
    }
    // An I/O error carries the error inside it (`get_ref`, possibly another I/O error),
    // not as its source.
    let inner = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
        .map(|i| i as &(dyn std::error::Error + 'static));
    inner.is_some_and(is_unknown_issuer) || e.source().is_some_and(is_unknown_issuer)
}

/// How a client trusts the manager: the system's roots unless a CA file or a pinned
/// certificate fingerprint is given (the fingerprint wins if both are).
#[derive(Debug, Clone, Default)]
pub struct ClientTrust {
    pub ca_file: Option<PathBuf>,
    pub fingerprint: Option<String>,
}

impl ClientTrust {
    /// `builder` set up for a client of `base` only: a plain `http://` base needs no
    /// certificate at all, and loading the system's roots would cost a short-lived CLI
    /// process more than its whole call (about 5 ms here, reading /etc/ssl/certs).
    pub fn apply_for(
        &self,
        base: &str,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, TlsError> {
        if base.starts_with("http://") && self.fingerprint.is_none() && self.ca_file.is_none() {
            return Ok(builder.tls_certs_only(std::iter::empty()));
        }
        self.apply(builder)
    }

    /// `builder` set up to trust what this says.
    pub fn apply(
        &self,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, TlsError> {
        if let Some(fp) = &self.fingerprint {
            let verifier = Pinned {
                sha256: parse_fingerprint(fp)?,
                provider: provider(),
            };
            let mut config = rustls::ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth();
            // reqwest offers these itself only to configurations it builds.
            config.alpn_protocols = vec![
                crate::http_version::ALPN_H2.to_vec(),
                crate::http_version::ALPN_HTTP1.to_vec(),
            ];
            return Ok(builder.tls_backend_preconfigured(config));
        }
        if let Some(path) = &self.ca_file {
            let ca = |message: String| TlsError::CaFile {
                path: path.clone(),
                message,
            };
            let pem = std::fs::read(path).map_err(|e| ca(e.to_string()))?;
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| ca(e.to_string()))?;
            if certs.is_empty() {
                return Err(ca("no certificate in it".into()));
            }
            return Ok(builder.tls_certs_only(certs));
        }
        Ok(builder)
    }
}

/// Accepts exactly the server certificate whose SHA-256 is pinned (a self-signed one has
/// no CA to check it against); the handshake's signatures are verified as usual.
#[derive(Debug)]
struct Pinned {
    sha256: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if got == self.sha256 {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the server's certificate has SHA-256 fingerprint {}, not the pinned {}",
                hex::encode(got),
                hex::encode(self.sha256)
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_issuer_is_found_inside_nested_io_errors_and_nothing_else_is() {
        let tls = |e: rustls::CertificateError| rustls::Error::InvalidCertificate(e);
        let nested = |e: rustls::Error| {
            std::io::Error::other(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        };
        assert!(is_unknown_issuer(&nested(tls(
            rustls::CertificateError::UnknownIssuer
        ))));
        assert!(!is_unknown_issuer(&nested(tls(
            rustls::CertificateError::Expired
        ))));
        assert!(!is_unknown_issuer(&std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused
        )));
    }

    #[test]
    fn self_signed_is_made_once_with_a_private_key_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let (cert, key) = self_signed(dir.path(), &names).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&key).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let first = fingerprint_of(&cert).unwrap();
        self_signed(dir.path(), &names).unwrap();
        assert_eq!(fingerprint_of(&cert).unwrap(), first, "reused, not remade");
        assert!(server_config(&cert, &key).is_ok());
    }

    #[test]
    fn fingerprints_take_colons_and_refuse_other_text() {
        let fp = "ab".repeat(32);
        let colons = vec!["AB"; 32].join(":");
        assert_eq!(parse_fingerprint(&fp).unwrap(), [0xab; 32]);
        assert_eq!(parse_fingerprint(&colons).unwrap(), [0xab; 32]);
        assert!(parse_fingerprint("abcd").is_err());
    }
}
