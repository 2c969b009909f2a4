//! `hetpilot files put/get/ls/rm`: the caller's own files in the manager's file service
//! (the names applications declare as inputs and outputs). Files stream from and to disk
//! in pieces, with a progress bar on stderr for large ones when it is a terminal; a
//! download is written to a temporary file beside its destination and renamed into place
//! once complete.

use super::connect::Connect;
use super::output::{age, print_json, print_table};
use anyhow::{bail, Context};
use clap::Subcommand;
use hetpilot::client::Client;
use indicatif::{HumanBytes, ProgressBar, ProgressStyle};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Files at least this large get a progress bar.
const PROGRESS_FROM_BYTES: u64 = 8 << 20;

#[derive(Debug, Subcommand)]
pub enum FilesCommand {
    /// Upload a local file as NAME (default: the file's own name).
    Put {
        local: PathBuf,
        name: Option<String>,
        #[command(flatten)]
        connect: Connect,
    },
    /// Download NAME to LOCAL (default: its last name component here; `-` for stdout).
    Get {
        name: String,
        local: Option<PathBuf>,
        /// Replace LOCAL if it exists.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        connect: Connect,
    },
    /// List your files (those starting with PREFIX): name, size, age.
    Ls {
        prefix: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connect: Connect,
    },
    /// Remove files.
    Rm {
        #[arg(required = true)]
        names: Vec<String>,
        #[command(flatten)]
        connect: Connect,
    },
}

pub async fn run(cmd: FilesCommand) -> anyhow::Result<()> {
    match cmd {
        FilesCommand::Put {
            local,
            name,
            connect,
        } => put(&connect.client()?, &local, name).await,
        FilesCommand::Get {
            name,
            local,
            force,
            connect,
        } => get(&connect.client()?, &name, local, force).await,
        FilesCommand::Ls {
            prefix,
            json,
            connect,
        } => ls(&connect.client()?, prefix.as_deref(), json).await,
        FilesCommand::Rm { names, connect } => {
            let client = connect.client()?;
            for name in names {
                let size = client
                    .remove_file(&name)
                    .await
                    .with_context(|| format!("removing `{}`", name.escape_debug()))?;
                eprintln!("removed {} ({})", name.escape_debug(), HumanBytes(size));
            }
            Ok(())
        }
    }
}

/// A progress bar for `bytes` (hidden below [`PROGRESS_FROM_BYTES`], and by indicatif when
/// stderr is not a terminal).
fn progress(bytes: Option<u64>, what: &str) -> ProgressBar {
    match bytes {
        Some(n) if n >= PROGRESS_FROM_BYTES => {
            let bar = ProgressBar::new(n);
            let style = ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .expect("a valid template")
            .progress_chars("=> ");
            bar.set_style(style);
            bar.set_message(what.to_string());
            bar
        }
        _ => ProgressBar::hidden(),
    }
}

async fn put(client: &Client, local: &Path, name: Option<String>) -> anyhow::Result<()> {
    let name = match name {
        Some(n) => n,
        None => local
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
            .with_context(|| {
                format!(
                    "{} has no file name to store it as; name it: files put LOCAL NAME",
                    local.display()
                )
            })?,
    };
    let file = tokio::fs::File::open(local)
        .await
        .with_context(|| format!("opening {}", local.display()))?;
    let meta = file.metadata().await?;
    if !meta.is_file() {
        bail!("{} is not a regular file", local.display());
    }
    let bar = progress(Some(meta.len()), &name);
    let stream = tokio_util::io::ReaderStream::new(bar.wrap_async_read(file));
    let sent = client
        .put_file(&name, reqwest::Body::wrap_stream(stream))
        .await;
    bar.finish_and_clear();
    sent.with_context(|| format!("uploading {} as `{}`", local.display(), name.escape_debug()))?;
    eprintln!(
        "stored {} as {} ({})",
        local.display(),
        name.escape_debug(),
        HumanBytes(meta.len())
    );
    Ok(())
}

/// Where a download of `name` goes when no destination is named: its last component, here.
fn default_destination(name: &str) -> anyhow::Result<PathBuf> {
    match name.rsplit('/').next() {
        Some(leaf) if !leaf.is_empty() && leaf != "." && leaf != ".." => Ok(PathBuf::from(leaf)),
        _ => bail!(
            "`{}` names no file to save as; name one: files get NAME LOCAL",
            name.escape_debug()
        ),
    }
}

async fn get(
    client: &Client,
    name: &str,
    local: Option<PathBuf>,
    force: bool,
) -> anyhow::Result<()> {
    let dest = match local {
        Some(p) => p,
        None => default_destination(name)?,
    };
    let to_stdout = dest.as_os_str() == "-";
    if !to_stdout && !force && dest.exists() {
        bail!("{} exists; pass --force to replace it", dest.display());
    }
    let mut resp = client
        .get_file(name)
        .await
        .with_context(|| format!("downloading `{}`", name.escape_debug()))?;
    let expected = resp.content_length();
    let bar = progress(expected, name);
    if to_stdout {
        let mut out = std::io::stdout().lock();
        while let Some(chunk) = resp.chunk().await? {
            out.write_all(&chunk)?;
            bar.inc(chunk.len() as u64);
        }
        out.flush()?;
        bar.finish_and_clear();
        return Ok(());
    }
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    let mut written = 0u64;
    while let Some(chunk) = resp.chunk().await.context("reading the download")? {
        tmp.write_all(&chunk)
            .with_context(|| format!("writing {}", tmp.path().display()))?;
        written = written.saturating_add(chunk.len() as u64);
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    if let Some(expected) = expected {
        if written != expected {
            bail!("the download ended after {written} of {expected} bytes");
        }
    }
    tmp.as_file().sync_all()?;
    if force {
        tmp.persist(&dest)
    } else {
        tmp.persist_noclobber(&dest)
    }
    .with_context(|| format!("saving {}", dest.display()))?;
    eprintln!(
        "saved {} as {} ({})",
        name.escape_debug(),
        dest.display(),
        HumanBytes(written)
    );
    Ok(())
}

async fn ls(client: &Client, prefix: Option<&str>, json: bool) -> anyhow::Result<()> {
    let mut files = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = client.list_files(prefix, after.as_deref(), None).await?;
        files.extend(page.files);
        match page.next {
            // A cursor that does not move on would loop forever.
            Some(next) if Some(&next) != after.as_ref() => after = Some(next),
            _ => break,
        }
    }
    if json {
        return print_json(&files);
    }
    if files.is_empty() {
        eprintln!("no files");
        return Ok(());
    }
    let now = hetpilot::service::now_ms();
    let rows: Vec<Vec<String>> = files
        .iter()
        .map(|f| {
            vec![
                f.name.escape_debug().to_string(),
                HumanBytes(f.size).to_string(),
                age(now, f.modified_ms),
            ]
        })
        .collect();
    print_table(&["NAME", "SIZE", "MODIFIED"], &rows);
    Ok(())
}
