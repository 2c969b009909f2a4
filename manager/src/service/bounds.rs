//! Bounds on what agents send, checked before anything is stored or counted. Every number
//! an agent reports is treated as hostile: a field out of range is refused with a 400 that
//! names it, and measurements are checked against the lease they belong to (a run cannot
//! have lasted longer than its lease has existed, nor used more CPU than its node has) before
//! they reach usage, profiles or bandwidth estimates.

use super::ServiceError;
use hetpilot_protocol::protocol::{RegisterRequest, TaskResult};
use hetpilot_protocol::spec::AppSpec;

/// Most cores an agent may say its node has.
pub const MAX_CORES: u32 = 65_536;
/// Most memory an agent may say its node has: 64 TiB.
pub const MAX_MEMORY_MB: u64 = 64 << 20;
/// Longest host name, batch job id or pilot name.
const MAX_NAME_BYTES: usize = 255;
/// Latest walltime end an agent may announce: year 2200 (unix seconds).
const MAX_WALLTIME_END: u64 = 7_258_118_400;
/// Most task attempts one pull or heartbeat may list.
pub const MAX_LISTED: usize = 100_000;
/// Longest output tail or error text kept from a result.
const MAX_TEXT_BYTES: usize = 64 << 10;
/// Longest reported output path.
const MAX_PATH_BYTES: usize = 4096;
/// Most co-runners or transfers one result may list.
const MAX_LIST: usize = 4096;
fn bad(field: &str, problem: impl std::fmt::Display) -> ServiceError {
    ServiceError::BadRequest(format!("field `{field}`: {problem}"))
}

fn check_name(field: &str, value: &str, required: bool) -> Result<(), ServiceError> {
    if required && value.is_empty() {
        return Err(bad(field, "must not be empty"));
    }
    if value.len() > MAX_NAME_BYTES {
        return Err(bad(field, format!("at most {MAX_NAME_BYTES} bytes")));
    }
    if value.chars().any(char::is_control) {
        return Err(bad(field, "control characters are not allowed"));
    }
    Ok(())
}

/// A host name as parallel runs' host files and launchers list it: letters, digits, `-`,
/// `_` and `.`, not starting with `-` or `.` (a blank would split a host-file line or a
/// launcher's word, a leading `-` read as an option).
fn check_host_name(host: &str) -> Result<(), ServiceError> {
    let safe = host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !host.starts_with(['-', '.']);
    if !safe {
        return Err(bad(
            "hostname",
            format!(
                "{host:?} is not a host name: use letters, digits, `-`, `_` and `.` (parallel \
                 runs' host files and launchers list it)"
            ),
        ));
    }
    Ok(())
}

/// A registration's numbers and names are within bounds.
/// A registration key: 16-128 characters of `A-Z a-z 0-9 _ -`.
fn check_registration_key(key: &str) -> Result<(), ServiceError> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !(16..=128).contains(&key.len()) || !key.chars().all(ok_char) {
        return Err(bad(
            "registration_key",
            "must be 16-128 characters of A-Z a-z 0-9 _ -",
        ));
    }
    Ok(())
}

pub fn check_register(req: &RegisterRequest) -> Result<(), ServiceError> {
    check_name("platform", &req.platform, true)?;
    check_name("hostname", &req.hostname, true)?;
    check_host_name(&req.hostname)?;
    if let Some(job) = &req.batch_job_id {
        check_name("batch_job_id", job, false)?;
    }
    if let Some(pilot) = &req.pilot {
        check_name("pilot", pilot, true)?;
    }
    if let Some(key) = &req.registration_key {
        check_registration_key(key)?;
    }
    if req.cores == 0 || req.cores > MAX_CORES {
        return Err(bad(
            "cores",
            format!("{} is not in 1-{MAX_CORES}", req.cores),
        ));
    }
    if req.memory_mb > MAX_MEMORY_MB {
        return Err(bad(
            "memory_mb",
            format!("{} is more than {MAX_MEMORY_MB} (64 TiB)", req.memory_mb),
        ));
    }
    if let Some(end) = req.walltime_end {
        if end > MAX_WALLTIME_END {
            return Err(bad(
                "walltime_end",
                format!("{end} is not a plausible time (unix seconds)"),
            ));
        }
    }
    Ok(())
}

