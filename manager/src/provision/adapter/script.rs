//! Job scripts from the templates in `deploy/templates/`: placeholder filling, shell
//! quoting of every value that reaches the shell, and validation of every value that
//! reaches a batch directive.

use super::node_launch::{launch, pbs_place};
use super::resources::gpu_placeholders;
use super::{AdapterError, JobScript, PilotSpec};
use crate::provision::profile::{PlatformProfile, Sandbox};
use std::time::Duration;

pub(super) const SLURM: &str = include_str!("../../../../deploy/templates/slurm.sh");
pub(super) const PBS_PRO: &str = include_str!("../../../../deploy/templates/pbs.sh");
pub(super) const TORQUE: &str = include_str!("../../../../deploy/templates/torque.sh");
pub(super) const LOADLEVELER: &str = include_str!("../../../../deploy/templates/loadleveler.cmd");
pub(super) const LAUNCH: &str = include_str!("../../../../deploy/templates/launch.sh");
const BODY: &str = include_str!("../../../../deploy/templates/body.sh");

/// `s` as one single-quoted POSIX shell word: `'` becomes `'\''`, nothing else is special.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `value` if it can stand in a batch directive (`#SBATCH`, `#PBS`, `# @`) as one plain
/// word; directive parsers do not follow shell quoting, so anything else is refused.
fn directive_word(field: &str, value: &str) -> Result<String, AdapterError> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-+/:=@%,".contains(c);
    if value.is_empty() || !value.chars().all(plain) {
        return Err(AdapterError::Render(format!(
            "{field} {value:?} cannot go into a batch directive: use letters, digits and \
             `._-+/:=@%,` only (no spaces or quotes)"
        )));
    }
    Ok(value.to_string())
}

/// `HH:MM:SS` with as many hours as needed (Slurm, PBS, TORQUE and LoadLeveler accept it).
pub fn hms(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Replaces each `{{name}}` by its value, in one pass (a value that itself holds `{{...}}`
/// stays as it is); a line holding a placeholder whose value is `None` is dropped, and so
/// is a line holding only a placeholder whose value is empty.
fn fill(template: &str, values: &[(&str, Option<String>)]) -> String {
    let mut out = String::new();
    for line in template.lines() {
        if let Some(filled) = fill_line(line, values) {
            out.push_str(&filled);
            out.push('\n');
        }
    }
    out
}

fn fill_line(line: &str, values: &[(&str, Option<String>)]) -> Option<String> {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}") else {
            break;
        };
        let name = &rest[start + 2..start + 2 + len];
        let value = values
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("template placeholder {{{{{name}}}}} has no value"));
        match &value.1 {
            None => return None,
            Some(v) if v.is_empty() && line.trim() == format!("{{{{{name}}}}}") => return None,
            Some(v) => {
                out.push_str(&rest[..start]);
                out.push_str(v);
            }
        }
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    Some(out)
}

/// The files a pilot's batch output goes to: `<work_dir>/<pilot>.out` and `.err`.
pub fn output_paths(pilot: &PilotSpec) -> (String, String) {
    let dir = pilot.work_dir.trim_end_matches('/');
    (
        format!("{dir}/{}.out", pilot.name),
        format!("{dir}/{}.err", pilot.name),
    )
}

/// The shell part every script ends with: setup lines, the agent's environment, the
/// agent-binary check, the start of the agent or of one per node (see [`launch`];
/// `AGENT --version` for a probe). Every value is shell-quoted.
fn body(profile: &PlatformProfile, pilot: &PilotSpec) -> String {
    let q = |s: &str| Some(shell_quote(s));
    fill(
        BODY,
        &[
            ("setup", Some(profile.setup.join("\n"))),
            ("manager_url", q(&pilot.manager_url)),
            (
                "tls_fingerprint",
                pilot.tls_fingerprint.as_deref().map(shell_quote),
            ),
            ("platform", q(&profile.name)),
            ("pilot", q(&pilot.name)),
            ("credential_path", q(&pilot.credential_path)),
            ("work_dir", q(&pilot.work_dir)),
            ("walltime_secs", Some(pilot.walltime.as_secs().to_string())),
            ("agent_binary", q(&profile.agent_binary)),
            ("launch", Some(launch(profile, pilot))),
            (
                "sandbox",
                (profile.sandbox != Sandbox::None).then(|| profile.sandbox.name().to_string()),
            ),
        ],
    )
}

