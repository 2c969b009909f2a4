//! Which HTTP version a new connection speaks: under TLS, what ALPN agreed (`h2` or
//! `http/1.1`); over plain TCP, HTTP/2 when the client opens with the HTTP/2 connection
//! preface ("prior knowledge", as agents do once the manager has said it serves HTTP/2),
//! HTTP/1.1 otherwise. HTTP/2 lets an agent's heartbeats, long polls and reports share one
//! connection, so ten thousand agents hold ten thousand descriptors, not twenty thousand.

use std::time::Duration;
use tokio::net::TcpStream;

/// What every HTTP/2 client sends first (RFC 9113 §3.4).
pub const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The ALPN name of HTTP/2 over TLS.
pub const ALPN_H2: &[u8] = b"h2";

/// The ALPN name of HTTP/1.1.
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// How long to wait before peeking again at a connection that has sent part of the
/// preface (its first packet was cut short; rare).
const PARTIAL_PREFACE_RETRY: Duration = Duration::from_millis(5);

/// Whether the client on `stream` opens with the HTTP/2 preface. Peeks, consuming
/// nothing, so the protocol chosen reads the connection from its first byte. Waits for the
/// first bytes: the caller bounds it with the header-read timeout. A connection that
/// closes first, or whose first bytes differ from the preface, speaks HTTP/1.1.
pub async fn opens_with_h2_preface(stream: &TcpStream) -> std::io::Result<bool> {
    let mut first = [0u8; H2_PREFACE.len()];
    loop {
        let n = stream.peek(&mut first).await?;
        if n == 0 || first[..n] != H2_PREFACE[..n] {
            return Ok(false);
        }
        if n == H2_PREFACE.len() {
            return Ok(true);
        }
        tokio::time::sleep(PARTIAL_PREFACE_RETRY).await;
    }
}

/// Whether a TLS connection agreed on HTTP/2 (`alpn` is the protocol ALPN chose).
pub fn alpn_is_h2(alpn: Option<&[u8]>) -> bool {
    alpn == Some(ALPN_H2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// The verdict on a connection whose client writes `chunks`, in that order.
    async fn verdict(chunks: &'static [&'static [u8]]) -> bool {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.set_nodelay(true).unwrap();
            for chunk in chunks {
                c.write_all(chunk).await.unwrap();
                c.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
            c
        });
        let (server, _) = listener.accept().await.unwrap();
        let h2 = opens_with_h2_preface(&server).await.unwrap();
        let mut rest = vec![0u8; 64];
        let peeked = server.peek(&mut rest).await.unwrap();
        assert_eq!(
            &rest[..peeked.min(chunks[0].len())],
            &chunks[0][..peeked.min(chunks[0].len())],
            "nothing was consumed"
        );
        drop(client.await.unwrap());
        h2
    }

    #[tokio::test]
    async fn the_preface_means_http2_and_anything_else_http1() {
        assert!(verdict(&[H2_PREFACE]).await, "the whole preface");
        assert!(
            verdict(&[b"PRI * HTTP/2.0\r\n", b"\r\nSM\r\n\r\n"]).await,
            "a preface in two packets"
        );
        assert!(!verdict(&[b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"]).await);
        assert!(
            !verdict(&[b"PRI * HTTP/1.1\r\n\r\n"]).await,
            "close, not it"
        );
    }

    #[test]
    fn only_h2_by_alpn_means_http2() {
        assert!(alpn_is_h2(Some(b"h2")));
        assert!(!alpn_is_h2(Some(b"http/1.1")));
        assert!(!alpn_is_h2(None));
    }
}
