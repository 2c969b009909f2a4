//! Looking a host up in an OpenSSH known_hosts file and appending a host to it, through
//! libssh2's known-hosts API (plain, hashed `|1|...` and `[host]:port` entries).

use super::error::{known_hosts_name, HostKeyError};
use super::offered::OfferedKey;
use ssh2::{CheckResult, KnownHostFileKind, Session};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// What a known_hosts file says about a host's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// The file does not exist: no host is known.
    NoFile,
    NotListed,
    Matches,
    Differs,
}

fn file_error(file: &Path, problem: String) -> HostKeyError {
    HostKeyError::KnownHostsFile {
        file: file.to_path_buf(),
        problem,
    }
}

/// What `file` says about `offered` as the key of `host` on `port`.
pub fn look_up(
    session: &Session,
    file: &Path,
    host: &str,
    port: u16,
    offered: &OfferedKey,
) -> Result<Listing, HostKeyError> {
    if !file.exists() {
        return Ok(Listing::NoFile);
    }
    let mut known = session
        .known_hosts()
        .map_err(|e| file_error(file, e.to_string()))?;
    known
        .read_file(file, KnownHostFileKind::OpenSSH)
        .map_err(|e| {
            file_error(
                file,
                format!(
                    "cannot read it ({e}); libssh2 reads plain, hashed (|1|) and [host]:port \
                     lines, and stops at a line it cannot parse (e.g. @cert-authority)"
                ),
            )
        })?;
    match known.check_port(host, port, offered.blob()) {
        CheckResult::Match => Ok(Listing::Matches),
        CheckResult::Mismatch => Ok(Listing::Differs),
        CheckResult::NotFound => Ok(Listing::NotListed),
        CheckResult::Failure => Err(file_error(
            file,
            format!("libssh2 failed to check the key of {host}:{port}"),
        )),
    }
}

/// Appends `host`'s key (as `[host]:port` for ports other than 22) to `file`, creating the
/// file with mode 0600 (and its directory with mode 0700) if missing. The line comes from
/// libssh2 (`KnownHosts::add` + `write_string`); appending leaves every other line of the
/// file as it was.
pub fn append(
    session: &Session,
    file: &Path,
    host: &str,
    port: u16,
    offered: &OfferedKey,
) -> Result<(), HostKeyError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| file_error(file, format!("{what}: {e}"));
    let mut entry = session
        .known_hosts()
        .map_err(|e| fail("libssh2 known hosts", &e))?;
    entry
        .add(
            &known_hosts_name(host, port),
            offered.blob(),
            "added by hetpilot (accept-new)",
            offered.known_hosts_format(),
        )
        .map_err(|e| fail("adding the host", &e))?;
    let hosts = entry.hosts().map_err(|e| fail("listing the entry", &e))?;
    let host_entry = hosts
        .first()
        .ok_or_else(|| fail("adding the host", &"no entry"))?;
    let mut line = entry
        .write_string(host_entry, KnownHostFileKind::OpenSSH)
        .map_err(|e| fail("formatting the entry", &e))?;
    if !line.ends_with('\n') {
        line.push('\n');
    }
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| fail(&format!("creating {}", dir.display()), &e))?;
    }
    let mut out = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(file)
        .map_err(|e| fail("opening it to append", &e))?;
    if !ends_with_newline(&mut out).map_err(|e| fail("reading it", &e))? {
        line.insert(0, '\n');
    }
    out.write_all(line.as_bytes())
        .map_err(|e| fail("appending to it", &e))
}

/// Whether the file is empty or its last byte is a newline (so a new line can follow).
fn ends_with_newline(file: &mut std::fs::File) -> std::io::Result<bool> {
    if file.seek(SeekFrom::End(0))? == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}
