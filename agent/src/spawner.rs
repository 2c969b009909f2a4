//! The spawn helper: a small process that starts the agent's tasks so that each task's
//! peak RSS is its own.
//!
//! `wait4` reports a task's `ru_maxrss` as the largest of its own peak and the peak of the
//! address space it replaced at `exec`. A task started with a vfork-style `posix_spawn`
//! from the agent replaces the agent's address space, and a forked one a copy of it, so
//! either way every task would report at least the agent's own size. The helper is the
//! agent's binary executed afresh (`hetpilot-agent __spawn-helper FD`, its address space
//! a few MiB that never grows): the agent sends it each task (program, arguments,
//! environment, directory, and stdin/stdout/stderr by `SCM_RIGHTS`) over a socket pair;
//! it starts the task with `clone(CLONE_VM | CLONE_VFORK | CLONE_PARENT)`, so the task
//! replaces the helper's small address space and is the *agent's* child (the agent waits
//! for it with a pidfd and `wait4` as before); it answers with the pid, or why the task
//! could not start.
//!
//! The helper names itself `hetpilot-spawn` (in `ps`), makes itself undumpable and ends
//! when the agent closes the socket. Should it be gone, the agent starts another; if that
//! fails it falls back to `posix_spawn` with a warning (peak RSS is then floored at the
//! agent's).
//!
//! Tasks die with the agent, even one SIGKILLed or killed by the OOM killer:
//! - each task's process asks for `SIGKILL` when its parent dies (`PR_SET_PDEATHSIG`,
//!   set between clone and exec). The kernel sends it when the parent *thread* exits, so
//!   the helper is only ever started from the agent's main thread, which lives as long as
//!   the agent (`CLONE_PARENT` makes that thread the task's parent);
//! - the helper keeps the process group of every task it started until the agent says the
//!   task was reaped; when the agent's end of the socket closes (the agent is gone, however
//!   it ended) it SIGKILLs those groups, so what a task started (a shell's children) dies
//!   too. A group's number cannot be reused while any process of it lives, nor while its
//!   leader is unreaped.
//!
//! The agent says which tasks were reaped in the next start request, or in one message
//! ([`flush_reaped`]) when an event of its loop ended tasks and started none, before their
//! results leave: a message per task cost a system call on each side and a wake of the
//! helper.

use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use std::collections::HashSet;
use std::ffi::CStr;
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

/// The argument that makes `hetpilot-agent` the spawn helper.
pub const HELPER_ARG: &str = "__spawn-helper";

/// One task to start: what `execve` gets, where, with which standard descriptors.
pub struct Request<'a> {
    pub program: &'a CStr,
    pub argv: &'a [&'a CStr],
    pub envp: &'a [&'a CStr],
    pub cwd: &'a CStr,
    pub stdio: [BorrowedFd<'a>; 3],
}

/// The agent's end of a running helper.
struct Helper {
    socket: UnixStream,
    pid: libc::pid_t,
    /// The request being written, kept from task to task.
    message: Vec<u8>,
    /// Tasks reaped since the helper was last told.
    reaped: Vec<libc::pid_t>,
}

/// The helper, once started; `None` inside when it could not be (re)started.
static HELPER: Mutex<Option<Helper>> = Mutex::new(None);

/// Starts the helper; call once, before tasks run. Without it, tasks are started with
/// `posix_spawn`.
pub fn start() -> std::io::Result<()> {
    let helper = launch()?;
    *HELPER.lock().unwrap_or_else(|p| p.into_inner()) = Some(helper);
    Ok(())
}

fn launch() -> std::io::Result<Helper> {
    // The tasks' parent is the thread that starts the helper: one that ends would take
    // them along (PR_SET_PDEATHSIG).
    // SAFETY: getpid and gettid take no arguments.
    if unsafe { libc::syscall(libc::SYS_gettid) } as libc::pid_t != unsafe { libc::getpid() } {
        return Err(std::io::Error::other(
            "the spawn helper is only started from the agent's main thread",
        ));
    }
    let (ours, theirs) = UnixStream::pair()?;
    // The helper's end must survive its exec: the only descriptor it inherits on purpose.
    // SAFETY: fcntl on a descriptor we own.
    if unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let exe = std::path::Path::new("/proc/self/exe");
    let child = std::process::Command::new(exe)
        .arg(HELPER_ARG)
        .arg(theirs.as_raw_fd().to_string())
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()?;
    drop(theirs);
    Ok(Helper {
        socket: ours,
        pid: child.id() as libc::pid_t,
        message: Vec::with_capacity(8192),
        reaped: Vec::new(),
    })
}

