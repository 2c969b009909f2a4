//! Combined faults in one run (the chaos driver, `hetpilot_e2e::chaos`): the manager and an
//! agent SIGKILLed together, agents partitioned from the manager for longer than a lease and
//! healed, and the manager's disk slowed, all during one application; every task still ends
//! exactly once. The benchmark `chaos` runs the same with 100,000 tasks.

use hetpilot_e2e::chaos::driver::{run, ChaosPlan};

#[test]
fn every_task_ends_exactly_once_through_combined_faults() {
    let dir = tempfile::tempdir().unwrap();
    let plan = ChaosPlan::small();
    let report = run(dir.path(), &plan);
    eprintln!("{report:#?}");
    report.check().unwrap();
    let expected = if report.slow_disk_skipped.is_some() {
        2
    } else {
        3
    };
    if let Some(why) = &report.slow_disk_skipped {
        eprintln!("the slow disk was skipped: {why}");
    }
    assert_eq!(report.faults.len(), expected, "{report:#?}");
    for f in &report.faults {
        assert!(
            f.recovered_s.is_some(),
            "no task ended within 2 minutes after `{}` ended: {report:#?}",
            f.fault
        );
    }
    // The partition cut leases: some attempts were lost and their tasks ran again.
    assert!(report.other_attempts > 0, "{report:#?}");
}
