//! Where the agent keeps tasks' stdout and stderr: `BASE/app-A/task-I.N.out` (and `.err`),
//! BASE being the application's `output_dir` or the agent's own output directory. Tasks,
//! and other local accounts, may be able to write in such places, so nothing found there
//! is trusted. BASE is resolved once per application (links in the path its user gave are
//! followed then) and must not lie in the agent's run directories (which tasks write) or
//! its node cache; the directories below it are made through the descriptor of the one
//! above, following no link. Each output file is then created in a descriptor of
//! `app-A` opened by that resolved path with no link followed anywhere on it (a link
//! swapped in since is refused), and created anew: whatever was planted at its name (a
//! symlink, a hard link to another file) is removed, never written through. No
//! descriptor is kept between files: an agent serves more applications than it may hold
//! open files. What the agent creates there is its account's only: directories 0700,
//! files 0600 (0750 and 0640 with `--group-readable-outputs`).

use hetpilot_protocol::AppId;
use hetpilot_transport::beneath::Dir;
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Where output directories may be, and the modes of what the agent creates in them.
pub struct Rules {
    /// Canonical directories no output directory may lie in, each with what it is.
    refused: Vec<(PathBuf, &'static str)>,
    dir_mode: u32,
    file_mode: u32,
}

/// An application's output directory `BASE/app-A`, checked and made.
pub struct AppDir {
    /// As its user named it (outputs are reported by this path).
    path: PathBuf,
    /// Where it really is: a path without links, opened anew for each file.
    real: PathBuf,
    file_mode: u32,
}

impl Rules {
    /// Rules refusing output directories in `runs` (the run directories) and in the node
    /// cache's files at `cache`; both must exist. `group_readable` lets the agent's group
    /// read what it creates.
    pub fn new(runs: &Path, cache: &Path, group_readable: bool) -> io::Result<Rules> {
        let mut refused = vec![(runs.canonicalize()?, "the agent's run directories")];
        for sub in ["objects", "tmp"] {
            refused.push((cache.join(sub).canonicalize()?, "the agent's node cache"));
        }
        let (dir_mode, file_mode) = if group_readable {
            (0o750, 0o640)
        } else {
            (0o700, 0o600)
        };
        Ok(Rules {
            refused,
            dir_mode,
            file_mode,
        })
    }

