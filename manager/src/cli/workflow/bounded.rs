//! Reading a workflow file no further than the submit limit allows: a file whose size is
//! past the bound is refused before a byte of it is read, and one that grows past it while
//! it is read (or that has no size, like a pipe) is refused when the bound is reached.

use crate::cli::submit_limit::{FileKind, SubmitLimit};
use anyhow::Context;
use std::fs::File;
use std::io::{BufReader, Read, Take};
use std::path::Path;

/// `path`, opened to read at most one byte past the bound.
fn open(path: &Path, kind: FileKind, limit: &SubmitLimit) -> anyhow::Result<Take<File>> {
    let cannot = || format!("cannot read {}", path.display());
    let file = File::open(path).with_context(cannot)?;
    let len = file.metadata().with_context(cannot)?.len();
    let bound = limit.file_bytes(kind);
    if len > bound {
        return Err(limit.file_too_large(path, kind, Some(len)));
    }
    Ok(file.take(bound.saturating_add(1)))
}

/// The whole text of `path`, a file of `kind`.
pub fn read_to_string(path: &Path, kind: FileKind, limit: &SubmitLimit) -> anyhow::Result<String> {
    let mut file = open(path, kind, limit)?;
    let mut text = String::new();
    let read = file.read_to_string(&mut text);
    if file.limit() == 0 {
        return Err(limit.file_too_large(path, kind, None));
    }
    read.with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text)
}

/// What `parse` makes of `path`, a file of `kind`, as it streams in.
pub fn parse_streaming<T>(
    path: &Path,
    kind: FileKind,
    limit: &SubmitLimit,
    parse: impl FnOnce(&mut BufReader<Take<File>>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let mut reader = BufReader::new(open(path, kind, limit)?);
    let parsed = parse(&mut reader);
    if reader.get_ref().limit() == 0 {
        return Err(limit.file_too_large(path, kind, None));
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::connect::Connect;

    fn one_mib() -> SubmitLimit {
        let connect = Connect {
            config: None,
            url: None,
            token_file: None,
            data_dir: None,
            ca_file: None,
            tls_fingerprint: None,
        };
        SubmitLimit::resolve(Some(1), &connect).unwrap()
    }

    #[test]
    fn a_file_without_a_size_is_cut_at_its_bound() {
        let limit = one_mib();
        let zero = Path::new("/dev/zero");
        let err = read_to_string(zero, FileKind::Dax, &limit).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/dev/zero: more than the 4 MiB a DAX may be"),
            "{err}"
        );
        let mut read = 0;
        let err = parse_streaming(zero, FileKind::WfCommons, &limit, |r| {
            read = std::io::copy(r, &mut std::io::sink())?;
            Ok(())
        })
        .unwrap_err();
        assert_eq!(read, (8 << 20) + 1, "one byte past the 8 MiB bound");
        assert!(
            err.to_string()
                .contains("more than the 8 MiB a WfCommons instance may be"),
            "{err}"
        );
    }

    #[test]
    fn a_file_within_its_bound_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.toml");
        let text = "x".repeat(4 << 20);
        std::fs::write(&path, &text).unwrap();
        assert_eq!(
            read_to_string(&path, FileKind::AppFile, &one_mib()).unwrap(),
            text
        );
        std::fs::write(&path, format!("{text}x")).unwrap();
        let err = read_to_string(&path, FileKind::AppFile, &one_mib()).unwrap_err();
        assert!(
            err.to_string()
                .contains("5 MiB is more than the 4 MiB an application file may be"),
            "{err}"
        );
    }
}
