//! What `hetpilot platforms check` asks a batch system about a profile before any pilot is
//! submitted: whether its partition (Slurm), queue (PBS, TORQUE) or class (LoadLeveler)
//! exists, is open, and takes a pilot's walltime, nodes and cores, and whether the
//! account is accepted where one is set. Each finding is a line for a person; a `Fail`
//! makes the check exit non-zero. The parsers are tested on recorded outputs
//! (`fixtures/`, each saying where it comes from).
//!
//! - Slurm: `scontrol show partition -o` (every partition, one line each), `sinfo` for
//!   the CPUs of the partition's nodes, `sacctmgr` for the account's association, then
//!   `sbatch --test-only` with the pilot's own request as the last word.
//! - PBS Professional and TORQUE: `qstat -Q -f` (every queue; Debian's TORQUE wrapper over
//!   Slurm ignores a queue argument anyway): type, enabled, started, `resources_max` and
//!   `resources_min` of walltime, ncpus, nodes and GPUs, and the queue's user and group
//!   ACLs against `id -un` / `id -Gn` on the login side. PBS has no command that says
//!   whether an account is valid.
//! - GPUs, when the profile sets `gpus_per_node`: the nodes' own (module `gpu_check`).
//! - LoadLeveler: `llclass -l CLASS`: `Wall_clock_limit`, `Max_total_tasks`,
//!   `Max_processors`, `Max_node` and `Maximum_slots`.

use super::{one_line, qstat, PilotSpec};
use crate::provision::profile::PlatformProfile;
use crate::provision::runner::CommandRunner;
use std::collections::BTreeMap;
use std::time::Duration;

/// How a finding bears on the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// Worth knowing, but pilots may still work.
    Warn,
    /// Pilots as the profile asks for them will be refused or never start.
    Fail,
}

/// One line of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub verdict: Verdict,
    pub text: String,
}

fn ok(text: impl Into<String>) -> Finding {
    Finding {
        verdict: Verdict::Ok,
        text: text.into(),
    }
}

fn warn(text: impl Into<String>) -> Finding {
    Finding {
        verdict: Verdict::Warn,
        text: text.into(),
    }
}

fn fail(text: impl Into<String>) -> Finding {
    Finding {
        verdict: Verdict::Fail,
        text: text.into(),
    }
}

/// `HH:MM:SS`, hours unbounded.
fn hms(d: Duration) -> String {
    super::script::hms(d)
}

/// Runs `argv`; its stdout, or a one-line reason it failed (`what` names the command).
fn ask(runner: &dyn CommandRunner, what: &str, argv: &[&str]) -> Result<String, String> {
    match runner.run(argv, None) {
        Ok(out) if out.status == 0 => Ok(out.stdout),
        Ok(out) => Err(format!(
            "`{what}` exited {}: {}",
            out.status,
            one_line(&out.stdout, &out.stderr)
        )),
        Err(e) => Err(format!("`{what}`: {e}")),
    }
}

/// A Slurm time limit: `UNLIMITED`/`INFINITE` is `None`; otherwise `M`, `M:S`, `H:M:S`,
/// `D-H`, `D-H:M` or `D-H:M:S`.
fn slurm_time(s: &str) -> Result<Option<Duration>, String> {
    if matches!(s, "UNLIMITED" | "INFINITE") {
        return Ok(None);
    }
    let bad = || format!("cannot read the time limit {s:?}");
    let num = |p: &str| p.parse::<u64>().map_err(|_| bad());
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (num(d)?, Some(r)),
        None => (0, None),
    };
    let secs = match rest {
        Some(r) => {
            let parts: Vec<&str> = r.split(':').collect();
            let mut hms = [0u64; 3];
            if parts.len() > 3 {
                return Err(bad());
            }
            for (slot, p) in hms.iter_mut().zip(&parts) {
                *slot = num(p)?;
            }
            hms[0] * 3600 + hms[1] * 60 + hms[2]
        }
        None => {
            let parts: Vec<u64> = s.split(':').map(num).collect::<Result<_, _>>()?;
            match parts[..] {
                [m] => m * 60,
                [m, sec] => m * 60 + sec,
                [h, m, sec] => h * 3600 + m * 60 + sec,
                _ => return Err(bad()),
            }
        }
    };
    Ok(Some(Duration::from_secs(days * 86400 + secs)))
}

