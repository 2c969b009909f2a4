//! Property tests of application files and the submit flags' value syntax: arbitrary and
//! mutated TOML gives an application or an error naming the file, never a panic.

use super::*;
use hetpilot_core::fuzz::inputs;
use proptest::prelude::*;

const SAMPLES: &[&str] = &[
    "name = \"blast\"\ncommand = \"grep {} db\"\nmemory = \"1G\"\ntimeout = \"2m\"\ncores = 2\nmax_attempts = 4\nworkdir = \"/tmp\"\noutput_dir = \"out\"\n[env]\nX = \"1\"\n[tasks]\neach_line = \"in.txt\"\n",
    "command = \"run {}\"\ninputs = [\"in/{}.dat\", { uri = \"/shared/db\", size = 4 }]\noutputs = [\"{}.out\"]\n[tasks]\narray = \"1-100\"\n",
    "command = \"blast {query}\"\ndata_intensive = true\n[tasks]\nparams = [{ query = \"q1\" }, { query = 7 }]\n",
    "command = \"echo {line}\"\n[tasks]\nlines = [\"a\", \"b\"]\n",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn app_files_never_panic(text in inputs(SAMPLES)) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("in.txt"), "a\nb\n").unwrap();
        let path = dir.path().join("app.toml");
        match parse(&text, &path) {
            Ok(spec) => prop_assert!(spec.validate().is_ok()),
            Err(e) => prop_assert!(e.to_string().contains("app.toml"), "{e}"),
        }
    }

    #[test]
    fn value_syntaxes_never_panic(text in inputs(&["512M", "2GiB", "10m", "1-100", "7", "1.5T"])) {
        let _ = parse_memory_mb(&text);
        let _ = parse_duration_secs(&text);
        if let Ok(tasks) = parse_range(&text) {
            prop_assert!(!tasks.is_empty());
        }
    }
}
