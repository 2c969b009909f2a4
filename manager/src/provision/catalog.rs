//! The profiles of the configured platforms. A profile file may use `${NAME}` for an
//! environment variable (e.g. `agent_binary = "${HETPILOT_AGENT_BINARY}"`), so one file
//! serves every checkout; an unset variable is an error naming it. `$$` is a literal `$`.

use super::profile::{PlatformProfile, ProfileError};
use crate::config::ManagerConfig;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error("{path}: environment variable `{name}` is not set (used as ${{{name}}})")]
    Unset { path: PathBuf, name: String },
    #[error("{path}: unterminated `${{` (write `$$` for a literal `$`)")]
    Syntax { path: PathBuf },
    #[error("{path}: the profile is named `{profile}` but platform `{platform}` uses it; the names must match")]
    Name {
        path: PathBuf,
        profile: String,
        platform: String,
    },
}

/// Replaces `${NAME}` with `lookup(NAME)`.
pub fn substitute(
    text: &str,
    path: &Path,
    mut lookup: impl FnMut(&str) -> Option<String>,
) -> Result<String, CatalogError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('{') {
            let end = r.find('}').ok_or_else(|| CatalogError::Syntax {
                path: path.to_path_buf(),
            })?;
            let name = &r[..end];
            let value = lookup(name).ok_or_else(|| CatalogError::Unset {
                path: path.to_path_buf(),
                name: name.to_string(),
            })?;
            out.push_str(&value);
            rest = &r[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Reads a profile, substituting environment variables.
pub fn load_profile(path: &Path) -> Result<PlatformProfile, CatalogError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = substitute(&text, path, |n| std::env::var(n).ok())?;
    Ok(PlatformProfile::parse(&text, path)?)
}

/// The profiles of every configured platform that names one, in configuration order.
pub fn load_all(settings: &ManagerConfig) -> Result<Vec<PlatformProfile>, CatalogError> {
    let mut out = Vec::new();
    for p in &settings.platforms {
        let Some(path) = &p.profile else { continue };
        let profile = load_profile(path)?;
        if profile.name != p.name {
            return Err(CatalogError::Name {
                path: path.clone(),
                profile: profile.name,
                platform: p.name.clone(),
            });
        }
        out.push(profile);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "BIN").then(|| "/opt/agent".to_string())
    }

    #[test]
    fn variables_are_substituted_and_unset_ones_named() {
        let p = Path::new("p.toml");
        assert_eq!(
            substitute("a = \"${BIN}\" # $$5 $x", p, env).unwrap(),
            "a = \"/opt/agent\" # $5 $x"
        );
        let err = substitute("${NOPE}", p, env).unwrap_err().to_string();
        assert!(err.contains("`NOPE` is not set"), "{err}");
        assert!(substitute("${BIN", p, env).is_err());
    }

    /// Every shipped profile loads (lab ones with the variables they use set).
    #[test]
    fn every_shipped_profile_loads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/platforms");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text = substitute(&text, &path, |n| match n {
                "HETPILOT_AGENT_BINARY" => Some("/opt/hetpilot-agent".into()),
                "HETPILOT_LAB_DIR" => Some("/tmp/lab".into()),
                "HETPILOT_LAB_KEY" => Some("/tmp/lab/id_ed25519".into()),
                "HETPILOT_LAB_KNOWN_HOSTS" => Some("/tmp/lab/known_hosts".into()),
                "HETPILOT_LAB_GPU_BIN" => Some("/tmp/lab/gpu/bin".into()),
                _ => None,
            })
            .unwrap_or_else(|e| panic!("{e}"));
            let profile = PlatformProfile::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                path.file_stem().unwrap().to_str().unwrap(),
                profile.name,
                "file named after its profile"
            );
            names.push(profile.name);
        }
        names.sort();
        for expected in [
            "cheetah",
            "darth",
            "gene",
            "lcloud",
            "lab-debug",
            "lab-big",
            "lab-gpu",
        ] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} missing: {names:?}"
            );
        }
    }

    /// The text between `cat > "$LAB/NAME" <<EOF` and its `EOF` in deploy/lab/start.sh.
    fn lab_heredoc(name: &str) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/lab/start.sh");
        let text = std::fs::read_to_string(script).unwrap();
        let start = format!("cat > \"$LAB/{name}\" <<EOF\n");
        let from = text
            .find(&start)
            .unwrap_or_else(|| panic!("no {name} in start.sh"))
            + start.len();
        let len = text[from..].find("\nEOF\n").unwrap();
        text[from..from + len].to_string()
    }

    /// The lab's env.sh exports every variable a lab profile uses, and the lab's
    /// manager.toml names shipped profiles only.
    #[test]
    fn the_lab_exports_what_its_profiles_use() {
        let env_sh = lab_heredoc("env.sh");
        let exported: Vec<&str> = env_sh
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('=').map(|(name, _)| name))
            .collect();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/platforms");
        let mut used = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.starts_with("lab-") && name.ends_with(".toml")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            substitute(&text, &path, |var| {
                used.insert(var.to_string());
                Some(String::new())
            })
            .unwrap();
        }
        assert!(used.contains("HETPILOT_AGENT_BINARY"), "{used:?}");
        for var in &used {
            assert!(
                exported.contains(&var.as_str()),
                "lab profiles use ${{{var}}} but env.sh exports only {exported:?}"
            );
        }
        assert!(exported.contains(&"HETPILOT_CONFIG"), "{exported:?}");
        let manager_toml = lab_heredoc("manager.toml");
        let profiles: Vec<&str> = manager_toml
            .lines()
            .filter_map(|l| l.strip_prefix("profile = \"$REPO/"))
            .map(|p| p.trim_end_matches('"'))
            .collect();
        assert!(profiles.len() >= 3, "{manager_toml}");
        for p in profiles {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(p);
            assert!(
                path.exists(),
                "the lab's manager.toml names {p}, which is not shipped"
            );
        }
    }

    /// Sourcing the lab's env.sh keeps a `HETPILOT_CONFIG` of one's own and sets the lab's
    /// only when none is set.
    #[test]
    fn the_lab_env_keeps_a_config_already_set() {
        let dir = tempfile::tempdir().unwrap();
        let env_sh = dir.path().join("env.sh");
        // The heredoc expanded as start.sh expands it, with a made-up lab root.
        let render = format!(
            "LAB=/lab CONF=/lab/slurm.conf AGENT=/bin/agent SSH_PORT=2222\n\
             cat > {} <<EOF\n{}\nEOF\n",
            env_sh.display(),
            lab_heredoc("env.sh")
        );
        let status = std::process::Command::new("bash")
            .args(["-c", &render])
            .status()
            .unwrap();
        assert!(status.success());
        let config_after = |preset: Option<&str>| {
            let mut cmd = std::process::Command::new("bash");
            cmd.arg("-c")
                .arg(format!(
                    ". {} && printf %s \"$HETPILOT_CONFIG\"",
                    env_sh.display()
                ))
                .env_remove("HETPILOT_CONFIG");
            if let Some(v) = preset {
                cmd.env("HETPILOT_CONFIG", v);
            }
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(
            config_after(Some("/home/me/site.toml")),
            "/home/me/site.toml"
        );
        assert_eq!(config_after(None), "/lab/manager.toml");
    }
}
