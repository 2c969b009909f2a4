//! Data staging for tasks that declare files. Before a task starts, [`Stager::prepare`]
//! makes a directory for the run and puts each input in it: a shared-filesystem path is
//! symlinked (read in place), anything else comes from the node cache (fetched once per
//! node, verified against its declared size and SHA-256, a mismatch fetched once more)
//! and is hard-linked (or symlinked across filesystems). The task runs in that directory.
//! After it ends, [`Prepared::finish`] stores the declared outputs back, releases the
//! cached files and removes the run directory (its stdout and stderr are kept elsewhere).
//! A problem with a file fails that task only, with a message saying which file and why.
//!
//! `store://` files come from depots (`hetpilot-agent serve-files`) with the grant
//! to their owner's files there that the manager sent (see `grants`); their transfers are
//! measured against the endpoint `store:NAME`.

mod cache;
mod digest;
mod grants;
mod http;
mod outputs;
mod sftp;

pub use sftp::SftpKeys;

use cache::{Cache, CacheError, Fetched, Pin, Wait};
pub use grants::Grants;
use hetpilot_protocol::files::{Source, StagingStats, TaskFile, TaskFiles, Transfer};
use hetpilot_protocol::protocol::{AppRuntime, Assignment};
use hetpilot_protocol::AppId;
use hetpilot_transport::tls::ClientTrust;
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How the agent reaches file sources.
pub struct Settings {
    pub cache_dir: PathBuf,
    pub cache_max: u64,
    /// Private key and host-key check for `sftp://` files.
    pub sftp_key: Option<SftpKeys>,
    /// How HTTPS servers (the manager, depots) are trusted.
    pub trust: ClientTrust,
}

/// Stages the files of the agent's tasks; shared by all of them.
pub struct Stager {
    cache: Cache,
    http: reqwest::Client,
    manager: String,
    credential: String,
    sftp_key: Option<SftpKeys>,
    /// Grants to depots, refreshed by the manager's answers.
    grants: Grants,
    /// Sources whose content was verified against a declared SHA-256: their cache key.
    aliases: Mutex<HashMap<String, String>>,
    /// Held by the one run allowed to wait for room while it holds cached files.
    room: tokio::sync::Mutex<()>,
    /// Where run directories are made.
    runs_dir: PathBuf,
}

/// A run's directory with its inputs in place, holding their cached files.
pub struct Prepared {
    pub dir: PathBuf,
    app: AppId,
    owner: String,
    outputs: Vec<TaskFile>,
    stats: StagingStats,
    _pins: Vec<Pin>,
    stager: Arc<Stager>,
    /// Cached input files the task must not change (a sandbox binds them read-only): the
    /// hard links in the run directory, or the cached files symlinks point to.
    pub read_only: Vec<PathBuf>,
}