/// Starts `req` through the helper: `Some(result)` (the pid, or the errno of the failed
/// start), or `None` when no helper runs (the caller then uses `posix_spawn`).
pub fn spawn(req: &Request<'_>) -> Option<std::io::Result<libc::pid_t>> {
    let mut helper = HELPER.lock().unwrap_or_else(|p| p.into_inner());
    for attempt in 0..2 {
        let h = helper.as_mut()?;
        match ask(&h.socket, &mut h.message, &h.reaped, req) {
            Ok(answer) => {
                h.reaped.clear();
                return Some(answer);
            }
            Err(e) => {
                // The helper is gone (or broke the protocol): reap it, start another once.
                // SAFETY: the helper is our child; WNOHANG never blocks.
                unsafe { libc::waitpid(h.pid, std::ptr::null_mut(), libc::WNOHANG) };
                *helper = match (attempt, launch()) {
                    (0, Ok(fresh)) => {
                        tracing::warn!(error = %e, "the spawn helper is gone; started another");
                        Some(fresh)
                    }
                    (_, fresh) => {
                        tracing::warn!(
                            error = %e,
                            restart = ?fresh.err(),
                            "no spawn helper: tasks start with posix_spawn, and their peak RSS \
                             counts the agent's"
                        );
                        None
                    }
                };
            }
        }
    }
    None
}

/// Notes that task `pid` was reaped: its process group is no longer the helper's to kill
/// when the agent goes. The helper hears of it with the next start, or [`flush_reaped`].
/// Nothing to do without a helper.
pub fn reaped(pid: libc::pid_t) {
    let mut helper = HELPER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(h) = helper.as_mut() {
        h.reaped.push(pid);
    }
}

/// Tells the helper of the tasks reaped since it last heard, in one message with no
/// answer (nothing when none was). Called once per event of the agent's loop: a reaped
/// group's number may be taken by another process later, and must not then be killed with
/// the agent's.
pub fn flush_reaped() {
    let mut helper = HELPER.lock().unwrap_or_else(|p| p.into_inner());
    let Some(h) = helper.as_mut() else { return };
    if h.reaped.is_empty() {
        return;
    }
    h.message.clear();
    h.message.extend_from_slice(&[0; 16]);
    for pid in &h.reaped {
        h.message.extend_from_slice(&pid.to_ne_bytes());
    }
    let len = (h.message.len() - 4) as u32;
    h.message[..4].copy_from_slice(&len.to_ne_bytes());
    h.message[12..16].copy_from_slice(&(h.reaped.len() as u32).to_ne_bytes());
    h.reaped.clear();
    // A helper that is gone is noticed (and replaced) by the next start.
    let _ = (&h.socket).write_all(&h.message);
}

/// Appends `s` and its NUL.
fn push(buf: &mut Vec<u8>, s: &CStr) {
    buf.extend_from_slice(s.to_bytes_with_nul());
}