/// A PBS duration: `[[H:]M:]S` (hours unbounded, seconds may have a fraction).
fn pbs_time(s: &str) -> Option<Duration> {
    let mut secs = 0f64;
    for p in s.trim().split(':') {
        secs = secs * 60.0 + p.parse::<f64>().ok()?;
    }
    Some(Duration::from_secs_f64(secs))
}

/// The leading count of a PBS value such as `4` or `4:ppn=8`.
fn leading_count(s: &str) -> Option<u64> {
    let digits: String = s.trim().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Slurm: every partition of `scontrol show partition -o`, by name.
fn slurm_partitions(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    text.lines()
        .filter(|l| l.starts_with("PartitionName="))
        .map(|l| {
            let fields: BTreeMap<String, String> = l
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (fields["PartitionName"].clone(), fields)
        })
        .collect()
}

/// Asks Slurm about `profile`'s partition for pilots shaped like `pilot`.
pub fn slurm(
    runner: &dyn CommandRunner,
    profile: &PlatformProfile,
    pilot: &PilotSpec,
) -> Vec<Finding> {
    let text = match ask(
        runner,
        "scontrol show partition",
        &["scontrol", "show", "partition", "-o"],
    ) {
        Ok(text) => text,
        Err(e) => return vec![fail(format!("partitions: {e}"))],
    };
    let partitions = slurm_partitions(&text);
    let named = profile.queue.as_deref();
    let found = match named {
        Some(q) => partitions.get(q),
        None => partitions
            .values()
            .find(|p| p.get("Default").is_some_and(|d| d == "YES")),
    };
    let Some(p) = found else {
        let names: Vec<&str> = partitions.keys().map(String::as_str).collect();
        return vec![fail(match named {
            Some(q) => format!(
                "partition `{q}` does not exist (partitions: {})",
                names.join(", ")
            ),
            None => format!(
                "no queue set and no default partition (partitions: {})",
                names.join(", ")
            ),
        })];
    };
    let name = p["PartitionName"].as_str();
    let field = |k: &str| p.get(k).map(String::as_str).unwrap_or("");
    let mut out = Vec::new();
    match field("State") {
        "UP" => {}
        state => out.push(fail(format!(
            "partition `{name}` is {state}: it does not start jobs"
        ))),
    }
    match slurm_time(field("MaxTime")) {
        Ok(Some(max)) if max < pilot.walltime => out.push(fail(format!(
            "partition `{name}` allows at most {} (MaxTime); pilots ask for {} \
             (pilot_walltime)",
            hms(max),
            hms(pilot.walltime)
        ))),
        Ok(_) => {}
        Err(e) => out.push(warn(format!("partition `{name}`: MaxTime: {e}"))),
    }
    let limit = |k: &str| field(k).parse::<u64>().ok();
    if let Some(max) = limit("MaxNodes") {
        if max < u64::from(pilot.nodes) {
            out.push(fail(format!(
                "partition `{name}` allows {max} nodes a job (MaxNodes); pilots ask for {}",
                pilot.nodes
            )));
        }
    }
    if let Some(total) = limit("TotalNodes") {
        if total < u64::from(profile.nodes) {
            out.push(warn(format!(
                "partition `{name}` has {total} nodes; the profile says {} (nodes)",
                profile.nodes
            )));
        }
    }
    if let Some(max) = limit("MaxCPUsPerNode") {
        if max < u64::from(pilot.cores_per_node) {
            out.push(fail(format!(
                "partition `{name}` allows {max} CPUs a node (MaxCPUsPerNode); pilots ask \
                 for {} (cores_per_node)",
                pilot.cores_per_node
            )));
        }
    }
    match ask(runner, "sinfo", &["sinfo", "-h", "-p", name, "-o", "%c"]) {
        Ok(cpus) => {
            let most = cpus
                .lines()
                .filter_map(|l| l.trim().parse::<u32>().ok())
                .max();
            match most {
                Some(most) if most < pilot.cores_per_node => out.push(fail(format!(
                    "the nodes of partition `{name}` have at most {most} CPUs; pilots ask \
                     for {} (cores_per_node)",
                    pilot.cores_per_node
                ))),
                Some(most) => out.push(ok(format!(
                    "partition `{name}`: up, nodes of up to {most} CPUs, MaxTime {}",
                    field("MaxTime")
                ))),
                None => out.push(warn(format!("partition `{name}` lists no nodes"))),
            }
        }
        Err(e) => out.push(warn(format!("CPUs of partition `{name}`: {e}"))),
    }
    out.extend(super::gpu_check::slurm(runner, profile, name));
    if let Some(account) = &profile.account {
        out.push(slurm_account(runner, p, account));
    }
    if out.iter().all(|f| f.verdict != Verdict::Fail) {
        out.push(slurm_test_only(runner, profile, pilot, name));
    }
    out
}

/// Whether partition `p` and Slurm's accounting accept `account`.
fn slurm_account(
    runner: &dyn CommandRunner,
    p: &BTreeMap<String, String>,
    account: &str,
) -> Finding {
    let listed = |k: &str| {
        p.get(k)
            .map(|v| v.split(',').any(|a| a == account))
            .unwrap_or(false)
    };
    let name = &p["PartitionName"];
    let allowed = p.get("AllowAccounts").map(String::as_str).unwrap_or("ALL");
    if allowed != "ALL" && !listed("AllowAccounts") {
        return fail(format!(
            "partition `{name}` does not allow account `{account}` (AllowAccounts={allowed})"
        ));
    }
    if listed("DenyAccounts") {
        return fail(format!(
            "partition `{name}` denies account `{account}` (DenyAccounts)"
        ));
    }
    let query = "sacctmgr -nP show assoc where account=\"$1\" users=\"$(id -un)\" format=account";
    match ask(runner, "sacctmgr", &["sh", "-c", query, "sh", account]) {
        Ok(rows) if rows.lines().any(|l| l.trim() == account) => {
            ok(format!("account `{account}`: an association of this user"))
        }
        Ok(_) => fail(format!(
            "account `{account}` has no association with this user (sacctmgr show assoc)"
        )),
        Err(e) => warn(format!(
            "account `{account}` cannot be checked without Slurm's accounting: {e}"
        )),
    }
}

/// `sbatch --test-only` with the pilot's own request: the scheduler's own verdict.
fn slurm_test_only(
    runner: &dyn CommandRunner,
    profile: &PlatformProfile,
    pilot: &PilotSpec,
    partition: &str,
) -> Finding {
    let (nodes, cores, time) = (
        pilot.nodes.to_string(),
        pilot.cores_per_node.to_string(),
        hms(pilot.walltime),
    );
    let mut argv = vec!["sbatch", "--test-only", "-p", partition, "-N", &nodes];
    argv.extend(["--ntasks-per-node", &cores, "-t", &time]);
    let gres = format!("--gres=gpu:{}", profile.gpus_per_node);
    if profile.gpus_per_node > 0 {
        argv.push(&gres);
    }
    if let Some(account) = &profile.account {
        argv.extend(["-A", account]);
    }
    argv.extend(["--wrap", "true"]);
    match runner.run(&argv, None) {
        // `sbatch --test-only` answers on stderr: "sbatch: Job 2 to start at ...".
        Ok(out) if out.status == 0 => ok(format!(
            "sbatch --test-only: {}",
            one_line(&out.stdout, &out.stderr)
        )),
        Ok(out) => fail(format!(
            "sbatch --test-only refuses the pilots' request: {}",
            one_line(&out.stdout, &out.stderr)
        )),
        Err(e) => fail(format!("sbatch --test-only: {e}")),
    }
}

/// Whether `value` (`True`, `yes`, ...) says yes.
fn yes(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "true" | "yes" | "1"
    )
}