/// A list of task attempts in a pull or heartbeat is not absurdly long.
pub fn check_listed(field: &str, len: usize) -> Result<(), ServiceError> {
    if len > MAX_LISTED {
        return Err(bad(field, format!("at most {MAX_LISTED} entries")));
    }
    Ok(())
}

fn finite_ms(field: &str, task: &str, v: f64) -> Result<(), ServiceError> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(bad(field, format!("task {task}: {v} is not a duration")));
    }
    Ok(())
}

/// A result is well formed: finite, non-negative measurements and bounded texts. Run before
/// the report touches anything.
pub fn check_result(r: &TaskResult) -> Result<(), ServiceError> {
    let task = r.task.to_string();
    let m = &r.measurements;
    finite_ms("measurements.wall_ms", &task, m.wall_ms)?;
    finite_ms("measurements.user_cpu_ms", &task, m.user_cpu_ms)?;
    finite_ms("measurements.sys_cpu_ms", &task, m.sys_cpu_ms)?;
    for (field, list) in [
        ("measurements.co_runners", &m.co_runners),
        ("measurements.device_co_runners", &m.device_co_runners),
    ] {
        if list.len() > MAX_LIST {
            return Err(bad(field, format!("task {task}: at most {MAX_LIST}")));
        }
    }
    for (field, text, max) in [
        ("output_tail", Some(&r.output_tail), MAX_TEXT_BYTES),
        ("error", r.error.as_ref(), MAX_TEXT_BYTES),
        ("stdout_path", r.stdout_path.as_ref(), MAX_PATH_BYTES),
        ("stderr_path", r.stderr_path.as_ref(), MAX_PATH_BYTES),
    ] {
        if text.is_some_and(|t| t.len() > max) {
            return Err(bad(field, format!("task {task}: at most {max} bytes")));
        }
    }
    if let Some(s) = &r.staging {
        if s.transfers.len() > MAX_LIST {
            return Err(bad(
                "staging.transfers",
                format!("task {task}: at most {MAX_LIST}"),
            ));
        }
        for t in &s.transfers {
            finite_ms("staging.transfers.ms", &task, t.ms)?;
            if !(t.mib_per_s.is_finite() && t.mib_per_s >= 0.0) {
                return Err(bad(
                    "staging.transfers.mib_per_s",
                    format!("task {task}: {} is not a bandwidth", t.mib_per_s),
                ));
            }
            check_name("staging.transfers.endpoint", &t.endpoint, true)?;
        }
    }
    Ok(())
}

/// Most cores one task may ask for.
const MAX_TASK_CORES: u32 = MAX_CORES;
/// Most attempts one task may be given.
const MAX_ATTEMPTS: u32 = 100;

/// Whether `c` changes how surrounding text is displayed (bidirectional overrides and
/// isolates, zero-width and invisible formatting characters): refused in names people read.
fn is_deceptive(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}'
        | '\u{FEFF}' | '\u{061C}')
}

/// An application's resources and name are within bounds (the spec's own `validate`
/// checks its structure).
pub fn check_spec(spec: &AppSpec) -> Result<(), ServiceError> {
    if let Some(c) = spec.name.chars().find(|c| is_deceptive(*c)) {
        return Err(bad(
            "name",
            format!("U+{:04X} (a formatting character) is not allowed", c as u32),
        ));
    }
    if spec.cores > MAX_TASK_CORES {
        return Err(bad(
            "cores",
            format!("{} is more than {MAX_TASK_CORES}", spec.cores),
        ));
    }
    if let Some(v) = spec.variants.iter().find(|v| v.cores > MAX_TASK_CORES) {
        return Err(bad(
            "variants",
            format!(
                "variant `{}`: {} cores is more than {MAX_TASK_CORES}",
                v.name.chars().take(40).collect::<String>().escape_debug(),
                v.cores
            ),
        ));
    }
    if spec.memory_mb > MAX_MEMORY_MB {
        return Err(bad(
            "memory_mb",
            format!("{} is more than {MAX_MEMORY_MB} (64 TiB)", spec.memory_mb),
        ));
    }
    for (field, dir) in [("workdir", &spec.workdir), ("output_dir", &spec.output_dir)] {
        if let Some(dir) = dir {
            check_node_dir(field, dir)?;
        }
    }
    if spec.max_attempts > MAX_ATTEMPTS {
        return Err(bad(
            "max_attempts",
            format!("{} is more than {MAX_ATTEMPTS}", spec.max_attempts),
        ));
    }
    Ok(())
}

