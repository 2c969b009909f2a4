//! Sends one fuzz request: over a kept-alive reqwest client, or, when the path holds dot
//! segments that an URL parser would fold away, as raw HTTP/1.1 over a fresh connection.
//! A request that got no answer on a pooled connection (the server may close one it did
//! not read the body of) is sent once more on a fresh one; only a second silence counts.

use crate::routes::{needs_raw, Req};
use reqwest::blocking::Client;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long one request may take (pulls wait at most a few seconds).
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// How much of an answer's body is kept for the findings file.
const KEEP: usize = 4096;

/// The manager's answer, or why there was none.
pub enum Answer {
    Status(u16, String),
    Transport(String),
}

/// Whether the answer came on the second try (fresh connection).
pub struct Sent {
    pub answer: Answer,
    pub retried: bool,
}

pub fn send(client: &Client, addr: SocketAddr, req: &Req) -> Sent {
    let fresh = || raw(addr, req).unwrap_or_else(|e| Answer::Transport(e.to_string()));
    if needs_raw(&req.path) {
        return Sent {
            answer: fresh(),
            retried: false,
        };
    }
    match pooled(client, addr, req) {
        Answer::Transport(_) => Sent {
            answer: fresh(),
            retried: true,
        },
        answer => Sent {
            answer,
            retried: false,
        },
    }
}

fn pooled(client: &Client, addr: SocketAddr, req: &Req) -> Answer {
    let method = reqwest::Method::from_bytes(req.method.as_bytes()).expect("known method");
    let mut r = client.request(method, format!("http://{addr}{}", req.path));
    if !req.token.is_empty() {
        r = r.header("authorization", format!("Bearer {}", req.token));
    }
    if let Some(body) = &req.body {
        r = r
            .header("content-type", "application/json")
            .body(body.clone());
    }
    match r.send() {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let text = resp.text().unwrap_or_default();
            Answer::Status(status, truncate(&text))
        }
        Err(e) => Answer::Transport(format!("{e:?}")),
    }
}

fn raw(addr: SocketAddr, req: &Req) -> std::io::Result<Answer> {
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.set_write_timeout(Some(TIMEOUT))?;
    let body = req.body.as_deref().unwrap_or_default();
    let mut head = format!(
        "{} {} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        req.method,
        req.path,
        body.len()
    );
    if !req.token.is_empty() {
        head.push_str(&format!("authorization: Bearer {}\r\n", req.token));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut answer = Vec::new();
    s.take(1 << 20).read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|t| t.get(..3))
        .and_then(|c| c.parse().ok());
    Ok(match status {
        Some(code) => {
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            Answer::Status(code, truncate(body))
        }
        None => Answer::Transport(format!("no HTTP status line in {:?}", truncate(&text))),
    })
}

/// The first `KEEP` bytes of `text` (on a character boundary).
pub fn truncate(text: &str) -> String {
    let mut end = text.len().min(KEEP);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}
