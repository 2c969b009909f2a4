//! Property tests of the PBS/TORQUE output parsers (`qsub`, `qstat -f` and its job states):
//! arbitrary and mutated outputs give states or a parse error, never a panic.

use super::*;
use hetpilot_core::fuzz::inputs;
use proptest::prelude::*;

const QSTAT: &[&str] = &[
    include_str!("fixtures/qstat-f-torque.txt"),
    include_str!("fixtures/qstat-f-pbspro.txt"),
    include_str!("fixtures/qstat-f-slurm-torque-wrapper.txt"),
];
const QSUB: &[&str] = &["1234.server.domain\n", "77[].pbs\n"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn qstat_never_panics(text in inputs(QSTAT)) {
        for attrs in qstat::parse(&text).values() {
            let _ = job_state(attrs);
        }
    }

    #[test]
    fn qsub_never_panics(text in inputs(QSUB)) {
        if let Ok(id) = parse_qsub(&text) {
            prop_assert!(!id.0.contains(char::is_whitespace));
        }
    }
}
