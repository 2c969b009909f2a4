//! Storing a workflow's external inputs in the caller's files before `hetpilot submit`
//! sends the workflow: local files (`--inputs-dir`) as they are, emulated ones as sparse
//! files of zeros of their size.

use anyhow::Context;
use hetpilot::client::Client;
use hetpilot::workflow::inputs::Upload;

/// A sparse file of `bytes` zeros in a temporary directory (no disk blocks used).
fn zeros(bytes: u64) -> anyhow::Result<tempfile::NamedTempFile> {
    let file = tempfile::NamedTempFile::new().context("creating a temporary input file")?;
    file.as_file()
        .set_len(bytes)
        .context("sizing a temporary input file")?;
    Ok(file)
}

/// Stores every upload in the caller's files, one after the other.
pub async fn upload(client: &Client, uploads: &[Upload]) -> anyhow::Result<()> {
    if uploads.is_empty() {
        return Ok(());
    }
    let total: u64 = uploads.iter().map(|u| u.bytes).sum();
    eprintln!(
        "storing the workflow's {} external inputs ({total} bytes) in the file service",
        uploads.len()
    );
    for u in uploads {
        let scratch;
        let path = match &u.path {
            Some(p) => p.as_path(),
            None => {
                scratch = zeros(u.bytes)?;
                scratch.path()
            }
        };
        let file = tokio::fs::File::open(path)
            .await
            .with_context(|| format!("cannot read {}", path.display()))?;
        client
            .put_file(&u.name, reqwest::Body::from(file))
            .await
            .with_context(|| format!("storing external input `{}` as {}", u.file, u.name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emulated_input_is_a_sparse_file_of_its_size() {
        let f = zeros(5 << 30).unwrap();
        let meta = f.as_file().metadata().unwrap();
        assert_eq!(meta.len(), 5 << 30);
        use std::os::unix::fs::MetadataExt;
        assert!(meta.blocks() < 1024, "sparse: {} blocks", meta.blocks());
    }
}
