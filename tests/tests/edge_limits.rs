//! The HTTP edge under load a caller chooses: half-sent requests from one host, bodies sent
//! without a token or larger than a route takes, and bursts of submits. Each test starts a
//! real manager and talks raw TCP or HTTP to it.

use hetpilot_e2e::{array_app, free_port, wait_until, Manager};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Half-sent connections the flood test opens. This process keeps only those the manager
/// has not closed yet, so the flood fits under this machine's hard open-files limit
/// (20,000; even root in this container cannot raise it).
const FLOOD: usize = 20_000;

/// Sets this process's soft open-files limit (children inherit it); returns the hard limit.
fn soft_open_files(n: Option<u64>) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = n.unwrap_or(lim.rlim_max).min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    lim.rlim_max
}

/// Opens `n` connections from 127.0.0.2 to `to` on a thread of its own, up to 1024 at a time,
/// each sending half a request's headers; counts them in `opened` as they open. Returns the
/// ones the manager had not closed by then (those it closed at once, over the per-address
/// cap, hold no descriptor here).
fn half_sent_connections(
    to: SocketAddr,
    n: usize,
    opened: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<Vec<TcpStream>> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let slots = Arc::new(tokio::sync::Semaphore::new(1024));
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let permit = slots.clone().acquire_owned().await.unwrap();
                let opened = opened.clone();
                tasks.spawn(async move {
                    let socket = tokio::net::TcpSocket::new_v4().unwrap();
                    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
                    let mut stream = socket.connect(to).await.expect("connecting from 127.0.0.2");
                    // The manager may already have closed it (over the per-address cap).
                    let _ = tokio::io::AsyncWriteExt::write_all(
                        &mut stream,
                        b"GET /v1/apps HTTP/1.1\r\nHost: manager\r\nAuthor",
                    )
                    .await;
                    opened.fetch_add(1, Ordering::Relaxed);
                    drop(permit);
                    let mut stream = stream.into_std().unwrap();
                    (!closed(&mut stream)).then_some(stream)
                });
            }
            tasks.join_all().await.into_iter().flatten().collect()
        })
    })
}

/// Whether the peer has closed `stream` (EOF or reset); the stream is nonblocking.
fn closed(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

#[test]
fn half_sent_requests_from_one_host_neither_lock_out_others_nor_stay_open() {
    let dir = tempfile::tempdir().unwrap();
    // The manager starts with a common soft limit on open files (it may raise it up to the
    // hard limit); this client takes all it can. The manager holds fewer connections than
    // the flood, so only the per-address cap keeps room for other hosts.
    soft_open_files(Some(4096));
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[
            ("HETPILOT_LIMITS__HEADER_READ_TIMEOUT_SECS", "2"),
            ("HETPILOT_LIMITS__MAX_CONNECTIONS", "5000"),
        ],
    );
    let hard = soft_open_files(None);
    assert!(hard >= 4096, "the hard open-files limit {hard} is too low");
    let alice = m.create_user("alice");
    let to: SocketAddr = format!("127.0.0.1:{}", m.port).parse().unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let flooding = half_sent_connections(to, FLOOD, opened.clone());
    wait_until("half the flood to connect", Duration::from_secs(60), || {
        (opened.load(Ordering::Relaxed) >= FLOOD / 2).then_some(())
    });

    let started = Instant::now();
    let (status, body) = m.http().get("/v1/apps", &alice);
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}");
    // Without the per-address cap the user waits for a slot that the header-read
    // timeout (2 s) frees: 2.08 s measured. With it, well under a second on a quiet
    // machine; 1.05 s was once seen while other builds loaded both cores.
    assert!(
        took < Duration::from_millis(1500),
        "a user waited {took:?} behind {FLOOD} half-sent requests"
    );
    let mut flood = flooding.join().expect("the flood");
    assert_eq!(opened.load(Ordering::Relaxed), FLOOD);
    let (status, _) = m.http().get("/v1/apps", &alice);
    assert_eq!(status, 200, "and once all {FLOOD} are sent");

    let still_open = flood.iter_mut().map(closed).filter(|c| !c).count();
    assert!(
        still_open > 0,
        "the manager held none of them: the test proves nothing"
    );
    wait_until(
        "the manager to close every half-sent connection",
        Duration::from_secs(30),
        || {
            flood.retain_mut(|s| !closed(s));
            flood.is_empty().then_some(())
        },
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "closed before the header-read timeout"
    );
}

/// Sends `head` on a new connection and reads the status line that comes back.
fn status_after_headers(port: u16, head: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        let n = s
            .read(&mut buf)
            .expect("an answer before the body was sent");
        assert!(n > 0, "closed without an answer");
        answer.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&answer);
    text.lines().next().unwrap_or_default().to_string()
}