/// Refuses pilots the platform cannot hold.
fn check_shape(profile: &PlatformProfile, pilot: &PilotSpec) -> Result<(), AdapterError> {
    if pilot.nodes == 0 || pilot.nodes > profile.nodes {
        return Err(AdapterError::Render(format!(
            "pilot {} asks for {} nodes; platform {} has {}",
            pilot.name, pilot.nodes, profile.name, profile.nodes
        )));
    }
    if pilot.cores_per_node == 0 || pilot.cores_per_node > profile.cores_per_node {
        return Err(AdapterError::Render(format!(
            "pilot {} asks for {} cores per node; platform {} nodes have {}",
            pilot.name, pilot.cores_per_node, profile.name, profile.cores_per_node
        )));
    }
    if pilot.walltime.as_secs() < 60 {
        return Err(AdapterError::Render(format!(
            "pilot {} walltime {:?} is under a minute",
            pilot.name, pilot.walltime
        )));
    }
    Ok(())
}

/// Renders a batch-system template (Slurm, PBS, TORQUE, LoadLeveler): directives from the
/// profile and the pilot, then the shared body.
pub(super) fn render_batch(
    template: &str,
    profile: &PlatformProfile,
    pilot: &PilotSpec,
) -> Result<JobScript, AdapterError> {
    check_shape(profile, pilot)?;
    let (stdout_path, stderr_path) = output_paths(pilot);
    let word = |field: &str, v: &str| directive_word(field, v).map(Some);
    let optional = |field: &str, v: &Option<String>| match v {
        Some(v) => word(field, v),
        None => Ok(None),
    };
    let mut values = vec![
        ("job_name", word("pilot name", &pilot.name)?),
        ("queue", optional("queue", &profile.queue)?),
        ("account", optional("account", &profile.account)?),
        ("nodes", Some(pilot.nodes.to_string())),
        ("cores_per_node", Some(pilot.cores_per_node.to_string())),
        ("pbs_place", pbs_place(pilot)),
        ("walltime", Some(hms(pilot.walltime))),
        ("stdout_path", word("work_dir", &stdout_path)?),
        ("stderr_path", word("work_dir", &stderr_path)?),
        ("body", Some(body(profile, pilot).trim_end().to_string())),
    ];
    values.extend(gpu_placeholders(profile));
    let text = fill(template, &values);
    Ok(JobScript {
        path: pilot.script_path.clone(),
        text,
        stdout_path,
        stderr_path,
        hosts: pilot.hosts.clone(),
    })
}

