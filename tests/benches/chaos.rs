//! Combined faults during 100,000 tasks, on a release build: `cargo build --release --bins
//! && cargo bench -p hetpilot-e2e --bench chaos` (`-- tiny` for a quick check of the bench
//! itself, on any build: `cargo build --bins && cargo test -p hetpilot-e2e --bench chaos --
//! tiny`). Needs root for the slow disk (a block-I/O cgroup); without it the run says why
//! and goes on without that fault.
//!
//! Settings (fixed before any run; `tiny`, `ChaosPlan::small`, in brackets):
//! - one manager, lease timeout 5 s [3 s]; two agents of 8 slots [4] reaching it through
//!   the fault proxy and one agent of 2 slots [1] reaching it directly;
//! - one application of N = 100,000 [3,000] tasks, each `sh -c 'echo $HETPILOT_INDEX >>
//!   LOG'` [and `sleep 0.01`];
//! - at 20 % [15 %] of the tasks done, the manager and one proxied agent are SIGKILLed together,
//!   the manager restarted on its port and a fresh proxied agent started;
//! - at 45 % [40 %], the proxied agents are cut off for 12 s [5 s] (over two leases), then the
//!   partition heals and two fresh proxied agents start (the cut-off ones are taken for
//!   lost, and stop when they hear so);
//! - at 70 % [65 %], the manager's writes to its disk are limited to 20 per second for 10 s [3 s].
//!
//! Checked: one recorded success per task, every index in the tasks' log, and reruns no
//! more than the attempts lost. Measured: the wall time, each fault's length, the tasks done
//! during it and the time from its end to the next task done, the writes made under the
//! limit, the attempts lost and the reruns.

use hetpilot_e2e::chaos::driver::{run, ChaosPlan};
use std::time::Duration;

fn main() {
    let tiny = std::env::args().skip(1).any(|a| a == "tiny");
    let plan = if tiny {
        ChaosPlan::small()
    } else {
        ChaosPlan {
            tasks: 100_000,
            proxied_agents: 2,
            direct_agents: 1,
            slots_per_proxied_agent: 8,
            slots_per_direct_agent: 2,
            task_sleep_ms: 0,
            lease_timeout_secs: 5.0,
            partition_secs: 12.0,
            slow_disk_secs: 10.0,
            slow_disk_write_iops: 20,
            fault_at: [0.2, 0.45, 0.7],
            deadline: Duration::from_secs(3_600),
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let report = run(dir.path(), &plan);
    eprintln!("{report:#?}");
    println!("| fault | at task | lasted (s) | tasks done during | next task done after (s) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for f in &report.faults {
        println!(
            "| {} | {} | {:.2} | {} | {} |",
            f.fault,
            f.done_at_start,
            f.lasted_s,
            f.done_during,
            f.recovered_s
                .map_or("none within 2 min".into(), |s| format!("{s:.2}"))
        );
    }
    if let Some(why) = &report.slow_disk_skipped {
        println!("slow disk not applied: {why}");
    }
    println!(
        "tasks {}, wall {:.1} s ({:.0} tasks/s), successes {}, attempts lost {}, reruns {}, \
         writes under the disk limit {:?}, agents exited {:?}",
        report.tasks,
        report.wall_s,
        report.tasks as f64 / report.wall_s,
        report.successes,
        report.other_attempts,
        report.extra_runs,
        report.slow_disk_writes,
        report.agents_exited
    );
    match report.check() {
        Ok(()) => println!("every task ended exactly once"),
        Err(e) => {
            println!("FAILED: {e}");
            std::process::exit(1);
        }
    }
}