/// Asks PBS (Professional or TORQUE) about `profile`'s queue for pilots shaped like `pilot`.
pub fn pbs(
    runner: &dyn CommandRunner,
    profile: &PlatformProfile,
    pilot: &PilotSpec,
) -> Vec<Finding> {
    let text = match ask(runner, "qstat -Q -f", &["qstat", "-Q", "-f"]) {
        Ok(text) => text,
        Err(e) => return vec![fail(format!("queues: {e}"))],
    };
    let queues = qstat::queues(&text);
    let Some(name) = profile.queue.as_deref() else {
        return vec![ok("no queue set: pilots go to the server's default queue")];
    };
    let Some(q) = queues.get(name) else {
        let mut names: Vec<&str> = queues.keys().map(String::as_str).collect();
        names.sort();
        return vec![fail(format!(
            "queue `{name}` does not exist (queues: {})",
            names.join(", ")
        ))];
    };
    let mut out = judge_pbs_queue(name, q, pilot, profile.gpus_per_node);
    out.extend(super::gpu_check::pbs(runner, profile));
    for (kind, command) in [("user", "id -un"), ("group", "id -Gn")] {
        if !q.get(&format!("acl_{kind}_enable")).is_some_and(|v| yes(v)) {
            continue;
        }
        let allowed = q.get(&format!("acl_{kind}s")).cloned().unwrap_or_default();
        let allowed: Vec<&str> = allowed
            .split(',')
            .map(|a| a.split('@').next().unwrap_or(a).trim())
            .collect();
        match ask(runner, command, &["sh", "-c", command]) {
            Ok(mine) if mine.split_whitespace().any(|m| allowed.contains(&m)) => {}
            Ok(mine) => out.push(fail(format!(
                "queue `{name}` takes jobs of the {kind}s {} only (acl_{kind}s); this login \
                 is {}",
                allowed.join(", "),
                mine.split_whitespace().collect::<Vec<_>>().join(", ")
            ))),
            Err(e) => out.push(warn(format!("the queue's acl_{kind}s: {e}"))),
        }
    }
    if let Some(account) = &profile.account {
        out.push(warn(format!(
            "account `{account}`: PBS has no command that says whether it is valid (not checked)"
        )));
    }
    out
}