    /// Opens application `app`'s output directory under `base`, creating what is
    /// missing. Errors say what is wrong with `base` and what to do.
    pub fn open_app_dir(&self, base: &Path, app: AppId) -> Result<AppDir, String> {
        let problem = |what: String| {
            format!(
                "output_dir {}: {what}; the task was not run (choose another `output_dir`, or \
                 none: the agent then keeps the output in its own directory)",
                base.display()
            )
        };
        let (existing, missing) = split_existing(base).map_err(|e| problem(explain(&e)))?;
        let real = existing.canonicalize().map_err(|e| problem(explain(&e)))?;
        if let Some((dir, what)) = self.refused.iter().find(|(d, _)| real.starts_with(d)) {
            return Err(problem(format!(
                "it lies in {what} ({}), where tasks can change what the agent writes",
                dir.display()
            )));
        }
        let mut dir = Dir::open_resolved(&real).map_err(|e| problem(explain(&e)))?;
        let mut real = real;
        let app_name = format!("app-{app}");
        let below = missing.iter().map(PathBuf::as_path);
        for name in below.chain([Path::new(&app_name)]) {
            dir = dir
                .subdir(name, self.dir_mode)
                .map_err(|e| problem(format!("{}: {}", name.display(), explain(&e))))?;
            real.push(name);
        }
        Ok(AppDir {
            path: base.join(app_name),
            real,
            file_mode: self.file_mode,
        })
    }
}

impl AppDir {
    /// Creates the output file `name` anew (see the module documentation); returns it with
    /// its path.
    pub fn create(&self, name: &str) -> Result<(File, PathBuf), String> {
        let path = self.path.join(name);
        let created = Dir::open_resolved(&self.real)
            .and_then(|dir| dir.create_replacing(name, self.file_mode));
        match created {
            Ok(file) => Ok((file, path)),
            Err(e) => Err(format!(
                "cannot create {}: {}; this output was not kept",
                path.display(),
                explain(&e)
            )),
        }
    }
}

/// The longest part of `base` that exists, and the names below it that do not.
fn split_existing(base: &Path) -> io::Result<(PathBuf, Vec<PathBuf>)> {
    let mut missing = Vec::new();
    for at in base.ancestors() {
        let at = if at.as_os_str().is_empty() {
            Path::new(".")
        } else {
            at
        };
        match std::fs::metadata(at) {
            Ok(_) => {
                missing.reverse();
                return Ok((at.to_path_buf(), missing));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match at.components().next_back() {
                Some(Component::Normal(name)) => missing.push(PathBuf::from(name)),
                Some(Component::CurDir) => {}
                _ => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
            },
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::NotFound))
}

/// An error of opening or creating, said for a person.
fn explain(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ELOOP) => {
            "a link is in the way, and the agent does not write through links".into()
        }
        Some(libc::EEXIST) => "something else took its name while the agent replaced it".into(),
        Some(libc::EISDIR) => "a directory is in the way".into(),
        Some(libc::ENOTDIR) => "a file is in the way of a directory".into(),
        _ if e.kind() == io::ErrorKind::InvalidInput => {
            "not a plain path (`..` and the like are not followed)".into()
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// An agent's work dir with its run and cache directories, and rules for it.
    fn agent_dirs(group_readable: bool) -> (tempfile::TempDir, Rules) {
        let work = tempfile::tempdir().unwrap();
        for d in [
            "runs/app-1/task-0.1",
            "cache/objects",
            "cache/tmp",
            "output",
        ] {
            std::fs::create_dir_all(work.path().join(d)).unwrap();
        }
        let rules = Rules::new(
            &work.path().join("runs"),
            &work.path().join("cache"),
            group_readable,
        )
        .unwrap();
        (work, rules)
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// The finding: a task plants its future stdout as a symlink to a file elsewhere and
    /// its stderr as a hard link to another user's output. Neither target is written; the
    /// task's output goes to new files of its own.
    #[test]
    fn planted_links_at_output_names_are_replaced_not_written_through() {
        let (work, rules) = agent_dirs(false);
        let base = work.path().join("output");
        let victim = work.path().join("authorized_keys");
        std::fs::write(&victim, "ssh-ed25519 KEY").unwrap();
        let alice = work.path().join("alice.out");
        std::fs::write(&alice, "alice's result").unwrap();
        let app = rules.open_app_dir(&base, AppId(7)).unwrap();
        let dir = base.join("app-7");
        std::os::unix::fs::symlink(&victim, dir.join("task-0.1.out")).unwrap();
        std::fs::hard_link(&alice, dir.join("task-0.1.err")).unwrap();
        for name in ["task-0.1.out", "task-0.1.err"] {
            let (mut f, path) = app.create(name).unwrap();
            assert_eq!(path, dir.join(name));
            f.write_all(b"pwned").unwrap();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            assert!(meta.is_file() && meta.nlink() == 1, "{name}: {meta:?}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "pwned");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "ssh-ed25519 KEY");
        assert_eq!(std::fs::read_to_string(&alice).unwrap(), "alice's result");
        // A directory planted at the name stays, and the error says so.
        std::fs::create_dir(dir.join("task-1.1.out")).unwrap();
        let err = app.create("task-1.1.out").unwrap_err();
        assert!(err.contains("a directory is in the way"), "{err}");
        // So is the application's directory swapped for a link once it was made.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::rename(&dir, base.join("moved")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &dir).unwrap();
        let err = app.create("task-2.1.out").unwrap_err();
        assert!(err.contains("a link is in the way"), "{err}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    /// An output directory in the run directories (the task's own, named absolutely or
    /// relative to the work dir) or the cache is refused before anything is created there;
    /// so is one whose path leads there through a link.
    #[test]
    fn output_dirs_in_run_dirs_or_the_cache_are_refused() {
        let (work, rules) = agent_dirs(false);
        let w = work.path();
        std::os::unix::fs::symlink(w.join("runs/app-1"), w.join("to-runs")).unwrap();
        for base in [
            w.join("runs/app-1/task-0.1"),
            w.join("runs/app-1/task-0.1/new/deeper"),
            w.join("runs"),
            w.join("to-runs/task-0.1"),
            w.join("cache/objects"),
            w.join("cache/tmp/x"),
        ] {
            let err = rules.open_app_dir(&base, AppId(2)).err().unwrap();
            assert!(err.contains("it lies in the agent's"), "{err}");
            assert!(err.contains("task was not run"), "{err}");
        }
        assert!(!w.join("runs/app-1/task-0.1/new").exists());
        assert!(!w.join("runs/app-1/task-0.1/app-2").exists());
        // Next to them is fine.
        assert!(rules.open_app_dir(&w.join("cache/mine"), AppId(2)).is_ok());
    }

    /// A link planted where a directory below BASE goes is refused, not followed.
    #[test]
    fn a_link_in_place_of_an_output_directory_is_refused() {
        let (work, rules) = agent_dirs(false);
        let elsewhere = tempfile::tempdir().unwrap();
        let base = work.path().join("output");
        std::os::unix::fs::symlink(elsewhere.path(), base.join("app-3")).unwrap();
        let err = rules.open_app_dir(&base, AppId(3)).err().unwrap();
        assert!(err.contains("a link is in the way"), "{err}");
        // A dangling link where a missing directory would be made.
        std::os::unix::fs::symlink(elsewhere.path().join("gone"), base.join("d")).unwrap();
        let err = rules
            .open_app_dir(&base.join("d/e"), AppId(3))
            .err()
            .unwrap();
        assert!(err.contains("a link is in the way"), "{err}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn what_the_agent_creates_is_private_unless_the_site_shares_it_with_the_group() {
        for (group_readable, dirs, files) in [(false, 0o700, 0o600), (true, 0o750, 0o640)] {
            let (work, rules) = agent_dirs(group_readable);
            let base = work.path().join("out/nested");
            let app = rules.open_app_dir(&base, AppId(4)).unwrap();
            let (_, path) = app.create("task-0.1.out").unwrap();
            // The umask may take bits away, never add any.
            for (p, want) in [
                (work.path().join("out"), dirs),
                (base.clone(), dirs),
                (base.join("app-4"), dirs),
                (path, files),
            ] {
                let m = mode(&p);
                assert_eq!((m & 0o700, m & !want), (want & 0o700, 0), "{}", p.display());
            }
        }
    }

    #[test]
    fn relative_and_missing_bases_split_at_what_exists() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("a")).unwrap();
        let (at, missing) = split_existing(&t.path().join("a/b/c")).unwrap();
        assert_eq!(at, t.path().join("a"));
        assert_eq!(missing, [PathBuf::from("b"), PathBuf::from("c")]);
        let (at, _) = split_existing(Path::new("no-such-dir-here/x")).unwrap();
        assert_eq!(at, Path::new("."));
    }
}
