//! Opening files strictly beneath a root directory, as the file services need for each
//! user's files: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`
//! (Linux ≥ 5.6), so no `..`, absolute path, symlink or `/proc` magic link can lead out of
//! the root, even one planted after the name was checked. Uploads are written to a fresh
//! temporary file (mode 0600) in the target's directory, synced, and renamed into place
//! relative to that directory's descriptor. The agent creates its tasks' output files
//! the same way, each anew in place of whatever a task may have planted at its name.
//!
//! Errors keep their `errno`; [`status_of`] maps them to what a client should hear:
//! missing, outside the root or through a link → 404; a directory where a file is asked
//! for → 404 on reads and 409 on writes; a name too long → 414.

use axum::http::StatusCode;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// `openat2` beneath `dir`; see [`openat2_resolving`].
fn openat2(dir: &OwnedFd, path: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    openat2_resolving(dir, path, flags, mode, RESOLVE)
}

/// `openat2` retries a few times on EAGAIN (a concurrent rename raced the lookup).
fn openat2_resolving(
    dir: impl AsFd,
    path: &Path,
    flags: OFlags,
    mode: Mode,
    resolve: ResolveFlags,
) -> io::Result<OwnedFd> {
    let dir = dir.as_fd();
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dir, path, flags | OFlags::CLOEXEC, mode, resolve) {
            Err(rustix::io::Errno::AGAIN) if tries < 4 => tries += 1,
            r => return r.map_err(io::Error::from),
        }
    }
}

fn open_root(root: &Path) -> io::Result<OwnedFd> {
    rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

/// Refuses names that are not plain relative paths (the callers already check; this keeps
/// the module safe on its own).
fn relative(rel: &Path) -> io::Result<()> {
    let plain = rel.components().all(|c| matches!(c, Component::Normal(_)))
        && rel.components().next().is_some();
    if plain {
        Ok(())
    } else {
        Err(io::Error::from(io::ErrorKind::InvalidInput))
    }
}

/// Opens the regular file `rel` beneath `root` for reading.
pub fn open_read(root: &Path, rel: &Path) -> io::Result<File> {
    relative(rel)?;
    let dir = open_root(root)?;
    let fd = openat2(&dir, rel, OFlags::RDONLY | OFlags::NOFOLLOW, Mode::empty())?;
    let file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(io::Error::from_raw_os_error(libc_eisdir()));
    }
    Ok(file)
}

/// Refuses anything but one plain name: a `/` in it would be resolved by calls (like
/// `unlinkat`) that follow links in the directories on the way.
fn plain_name(name: &Path) -> io::Result<()> {
    relative(name)?;
    if name.components().count() == 1 {
        Ok(())
    } else {
        Err(io::Error::from(io::ErrorKind::InvalidInput))
    }
}

fn libc_eisdir() -> i32 {
    rustix::io::Errno::ISDIR.raw_os_error()
}

