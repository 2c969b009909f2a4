//! A fault-injecting TCP proxy on 127.0.0.1: agents reach the manager through it, and a
//! test partitions them from the manager and heals the partition later.
//!
//! Partitioned, the proxy cuts every connection it carries and holds new ones open without
//! reading them or reaching the manager, as a dropped route does: a caller's request waits
//! until its own timeout. Healed, it drops the held connections (their callers retry) and
//! carries new ones again. A manager that restarts on the same port is reached again by the
//! next connection.

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The proxy; it stops when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    upstream: SocketAddr,
    partitioned: AtomicBool,
    stopping: AtomicBool,
    next_id: AtomicU64,
    /// Both ends of each carried connection, to cut them.
    carried: Mutex<HashMap<u64, [TcpStream; 2]>>,
    /// Connections accepted while partitioned: open, unread, going nowhere.
    held: Mutex<Vec<TcpStream>>,
}

impl FaultProxy {
    /// Listens on a fresh port of 127.0.0.1 and carries each connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> std::io::Result<FaultProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            partitioned: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
            carried: Mutex::new(HashMap::new()),
            held: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || accept_loop(listener, accepting))?;
        Ok(FaultProxy {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:PORT`, for agents.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Cuts every carried connection; new ones are held, going nowhere, until [`Self::heal`].
    pub fn partition(&self) {
        self.shared.partitioned.store(true, Ordering::SeqCst);
        let carried = std::mem::take(&mut *lock(&self.shared.carried));
        for [client, server] in carried.values() {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
    }

    /// Ends the partition: the held connections are closed, new ones carried again.
    pub fn heal(&self) {
        self.shared.partitioned.store(false, Ordering::SeqCst);
        for held in lock(&self.shared.held).drain(..) {
            let _ = held.shutdown(Shutdown::Both);
        }
    }

    /// How many connections it carries now.
    pub fn carried(&self) -> usize {
        lock(&self.shared.carried).len()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.partition();
        self.heal();
        // Wakes the accept loop, which then sees `stopping`.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        if shared.partitioned.load(Ordering::SeqCst) {
            lock(&shared.held).push(client);
            continue;
        }
        // A manager that is down refuses: so does the proxy, by closing the client.
        let Ok(server) = TcpStream::connect(shared.upstream) else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
        let (Ok(c2), Ok(s2), Ok(c3), Ok(s3)) = (
            client.try_clone(),
            server.try_clone(),
            client.try_clone(),
            server.try_clone(),
        ) else {
            continue;
        };
        lock(&shared.carried).insert(id, [c3, s3]);
        let up = Arc::clone(&shared);
        let down = Arc::clone(&shared);
        let _ = std::thread::Builder::new()
            .name("fault-proxy-up".into())
            .spawn(move || pump(client, server, id, &up));
        let _ = std::thread::Builder::new()
            .name("fault-proxy-down".into())
            .spawn(move || pump(s2, c2, id, &down));
    }
}

/// Copies `from` to `to` until either ends, then closes both and forgets the connection.
fn pump(mut from: TcpStream, mut to: TcpStream, id: u64, shared: &Shared) {
    // An error is a cut connection: the end of this one either way.
    let _ = std::io::copy(&mut from, &mut to);
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
    lock(&shared.carried).remove(&id);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{ErrorKind, Read, Write};
    use std::time::Duration;

    /// An upstream that answers each connection's bytes back, upper-cased.
    fn echo_upper() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut s = s;
                    let mut buf = [0u8; 64];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n].to_ascii_uppercase()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    fn round_trip(s: &mut TcpStream, what: &[u8]) -> std::io::Result<Vec<u8>> {
        s.write_all(what)?;
        let mut got = vec![0u8; what.len()];
        s.read_exact(&mut got)?;
        Ok(got)
    }

    #[test]
    fn it_carries_cuts_holds_and_carries_again() {
        let proxy = FaultProxy::start(echo_upper()).unwrap();
        let mut a = TcpStream::connect(proxy.addr).unwrap();
        assert_eq!(round_trip(&mut a, b"abc").unwrap(), b"ABC");

        proxy.partition();
        // The carried connection is cut: end of stream (or a reset), never an answer.
        let mut buf = [0u8; 3];
        assert_eq!(a.read(&mut buf).unwrap_or(0), 0);
        // A new one is held: nothing comes back within the read timeout.
        let mut b = TcpStream::connect(proxy.addr).unwrap();
        b.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        b.write_all(b"xyz").unwrap();
        let err = b.read(&mut buf).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{err}"
        );

        proxy.heal();
        // The held one is closed once healed; a new one is carried.
        b.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(b.read(&mut buf).unwrap_or(0), 0);
        let mut c = TcpStream::connect(proxy.addr).unwrap();
        assert_eq!(round_trip(&mut c, b"def").unwrap(), b"DEF");
        assert_eq!(proxy.carried(), 1);
    }
}
