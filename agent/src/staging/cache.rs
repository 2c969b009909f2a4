//! The node-local file cache: content-addressed (a file is keyed by its SHA-256 when
//! declared, else by its source), bounded in bytes, evicting the least recently used file
//! that no running task holds. A file is fetched once per node however many tasks want it
//! at the same time (single flight: later callers wait for the first fetch). When every
//! cached byte is held by running tasks, a fetch that needs room waits until a task
//! releases its files instead of evicting them. A caller says whether it may wait: one
//! that holds files is told [`CacheError::Full`] instead, so it can release them rather
//! than wait on another task that waits on it.
//!
//! Files enter the cache read-only (mode 0444) and are linked into task directories. A
//! hard link keeps an evicted file's data alive until the task that linked it is gone.

use std::collections::HashMap;
use std::future::Future;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use thiserror::Error;
use tokio::sync::Notify;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CacheError {
    #[error("{size} bytes of the task's files cannot fit in the node cache of {max} bytes (raise --cache-max)")]
    TooBig { size: u64, max: u64 },
    #[error("{0}")]
    Fetch(String),
    /// No room without evicting held files, and the caller may not wait (it holds files
    /// itself: waiting while holding could deadlock with another task doing the same).
    #[error("the node cache is full of files held by running tasks")]
    Full,
    #[error("node cache {dir}: {problem}")]
    Io { dir: String, problem: String },
}

/// Whether a caller may wait for room when the cache is full of held files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Fail with [`CacheError::Full`] instead.
    No,
    /// Wait; the caller itself holds this many bytes of cached files meanwhile (room it
    /// can never get back while it waits).
    Holding(u64),
}

impl Wait {
    fn held(self) -> u64 {
        match self {
            Wait::No => 0,
            Wait::Holding(bytes) => bytes,
        }
    }
}

/// What a fetch brought in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fetched {
    pub size: u64,
    /// How long the transfer took.
    pub ms: f64,
}

enum Entry {
    /// Being fetched; `reserved` bytes are counted as used meanwhile.
    Fetching { reserved: u64 },
    Ready {
        size: u64,
        pins: u32,
        last_used: u64,
    },
}

#[derive(Default)]
struct State {
    entries: HashMap<String, Entry>,
    used: u64,
    tick: u64,
}

struct Inner {
    dir: PathBuf,
    max: u64,
    state: Mutex<State>,
    /// Woken when a fetch ends or a file is released.
    changed: Notify,
}

/// See the module documentation. Cloning shares the cache.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
}

/// A cached file held for a task: never evicted while a `Pin` on it lives.
pub struct Pin {
    inner: Arc<Inner>,
    key: String,
    pub path: PathBuf,
    pub size: u64,
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut st = lock(&self.inner);
        st.tick += 1;
        let tick = st.tick;
        if let Some(Entry::Ready {
            pins, last_used, ..
        }) = st.entries.get_mut(&self.key)
        {
            *pins -= 1;
            *last_used = tick;
        }
        drop(st);
        self.inner.changed.notify_waiters();
    }
}

fn lock(inner: &Inner) -> MutexGuard<'_, State> {
    inner.state.lock().unwrap_or_else(|p| p.into_inner())
}

fn io(dir: &Path, e: std::io::Error) -> CacheError {
    CacheError::Io {
        dir: dir.display().to_string(),
        problem: e.to_string(),
    }
}

impl State {
    /// Evicts unpinned files, least recently used first, until `need` more bytes fit.
    fn make_room(&mut self, dir: &Path, need: u64, max: u64) -> bool {
        while self.used.saturating_add(need) > max {
            let victim = self
                .entries
                .iter()
                .filter_map(|(k, e)| match e {
                    Entry::Ready {
                        pins: 0, last_used, ..
                    } => Some((*last_used, k.clone())),
                    _ => None,
                })
                .min();
            let Some((_, key)) = victim else {
                return false;
            };
            if let Some(Entry::Ready { size, .. }) = self.entries.remove(&key) {
                self.used -= size;
            }
            let path = object_path(dir, &key);
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove an evicted file");
            }
            tracing::debug!(key, "evicted from the node cache");
        }
        true
    }
}