/// One request and its answer. The request is `LEN (u32) ARGC (u32) ENVC (u32) REAPED
/// (u32)`, the `REAPED` pids (i32) of tasks reaped since the last message, then
/// NUL-terminated program, directory, arguments and environment, with the three standard
/// descriptors attached; the answer is `PID (i32) ERRNO (i32)`. (A message with `ARGC` 0,
/// no strings and no descriptors only says which tasks were reaped; it has no answer.)
fn ask(
    socket: &UnixStream,
    message: &mut Vec<u8>,
    reaped: &[libc::pid_t],
    req: &Request<'_>,
) -> std::io::Result<std::io::Result<libc::pid_t>> {
    message.clear();
    message.extend_from_slice(&[0; 4]);
    message.extend_from_slice(&(req.argv.len() as u32).to_ne_bytes());
    message.extend_from_slice(&(req.envp.len() as u32).to_ne_bytes());
    message.extend_from_slice(&(reaped.len() as u32).to_ne_bytes());
    for pid in reaped {
        message.extend_from_slice(&pid.to_ne_bytes());
    }
    push(message, req.program);
    push(message, req.cwd);
    for s in req.argv.iter().chain(req.envp) {
        push(message, s);
    }
    let len = (message.len() - 4) as u32;
    message[..4].copy_from_slice(&len.to_ne_bytes());
    send_with_fds(socket, message, &req.stdio)?;
    let mut answer = [0u8; 8];
    (&*socket).read_exact(&mut answer)?;
    let pid = i32::from_ne_bytes(answer[..4].try_into().expect("4 bytes"));
    let errno = i32::from_ne_bytes(answer[4..].try_into().expect("4 bytes"));
    if errno == 0 {
        return Ok(Ok(pid));
    }
    if pid > 0 {
        // The task's process exists but could not exec (it exited 127): reap it.
        // SAFETY: pid is our child (CLONE_PARENT), already exited or exiting.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    }
    Ok(Err(std::io::Error::from_raw_os_error(errno)))
}

/// Writes all of `bytes`, the descriptors `fds` attached to the first of them.
fn send_with_fds(socket: &UnixStream, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> std::io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(std::io::Error::other(format!(
            "{} descriptors do not fit one message",
            fds.len()
        )));
    }
    let sent = rustix::net::sendmsg(
        socket,
        &[IoSlice::new(bytes)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    (&*socket).write_all(&bytes[sent..])
}

/// Reads `buf.len()` bytes; the first read also takes up to three descriptors (made
/// close-on-exec). Returns them, or `None` at end of stream before any byte.
fn recv_with_fds(socket: &UnixStream, buf: &mut [u8]) -> std::io::Result<Option<Vec<OwnedFd>>> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        match rustix::net::recvmsg(
            socket,
            &mut [IoSliceMut::new(buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(received) => break received.bytes,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    if got == 0 {
        return Ok(None);
    }
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    (&*socket).read_exact(&mut buf[got..])?;
    Ok(Some(fds))
}

/// What the clone child needs, prepared by the helper before it clones (the child only
/// makes system calls).
struct Child {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    stdio: [RawFd; 3],
    /// The agent's pid: the child's parent, which it dies with.
    agent: libc::pid_t,
    /// Set by the child when it cannot exec (it shares the helper's memory).
    errno: libc::c_int,
}

/// The clone child: its own process group, killed when the agent dies, default SIGPIPE,
/// empty signal mask, the task's stdin/stdout/stderr and no other descriptor, its
/// directory, then `execve`.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: arg is the helper's `Child`, alive until this child execs or exits (vfork
    // semantics); only async-signal-safe system calls are made.
    unsafe {
        let c = &mut *(arg as *mut Child);
        let fail = |c: &mut Child| -> ! {
            c.errno = *libc::__errno_location();
            libc::_exit(127)
        };
        if libc::setpgid(0, 0) != 0 {
            fail(c);
        }
        // An agent gone before this took effect has already made us someone else's child.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            fail(c);
        }
        if libc::getppid() != c.agent {
            *libc::__errno_location() = libc::ESRCH;
            fail(c);
        }
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        for (fd, target) in c.stdio.into_iter().zip(0..) {
            if libc::dup2(fd, target) < 0 {
                fail(c);
            }
        }
        // Nothing else the helper holds or inherited reaches the task (kernels before 5.9
        // lack close_range: the helper's own descriptors are close-on-exec anyway).
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        if libc::chdir(c.cwd) != 0 {
            fail(c);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::execve(c.program, c.argv, c.envp);
        fail(c)
    }
}

/// Starts one task as the agent's child; the pid and 0, or the pid (if a process was
/// made) and the errno of the failure. `fields` point into the request: program,
/// directory, `argc` arguments, then the environment, each NUL-terminated.
fn start_task(
    fields: &[*const libc::c_char],
    argc: usize,
    stdio: [RawFd; 3],
    stack: &mut [u8],
    argv: &mut Vec<*const libc::c_char>,
    envp: &mut Vec<*const libc::c_char>,
) -> (i32, i32) {
    argv.clear();
    argv.extend_from_slice(&fields[2..2 + argc]);
    argv.push(std::ptr::null());
    envp.clear();
    envp.extend_from_slice(&fields[2 + argc..]);
    envp.push(std::ptr::null());
    let mut child = Child {
        program: fields[0],
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: fields[1],
        stdio,
        // SAFETY: getppid takes no arguments.
        agent: unsafe { libc::getppid() },
        errno: 0,
    };
    // No signal handler may run in the child while it shares our memory: block them all
    // around the clone (the child clears its mask before exec).
    // SAFETY: sigset operations on locals; clone with a stack we own (its top, aligned
    // down to 16 bytes) and CLONE_VFORK, so `child` and the stack outlive the child's use.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let top = stack.as_mut_ptr().add(stack.len());
        let top = (top as usize & !15) as *mut libc::c_void;
        let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT | libc::SIGCHLD;
        let pid = libc::clone(
            child_main,
            top,
            flags,
            &mut child as *mut Child as *mut libc::c_void,
        );
        let clone_errno = *libc::__errno_location();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return (0, clone_errno);
        }
        (pid, std::ptr::read_volatile(&child.errno))
    }
}

/// Makes the helper's address space as small as it can be before it starts tasks: the
/// file pages that starting the program touched (the agent's binary is large, its dynamic
/// relocations are read at start, and the kernel maps file pages around each fault) are
/// dropped from the page tables wherever a mapping holds no page of its own (no copy the
/// process wrote: that would be lost), and are faulted back one page at a
/// time when used (`MADV_RANDOM`); then the peak RSS is reset to what is left, so a task's
/// `ru_maxrss` floor is the helper's working set, not the agent's start-up.
fn shed_start_up_pages() {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return;
    };
    // (start, end, file-backed, bytes of its own) per mapping.
    let mut mappings: Vec<(usize, usize, bool, u64)> = Vec::new();
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if let Some((start, end)) = first.split_once('-') {
            if let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) {
                let path = words.nth(4).unwrap_or("");
                mappings.push((start, end, path.starts_with('/'), 0));
                continue;
            }
        }
        // Pages a private file mapping's process wrote are its own copies, counted here
        // (Private_Dirty would also count the file's own pages not yet written back).
        if first == "Anonymous:" {
            let kib: u64 = words.next().and_then(|k| k.parse().ok()).unwrap_or(1);
            if let Some(last) = mappings.last_mut() {
                last.3 += kib;
            }
        }
    }
    for (start, end, file, own) in mappings {
        if !file || own > 0 {
            continue;
        }
        let (addr, len) = (start as *mut libc::c_void, end - start);
        // SAFETY: a file mapping of ours holding only clean file pages: discarding them
        // only makes them fault back in from the file.
        unsafe {
            libc::madvise(addr, len, libc::MADV_RANDOM);
            libc::madvise(addr, len, libc::MADV_DONTNEED);
        }
    }
    // "5": reset the peak RSS to the current RSS (proc(5), clear_refs).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The helper's life (`hetpilot-agent __spawn-helper FD`): start each task the agent
