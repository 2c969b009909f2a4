//! A full disk under the files the agent writes for a run, its output or its fetched
//! inputs (ENOSPC, or EDQUOT: the user's quota): recognised, and said in words that name
//! the directory and what to do. The run fails with that reason; the agent and its slot
//! go on, so its next task runs once there is room.

use std::io;
use std::path::Path;

/// Whether `e` says the disk (or the quota) has no room.
pub fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

/// Why a run failed when writing `file` found no room (`what` says what was lost): the
/// agent's work directory when `file` lies in it, the file's own directory otherwise.
pub fn reason(work_dir: &Path, file: &Path, what: &str) -> String {
    if file.starts_with(work_dir) {
        no_room("work directory", work_dir, what)
    } else {
        no_room("output directory", parent(file), what)
    }
}

/// Why writing `file` (a fetched input) failed: in words naming its directory when it
/// found no room.
pub fn cannot_write(file: &Path, e: &io::Error) -> String {
    let what = format!("cannot write {}: {e}", file.display());
    if is_full(e) {
        no_room("directory", parent(file), &what)
    } else {
        what
    }
}

fn parent(file: &Path) -> &Path {
    file.parent().unwrap_or(file)
}

fn no_room(kind: &str, dir: &Path, what: &str) -> String {
    format!(
        "the {kind} {} is full (its disk or its quota): {what}; free space there (this \
         agent runs its next tasks once there is room)",
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_names_the_work_directory_or_else_the_files_own() {
        let work = Path::new("/scratch/agent");
        let inside = reason(work, &work.join("out/app-1/task-0.1.out"), "stdout lost");
        assert!(
            inside.starts_with("the work directory /scratch/agent is full"),
            "{inside}"
        );
        assert!(inside.contains("stdout lost"), "{inside}");
        let outside = reason(work, Path::new("/home/u/results/task-0.1.out"), "x");
        assert!(
            outside.starts_with("the output directory /home/u/results is full"),
            "{outside}"
        );
    }

    #[test]
    fn a_fetch_that_finds_no_room_names_the_directory_and_others_keep_their_words() {
        let file = Path::new("/scratch/agent/cache/tmp/f1");
        let full = cannot_write(file, &io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(
            full.starts_with("the directory /scratch/agent/cache/tmp is full"),
            "{full}"
        );
        assert!(
            full.contains("cannot write /scratch/agent/cache/tmp/f1"),
            "{full}"
        );
        let other = cannot_write(file, &io::Error::from_raw_os_error(libc::EIO));
        assert!(
            other.starts_with("cannot write /scratch/agent/cache/tmp/f1: "),
            "{other}"
        );
    }

    #[test]
    fn enospc_and_edquot_are_full_and_other_errors_are_not() {
        for (errno, full) in [
            (libc::ENOSPC, true),
            (libc::EDQUOT, true),
            (libc::EIO, false),
        ] {
            assert_eq!(is_full(&io::Error::from_raw_os_error(errno)), full);
        }
    }
}
