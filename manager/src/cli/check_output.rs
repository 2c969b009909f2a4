//! Where the lines of `hetpilot platforms check` go: to stdout, or, while `serve` runs the
//! same checks in the background ([`capture`]), into a list that becomes the platform's
//! status. The check code prints through this module's `println!`, so what it checks and
//! what `serve` shows cannot drift apart.

use std::cell::RefCell;

thread_local! {
    /// The lines captured on this thread, while a [`capture`] runs.
    static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Prints `line` to stdout, or keeps it when this thread is capturing.
pub fn line(line: String) {
    let kept = CAPTURED.with(|c| match c.borrow_mut().as_mut() {
        Some(lines) => {
            lines.push(line.clone());
            true
        }
        None => false,
    });
    if !kept {
        std::println!("{line}");
    }
}

/// Runs `f` with every line it prints through this module kept, not printed.
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let result = f();
    let lines = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (result, lines)
}

/// `println!` through [`line`]: imported as `println` by the check code.
macro_rules! check_println {
    () => {
        $crate::cli::check_output::line(String::new())
    };
    ($($arg:tt)*) => {
        $crate::cli::check_output::line(format!($($arg)*))
    };
}
pub(crate) use check_println as println;

#[cfg(test)]
mod tests {
    use super::{capture, println, CAPTURED};

    #[test]
    fn captured_lines_are_kept_in_order_and_capture_ends_with_its_closure() {
        let (n, lines) = capture(|| {
            println!("  ok   first");
            println!("  FAIL second {}", 2);
            7
        });
        assert_eq!(n, 7);
        assert_eq!(lines, ["  ok   first", "  FAIL second 2"]);
        assert!(CAPTURED.with(|c| c.borrow().is_none()), "capture ended");
    }
}
