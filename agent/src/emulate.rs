//! The built-in workflow task emulator (`hetpilot submit --emulate`), in the spirit of
//! WfCommons' WfBench: a task whose command is `hetpilot-emulate` runs the agent's own
//! binary as `hetpilot-agent emulate ...`, a real process that reads each declared input
//! to its end, keeps one core busy for the (scaled) recorded runtime, then writes each
//! declared output at its (scaled) recorded size. So a published workflow instance
//! replays on real agents, with real staging of its files, without its programs.

use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::path::{Component, Path};
use std::time::{Duration, Instant};

/// The program name a task's command uses to ask for the emulator.
pub const PROGRAM: &str = "hetpilot-emulate";

/// The largest file the emulator writes, bytes (the submit side bounds it too).
const MAX_OUTPUT: u64 = 1 << 30;

/// The longest it burns CPU, seconds (a day).
const MAX_RUNTIME_SECS: f64 = 86_400.0;

/// `hetpilot-agent emulate`: what one emulated task does.
#[derive(Debug, clap::Args)]
pub struct EmulateArgs {
    /// Seconds to keep one core busy.
    #[arg(long, default_value_t = 0.0)]
    runtime: f64,
    /// A file to read to its end before computing (repeatable).
    #[arg(long, value_name = "NAME")]
    read: Vec<String>,
    /// A file to write after computing, NAME=BYTES (repeatable).
    #[arg(long, value_name = "NAME=BYTES")]
    write: Vec<String>,
}

/// The command that runs the emulator for a task whose argv starts with [`PROGRAM`]: the
/// agent's own binary and `emulate`, then the task's arguments.
pub fn command(argv: &[String]) -> Result<Vec<String>, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the agent's binary for the emulator: {e}"))?;
    let mut out = vec![exe.to_string_lossy().into_owned(), "emulate".to_string()];
    out.extend(argv.iter().skip(1).cloned());
    Ok(out)
}

/// A relative name inside the run directory (no `..`, not absolute).
fn checked(name: &str) -> anyhow::Result<&Path> {
    let path = Path::new(name);
    if name.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!("`{name}` is not a relative file name");
    }
    Ok(path)
}

/// Runs one emulated task in the current directory.
pub fn run(args: EmulateArgs) -> anyhow::Result<()> {
    run_in(Path::new("."), args)
}

/// Runs one emulated task with its files relative to `dir`.
fn run_in(dir: &Path, args: EmulateArgs) -> anyhow::Result<()> {
    if !(args.runtime.is_finite() && (0.0..=MAX_RUNTIME_SECS).contains(&args.runtime)) {
        bail!(
            "--runtime {} is not in 0..={MAX_RUNTIME_SECS} seconds",
            args.runtime
        );
    }
    let mut outputs = Vec::with_capacity(args.write.len());
    for w in &args.write {
        let (name, bytes) = w
            .rsplit_once('=')
            .with_context(|| format!("--write {w}: expected NAME=BYTES"))?;
        let bytes: u64 = bytes
            .parse()
            .with_context(|| format!("--write {w}: `{bytes}` is not a byte count"))?;
        if bytes > MAX_OUTPUT {
            bail!("--write {w}: more than {MAX_OUTPUT} bytes");
        }
        outputs.push((dir.join(checked(name)?), bytes));
    }
    let mut read = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    for name in &args.read {
        let mut f = std::fs::File::open(dir.join(checked(name)?))
            .with_context(|| format!("cannot open input {name}"))?;
        loop {
            let n = f
                .read(&mut buf)
                .with_context(|| format!("cannot read {name}"))?;
            if n == 0 {
                break;
            }
            read += n as u64;
        }
    }
    let spins = burn(Duration::from_secs_f64(args.runtime));
    let mut written = 0u64;
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ spins;
    for (path, bytes) in outputs {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(&path)
                .with_context(|| format!("cannot create output {}", path.display()))?,
        );
        let mut left = bytes;
        while left > 0 {
            for chunk in buf.chunks_exact_mut(8) {
                // xorshift64: incompressible enough that no layer below can cheat.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                chunk.copy_from_slice(&state.to_le_bytes());
            }
            let n = left.min(buf.len() as u64) as usize;
            f.write_all(&buf[..n])?;
            left -= n as u64;
        }
        f.flush()?;
        written += bytes;
    }
    println!(
        "emulated: read {read} B from {} files, computed {:.3} s, wrote {written} B to {} files",
        args.read.len(),
        args.runtime,
        args.write.len()
    );
    Ok(())
}

/// Keeps one core busy for `d` (wall clock, like the recorded runtime); returns a value
/// of the computation so it cannot be optimized away.
fn burn(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
        }
        std::hint::black_box(x);
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inputs_burns_and_writes_outputs_of_the_asked_sizes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("in.dat"), vec![7u8; 100_000]).unwrap();
        let started = Instant::now();
        let r = run_in(
            dir.path(),
            EmulateArgs {
                runtime: 0.2,
                read: vec!["in.dat".into()],
                write: vec!["out/a.dat=70000".into(), "b=0".into()],
            },
        );
        let took = started.elapsed();
        let bad = run_in(
            dir.path(),
            EmulateArgs {
                runtime: 0.0,
                read: vec![],
                write: vec!["../escape=1".into()],
            },
        );
        let missing = run_in(
            dir.path(),
            EmulateArgs {
                runtime: 0.0,
                read: vec!["nope".into()],
                write: vec![],
            },
        );
        r.unwrap();
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert_eq!(
            std::fs::metadata(dir.path().join("out/a.dat"))
                .unwrap()
                .len(),
            70_000
        );
        assert_eq!(std::fs::metadata(dir.path().join("b")).unwrap().len(), 0);
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("not a relative file name"));
        assert!(missing
            .unwrap_err()
            .to_string()
            .contains("cannot open input nope"));
    }
}