/// asks for, until it closes the socket. Never returns.
pub fn serve(fd: RawFd) -> ! {
    // No parent-death signal: the helper outlives a killed agent just long enough to kill
    // its tasks' groups (it sees the socket close).
    // SAFETY: prctl with a constant option and a NUL-terminated name.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"hetpilot-spawn".as_ptr()) };
    // SAFETY: the agent passed us this descriptor for our sole use; tasks must not inherit
    // it (a task could answer the agent in our place), hence close-on-exec.
    let socket = unsafe {
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        UnixStream::from_raw_fd(fd)
    };
    let mut stack = vec![0u8; 256 * 1024];
    let mut len = [0u8; 4];
    // Reused from request to request.
    let (mut body, mut fields, mut argv, mut envp) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // The process groups of the tasks started and not yet reaped.
    let mut groups: HashSet<libc::pid_t> = HashSet::new();
    // Last, while /proc/self is still ours to write (before PR_SET_DUMPABLE).
    shed_start_up_pages();
    // SAFETY: prctl with constant arguments.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0) };
    loop {
        let fds = match recv_with_fds(&socket, &mut len) {
            Ok(Some(fds)) => fds,
            Ok(None) | Err(_) => kill_and_exit(&groups),
        };
        body.resize(u32::from_ne_bytes(len) as usize, 0);
        if (&socket).read_exact(&mut body).is_err() || body.len() < 12 {
            kill_and_exit(&groups);
        }
        let word = |at: usize| u32::from_ne_bytes(body[at..at + 4].try_into().expect("4 bytes"));
        let (argc, envc, reaped) = (word(0) as usize, word(4) as usize, word(8) as usize);
        // A malformed request (a bug, not the agent's end): the agent starts another
        // helper, and its tasks keep running.
        let Some(strings_at) = reaped
            .checked_mul(4)
            .and_then(|n| n.checked_add(12))
            .filter(|&at| at <= body.len())
        else {
            std::process::exit(1)
        };
        for pid in body[12..strings_at].chunks_exact(4) {
            groups.remove(&i32::from_ne_bytes(pid.try_into().expect("4 bytes")));
        }
        if argc == 0 && strings_at == body.len() && fds.is_empty() {
            continue;
        }
        if fds.len() != 3 {
            std::process::exit(1);
        }
        // Each field starts after the previous one's NUL; the request ends with a NUL.
        fields.clear();
        let strings = &body[strings_at..];
        let mut at = 0;
        while at < strings.len() {
            fields.push(strings[at..].as_ptr() as *const libc::c_char);
            match strings[at..].iter().position(|b| *b == 0) {
                Some(nul) => at += nul + 1,
                None => std::process::exit(1),
            }
        }
        if fields.len() != 2 + argc + envc || argc == 0 {
            std::process::exit(1);
        }
        let stdio = [fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd()];
        let (pid, errno) = start_task(&fields, argc, stdio, &mut stack, &mut argv, &mut envp);
        drop(fds);
        if errno == 0 {
            groups.insert(pid);
        }
        let mut answer = pid.to_ne_bytes().to_vec();
        answer.extend_from_slice(&errno.to_ne_bytes());
        if (&socket).write_all(&answer).is_err() {
            kill_and_exit(&groups);
        }
    }
}

/// The agent is gone (its end of the socket closed, reset, or a message cut short): kills
/// the process groups of its tasks, then ends the helper.
fn kill_and_exit(groups: &HashSet<libc::pid_t>) -> ! {
    for &group in groups {
        // SAFETY: signalling a process group this helper started and the agent has not
        // reaped; an error (the group is gone) is harmless.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    std::process::exit(0)
}
