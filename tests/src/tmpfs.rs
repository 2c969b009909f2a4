//! A small tmpfs for tests of full disks: mounted on a test's directory (which needs root:
//! elsewhere the test is skipped with a message saying so), filled to the last byte with a
//! ballast file, and given its space back by removing the ballast.

use std::ffi::CString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A tmpfs mounted at `path`, unmounted on drop.
pub struct Tmpfs {
    pub path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `bytes` at `dir` (created); None, having said why on stderr, where
    /// this process may not mount (not root, or no CAP_SYS_ADMIN in a container).
    pub fn mount(dir: &Path, bytes: u64) -> Option<Tmpfs> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!(
                "SKIPPED: mounting a tmpfs for a full disk needs root; run this test as root"
            );
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let target = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let options = CString::new(format!("size={bytes},mode=0700")).unwrap();
        // SAFETY: every pointer is a NUL-terminated string that outlives the call.
        let rc = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                options.as_ptr().cast(),
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            eprintln!("SKIPPED: cannot mount a tmpfs at {}: {e}", dir.display());
            return None;
        }
        Some(Tmpfs {
            path: dir.to_path_buf(),
        })
    }

    /// Fills the tmpfs with the file `name` until the kernel answers ENOSPC; returns its path.
    pub fn fill(&self, name: &str) -> PathBuf {
        let path = self.path.join(name);
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 << 10];
        loop {
            match file.write(&chunk) {
                Ok(0) => panic!("{} took no more bytes without ENOSPC", path.display()),
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return path,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let target = CString::new(self.path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; a lazy unmount does not wait for open files.
        unsafe {
            libc::umount2(target.as_ptr(), libc::MNT_DETACH);
        }
    }
}
