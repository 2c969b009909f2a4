//! The layout holds: the manager's top-level modules import each other without a cycle
//! (each `crate::MODULE` path outside comments is an edge), and so do the pure core's and
//! the research crate's; the core and the research library do no I/O.
//! A cycle means two modules can no longer be understood, tested or moved apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            rust_files(&entry.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// Module → the crate's other top-level modules it names.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        // The test builders (`test_apps`) exist only in tests and build what the modules
        // they serve define: they are no part of the architecture.
        if name == "lib" || name == "main" || name == "test_apps" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&path, &mut files);
        modules.entry(name).or_default().extend(files);
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    modules
        .iter()
        .map(|(name, files)| {
            let mut to = BTreeSet::new();
            for f in files {
                let text = std::fs::read_to_string(f).unwrap();
                for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                    for (i, _) in line.match_indices("crate::") {
                        let target: String = line[i + 7..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if target != *name && names.contains(&target) {
                            to.insert(target);
                        }
                    }
                }
            }
            (name.clone(), to)
        })
        .collect()
}

/// A cycle of the graph, if there is one (depth-first search).
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut c = path[i..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

fn src(crate_dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_dir)
        .join("src")
}

#[test]
fn the_managers_modules_import_each_other_without_a_cycle() {
    let graph = imports(&src("manager"));
    assert!(graph.contains_key("service") && graph["service"].contains("db"));
    assert_eq!(cycle(&graph), None, "{graph:#?}");
}

/// The lines of a module's files (comments left out) that name something it must not use.
fn impure_lines(files: &[PathBuf], banned: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(b) = banned.iter().find(|b| line.contains(*b)) {
                found.push(format!("{}:{}: {b}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

/// What a pure module must not name: what the standard library would still allow once the
/// I/O crates are out of its dependencies: no clock, files, network, processes, threads
/// or unseeded randomness.
const IMPURE: [&str; 9] = [
    "std::fs",
    "std::net",
    "std::process",
    "std::thread",
    "SystemTime",
    "Instant::now",
    "thread_rng",
    "rand::rng()",
    "std::env",
];

/// The pure core does no I/O: the live manager and the simulators share it. Its crate
/// cannot name the manager's shell, and `deploy/test-all.sh` keeps the I/O crates out of
/// its dependencies; this checks what the standard library would still allow.
#[test]
fn the_pure_core_does_no_io() {
    let graph = imports(&src("core"));
    assert!(graph["control"].contains("queue"), "{graph:#?}");
    let mut files = Vec::new();
    rust_files(&src("core"), &mut files);
    // The property tests' input generators only run in tests.
    files.retain(|f| !f.ends_with("fuzz.rs") && !f.to_string_lossy().ends_with("_tests.rs"));
    assert!(files.len() > 50, "{} files", files.len());
    let found = impure_lines(&files, &IMPURE);
    assert!(found.is_empty(), "the core does I/O:\n{}", found.join("\n"));
    // The check can fail: the shell does all of these.
    let mut service = Vec::new();
    rust_files(&src("manager").join("service"), &mut service);
    assert!(!impure_lines(&service, &["std::fs"]).is_empty());
}

#[test]
fn the_cores_modules_import_each_other_without_a_cycle() {
    let graph = imports(&src("core"));
    assert!(graph["control"].contains("sched"), "{graph:#?}");
    assert_eq!(cycle(&graph), None, "{graph:#?}");
}

/// The research library (simulators, reports) is pure like the core, so a simulation is a
/// function of its settings and seed; only the `hetpilot-research` binary's `cli` reads
/// files, clocks and processes.
#[test]
fn the_research_library_does_no_io() {
    let root = src("research");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.retain(|f| {
        !f.starts_with(root.join("cli"))
            && !f.ends_with("main.rs")
            && !f.to_string_lossy().ends_with("_tests.rs")
    });
    assert!(files.len() > 20, "{} files", files.len());
    let found = impure_lines(&files, &IMPURE);
    assert!(
        found.is_empty(),
        "the research library does I/O:\n{}",
        found.join("\n")
    );
    // The check can fail: the binary's command line does all of these.
    let mut cli = Vec::new();
    rust_files(&root.join("cli"), &mut cli);
    assert!(!impure_lines(&cli, &["std::fs"]).is_empty());
}

#[test]
fn the_research_crates_modules_import_each_other_without_a_cycle() {
    let graph = imports(&src("research"));
    assert!(graph["report"].contains("sim"), "{graph:#?}");
    assert_eq!(cycle(&graph), None, "{graph:#?}");
}

#[test]
fn a_cycle_is_found() {
    let graph = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    assert_eq!(
        cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
