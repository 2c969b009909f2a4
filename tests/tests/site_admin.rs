//! A site admin's first steps with the CLI: `hetpilot init` writes a configuration that
//! `hetpilot serve` runs on, every other command then finds the manager and the admin
//! token through `--config` or `HETPILOT_CONFIG` alone, and errors are one line
//! (backtraces only with `-v`, whatever `RUST_BACKTRACE` says).

use hetpilot_e2e::{bin, free_port, Manager};
use std::path::Path;
use std::process::{Command, Output};

/// `hetpilot ARGS` with none of the variables that would point it at a manager, and with a
/// home of its own (so no default data directory is found).
fn hetpilot(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin("hetpilot"));
    cmd.args(args).env("HOME", home).env_remove("XDG_DATA_HOME");
    for v in [
        "HETPILOT_CONFIG",
        "HETPILOT_URL",
        "HETPILOT_TOKEN",
        "HETPILOT_TOKEN_FILE",
        "HETPILOT_DATA_DIR",
        "HETPILOT_CA_FILE",
        "HETPILOT_TLS_FINGERPRINT",
        "RUST_LOG",
    ] {
        cmd.env_remove(v);
    }
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("running hetpilot")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn every_command_finds_the_manager_through_its_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("manager.toml");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let init = |extra: &[&str]| {
        let mut args = vec!["init", config.to_str().unwrap(), "--listen", &listen];
        args.extend(["--data-dir", data.to_str().unwrap()]);
        args.extend(extra);
        run(&mut hetpilot(&home, &args))
    };
    let o = init(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(
        written.contains("# hetpilot manager configuration"),
        "{written}"
    );
    // A second init keeps the admin's edits unless told otherwise.
    let o = init(&[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("exists already (pass --force"),
        "{}",
        stderr(&o)
    );
    assert!(init(&["--force"]).status.success());

    // The manager runs on that file (the harness adds --data-dir and --listen, which agree).
    let cfg = config.to_str().unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let m = Manager::start_on(&data, port, 30.0, &[("HETPILOT_CONFIG", cfg)]);
    assert_eq!(m.url, format!("http://{listen}"));

    let o = run(&mut hetpilot(&home, &["agents", "--config", cfg]));
    assert!(o.status.success(), "--config: {}", stderr(&o));
    let o = run(hetpilot(&home, &["user", "add", "alice"]).env("HETPILOT_CONFIG", cfg));
    assert!(o.status.success(), "HETPILOT_CONFIG: {}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("hpu_"), "{o:?}");
    // Without the URL file the manager's listen address is enough.
    std::fs::remove_file(data.join("manager.url")).unwrap();
    let o = run(&mut hetpilot(&home, &["agents", "--json", "--config", cfg]));
    assert!(o.status.success(), "listen address: {}", stderr(&o));

    // Without any of it: one line that says what to do.
    let o = run(&mut hetpilot(&home, &["agents"]));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: no manager URL") && err.contains("--config"),
        "{err}"
    );
    drop(m);
}

#[test]
fn errors_are_one_line_and_backtraces_need_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere.toml");
    let args = ["status", "--config", missing.to_str().unwrap()];
    let o = run(hetpilot(dir.path(), &args).env("RUST_BACKTRACE", "1"));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: reading the configuration ") && err.contains("nowhere.toml"),
        "{err}"
    );
    assert!(!err.contains("backtrace"), "{err}");

    let mut verbose = args.to_vec();
    verbose.push("-v");
    let o = run(hetpilot(dir.path(), &verbose).env("RUST_BACKTRACE", "1"));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("Stack backtrace:"), "{err}");
}