/// A directory beneath a root, created as needed (mode 0700), held open for writing
/// files into it.
pub struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// Opens (creating what is missing) the directory holding `rel` beneath `root`.
    pub fn parent_of(root: &Path, rel: &Path) -> io::Result<Dir> {
        relative(rel)?;
        let mut dir = Dir {
            fd: open_root(root)?,
        };
        for c in rel.parent().into_iter().flat_map(Path::components) {
            dir = dir.subdir(Path::new(c.as_os_str()), 0o700)?;
        }
        Ok(dir)
    }

    /// Opens the directory at `path`, which must hold no symlink (a canonical path, as
    /// `std::fs::canonicalize` gives): a link anywhere in it, say one swapped in after the
    /// path was resolved, is refused (`ELOOP`).
    pub fn open_resolved(path: &Path) -> io::Result<Dir> {
        let flags = OFlags::PATH | OFlags::DIRECTORY;
        let resolve = ResolveFlags::NO_SYMLINKS.union(ResolveFlags::NO_MAGICLINKS);
        let fd = openat2_resolving(rustix::fs::CWD, path, flags, Mode::empty(), resolve)?;
        Ok(Dir { fd })
    }

    /// The directory `name` (one plain name) in this one, made with `mode` (less the
    /// umask) if it is missing; a link in its place is refused (`ELOOP`).
    pub fn subdir(&self, name: &Path, mode: u32) -> io::Result<Dir> {
        plain_name(name)?;
        let flags = OFlags::PATH | OFlags::DIRECTORY;
        let fd = match openat2(&self.fd, name, flags, Mode::empty()) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                openat2(&self.fd, name, flags, Mode::empty())?
            }
            r => r?,
        };
        Ok(Dir { fd })
    }

    /// Creates the file `name` (one plain name) anew with `mode` (less the umask), after
    /// removing whatever file or link had that name: what was there (a symlink, a hard
    /// link to another file) is neither opened nor written. If something takes the name
    /// again in between, the create fails (`EEXIST`) rather than open it; a directory
    /// there stays and fails it (`EISDIR`).
    pub fn create_replacing(&self, name: &str, mode: u32) -> io::Result<File> {
        plain_name(Path::new(name))?;
        match rustix::fs::unlinkat(&self.fd, name, rustix::fs::AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = openat2(&self.fd, Path::new(name), flags, Mode::from_raw_mode(mode))?;
        Ok(File::from(fd))
    }

    /// Creates a new temporary file `name` in this directory, readable by its owner only.
    pub fn create_temp(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = openat2(&self.fd, Path::new(name), flags, Mode::from_raw_mode(0o600))?;
        Ok(File::from(fd))
    }

    /// Renames `from` to `to`, both in this directory; a directory at `to` is refused.
    pub fn rename(&self, from: &str, to: &Path) -> io::Result<()> {
        rustix::fs::renameat(&self.fd, from, &self.fd, to).map_err(io::Error::from)
    }

    pub fn remove(&self, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(&self.fd, name, rustix::fs::AtFlags::empty()).map_err(io::Error::from)
    }

    /// Syncs the directory, so a rename into it survives a crash.
    pub fn sync(&self) -> io::Result<()> {
        let fd = openat2(
            &self.fd,
            Path::new("."),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )?;
        rustix::fs::fsync(fd).map_err(io::Error::from)
    }
}