/// The limits of PBS queue `name` (its `qstat -Q -f` attributes) against a pilot.
fn judge_pbs_queue(
    name: &str,
    q: &qstat::Attributes,
    pilot: &PilotSpec,
    gpus_per_node: u32,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let attr = |k: &str| q.get(k).map(String::as_str);
    let kind = attr("queue_type").unwrap_or("unknown");
    for state in ["enabled", "started"] {
        if attr(state).is_some_and(|v| !yes(v)) {
            out.push(fail(format!("queue `{name}` is not {state}")));
        }
    }
    if let Some(max) = attr("resources_max.walltime").and_then(pbs_time) {
        if max < pilot.walltime {
            out.push(fail(format!(
                "queue `{name}` allows at most {} (resources_max.walltime); pilots ask for {} \
                 (pilot_walltime)",
                hms(max),
                hms(pilot.walltime)
            )));
        }
    }
    if let Some(min) = attr("resources_min.walltime").and_then(pbs_time) {
        if min > pilot.walltime {
            out.push(fail(format!(
                "queue `{name}` wants at least {} (resources_min.walltime); pilots ask for {}",
                hms(min),
                hms(pilot.walltime)
            )));
        }
    }
    let cpus = u64::from(pilot.nodes) * u64::from(pilot.cores_per_node);
    let nodes = u64::from(pilot.nodes);
    let gpus = nodes * u64::from(gpus_per_node);
    let limits = [
        ("resources_max.ncpus", cpus, "cores", true),
        ("resources_max.nodect", nodes, "nodes", true),
        ("resources_max.nodes", nodes, "nodes", true),
        ("resources_min.ncpus", cpus, "cores", false),
        ("resources_min.nodect", nodes, "nodes", false),
        ("resources_max.ngpus", gpus, "GPUs", true),
        ("resources_min.ngpus", gpus, "GPUs", false),
    ];
    for (key, asked, what, is_max) in limits {
        let Some(limit) = attr(key).and_then(leading_count) else {
            continue;
        };
        let refused = if is_max { asked > limit } else { asked < limit };
        if refused {
            let bound = if is_max { "at most" } else { "at least" };
            out.push(fail(format!(
                "queue `{name}` takes jobs of {bound} {limit} {what} ({key}); pilots ask for \
                 {asked}"
            )));
        }
    }
    if out.is_empty() {
        let walltime = attr("resources_max.walltime").unwrap_or("no limit");
        let routing = match (kind, attr("route_destinations")) {
            ("Route", Some(to)) => format!(", routing to {to}"),
            _ => String::new(),
        };
        out.push(ok(format!(
            "queue `{name}`: {kind}, enabled and started, walltime {walltime}{routing}"
        )));
    }
    out
}

