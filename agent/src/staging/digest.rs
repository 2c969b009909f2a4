//! Writing a fetched file while computing its SHA-256 and size, so a download is read
//! once.

use sha2::{Digest, Sha256};
use std::path::Path;
use tokio::io::AsyncWriteExt;

/// Bytes buffered before a write reaches the file (few large writes).
const WRITE_BUFFER: usize = 1 << 20;

pub struct Digesting {
    file: tokio::io::BufWriter<tokio::fs::File>,
    hash: Sha256,
    len: u64,
}

impl Digesting {
    /// Writes to a new file at `path` (see [`super::cache::new_file`]).
    pub async fn create(path: &Path) -> std::io::Result<Digesting> {
        let path = path.to_path_buf();
        let file = tokio::task::spawn_blocking(move || super::cache::new_file(&path))
            .await
            .map_err(std::io::Error::other)??;
        Ok(Digesting {
            file: tokio::io::BufWriter::with_capacity(
                WRITE_BUFFER,
                tokio::fs::File::from_std(file),
            ),
            hash: Sha256::new(),
            len: 0,
        })
    }

    pub async fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        self.hash.update(chunk);
        self.len += chunk.len() as u64;
        self.file.write_all(chunk).await
    }

    /// Flushes to disk; returns the size and the lowercase hex SHA-256.
    pub async fn finish(mut self) -> std::io::Result<(u64, String)> {
        self.file.flush().await?;
        self.file.get_ref().sync_all().await?;
        Ok((self.len, hex::encode(self.hash.finalize())))
    }
}

/// The lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}
