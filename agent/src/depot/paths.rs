//! Where a request's file is on disk: `ROOT/OWNER/PATH`, never outside the owner's
//! directory. Names are checked like declared files (no `..`, no NUL, not absolute, not
//! empty, not ending in `/`); then the real path (symlinks resolved) must lie inside the
//! owner's real directory. That directory may itself be a symlink (an admin mapping
//! `ROOT/alice` to `/gpfs/alice`), but nothing below it may lead out, not even into
//! another owner's directory: a user able to plant a symlink on the storage host must not
//! reach someone else's files through the depot.

use hetpilot_protocol::files::{parse_output, Source};
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PathError {
    #[error("{0}")]
    Invalid(String),
    #[error("no file `{0}`")]
    NotFound(String),
    #[error("`{0}` leads outside its owner's directory")]
    Outside(String),
    #[error("`{name}`: {problem}")]
    Io { name: String, problem: String },
}

fn io(name: &str, e: std::io::Error) -> PathError {
    match e.kind() {
        std::io::ErrorKind::NotFound => PathError::NotFound(name.to_string()),
        _ => PathError::Io {
            name: name.to_string(),
            problem: e.to_string(),
        },
    }
}

/// Checks an owner name: one plain path component.
pub fn check_owner(owner: &str) -> Result<(), PathError> {
    if owner.is_empty() || owner == "." || owner == ".." || owner.contains(['/', '\0']) {
        return Err(PathError::Invalid(format!("`{owner}` is not a user name")));
    }
    Ok(())
}

/// Checks a file's path relative to its owner's directory.
fn check_name(name: &str) -> Result<(), PathError> {
    match parse_output(name) {
        Ok((Source::Service(_), _)) => Ok(()),
        Ok(_) => Err(PathError::Invalid(format!("`{name}` is not a file name"))),
        Err(e) => Err(PathError::Invalid(e.to_string())),
    }
}

/// The real path of an existing file `name` of `owner`.
pub fn existing(root: &Path, owner: &str, name: &str) -> Result<PathBuf, PathError> {
    check_owner(owner)?;
    check_name(name)?;
    let base = root.join(owner).canonicalize().map_err(|e| io(name, e))?;
    let real = base.join(name).canonicalize().map_err(|e| io(name, e))?;
    match real.starts_with(&base) {
        true => Ok(real),
        false => Err(PathError::Outside(name.to_string())),
    }
}

/// The real directory a new file `name` of `owner` goes in (created as needed, one level
/// at a time, each checked before the next is made), and the file's own name.
pub fn new_file(root: &Path, owner: &str, name: &str) -> Result<(PathBuf, String), PathError> {
    check_owner(owner)?;
    check_name(name)?;
    let owner_dir = root.join(owner);
    if let Err(e) = std::fs::create_dir(&owner_dir) {
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(io(name, e));
        }
    }
    let base = owner_dir.canonicalize().map_err(|e| io(name, e))?;
    let (dirs, file) = name.rsplit_once('/').unwrap_or(("", name));
    let mut dir = base.clone();
    for part in dirs.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let next = dir.join(part);
        if let Err(e) = std::fs::create_dir(&next) {
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(io(name, e));
            }
        }
        dir = next.canonicalize().map_err(|e| io(name, e))?;
        if !dir.starts_with(&base) {
            return Err(PathError::Outside(name.to_string()));
        }
    }
    Ok((dir, file.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        for d in ["root/alice/db", "root/bob", "elsewhere", "gpfs-carol"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join("root/alice/db/nr.fa"), "x").unwrap();
        std::fs::write(dir.path().join("root/bob/secret"), "s").unwrap();
        std::fs::write(dir.path().join("elsewhere/passwd"), "p").unwrap();
        std::fs::write(dir.path().join("gpfs-carol/c"), "c").unwrap();
        symlink(
            dir.path().join("root/bob"),
            dir.path().join("root/alice/bob"),
        )
        .unwrap();
        symlink(
            dir.path().join("elsewhere"),
            dir.path().join("root/alice/out"),
        )
        .unwrap();
        symlink(dir.path().join("gpfs-carol"), dir.path().join("root/carol")).unwrap();
        (dir, root)
    }

    #[test]
    fn files_are_found_only_inside_their_owners_directory() {
        let (_d, root) = root();
        assert!(existing(&root, "alice", "db/nr.fa")
            .unwrap()
            .ends_with("alice/db/nr.fa"));
        assert!(
            existing(&root, "carol", "c").is_ok(),
            "a symlinked owner directory"
        );
        assert_eq!(
            existing(&root, "alice", "db/none"),
            Err(PathError::NotFound("db/none".into()))
        );
        for (owner, name) in [("alice", "bob/secret"), ("alice", "out/passwd")] {
            assert_eq!(
                existing(&root, owner, name),
                Err(PathError::Outside(name.into())),
                "{name}"
            );
        }
        for (owner, name) in [
            ("alice", "../bob/secret"),
            ("alice", "/etc/passwd"),
            ("alice", "a\0b"),
            ("alice", ""),
            ("alice", "db/"),
            ("..", "root/bob/secret"),
            ("", "x"),
        ] {
            assert!(
                matches!(existing(&root, owner, name), Err(PathError::Invalid(_))),
                "{owner}/{name:?}"
            );
        }
    }

    #[test]
    fn new_files_get_directories_inside_their_owners_directory_only() {
        let (d, root) = root();
        let (dir, file) = new_file(&root, "alice", "res/2026/r.txt").unwrap();
        assert!(dir.ends_with("alice/res/2026") && dir.is_dir(), "{dir:?}");
        assert_eq!(file, "r.txt");
        let (dir, _) = new_file(&root, "dave", "r.txt").unwrap();
        assert!(
            dir.ends_with("root/dave"),
            "an owner's directory is made on first use"
        );
        assert_eq!(
            new_file(&root, "alice", "out/sub/x"),
            Err(PathError::Outside("out/sub/x".into()))
        );
        assert!(
            !d.path().join("elsewhere/sub").exists(),
            "nothing is made outside"
        );
        assert!(matches!(
            new_file(&root, "alice", "../bob/x"),
            Err(PathError::Invalid(_))
        ));
    }
}