/// Renders the launch script of the ssh and local adapters (no directives: every value
/// is shell-quoted, so any name is safe).
pub(super) fn render_launch(
    profile: &PlatformProfile,
    pilot: &PilotSpec,
) -> Result<JobScript, AdapterError> {
    check_shape(profile, pilot)?;
    let (stdout_path, stderr_path) = output_paths(pilot);
    // The comment line carries the name too: keep it to one line, whatever it holds.
    let comment_name = pilot.name.replace(['\n', '\r'], " ");
    let text = fill(
        LAUNCH,
        &[
            ("job_name", Some(comment_name)),
            ("body", Some(body(profile, pilot).trim_end().to_string())),
        ],
    );
    Ok(JobScript {
        path: pilot.script_path.clone(),
        text,
        stdout_path,
        stderr_path,
        hosts: pilot.hosts.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{pilot, profile};
    use super::*;
    use crate::provision::profile::AdapterKind;
    use std::os::unix::fs::PermissionsExt;

    const HOSTILE: &[&str] = &[
        "$(touch /tmp/PWNED)",
        "`touch /tmp/PWNED`",
        "a'b\"c",
        "'; touch /tmp/PWNED; '",
        "line\nbreak; touch /tmp/PWNED",
        "with space",
        "back\\slash $HOME ${X:-y} !",
    ];

    #[test]
    fn quoting_round_trips_through_a_real_shell() {
        for s in HOSTILE {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), *s);
        }
    }

    #[test]
    fn hostile_names_cannot_reach_batch_directives() {
        for s in HOSTILE {
            let mut p = pilot();
            p.name = s.to_string();
            let err = render_batch(SLURM, &profile(AdapterKind::Slurm), &p).unwrap_err();
            assert!(err.to_string().contains("pilot name"), "{err}");
            let mut p = pilot();
            p.work_dir = format!("/scratch/{s}");
            assert!(render_batch(PBS_PRO, &profile(AdapterKind::Pbs), &p).is_err());
            let mut prof = profile(AdapterKind::LoadLeveler);
            prof.queue = Some(s.to_string());
            assert!(render_batch(LOADLEVELER, &prof, &pilot()).is_err());
        }
    }

    /// Renders a launch script whose every name is hostile, runs it with a fake agent that
    /// prints its environment, and checks the values arrived intact and nothing ran.
    #[test]
    fn hostile_names_reach_the_agent_intact_and_run_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("PWNED");
        let hostile = format!(
            "x$(touch {m})`touch {m}`'\"\n; touch {m} # {{{{agent_binary}}}}",
            m = marker.display()
        );
        let agent = dir.path().join("agent with space");
        std::fs::write(
            &agent,
            "#!/bin/sh\nprintf '%s\\0' \"$HETPILOT_URL\" \"$HETPILOT_PLATFORM\" \"$HETPILOT_PILOT\" \
             \"$HETPILOT_AGENT_TOKEN_FILE\" \"$HETPILOT_WORK_DIR\" \"$HETPILOT_WALLTIME_END\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut prof = profile(AdapterKind::Local);
        prof.name = hostile.clone();
        prof.agent_binary = agent.to_str().unwrap().into();
        prof.setup.clear();
        let mut p = pilot();
        p.name = hostile.clone();
        p.manager_url = hostile.clone();
        p.credential_path = hostile.clone();
        p.work_dir = hostile.clone();
        let script = render_launch(&prof, &p).unwrap();
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script.text)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!marker.exists(), "a hostile name ran a command");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let values: Vec<&str> = stdout.split('\0').collect();
        assert_eq!(values[..5], [hostile.as_str(); 5]);
        let end: u64 = values[5].parse().unwrap();
        assert!((before + 5400..before + 5400 + 60).contains(&end), "{end}");
    }

    #[test]
    fn a_missing_agent_binary_exits_127_with_a_reason() {
        let mut prof = profile(AdapterKind::Local);
        prof.agent_binary = "/no/such/hetpilot-agent".into();
        prof.setup.clear();
        let script = render_launch(&prof, &pilot()).unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script.text)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(127));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("/no/such/hetpilot-agent is missing or not executable"),
            "{err}"
        );
    }

    #[test]
    fn the_credential_itself_is_never_in_a_script() {
        let script = render_batch(SLURM, &profile(AdapterKind::Slurm), &pilot()).unwrap();
        assert!(script
            .text
            .contains("HETPILOT_AGENT_TOKEN_FILE='/scratch/hetpilot/darth-p17.token'"));
        assert!(
            !script.text.contains("TOKEN="),
            "only the file's path is passed"
        );
    }

    #[test]
    fn a_sandboxed_platforms_agents_are_told_so_and_delete_their_credential() {
        let mut p = profile(AdapterKind::Slurm);
        let plain = render_batch(SLURM, &p, &pilot()).unwrap().text;
        assert!(!plain.contains("HETPILOT_SANDBOX"), "{plain}");
        assert!(
            plain.ends_with("exec \"$agent\" --delete-token-file\n"),
            "{plain}"
        );
        p.sandbox = Sandbox::Bwrap;
        for text in [
            render_batch(SLURM, &p, &pilot()).unwrap().text,
            render_launch(&p, &pilot()).unwrap().text,
        ] {
            assert!(text.contains("\nexport HETPILOT_SANDBOX=bwrap\n"), "{text}");
        }
    }

    #[test]
    fn an_https_manager_s_fingerprint_is_handed_to_the_agent() {
        let prof = profile(AdapterKind::Slurm);
        let plain = render_batch(SLURM, &prof, &pilot()).unwrap().text;
        assert!(!plain.contains("HETPILOT_TLS_FINGERPRINT"), "{plain}");
        let mut p = pilot();
        p.tls_fingerprint = Some("ab".repeat(32));
        let tls = render_batch(SLURM, &prof, &p).unwrap().text;
        let line = format!("export HETPILOT_TLS_FINGERPRINT='{}'\n", "ab".repeat(32));
        assert!(tls.contains(&line), "{tls}");
    }

    #[test]
    fn every_template_is_filled_completely() {
        let p = profile(AdapterKind::Slurm);
        for template in [SLURM, PBS_PRO, TORQUE, LOADLEVELER] {
            let text = render_batch(template, &p, &pilot()).unwrap().text;
            assert!(!text.contains("{{"), "{text}");
        }
        assert!(!render_launch(&p, &pilot()).unwrap().text.contains("{{"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn any_string_survives_quoting(s in "[^\\x00]{0,40}") {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_quote(&s)))
                .output()
                .unwrap();
            proptest::prop_assert_eq!(String::from_utf8(out.stdout).unwrap(), s);
        }
    }

    #[test]
    fn shapes_beyond_the_platform_are_refused() {
        let mut p = pilot();
        p.nodes = 5;
        assert!(render_batch(SLURM, &profile(AdapterKind::Slurm), &p).is_err());
        let mut p = pilot();
        p.cores_per_node = 9;
        assert!(render_launch(&profile(AdapterKind::Local), &p).is_err());
        assert_eq!(hms(Duration::from_secs(49 * 3600 + 61)), "49:01:01");
    }
}
