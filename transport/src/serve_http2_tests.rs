//! The accept loop serves HTTP/2 next to HTTP/1.1: prior knowledge over plain TCP, ALPN
//! under TLS, many requests at once on one connection.

use super::*;
use crate::tls::{self, ClientTrust};
use axum::routing::get;

fn limits(tls: Option<Arc<rustls::ServerConfig>>) -> ServeLimits {
    ServeLimits {
        header_read_timeout: Duration::from_secs(10),
        max_connections: 64,
        // One connection from the test's address: every request must share it.
        max_connections_per_ip: 1,
        tls,
    }
}

/// Serves a router whose `/slow` answers after `/release` has been called, and whose
/// `/release` answers at once; returns the address.
async fn start(tls: Option<Arc<rustls::ServerConfig>>) -> std::net::SocketAddr {
    let gate = Arc::new(tokio::sync::Notify::new());
    let (slow, release) = (gate.clone(), gate);
    let router = Router::new()
        .route(
            "/slow",
            get(move || async move {
                slow.notified().await;
                "slow"
            }),
        )
        .route(
            "/release",
            get(move || async move {
                release.notify_one();
                "released"
            }),
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, router, limits(tls), std::future::pending()));
    addr
}

/// A request held open (`/slow`) and one that releases it, at once, through `client`:
/// both must share the one connection the server allows this address.
async fn two_at_once(client: &reqwest::Client, base: &str) -> Vec<reqwest::Version> {
    let slow = client.get(format!("{base}/slow")).send();
    let release = async {
        // The slow request goes out first on the shared connection.
        tokio::task::yield_now().await;
        client.get(format!("{base}/release")).send().await
    };
    let (slow, release) = tokio::join!(slow, release);
    let (slow, release) = (slow.unwrap(), release.unwrap());
    let versions = vec![slow.version(), release.version()];
    assert_eq!(slow.text().await.unwrap(), "slow");
    assert_eq!(release.text().await.unwrap(), "released");
    versions
}

#[tokio::test]
async fn http2_prior_knowledge_multiplexes_requests_on_one_plain_connection() {
    let addr = start(None).await;
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let versions = two_at_once(&client, &format!("http://{addr}")).await;
    assert_eq!(versions, vec![reqwest::Version::HTTP_2; 2]);
}

#[tokio::test]
async fn http1_clients_are_still_served_on_the_same_port() {
    let addr = start(None).await;
    let client = reqwest::Client::builder()
        .http1_only()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let r = client
        .get(format!("http://{addr}/release"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_11);
    assert_eq!(r.text().await.unwrap(), "released");
}

#[tokio::test]
async fn tls_clients_agree_on_http2_by_alpn() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = tls::self_signed(dir.path(), &["127.0.0.1".to_string()]).unwrap();
    let addr = start(Some(tls::server_config(&cert, &key).unwrap())).await;
    let trust = ClientTrust {
        ca_file: None,
        fingerprint: Some(tls::fingerprint_of(&cert).unwrap()),
    };
    let client = trust
        .apply(reqwest::Client::builder().timeout(Duration::from_secs(20)))
        .unwrap()
        .build()
        .unwrap();
    let versions = two_at_once(&client, &format!("https://{addr}")).await;
    assert_eq!(versions, vec![reqwest::Version::HTTP_2; 2]);
}

/// A host that sends half the HTTP/2 preface and then nothing does not keep its
/// connection: the header-read timeout closes it while the protocol is still being chosen.
#[tokio::test]
async fn a_half_sent_http2_preface_is_closed_at_the_header_read_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = ServeLimits {
        header_read_timeout: Duration::from_millis(300),
        ..limits(None)
    };
    let router = Router::new().route("/", get(|| async { "ok" }));
    tokio::spawn(serve(listener, router, limits, std::future::pending()));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    let mut buf = [0u8; 64];
    // Closed by the server: end of stream (or a reset), long before this test's bound.
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
        .await
        .expect("the half-sent connection is still open after 10 s");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}
