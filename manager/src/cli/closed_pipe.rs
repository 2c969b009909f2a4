//! A reader that goes away (`hetpilot logs 4.0 --json | head`) ends the command quietly, as
//! it ends `cat`: no panic, no backtrace, no error line, exit status 141 (what a shell
//! reports for a process stopped by SIGPIPE). The signal itself stays ignored, as Rust
//! sets it, so the manager (`serve`) and the batch commands it feeds on stdin get `EPIPE`
//! from a write and handle it rather than dying. `println!` turns `EPIPE` into a panic:
//! the panic hook installed here ends the process instead; an error returned up to
//! `main` whose cause is a closed pipe ends it the same way ([`is_closed_pipe`]).

use std::io;

/// The exit status after a closed pipe: 128 + SIGPIPE.
pub const EXIT_STATUS: i32 = 128 + libc::SIGPIPE;

/// Ends the process quietly when printing to stdout or stderr panics on a closed pipe;
/// every other panic goes to the previous hook.
pub fn exit_quietly_on_closed_pipe() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload_as_str().is_some_and(is_print_to_closed_pipe) {
            std::process::exit(EXIT_STATUS);
        }
        previous(info)
    }));
}

/// Whether a panic message is `print!`'s on a closed pipe (std's `failed printing to
/// stdout: Broken pipe (os error 32)`).
fn is_print_to_closed_pipe(message: &str) -> bool {
    let epipe = io::Error::from_raw_os_error(libc::EPIPE).to_string();
    (message.starts_with("failed printing to stdout")
        || message.starts_with("failed printing to stderr"))
        && message.ends_with(&epipe)
}

/// Whether an error returned to `main` comes from writing to a closed pipe.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_print_to_a_closed_pipe_is_recognised() {
        let epipe = io::Error::from_raw_os_error(libc::EPIPE);
        assert!(is_print_to_closed_pipe(&format!(
            "failed printing to stdout: {epipe}"
        )));
        assert!(is_print_to_closed_pipe(&format!(
            "failed printing to stderr: {epipe}"
        )));
        let full = io::Error::from_raw_os_error(libc::ENOSPC);
        assert!(!is_print_to_closed_pipe(&format!(
            "failed printing to stdout: {full}"
        )));
        assert!(!is_print_to_closed_pipe("index out of bounds"));
        let wrapped = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("writing the output");
        assert!(is_closed_pipe(&wrapped));
        assert!(!is_closed_pipe(&anyhow::anyhow!("no task 4.0")));
    }
}