/// Creates the file a fetch writes (the path [`Cache::get`] gives it): new, mode 0600, in
/// place of anything left at that name, which is removed and never written through.
pub fn new_file(path: &Path) -> std::io::Result<std::fs::File> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn object_path(dir: &Path, key: &str) -> PathBuf {
    dir.join("objects").join(key)
}

/// Removes the fetching entry (and its reservation) if the fetch did not complete, even
/// when the fetching task is dropped.
struct Leader<'a> {
    cache: &'a Cache,
    key: &'a str,
    reserved: u64,
    done: bool,
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut st = lock(&self.cache.inner);
        if matches!(st.entries.get(self.key), Some(Entry::Fetching { .. })) {
            st.entries.remove(self.key);
            st.used -= self.reserved;
        }
        drop(st);
        self.cache.inner.changed.notify_waiters();
    }
}

impl Cache {
    /// A cache of at most `max` bytes in `dir` (emptied: files of an earlier run are not
    /// trusted).
    pub fn open(dir: &Path, max: u64) -> Result<Cache, CacheError> {
        for sub in ["objects", "tmp"] {
            let d = dir.join(sub);
            if d.exists() {
                std::fs::remove_dir_all(&d).map_err(|e| io(dir, e))?;
            }
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&d)
                .map_err(|e| io(dir, e))?;
        }
        Ok(Cache {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                max,
                state: Mutex::new(State::default()),
                changed: Notify::new(),
            }),
        })
    }

    /// The most bytes the cache may hold.
    pub fn max(&self) -> u64 {
        self.inner.max
    }

    /// Bytes held by cached files (and reserved by fetches in flight).
    pub fn used(&self) -> u64 {
        lock(&self.inner).used
    }

    /// The file under `key`, pinned: from the cache, or fetched by `fetch` (which writes
    /// it to the path it is given). `expected` is its size when known, reserved before
    /// the fetch. The `Fetched` is `Some` when this call did the fetch. When there is no
    /// room, waits for some or fails with [`CacheError::Full`], as `wait` says.
    pub async fn get<F, Fut>(
        &self,
        key: &str,
        expected: Option<u64>,
        wait: Wait,
        fetch: F,
    ) -> Result<(Pin, Option<Fetched>), CacheError>
    where
        F: FnOnce(PathBuf) -> Fut,
        Fut: Future<Output = Result<Fetched, String>>,
    {
        let reserved = expected.unwrap_or(0);
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut st = lock(&self.inner);
                match st.entries.get_mut(key) {
                    Some(Entry::Ready { size, pins, .. }) => {
                        *pins += 1;
                        let size = *size;
                        return Ok((self.pin(key, size), None));
                    }
                    Some(Entry::Fetching { .. }) => {}
                    None => {
                        if reserved.saturating_add(wait.held()) > self.inner.max {
                            return Err(CacheError::TooBig {
                                size: reserved.saturating_add(wait.held()),
                                max: self.inner.max,
                            });
                        }
                        if st.make_room(&self.inner.dir, reserved, self.inner.max) {
                            st.used += reserved;
                            st.entries
                                .insert(key.to_string(), Entry::Fetching { reserved });
                            break;
                        }
                        if wait == Wait::No {
                            return Err(CacheError::Full);
                        }
                    }
                }
            }
            changed.await;
        }
        let mut leader = Leader {
            cache: self,
            key,
            reserved,
            done: false,
        };
        let tmp = self.inner.dir.join("tmp").join(key);
        let fetched = match fetch(tmp.clone()).await {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(CacheError::Fetch(e));
            }
        };
        if fetched.size > leader.reserved {
            if let Err(e) = self.grow(key, &mut leader, fetched.size, wait).await {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        }
        let path = object_path(&self.inner.dir, key);
        let stored = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o444))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = stored {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(&self.inner.dir, e));
        }
        let mut st = lock(&self.inner);
        st.used = st.used + fetched.size - leader.reserved;
        st.tick += 1;
        let last_used = st.tick;
        st.entries.insert(
            key.to_string(),
            Entry::Ready {
                size: fetched.size,
                pins: 1,
                last_used,
            },
        );
        leader.done = true;
        drop(st);
        self.inner.changed.notify_waiters();
        Ok((self.pin(key, fetched.size), Some(fetched)))
    }

    /// Extends a fetch's reservation to `size` (its size was unknown or understated),
    /// waiting for running tasks to release files if the cache is full of held ones.
    async fn grow(
        &self,
        key: &str,
        leader: &mut Leader<'_>,
        size: u64,
        wait: Wait,
    ) -> Result<(), CacheError> {
        if size.saturating_add(wait.held()) > self.inner.max {
            return Err(CacheError::TooBig {
                size: size.saturating_add(wait.held()),
                max: self.inner.max,
            });
        }
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut st = lock(&self.inner);
                let more = size - leader.reserved;
                if st.make_room(&self.inner.dir, more, self.inner.max) {
                    st.used += more;
                    leader.reserved = size;
                    if let Some(Entry::Fetching { reserved }) = st.entries.get_mut(key) {
                        *reserved = size;
                    }
                    return Ok(());
                }
                if wait == Wait::No {
                    return Err(CacheError::Full);
                }
            }
            changed.await;
        }
    }

    fn pin(&self, key: &str, size: u64) -> Pin {
        Pin {
            inner: self.inner.clone(),
            key: key.to_string(),
            path: object_path(&self.inner.dir, key),
            size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    /// A fetch writing `size` bytes of `byte`.
    fn write(
        size: u64,
        byte: u8,
    ) -> impl FnOnce(PathBuf) -> std::future::Ready<Result<Fetched, String>> {
        move |path| {
            std::fs::write(&path, vec![byte; size as usize]).unwrap();
            std::future::ready(Ok(Fetched { size, ms: 0.0 }))
        }
    }

    async fn get(c: &Cache, key: &str, size: u64) -> (Pin, bool) {
        let (pin, f) = c
            .get(key, Some(size), Wait::Holding(0), write(size, 1))
            .await
            .unwrap();
        (pin, f.is_some())
    }

    #[tokio::test]
    async fn hits_reuse_the_file_and_the_least_recently_used_is_evicted() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open(d.path(), 300).unwrap();
        let (a, fetched) = get(&c, "a", 100).await;
        assert!(fetched);
        assert_eq!(std::fs::read(&a.path).unwrap().len(), 100);
        drop(a);
        drop(get(&c, "b", 100).await);
        drop(get(&c, "c", 100).await);
        let (a, fetched) = get(&c, "a", 100).await;
        assert!(!fetched, "a second request is served from the cache");
        drop(a);
        // Full: "b" is now the least recently used and makes room for "d".
        drop(get(&c, "d", 100).await);
        assert_eq!(c.used(), 300);
        assert!(!object_path(d.path(), "b").exists());
        assert!(!get(&c, "a", 100).await.1);
        assert!(!get(&c, "c", 100).await.1);
        assert!(get(&c, "b", 100).await.1, "evicted files are fetched again");
    }

    /// Declared sizes come from users: u64::MAX is "too big", not an overflow panic.
    #[tokio::test]
    async fn a_declared_size_near_u64_max_is_too_big() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open(d.path(), 300).unwrap();
        let err = c
            .get("x", Some(u64::MAX), Wait::Holding(100), write(1, 1))
            .await
            .err()
            .unwrap();
        assert_eq!(
            err,
            CacheError::TooBig {
                size: u64::MAX,
                max: 300
            }
        );
    }

    #[tokio::test]
    async fn held_files_are_never_evicted_and_a_fetch_waits_for_room() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open(d.path(), 200).unwrap();
        let (a, _) = get(&c, "a", 100).await;
        let (b, _) = get(&c, "b", 100).await;
        let c2 = c.clone();
        let waiting = tokio::spawn(async move { get(&c2, "c", 100).await.1 });
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(
            !waiting.is_finished(),
            "the fetch must wait while a and b are held"
        );
        assert!(a.path.exists() && b.path.exists());
        drop(b);
        let fetched = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the fetch proceeds once a file is released")
            .unwrap();
        assert!(fetched);
        assert!(a.path.exists(), "the held file stays");
        assert!(!object_path(d.path(), "b").exists());
        assert_eq!(c.used(), 200);
    }

    #[tokio::test]
    async fn a_caller_holding_files_is_told_the_cache_is_full_instead_of_waiting() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open(d.path(), 100).unwrap();
        let (_a, _) = get(&c, "a", 100).await;
        let err = c
            .get("b", Some(50), Wait::No, write(50, 2))
            .await
            .err()
            .unwrap();
        assert_eq!(err, CacheError::Full);
        // Size unknown up front: the room is missing only once fetched.
        let err = c
            .get("b", None, Wait::No, write(50, 2))
            .await
            .err()
            .unwrap();
        assert_eq!(err, CacheError::Full);
        assert_eq!(c.used(), 100, "nothing of b is kept");
        assert!(!d.path().join("tmp/b").exists());
        // Waiting could never help a caller whose own files leave too little room.
        let err = c
            .get("b", Some(50), Wait::Holding(100), write(50, 2))
            .await
            .err();
        assert_eq!(
            err,
            Some(CacheError::TooBig {
                size: 150,
                max: 100
            })
        );
        let err = c
            .get("b", None, Wait::Holding(100), write(50, 2))
            .await
            .err();
        assert_eq!(
            err,
            Some(CacheError::TooBig {
                size: 150,
                max: 100
            })
        );
    }

    /// A link left where a fetch writes is removed, its target untouched; the cache's
    /// directories and fetched files are the agent's account's only.
    #[test]
    fn fetches_write_new_private_files_never_through_a_link() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open(d.path(), 100).unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let tmp = c.inner.dir.join("tmp/k");
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        std::io::Write::write_all(&mut new_file(&tmp).unwrap(), b"fetched").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&tmp) & 0o777, 0o600);
        for sub in ["objects", "tmp"] {
            assert_eq!(mode(&d.path().join(sub)) & 0o077, 0, "{sub}");
        }
    }

    #[tokio::test]
    async fn concurrent_requests_fetch_once() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open(d.path(), 1000).unwrap();
        let calls = Arc::new(AtomicU32::new(0));
        let (open, gate) = tokio::sync::oneshot::channel::<()>();
        let gate = Arc::new(Mutex::new(Some(gate)));
        let mut handles = Vec::new();
        for _ in 0..4 {
            let (c, calls, gate) = (c.clone(), calls.clone(), gate.clone());
            handles.push(tokio::spawn(async move {
                let (pin, f) = c
                    .get("k", None, Wait::Holding(0), |path| async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        let g = gate.lock().unwrap().take().expect("fetched once");
                        g.await.unwrap();
                        std::fs::write(&path, b"hello").unwrap();
                        Ok(Fetched { size: 5, ms: 1.0 })
                    })
                    .await
                    .unwrap();
                (std::fs::read(&pin.path).unwrap(), f.is_some())
            }));
        }
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        open.send(()).unwrap();
        let mut leaders = 0;
        for h in handles {
            let (content, led) = h.await.unwrap();
            assert_eq!(content, b"hello");
            leaders += u32::from(led);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(leaders, 1);
    }

    #[tokio::test]
    async fn the_bound_holds_and_failures_release_their_reservation() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open(d.path(), 150).unwrap();
        let err = c
            .get("big", Some(151), Wait::Holding(0), write(151, 0))
            .await
            .err()
            .unwrap();
        assert_eq!(
            err,
            CacheError::TooBig {
                size: 151,
                max: 150
            }
        );
        // Size unknown up front, too big once fetched: refused, nothing kept.
        let err = c
            .get("big", None, Wait::Holding(0), write(200, 0))
            .await
            .err()
            .unwrap();
        assert!(matches!(err, CacheError::TooBig { size: 200, .. }));
        assert_eq!(c.used(), 0);
        let err = c
            .get("x", Some(10), Wait::Holding(0), |_| async {
                Err("no such file".to_string())
            })
            .await
            .err()
            .unwrap();
        assert_eq!(err, CacheError::Fetch("no such file".into()));
        assert_eq!(c.used(), 0);
        let (p, _) = get(&c, "x", 100).await;
        let (q, _) = get(&c, "y", 50).await;
        assert_eq!(c.used(), 150);
        assert_eq!(
            std::fs::read_dir(d.path().join("objects")).unwrap().count(),
            2
        );
        drop((p, q));
    }
}
