//! Opening an SSH transport to a host (TCP, handshake) and checking the host's key against
//! known_hosts before anything is sent: the first steps of every [`super::SshRunner`]
//! session, and what `hetpilot platforms check` uses to report a host's key status.

use super::RunnerError;
use hetpilot_transport::host_keys::{HostKeyCheck, Listing, OfferedKey, Trusted};
use ssh2::Session;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long connecting (TCP, handshake, authentication) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

fn unreachable(host: &str, port: u16, problem: String) -> RunnerError {
    RunnerError::Unreachable {
        host: format!("{host}:{port}"),
        problem,
    }
}

/// A session with `host:port` after the SSH handshake, not yet authenticated.
fn handshake(host: &str, port: u16) -> Result<Session, RunnerError> {
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|e| unreachable(host, port, format!("cannot resolve the host name: {e}")))?
        .collect();
    let mut last = String::from("no address");
    let tcp = addrs
        .iter()
        .find_map(|a| match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
            Ok(s) => Some(s),
            Err(e) => {
                last = format!("TCP connect to {a}: {e}");
                None
            }
        })
        .ok_or_else(|| unreachable(host, port, format!("{last} (is sshd running there?)")))?;
    let mut session =
        Session::new().map_err(|e| unreachable(host, port, format!("ssh session: {e}")))?;
    session.set_tcp_stream(tcp);
    session.set_timeout(CONNECT_TIMEOUT.as_millis() as u32);
    session
        .handshake()
        .map_err(|e| unreachable(host, port, format!("SSH handshake: {e}")))?;
    Ok(session)
}

/// A session with `host:port` whose host key `host_keys` accepts (under accept-new, an
/// unknown host's key is added to known_hosts first, with a warning); not authenticated.
pub fn open_verified(
    host: &str,
    port: u16,
    host_keys: &HostKeyCheck,
) -> Result<Session, RunnerError> {
    let session = handshake(host, port)?;
    if let Trusted::AddedNow(key) = host_keys.verify(&session, host, port)? {
        tracing::warn!(
            place = %format!("{host}:{port}"),
            key = %key,
            file = %host_keys.known_hosts.display(),
            "unknown host: its key was added to known_hosts (host_key_policy = \"accept-new\")"
        );
    }
    Ok(session)
}

/// What `host_keys`' known_hosts file says about the key `host:port` presents; changes
/// nothing.
pub fn look_up_host_key(
    host: &str,
    port: u16,
    host_keys: &HostKeyCheck,
) -> Result<(Listing, OfferedKey), RunnerError> {
    let session = handshake(host, port)?;
    Ok(host_keys.look_up(&session, host, port)?)
}