impl Stager {
    pub fn new(
        settings: &Settings,
        manager: &str,
        credential: String,
        grants: Grants,
        work_dir: &Path,
    ) -> Result<Stager, String> {
        let cache =
            Cache::open(&settings.cache_dir, settings.cache_max).map_err(|e| e.to_string())?;
        let builder = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .pool_idle_timeout(hetpilot_transport::http::POOL_IDLE_TIMEOUT);
        let http = settings
            .trust
            .apply(builder)
            .map_err(|e| e.to_string())?
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Stager {
            cache,
            http,
            manager: manager.trim_end_matches('/').to_string(),
            credential,
            sftp_key: settings.sftp_key.clone(),
            grants,
            aliases: Mutex::new(HashMap::new()),
            room: tokio::sync::Mutex::new(()),
            runs_dir: work_dir.join("runs"),
        })
    }

    /// Makes the run's directory and puts its inputs there. Errors say which file failed.
    pub async fn prepare(
        self: Arc<Self>,
        a: &Assignment,
        app: &AppRuntime,
    ) -> Result<Prepared, String> {
        let templates = a
            .files
            .as_ref()
            .or(app.files.as_ref())
            .ok_or("the application declares no files")?;
        let files: TaskFiles = templates
            .for_task(a.task.index, &a.input)
            .map_err(|(field, e)| format!("{}: {e}", field.name()))?;
        let dir = crate::work_dir::fresh_run_dir(&self.runs_dir, a)?;
        for out in &files.outputs {
            if let Some(parent) = dir.join(&out.name).parent() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
        }
        let (pins, stats, read_only) = self
            .link_inputs(a.task.app, &templates.owner, &files.inputs, &dir)
            .await?;
        tracing::debug!(task = %a.task, fetched = stats.bytes_fetched,
            cache_used = self.cache.used(), cached = stats.bytes_cached, "inputs staged");
        Ok(Prepared {
            dir,
            app: a.task.app,
            owner: templates.owner.clone(),
            outputs: files.outputs,
            stats,
            _pins: pins,
            stager: self,
            read_only,
        })
    }

    /// Links every input into the run directory `dir`. When the cache is full of held
    /// files, this run releases what it holds, queues for the right to wait while holding
    /// files (one run at a time has it, so no two runs wait on each other's files), then
    /// starts over: what it had is likely still cached.
    async fn link_inputs(
        &self,
        app: AppId,
        owner: &str,
        inputs: &[TaskFile],
        dir: &Path,
    ) -> Result<(Vec<Pin>, StagingStats, Vec<PathBuf>), String> {
        let mut stats = StagingStats::default();
        // Inputs this run fetched (a later pass finds them in the cache).
        let mut fetched_here = HashSet::new();
        // Sizes are declared by users: a sum past u64::MAX is "too big", not a panic.
        let declared = inputs
            .iter()
            .filter_map(|f| f.size)
            .fold(0u64, u64::saturating_add);
        if declared > self.cache.max() {
            return Err(format!(
                "the task's inputs total {declared} bytes, more than the node cache holds ({} \
                 bytes: raise --cache-max)",
                self.cache.max()
            ));
        }
        let mut exclusive = None;
        'pass: loop {
            let mut pins = Vec::new();
            let mut cached_sizes = Vec::new();
            let mut read_only = Vec::new();
            for (i, input) in inputs.iter().enumerate() {
                let link = dir.join(&input.name);
                let _ = std::fs::remove_file(&link);
                if let Source::Shared(path) = &input.source {
                    if !Path::new(path).exists() {
                        return Err(format!(
                            "input `{path}`: not found on this node's shared filesystem"
                        ));
                    }
                    std::os::unix::fs::symlink(path, &link)
                        .map_err(|e| format!("input `{path}`: cannot link it: {e}"))?;
                    continue;
                }
                let wait = match pins.is_empty() || exclusive.is_some() {
                    true => Wait::Holding(pins.iter().map(|p: &Pin| p.size).sum()),
                    false => Wait::No,
                };
                let (pin, fetched) = match self.cached(app, owner, input, wait).await {
                    Err(CacheError::Full) => {
                        tracing::info!(file = %input.source, "node cache full of held files: releasing this run's files to wait for room");
                        drop(pins);
                        exclusive = Some(self.room.lock().await);
                        continue 'pass;
                    }
                    Err(e) => return Err(format!("input `{}`: {e}", input.source)),
                    Ok(got) => got,
                };
                match fetched {
                    Some(f) => {
                        fetched_here.insert(i);
                        stats.bytes_fetched += f.size;
                        add_transfer(&mut stats, input.source.endpoint(), f.size, f.ms);
                    }
                    None if !fetched_here.contains(&i) => cached_sizes.push(pin.size),
                    None => {}
                }
                if std::fs::hard_link(&pin.path, &link).is_ok() {
                    read_only.push(link);
                } else {
                    std::os::unix::fs::symlink(&pin.path, &link)
                        .map_err(|e| format!("input `{}`: cannot link it: {e}", input.source))?;
                    read_only.push(pin.path.clone());
                }
                pins.push(pin);
            }
            stats.bytes_cached = cached_sizes.iter().sum();
            return Ok((pins, stats, read_only));
        }
    }

    /// The file from the node cache, fetching (and verifying) it on a miss. A file is
    /// keyed by its declared SHA-256; without one, by the content a verified fetch of the
    /// same source had, else by its source. Files only their owner reaches (the file
    /// service's, a store's) are keyed per owner (and store) even with a SHA-256, so
    /// nobody gets a file from the cache that they could not have fetched: declaring the
    /// checksum of another user's file must not be enough to read it.
    async fn cached(
        &self,
        app: AppId,
        owner: &str,
        file: &TaskFile,
        wait: Wait,
    ) -> Result<(Pin, Option<Fetched>), CacheError> {
        let source = source_key(owner, &file.source);
        let known = |sha: &str| {
            let scope = match &file.source {
                Source::Service(_) => format!("service:{owner}"),
                Source::Store { store, .. } => format!("{store}:{owner}"),
                _ => return format!("sha256-{sha}"),
            };
            format!("sha256-{sha}-of-{}", digest::sha256_hex(scope.as_bytes()))
        };
        let key = match &file.sha256 {
            Some(sha) => known(sha),
            None => self
                .aliases
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&source)
                .cloned()
                .unwrap_or_else(|| format!("src-{}", digest::sha256_hex(source.as_bytes()))),
        };
        let got = self
            .cache
            .get(&key, file.size, wait, |dest| {
                self.fetch_verified(app, owner, file, dest)
            })
            .await?;
        if let Some(sha) = &file.sha256 {
            self.aliases
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(source, known(sha));
        }
        Ok(got)
    }

    /// Fetches into `dest` and checks the declared size and SHA-256; a mismatch is fetched
    /// once more before it fails.
    async fn fetch_verified(
        &self,
        app: AppId,
        owner: &str,
        file: &TaskFile,
        dest: PathBuf,
    ) -> Result<Fetched, String> {
        let mut first_problem = None;
        for attempt in 1..=2 {
            let started = Instant::now();
            let (size, sha) = self.fetch(app, owner, &file.source, &dest).await?;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let problem = match (&file.size, &file.sha256) {
                (Some(want), _) if *want != size => {
                    Some(format!("size mismatch: declared {want} bytes, got {size}"))
                }
                (_, Some(want)) if *want != sha => Some(format!(
                    "checksum mismatch: declared sha256 {want}, got {sha}"
                )),
                _ => None,
            };
            match problem {
                None => return Ok(Fetched { size, ms }),
                Some(p) if attempt == 1 => {
                    tracing::warn!(file = %file.source, problem = %p, "fetching once more");
                    first_problem = Some(p);
                }
                Some(p) => {
                    let _ = std::fs::remove_file(&dest);
                    let first = first_problem.unwrap_or_default();
                    return Err(format!(
                        "{p} (also on the first fetch: {first}); the task was not run"
                    ));
                }
            }
        }
        unreachable!("the loop returns on its second pass")
    }

    async fn fetch(
        &self,
        app: AppId,
        owner: &str,
        source: &Source,
        dest: &Path,
    ) -> Result<(u64, String), String> {
        match source {
            Source::Service(name) => {
                let url = format!(
                    "{}/v1/apps/{app}/files/{}",
                    self.manager,
                    http::encode_path(name)
                );
                http::download(&self.http, &url, Some(&self.credential), dest).await
            }
            Source::Http(url) => http::download(&self.http, url, None, dest).await,
            Source::Store { store, path } => {
                let grant = self.grants.get(store, owner)?;
                let url = store_url(&grant, path);
                http::download(&self.http, &url, Some(&grant.token), dest)
                    .await
                    .map_err(|e| format!("store `{store}`: {e}"))
            }
            Source::Sftp(url) => {
                let key = self.sftp_key.clone().ok_or(
                    "an sftp:// file needs the agent's key: start the agent with --sftp-key FILE",
                )?;
                let (url, dest) = (url.clone(), dest.to_path_buf());
                tokio::task::spawn_blocking(move || sftp::download(&url, &key, &dest))
                    .await
                    .map_err(|e| format!("sftp transfer aborted: {e}"))?
            }
            Source::Shared(path) => Err(format!("`{path}` is read in place, not fetched")),
        }
    }
}