#[test]
fn a_body_without_a_valid_token_is_refused_before_it_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let big = 200u64 << 20;
    for (path, method, auth) in [
        ("/v1/users", "POST", ""),
        ("/v1/apps", "POST", "Authorization: Bearer hpu_wrong\r\n"),
        ("/v1/files/big.bin", "PUT", ""),
    ] {
        // Only the headers go out; the answer must come without the 200 MiB that they announce.
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: manager\r\n{auth}Content-Type: application/json\r\nContent-Length: {big}\r\n\r\n"
        );
        let status = status_after_headers(m.port, &head);
        assert!(
            status.starts_with("HTTP/1.1 401"),
            "{method} {path}: {status}"
        );
    }
}

#[test]
fn bodies_larger_than_their_route_takes_get_413() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[("HETPILOT_LIMITS__MAX_FILE_MIB", "1")],
    );
    let alice = m.create_user("alice");
    let http = m.http();
    // A user's 2 MiB body to an admin route is refused for its size, not read and parsed.
    let name = "a".repeat(2 << 20);
    let big = serde_json::to_vec(&json!({ "name": name })).unwrap();
    let status = (0..5).find_map(|_| http.try_post_bytes("/v1/users", &alice, big.clone()));
    assert_eq!(status, Some(413));
    // A chunked upload (no Content-Length) over the per-file limit is cut off too.
    let client = reqwest::blocking::Client::new();
    let upload = |len: usize| {
        let body = reqwest::blocking::Body::new(std::io::Cursor::new(vec![7u8; len]));
        client
            .put(format!("{}/v1/files/up.bin", m.url))
            .bearer_auth(&alice)
            .body(body)
            .send()
            .ok()
            .map(|r| r.status().as_u16())
    };
    let status = (0..5).find_map(|_| upload((1 << 20) + 4096));
    assert_eq!(status, Some(413));
    let (s, _) = http.get("/v1/files/up.bin", &alice);
    assert_eq!(s, 404, "nothing of the refused upload is stored");
    assert_eq!(upload(1 << 20), Some(201), "a file at the limit is taken");
}

#[test]
fn submits_beyond_the_burst_get_429_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[
            ("HETPILOT_LIMITS__SUBMIT_BURST", "3"),
            ("HETPILOT_LIMITS__SUBMITS_PER_MINUTE", "1"),
        ],
    );
    let alice = m.create_user("alice");
    let client = reqwest::blocking::Client::new();
    let submit = |token: &str| {
        client
            .post(format!("{}/v1/apps", m.url))
            .bearer_auth(token)
            .json(&array_app("a", "true", 1))
            .send()
            .unwrap()
    };
    for i in 0..3 {
        assert_eq!(
            submit(&alice).status().as_u16(),
            200,
            "submit {i} of the burst"
        );
    }
    let refused = submit(&alice);
    assert_eq!(refused.status().as_u16(), 429);
    let retry: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "Retry-After: {retry}");
    assert_eq!(
        submit(&m.admin).status().as_u16(),
        200,
        "another user has a budget of their own"
    );
}

#[test]
fn registrations_beyond_a_platforms_burst_get_429() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[
            ("HETPILOT_LIMITS__REGISTER_BURST", "2"),
            ("HETPILOT_LIMITS__REGISTRATIONS_PER_MINUTE", "1"),
        ],
    );
    let register = |token: &str| {
        m.http().post(
            "/v1/agents",
            token,
            &json!({"platform": "local", "hostname": "h", "cores": 1, "memory_mb": 1}),
        )
    };
    let token = m.agent_token("local");
    for i in 0..2 {
        let (s, b) = register(&token);
        assert_eq!(s, 200, "registration {i} of the burst: {b}");
    }
    let (s, b) = register(&token);
    assert_eq!(s, 429, "{b}");
    let other = m.agent_token("local");
    assert_eq!(
        register(&other).0,
        429,
        "the budget is the platform's: another token does not buy more registrations"
    );
}

/// A submit request's head for a body of `len` bytes.
fn submit_head(port: u16, token: &str, len: usize) -> String {
    format!(
        "POST /v1/apps HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    )
}

/// Reads until the peer closes; returns the status line.
fn read_status(s: &mut TcpStream) -> String {
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("an answer");
    answer.lines().next().unwrap_or_default().to_string()
}

#[test]
fn large_bodies_are_read_a_bounded_number_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[("HETPILOT_LIMITS__MAX_LARGE_REQUESTS", "1")],
    );
    let body = serde_json::to_vec(&array_app("slow", "true", 1)).unwrap();
    // The first submit's body is 16 MiB of leading whitespace (valid JSON) and the spec:
    // more than the kernel's socket buffers hold, so once most of it is written the manager
    // is reading it, which it does only holding the only permit.
    let mut big = vec![b' '; 16 << 20];
    big.extend_from_slice(&body);
    let mut first = TcpStream::connect(("127.0.0.1", m.port)).unwrap();
    first
        .write_all(submit_head(m.port, &m.admin, big.len()).as_bytes())
        .unwrap();
    first.write_all(&big[..big.len() - body.len()]).unwrap();
    // A second, complete submit waits for it.
    let mut second = TcpStream::connect(("127.0.0.1", m.port)).unwrap();
    second
        .write_all(submit_head(m.port, &m.admin, body.len()).as_bytes())
        .unwrap();
    second.write_all(&body).unwrap();
    second
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let mut buf = [0u8; 64];
    let early = second.read(&mut buf);
    assert!(
        matches!(&early, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the second submit was read while the first held the permit: {early:?}"
    );
    first.write_all(&big[big.len() - body.len()..]).unwrap();
    assert!(read_status(&mut first).starts_with("HTTP/1.1 200"));
    second
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert!(read_status(&mut second).starts_with("HTTP/1.1 200"));
}

