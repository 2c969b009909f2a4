//! The HTTP accept loop the manager and the file store serve their axum routers with.
//! `axum::serve` has no header-read timeout and no connection cap, so a host that opens
//! connections and never finishes their headers could hold every descriptor. This loop
//! serves HTTP/1.1 and HTTP/2 (see `http_version`: ALPN under TLS, prior knowledge over
//! plain TCP) with hyper and a timer, closes a connection whose first bytes (and, in
//! HTTP/1.1, whose request headers) take longer than `header_read_timeout`, pings a silent
//! HTTP/2 connection and closes it if the peer does not answer, holds at most `max_connections` connections (further
//! ones wait in the listen queue) and at most `max_connections_per_ip` from one address
//! (further ones are closed at once). With a TLS configuration it serves HTTPS (the
//! handshake gets the header-read timeout too). Each request carries its connection's peer
//! address as axum's `ConnectInfo<SocketAddr>`.

use crate::http_version;
use axum::extract::ConnectInfo;
use axum::{Extension, Router};
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::Layer;

/// How long open connections get to finish once shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The connection limits of one listener.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// A connection that has not sent a request's headers this long after it opened (or
    /// after its previous request) is closed.
    pub header_read_timeout: Duration,
    /// Connections held at once; further ones wait in the kernel's listen queue.
    pub max_connections: usize,
    /// Connections held at once from one IP address; further ones are closed at once.
    pub max_connections_per_ip: usize,
    /// Serve HTTPS with this configuration (see `tls::server_config`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets open requests finish
/// (for at most ten seconds).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let max_connections = connection_budget(limits.max_connections);
    let total = Arc::new(Semaphore::new(max_connections));
    let peers = PeerCounts::default();
    let graceful = GracefulShutdown::new();
    let protocols = Protocols::new(&limits);
    let tls = limits.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = total.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let Some(slot) = peers.take(peer.ip(), limits.max_connections_per_ip) else {
            tracing::debug!(%peer, "connection refused: too many from this address");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(Extension(ConnectInfo(peer)).layer(router.clone()));
        let (protocols, watcher) = (protocols.clone(), graceful.watcher());
        let tls = tls.clone();
        let first_bytes_timeout = limits.header_read_timeout;
        tokio::spawn(async move {
            let served = match tls {
                None => {
                    let h2 = tokio::time::timeout(
                        first_bytes_timeout,
                        http_version::opens_with_h2_preface(&stream),
                    )
                    .await;
                    match h2 {
                        Ok(Ok(h2)) => protocols.serve(stream, h2, service, watcher).await,
                        Ok(Err(e)) => Err(Box::new(e) as BoxError),
                        Err(_) => {
                            tracing::debug!(%peer, "no request within the header-read timeout");
                            Ok(())
                        }
                    }
                }
                Some(tls) => {
                    match tokio::time::timeout(first_bytes_timeout, tls.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            let h2 = http_version::alpn_is_h2(stream.get_ref().1.alpn_protocol());
                            protocols.serve(stream, h2, service, watcher).await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            Ok(())
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "TLS handshake timed out");
                            Ok(())
                        }
                    }
                }
            };
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
            drop((permit, slot));
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open {SHUTDOWN_GRACE:?} after shutdown began");
    }
    Ok(())
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long an HTTP/2 connection may stay silent before the server pings it, and how long
/// it then waits for the answer before closing it (a peer that vanished).
const H2_KEEP_ALIVE: Duration = Duration::from_secs(30);

/// Requests one HTTP/2 connection may have open at once. An agent has a few (a long poll,
/// a heartbeat, a report, an output upload).
const H2_MAX_STREAMS: u32 = 64;

/// The HTTP/1.1 and HTTP/2 servers of one listener, set up once.
#[derive(Clone)]
struct Protocols {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
}

impl Protocols {
    fn new(limits: &ServeLimits) -> Protocols {
        let mut http1 = http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout);
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2
            .timer(TokioTimer::new())
            .keep_alive_interval(H2_KEEP_ALIVE)
            .keep_alive_timeout(H2_KEEP_ALIVE)
            .max_concurrent_streams(H2_MAX_STREAMS);
        Protocols { http1, http2 }
    }

    /// Serves one connection with HTTP/2 (`h2`) or HTTP/1.1 until it closes or the
    /// shutdown `watcher` ends it.
    async fn serve<I, S>(
        &self,
        io: I,
        h2: bool,
        service: S,
        watcher: hyper_util::server::graceful::Watcher,
    ) -> Result<(), BoxError>
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        S: hyper::service::HttpService<hyper::body::Incoming> + Clone + Send + 'static,
        S::Future: Send + 'static,
        S::ResBody: Send + 'static,
        <S::ResBody as hyper::body::Body>::Data: Send,
        <S::ResBody as hyper::body::Body>::Error: Into<BoxError>,
        S::Error: Into<BoxError>,
    {
        if h2 {
            watcher
                .watch(self.http2.serve_connection(TokioIo::new(io), service))
                .await
                .map_err(|e| Box::new(e) as BoxError)
        } else {
            watcher
                .watch(self.http1.serve_connection(TokioIo::new(io), service))
                .await
                .map_err(|e| Box::new(e) as BoxError)
        }
    }
}

/// Descriptors kept for everything but connections (database, files served, clients).
const OTHER_FILES: u64 = 256;

/// `wanted` connections, fewer if the open-files limit (raised first) cannot hold them.
fn connection_budget(wanted: usize) -> usize {
    let budget = match raise_open_files_limit() {
        Ok(files) => {
            let budget = wanted.min(files.saturating_sub(OTHER_FILES) as usize);
            tracing::info!(
                open_files = files,
                max_connections = budget,
                "connection limit"
            );
            budget
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the open-files limit");
            wanted
        }
    };
    budget.max(1)
}

/// Out of descriptors (EMFILE, ENFILE) or memory: wait a little instead of spinning.
/// Errors of one connection (it was reset before it was accepted) need no wait.
async fn accept_error(e: std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted
    ) {
        return;
    }
    tracing::warn!(error = %e, "accepting a connection failed");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Open connections per peer address.
#[derive(Default, Clone)]
struct PeerCounts(Arc<Mutex<HashMap<IpAddr, usize>>>);

/// One open connection of `ip`, counted until dropped.
struct PeerSlot {
    counts: PeerCounts,
    ip: IpAddr,
}

impl PeerCounts {
    fn take(&self, ip: IpAddr, max: usize) -> Option<PeerSlot> {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            counts: self.clone(),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

/// Raises this process's soft limit on open files to its hard limit (connections are
/// files); returns the limit now in force.
pub fn raise_open_files_limit() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_peer_slots_are_counted_and_given_back() {
        let peers = PeerCounts::default();
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let b: IpAddr = "127.0.0.3".parse().unwrap();
        let first = peers.take(a, 2).unwrap();
        let _second = peers.take(a, 2).unwrap();
        assert!(peers.take(a, 2).is_none(), "a third from one address");
        assert!(
            peers.take(b, 2).is_some(),
            "another address is not affected"
        );
        drop(first);
        assert!(
            peers.take(a, 2).is_some(),
            "a closed connection frees its slot"
        );
    }
}

#[cfg(test)]
#[path = "serve_http2_tests.rs"]
mod http2_tests;
