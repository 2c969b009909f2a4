//! [`HostKeyError`]: why a host's key was refused, worded so a person can act on it: the
//! host and port, the key's type and SHA256 fingerprint, and the command that fixes it.

use super::offered::OfferedKey;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum HostKeyError {
    #[error("{place}: the server sent no host key")]
    NoKey { place: String },
    /// Strict checking and the host is not in known_hosts (or there is no such file).
    #[error(
        "{place} is not a known host ({file} {why}); it presents the {offered}. Check that \
         fingerprint with the site (out of band), then add the host with: {add}",
        file = file.display()
    )]
    Unknown {
        place: String,
        file: PathBuf,
        why: &'static str,
        offered: OfferedKey,
        add: String,
    },
    /// known_hosts lists the host with another key.
    #[error(
        "{place}: its host key differs from the one {file} lists for it: it now presents the \
         {offered}. The connection may be intercepted, or the host was reinstalled: check \
         that fingerprint with the site; if it is right, replace the old entry with: {replace}",
        file = file.display()
    )]
    Changed {
        place: String,
        file: PathBuf,
        offered: OfferedKey,
        replace: String,
    },
    #[error("known_hosts file {}: {problem}", file.display())]
    KnownHostsFile { file: PathBuf, problem: String },
}

/// How known_hosts names `host` on `port`: `host` for 22, else `[host]:port`.
pub fn known_hosts_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// The shell command that appends the host's key (of the offered type) to `file`,
/// creating its directory first if that is missing.
pub fn add_command(host: &str, port: u16, offered: &OfferedKey, file: &Path) -> String {
    let q = |s: &str| shell_words::quote(s).into_owned();
    let file_q = q(&file.display().to_string());
    let kind = offered
        .keyscan_type()
        .map(|t| format!(" -t {t}"))
        .unwrap_or_default();
    let scan = format!("ssh-keyscan -p {port}{kind} {} >> {file_q}", q(host));
    match file
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.exists())
    {
        Some(dir) => format!(
            "mkdir -p -m 700 {} && {scan}",
            q(&dir.display().to_string())
        ),
        None => scan,
    }
}

/// The shell command that drops the host's old entry from `file` and adds its current key.
pub fn replace_command(host: &str, port: u16, offered: &OfferedKey, file: &Path) -> String {
    let q = |s: &str| shell_words::quote(s).into_owned();
    format!(
        "ssh-keygen -R {} -f {} && {}",
        q(&known_hosts_name(host, port)),
        q(&file.display().to_string()),
        add_command(host, port, offered, file)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ssh2::HostKeyType;

    #[test]
    fn commands_name_the_port_the_key_type_and_the_file() {
        let key = OfferedKey::new(b"k", HostKeyType::Ed25519);
        let file = Path::new("/tmp/known hosts");
        assert_eq!(
            add_command("login.example", 2222, &key, file),
            "ssh-keyscan -p 2222 -t ed25519 login.example >> '/tmp/known hosts'"
        );
        assert_eq!(
            replace_command("h", 22, &key, file),
            "ssh-keygen -R h -f '/tmp/known hosts' && \
             ssh-keyscan -p 22 -t ed25519 h >> '/tmp/known hosts'"
        );
        assert_eq!(
            add_command("h", 22, &key, Path::new("/no/such/dir/known_hosts")),
            "mkdir -p -m 700 /no/such/dir && ssh-keyscan -p 22 -t ed25519 h >> \
             /no/such/dir/known_hosts"
        );
        assert_eq!(known_hosts_name("h", 2222), "[h]:2222");
    }
}
