//! SFTP transfers (ssh2 crate), one session per transfer, logging in with the agent's key
//! (`--sftp-key`). Before logging in, the server's host key is checked against known_hosts
//! (`--known-hosts`, default `~/.ssh/known_hosts`): an unknown host or a changed key is
//! refused, unless `--accept-new-host-keys` lets an unknown host's key in (added to the
//! file). Blocking: callers run these on the blocking pool.

use hetpilot_protocol::files::SftpUrl;
use hetpilot_transport::host_keys::{HostKeyCheck, Trusted};
use sha2::{Digest, Sha256};
use ssh2::Session;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// What the agent uses with SFTP servers: its own private key to log in, and the check of
/// the servers' host keys.
#[derive(Debug, Clone)]
pub struct SftpKeys {
    pub private_key: PathBuf,
    pub host_keys: HostKeyCheck,
}

fn connect(url: &SftpUrl, keys: &SftpKeys) -> Result<Session, String> {
    let place = format!("{}@{}:{}", url.user, url.host, url.port);
    let addr = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("sftp {place}: cannot resolve the host: {e}"))?
        .next()
        .ok_or_else(|| format!("sftp {place}: the host has no address"))?;
    let tcp = TcpStream::connect_timeout(&addr, TIMEOUT)
        .map_err(|e| format!("sftp {place}: cannot connect: {e} (is sshd running there?)"))?;
    let mut session = Session::new().map_err(|e| format!("sftp {place}: {e}"))?;
    session.set_tcp_stream(tcp);
    session.set_timeout(TIMEOUT.as_millis() as u32);
    session
        .handshake()
        .map_err(|e| format!("sftp {place}: SSH handshake: {e}"))?;
    let trusted = keys
        .host_keys
        .verify(&session, &url.host, url.port)
        .map_err(|e| format!("sftp {place}: SSH host key refused: {e}"))?;
    if let Trusted::AddedNow(key) = trusted {
        tracing::warn!(
            %place,
            key = %key,
            file = %keys.host_keys.known_hosts.display(),
            "unknown SFTP host: its key was added to known_hosts (--accept-new-host-keys)"
        );
    }
    let key = &keys.private_key;
    session
        .userauth_pubkey_file(&url.user, None, key, None)
        .map_err(|e| {
            format!(
                "sftp {place}: login with {} refused: {e} (is its public key in the user's \
                 authorized_keys?)",
                key.display()
            )
        })?;
    Ok(session)
}

/// Downloads `url` into `dest`; returns the bytes written and their SHA-256.
pub fn download(url: &SftpUrl, keys: &SftpKeys, dest: &Path) -> Result<(u64, String), String> {
    let session = connect(url, keys)?;
    let sftp = session.sftp().map_err(|e| format!("sftp: {e}"))?;
    let mut remote = sftp
        .open(Path::new(&url.path))
        .map_err(|e| match e.code() {
            ssh2::ErrorCode::SFTP(2) => {
                format!("not found at sftp://{}:{}{}", url.host, url.port, url.path)
            }
            _ => format!("sftp open {}: {e}", url.path),
        })?;
    let mut out =
        super::cache::new_file(dest).map_err(|e| crate::disk_full::cannot_write(dest, &e))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut len = 0u64;
    loop {
        let n = remote
            .read(&mut buf)
            .map_err(|e| format!("sftp read {}: {e}", url.path))?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        len += n as u64;
        out.write_all(&buf[..n])
            .map_err(|e| crate::disk_full::cannot_write(dest, &e))?;
    }
    out.sync_all()
        .map_err(|e| crate::disk_full::cannot_write(dest, &e))?;
    Ok((len, hex::encode(hash.finalize())))
}

/// Uploads the file at `src` to `url`; returns its size.
pub fn upload(url: &SftpUrl, keys: &SftpKeys, src: &Path) -> Result<u64, String> {
    let session = connect(url, keys)?;
    let sftp = session.sftp().map_err(|e| format!("sftp: {e}"))?;
    let mut input =
        std::fs::File::open(src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    let mut remote = sftp
        .create(Path::new(&url.path))
        .map_err(|e| format!("sftp create {}: {e}", url.path))?;
    let n = std::io::copy(&mut input, &mut remote)
        .map_err(|e| format!("sftp write {}: {e}", url.path))?;
    Ok(n)
}