impl Prepared {
    /// Stores the declared outputs back (when the task succeeded), releases the run's
    /// cached files and removes its directory. Returns the run's staging figures and what went wrong, if anything.
    pub async fn finish(self, succeeded: bool) -> (StagingStats, Option<String>) {
        let Prepared {
            dir,
            app,
            owner,
            outputs,
            mut stats,
            _pins,
            stager,
            read_only: _,
        } = self;
        drop(_pins);
        let problem = match succeeded {
            true => outputs::store(&stager, app, &owner, &dir, &outputs, &mut stats).await,
            false => None,
        };
        // The run's links would keep evicted cache files on disk: the directory goes.
        if let Err(e) = tokio::fs::remove_dir_all(&dir).await {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot remove a run directory");
        }
        (stats, problem)
    }
}

/// What identifies a source's content when no checksum is declared.
fn source_key(owner: &str, source: &Source) -> String {
    match source {
        // A file-service name is per owner.
        Source::Service(name) => format!("service:{owner}:{name}"),
        // So is a store's.
        Source::Store { store, path } => format!("store:{store}:{owner}:{path}"),
        other => other.to_string(),
    }
}

/// Where `path` of the grant's owner is on its store.
fn store_url(grant: &hetpilot_protocol::protocol::StoreGrant, path: &str) -> String {
    format!(
        "{}/{}/{}",
        grant.url,
        http::encode_path(&grant.owner),
        http::encode_path(path)
    )
}

fn add_transfer(stats: &mut StagingStats, endpoint: String, bytes: u64, ms: f64) {
    let t = match stats.transfers.iter_mut().find(|t| t.endpoint == endpoint) {
        Some(t) => t,
        None => {
            stats.transfers.push(Transfer {
                endpoint,
                ..Transfer::default()
            });
            stats.transfers.last_mut().expect("just pushed")
        }
    };
    t.bytes += bytes;
    t.ms += ms;
    t.mib_per_s = if t.ms > 0.0 {
        t.bytes as f64 / (1024.0 * 1024.0) / (t.ms / 1000.0)
    } else {
        0.0
    };
}