/// The HTTP status for an error of this module, reading (`write` false) or writing.
pub fn status_of(e: &io::Error, write: bool) -> StatusCode {
    use rustix::io::Errno;
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::NOENT | Errno::NOTDIR | Errno::XDEV | Errno::LOOP) => StatusCode::NOT_FOUND,
        Some(Errno::ISDIR) if write => StatusCode::CONFLICT,
        Some(Errno::ISDIR) => StatusCode::NOT_FOUND,
        Some(Errno::NAMETOOLONG) => StatusCode::URI_TOO_LONG,
        Some(Errno::ACCESS | Errno::PERM) => StatusCode::FORBIDDEN,
        Some(Errno::EXIST) => StatusCode::CONFLICT,
        Some(Errno::NOSPC | Errno::DQUOT) => StatusCode::INSUFFICIENT_STORAGE,
        _ if e.kind() == io::ErrorKind::InvalidInput => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn root() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("file.txt"), "inside").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        d
    }

    fn read_status(root: &Path, rel: &str) -> StatusCode {
        match open_read(root, Path::new(rel)) {
            Ok(_) => StatusCode::OK,
            Err(e) => status_of(&e, false),
        }
    }

    #[test]
    fn only_regular_files_beneath_the_root_open() {
        let d = root();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "no").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), d.path().join("out")).unwrap();
        std::os::unix::fs::symlink("file.txt", d.path().join("in")).unwrap();
        let mut s = String::new();
        open_read(d.path(), Path::new("file.txt"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "inside");
        assert_eq!(read_status(d.path(), "out"), StatusCode::NOT_FOUND);
        assert_eq!(
            read_status(d.path(), "in"),
            StatusCode::NOT_FOUND,
            "no symlinks at all"
        );
        assert_eq!(read_status(d.path(), "sub"), StatusCode::NOT_FOUND);
        assert_eq!(read_status(d.path(), "file.txt/x"), StatusCode::NOT_FOUND);
        assert_eq!(
            read_status(d.path(), &"n".repeat(300)),
            StatusCode::URI_TOO_LONG
        );
        assert_eq!(read_status(d.path(), "../x"), StatusCode::BAD_REQUEST);
        assert_eq!(read_status(d.path(), "missing"), StatusCode::NOT_FOUND);
    }

    #[test]
    fn writes_create_private_directories_and_files_and_refuse_links_and_directories() {
        use std::os::unix::fs::PermissionsExt;
        let d = root();
        let dir = Dir::parent_of(d.path(), Path::new("a/b/new.txt")).unwrap();
        let mut f = dir.create_temp(".t").unwrap();
        f.write_all(b"data").unwrap();
        dir.rename(".t", Path::new("new.txt")).unwrap();
        dir.sync().unwrap();
        let path = d.path().join("a/b/new.txt");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&d.path().join("a")), 0o700);
        // A directory where a file would go, a file where a directory would, a symlink.
        let dir = Dir::parent_of(d.path(), Path::new("sub")).unwrap();
        dir.create_temp(".u").unwrap();
        let e = dir.rename(".u", Path::new("sub")).unwrap_err();
        assert_eq!(status_of(&e, true), StatusCode::CONFLICT, "{e}");
        let e = Dir::parent_of(d.path(), Path::new("file.txt/x"))
            .err()
            .unwrap();
        assert_eq!(status_of(&e, true), StatusCode::NOT_FOUND, "{e}");
        std::os::unix::fs::symlink("/tmp", d.path().join("link")).unwrap();
        let e = Dir::parent_of(d.path(), Path::new("link/x")).err().unwrap();
        assert_eq!(status_of(&e, true), StatusCode::NOT_FOUND, "{e}");
    }

    /// What a task can plant where the agent will create its output: a symlink to a file
    /// elsewhere, a hard link to another file of the same account, a directory. The
    /// first two are replaced by a new file, their targets untouched; the directory stays.
    #[test]
    fn a_replacing_create_never_writes_through_what_was_planted() {
        use std::os::unix::fs::MetadataExt;
        let d = root();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("authorized_keys");
        std::fs::write(&victim, "keys").unwrap();
        std::fs::write(d.path().join("alice.out"), "alice").unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join("t.out")).unwrap();
        std::fs::hard_link(d.path().join("alice.out"), d.path().join("t.err")).unwrap();
        let dir = Dir::parent_of(d.path(), Path::new("t.out")).unwrap();
        for name in ["t.out", "t.err"] {
            dir.create_replacing(name, 0o600)
                .unwrap()
                .write_all(b"task")
                .unwrap();
            let path = d.path().join(name);
            let meta = std::fs::symlink_metadata(&path).unwrap();
            assert!(meta.is_file(), "{name} is a file of its own");
            assert_eq!((meta.nlink(), meta.mode() & 0o777), (1, 0o600), "{name}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "task");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keys");
        assert_eq!(
            std::fs::read_to_string(d.path().join("alice.out")).unwrap(),
            "alice"
        );
        let e = dir.create_replacing("sub", 0o600).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc_eisdir()), "{e}");
        assert!(d.path().join("sub").is_dir());
        for bad in ["sub/x", "../x", ""] {
            let e = dir.create_replacing(bad, 0o600).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
    }

    #[test]
    fn subdirs_are_made_with_their_mode_and_resolved_paths_hold_no_link() {
        use std::os::unix::fs::PermissionsExt;
        let d = root();
        let top = Dir::open_resolved(&d.path().canonicalize().unwrap()).unwrap();
        top.subdir(Path::new("new"), 0o750).unwrap();
        let mode = std::fs::metadata(d.path().join("new"))
            .unwrap()
            .permissions()
            .mode();
        // The umask may take bits away, never add any.
        assert_eq!((mode & 0o700, mode & 0o777 & !0o750), (0o700, 0));
        std::os::unix::fs::symlink("sub", d.path().join("link")).unwrap();
        let e = top.subdir(Path::new("link"), 0o700).err().unwrap();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::LOOP.raw_os_error())
        );
        let through = d.path().canonicalize().unwrap().join("link");
        let e = Dir::open_resolved(&through).err().unwrap();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::LOOP.raw_os_error())
        );
    }
}