/// Bytes of leading whitespace each slow submit sends at once: more than the kernel's
/// socket buffers hold, so once they are written the manager is reading the body, which
/// it does only holding a large-body slot.
const READ_MARK: usize = 16 << 20;

/// One user's submit, sent slowly on a thread of its own: `READ_MARK` bytes of whitespace
/// (counted in `read` once written), then a byte every 250 ms until `stop` or the
/// connection ends; the body is never complete. Returns a handle on the socket, to end it.
fn slow_submit(
    port: u16,
    token: &str,
    read: Arc<AtomicUsize>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> (TcpStream, std::thread::JoinHandle<()>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(submit_head(port, token, READ_MARK + 1_000_000).as_bytes())
        .unwrap();
    let handle = s.try_clone().unwrap();
    let thread = std::thread::spawn(move || {
        if s.write_all(&vec![b' '; READ_MARK]).is_err() {
            return;
        }
        read.fetch_add(1, Ordering::SeqCst);
        while !stop.load(Ordering::SeqCst) && s.write_all(b" ").is_ok() {
            std::thread::sleep(Duration::from_millis(250));
        }
    });
    (handle, thread)
}

#[test]
fn one_users_slow_bodies_leave_other_users_submits_fast() {
    let dir = tempfile::tempdir().unwrap();
    // Defaults: 4 large-body slots, 2 per user. A pause of 1 s ends a body; bob's bodies
    // trickle fast enough to stay under it and are never complete.
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[("HETPILOT_LIMITS__BODY_TIMEOUT_SECS", "1")],
    );
    let bob = m.create_user("bob");
    let alice = m.create_user("alice");
    let read = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow: Vec<_> = (0..6)
        .map(|_| slow_submit(m.port, &bob, read.clone(), stop.clone()))
        .collect();
    wait_until(
        "the manager to read two of bob's bodies",
        Duration::from_secs(60),
        || (read.load(Ordering::SeqCst) >= 2).then_some(()),
    );

    let started = Instant::now();
    let answer = reqwest::blocking::Client::new()
        .post(format!("{}/v1/apps", m.url))
        .bearer_auth(&alice)
        .timeout(Duration::from_secs(10))
        .json(&array_app("fast", "true", 1))
        .send();
    let took = started.elapsed();
    let status = answer.map(|r| r.status().as_u16());
    // Without slots per user: bob holds all four and alice waits for his bodies to end
    // (here: past the 10 s timeout).
    assert!(
        matches!(status, Ok(200)) && took < Duration::from_secs(1),
        "alice's submit behind bob's 6 slow bodies: {status:?} after {took:?}"
    );
    assert_eq!(
        read.load(Ordering::SeqCst),
        2,
        "bob's bodies were read beyond his share of the slots"
    );

    stop.store(true, Ordering::SeqCst);
    for (socket, thread) in slow {
        let _ = socket.shutdown(std::net::Shutdown::Both);
        thread.join().unwrap();
    }
}

#[test]
fn a_body_slower_than_the_whole_body_deadline_gets_408() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[
            ("HETPILOT_LIMITS__BODY_DEADLINE_SECS", "2"),
            ("HETPILOT_LIMITS__BODY_TIMEOUT_SECS", "1"),
        ],
    );
    let started = Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (mut socket, trickling) = slow_submit(m.port, &m.admin, Arc::default(), stop.clone());
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // Until the manager closes the connection (the reset that its unread bytes may
    // cause comes after the answer).
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let ended = loop {
        match socket.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => break Some(e),
        }
    };
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let _ = socket.shutdown(std::net::Shutdown::Both);
    trickling.join().unwrap();
    let answer = String::from_utf8_lossy(&answer);
    // Without the deadline the trickle never ends: no answer within 10 s.
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "after {took:?} ({ended:?}): {answer:?}"
    );
    assert!(answer.contains("limits.body_deadline_secs"), "{answer}");
    assert!(
        (Duration::from_secs(2)..Duration::from_secs(6)).contains(&took),
        "answered after {took:?}"
    );
}