/// A directory on the nodes a task names (`workdir`, `output_dir`): a plain path, relative
/// or absolute, without `..` (which could climb out of a shared directory the site set up),
/// control characters, or more than 4096 bytes.
fn check_node_dir(field: &str, dir: &str) -> Result<(), ServiceError> {
    if dir.len() > MAX_PATH_BYTES {
        return Err(bad(field, format!("at most {MAX_PATH_BYTES} bytes")));
    }
    if dir.chars().any(char::is_control) {
        return Err(bad(field, "control characters are not allowed"));
    }
    if dir.split('/').any(|part| part == "..") {
        return Err(bad(field, "a `..` component is not allowed"));
    }
    Ok(())
}

/// Whether `name` is a valid user name: `[a-z_][a-z0-9_-]{0,31}`, like a POSIX login name.
pub fn is_user_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && name.len() <= 32
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{clamp_to_lease, LEASE_SLACK_MS};
    use hetpilot_protocol::protocol::{Measurements, Outcome};
    use hetpilot_protocol::{AppId, TaskRef};

    fn register() -> RegisterRequest {
        RegisterRequest {
            memory_mb: 8192,
            ..super::super::test_support::local_request("node1")
        }
    }

    fn result(wall_ms: f64, cpu_ms: f64) -> TaskResult {
        TaskResult {
            task: TaskRef {
                app: AppId(1),
                index: 0,
            },
            attempt: 1,
            outcome: Outcome::Success,
            exit_code: Some(0),
            signal: None,
            measurements: Measurements {
                wall_ms,
                user_cpu_ms: cpu_ms,
                ..Default::default()
            },
            stdout_path: None,
            stderr_path: None,
            output_tail: String::new(),
            error: None,
            staging: None,
        }
    }

    #[test]
    fn registrations_out_of_bounds_name_the_field() {
        assert!(check_register(&register()).is_ok());
        type Edit = fn(&mut RegisterRequest);
        let cases: [(&str, Edit); 8] = [
            ("memory_mb", |r| r.memory_mb = 1 << 44),
            ("cores", |r| r.cores = 0),
            ("hostname", |r| r.hostname = "a\u{1b}[2J".into()),
            ("hostname", |r| r.hostname = "n1 slots=64".into()),
            ("hostname", |r| r.hostname = "--export=ALL".into()),
            ("hostname", |r| r.hostname = "n[1-9]*".into()),
            ("walltime_end", |r| r.walltime_end = Some(u64::MAX)),
            ("batch_job_id", |r| r.batch_job_id = Some("x".repeat(300))),
        ];
        for (field, edit) in cases {
            let mut r = register();
            edit(&mut r);
            let err = check_register(&r).unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
        }
    }

    #[test]
    fn non_finite_or_negative_measurements_are_refused() {
        for wall in [f64::NAN, f64::INFINITY, -1.0] {
            let err = check_result(&result(wall, 0.0)).unwrap_err().to_string();
            assert!(err.contains("wall_ms"), "{err}");
        }
        assert!(
            check_result(&result(1e300, 0.0)).is_ok(),
            "finite: clamped later"
        );
    }

    #[test]
    fn overlong_co_runner_lists_name_their_field() {
        for field in ["measurements.co_runners", "measurements.device_co_runners"] {
            let mut r = result(1.0, 0.0);
            let list = vec![AppId(2); MAX_LIST + 1];
            if field.ends_with("device_co_runners") {
                r.measurements.device_co_runners = list;
            } else {
                r.measurements.co_runners = list;
            }
            let err = check_result(&r).unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
        }
    }

    #[test]
    fn node_directories_may_not_climb() {
        assert!(check_node_dir("output_dir", "/scratch/alice/out").is_ok());
        assert!(check_node_dir("output_dir", "out/run1").is_ok());
        for bad in ["../x", "out/../../etc", "a\nb", &"x".repeat(5000)] {
            let err = check_node_dir("output_dir", bad).unwrap_err().to_string();
            assert!(err.contains("output_dir"), "{err}");
        }
    }

    #[test]
    fn user_names_are_login_names() {
        for ok in ["alice", "_svc", "a1-b_c", &"a".repeat(32)] {
            assert!(is_user_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "Alice",
            "1abc",
            "a.b",
            "a/b",
            &"a".repeat(33),
            "al\u{202E}ce",
        ] {
            assert!(!is_user_name(bad), "{bad}");
        }
    }

    #[test]
    fn measurements_are_clamped_to_the_lease() {
        let mut r = result(1e300, 1e300);
        assert!(clamp_to_lease(&mut r.measurements, None, 10_000, 2));
        assert_eq!(r.measurements.wall_ms, 15_000.0);
        assert!(r.measurements.user_cpu_ms <= 2.0 * 15_000.0 + LEASE_SLACK_MS);
        let mut honest = result(900.0, 1700.0);
        assert!(!clamp_to_lease(&mut honest.measurements, None, 1_000, 2));
        assert_eq!(honest.measurements.wall_ms, 900.0);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn any_f64() -> impl Strategy<Value = f64> {
            prop_oneof![
                any::<f64>(),
                Just(f64::NAN),
                Just(f64::INFINITY),
                Just(1e300),
                Just(-0.0),
                0.0..1e7
            ]
        }

        proptest! {
            #[test]
            fn any_registration_is_checked_without_panicking(
                cores in any::<u32>(),
                memory_mb in any::<u64>(),
                walltime_end in proptest::option::of(any::<u64>()),
                hostname in ".{0,300}",
            ) {
                let r = RegisterRequest { cores, memory_mb, walltime_end, hostname, ..register() };
                if check_register(&r).is_ok() {
                    // What passes can be turned into bytes and a node without overflow.
                    prop_assert!(r.memory_mb.checked_mul(1 << 20).is_some());
                    prop_assert!((1..=MAX_CORES).contains(&r.cores));
                }
            }

            #[test]
            fn clamped_measurements_always_fit_their_lease(
                wall in any_f64(),
                user in any_f64(),
                sys in any_f64(),
                age in 0u64..u64::MAX / 4,
                cores in any::<u32>(),
            ) {
                let mut r = result(wall, user);
                r.measurements.sys_cpu_ms = sys;
                if check_result(&r).is_ok() {
                    clamp_to_lease(&mut r.measurements, None, age, cores);
                    let m = &r.measurements;
                    prop_assert!(m.wall_ms.is_finite() && m.wall_ms <= age as f64 + LEASE_SLACK_MS);
                    let cpu = m.user_cpu_ms + m.sys_cpu_ms;
                    let max = f64::from(cores.max(1)) * m.wall_ms + LEASE_SLACK_MS;
                    prop_assert!(cpu.is_finite() && cpu <= max * (1.0 + 1e-9), "{cpu} > {max}");
                } else {
                    prop_assert!(!(wall.is_finite() && wall >= 0.0
                        && user.is_finite() && user >= 0.0 && sys.is_finite() && sys >= 0.0));
                }
            }

            #[test]
            fn any_spec_resources_are_checked_without_panicking(
                cores in any::<u32>(),
                memory_mb in any::<u64>(),
                max_attempts in any::<u32>(),
                name in "\\PC{0,40}",
            ) {
                let spec: AppSpec = serde_json::from_value(serde_json::json!({
                    "name": name, "command": "true", "tasks": {"array": {"start": 0, "end": 0}},
                    "cores": cores, "memory_mb": memory_mb, "max_attempts": max_attempts,
                })).unwrap();
                let _ = check_spec(&spec);
            }
        }
    }
}