/// LoadLeveler: the fields of class `class` in `llclass -l` output (`Name: ...` opens a
/// class; lines are `Key: value`, indented).
fn llclass_fields(text: &str, class: &str) -> Option<BTreeMap<String, String>> {
    let mut current: Option<BTreeMap<String, String>> = None;
    let mut found = None;
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "Name" {
            if let Some(done) = current.take() {
                if done.get("Name").is_some_and(|n| n == class) {
                    found = Some(done);
                }
            }
            current = Some(BTreeMap::new());
        }
        if let Some(fields) = current.as_mut() {
            fields.insert(key.to_string(), value.to_string());
        }
    }
    if let Some(done) = current {
        if done.get("Name").is_some_and(|n| n == class) {
            found = Some(done);
        }
    }
    found
}

/// The hard limit of a LoadLeveler `Wall_clock_limit`: `1+00:00:00, 23:00:00 (86400
/// seconds, 82800 seconds)` is a day; `undefined` or `unlimited` is none.
fn llclass_seconds(value: &str) -> Option<Duration> {
    let (_, rest) = value.split_once('(')?;
    let secs = rest.split_whitespace().next()?.parse::<u64>().ok()?;
    Some(Duration::from_secs(secs))
}

/// Asks LoadLeveler about `profile`'s class for pilots shaped like `pilot`.
pub fn loadleveler(
    runner: &dyn CommandRunner,
    profile: &PlatformProfile,
    pilot: &PilotSpec,
) -> Vec<Finding> {
    let Some(class) = profile.queue.as_deref() else {
        return vec![ok("no class set: pilots go to the default class")];
    };
    let text = match ask(runner, "llclass", &["llclass", "-l", class]) {
        Ok(text) => text,
        Err(e) => return vec![fail(format!("class `{class}`: {e}"))],
    };
    let Some(fields) = llclass_fields(&text, class) else {
        return vec![fail(format!(
            "class `{class}` does not exist (llclass -l {class}: {})",
            one_line(&text, "")
        ))];
    };
    let mut out = Vec::new();
    if let Some(max) = fields
        .get("Wall_clock_limit")
        .and_then(|v| llclass_seconds(v))
    {
        if max < pilot.walltime {
            out.push(fail(format!(
                "class `{class}` allows at most {} (Wall_clock_limit); pilots ask for {} \
                 (pilot_walltime)",
                hms(max),
                hms(pilot.walltime)
            )));
        }
    }
    let tasks = u64::from(pilot.nodes) * u64::from(pilot.cores_per_node);
    let count = |k: &str| {
        fields
            .get(k)
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|n| *n >= 0)
            .map(|n| n as u64)
    };
    for (key, asked, what) in [
        ("Max_total_tasks", tasks, "tasks"),
        ("Max_processors", tasks, "processors"),
        ("Max_node", u64::from(pilot.nodes), "nodes"),
        ("Maximum_slots", tasks, "slots"),
    ] {
        if let Some(limit) = count(key) {
            if limit < asked {
                out.push(fail(format!(
                    "class `{class}` has at most {limit} {what} ({key}); pilots ask for {asked}"
                )));
            }
        }
    }
    if out.is_empty() {
        let wall = fields
            .get("Wall_clock_limit")
            .map(String::as_str)
            .unwrap_or("undefined");
        out.push(ok(format!("class `{class}`: wall clock limit {wall}")));
    }
    if let Some(account) = &profile.account {
        out.push(warn(format!(
            "account `{account}`: LoadLeveler validates account numbers only at submission \
             (not checked)"
        )));
    }
    out
}

#[cfg(test)]
#[path = "queue_check_tests.rs"]
mod tests;
