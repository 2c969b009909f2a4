//! Property tests of the Slurm output parsers (`sbatch --parsable`, `squeue`, `sacct`):
//! arbitrary and mutated outputs give states or a parse error, never a panic.

use super::*;
use hetpilot_core::fuzz::inputs;
use proptest::prelude::*;

const SQUEUE: &[&str] = &[
    "12|RUNNING|None|0\n13|PENDING|JobHeldUser|0\n14|COMPLETED|None|256\n",
    "15|CANCELLED by 0|None|15\n16|COMPLETING|None|0\n",
];
const SACCT: &[&str] =
    &["12|COMPLETED|0:0\n12.batch|COMPLETED|0:0\n13|CANCELLED by 0|0:15\n14|FAILED|2:0\n"];
const SBATCH: &[&str] = &["1234\n", "1234;cluster\n"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn squeue_never_panics(text in inputs(SQUEUE)) {
        let _ = parse_squeue(&text);
    }

    #[test]
    fn sacct_never_panics(text in inputs(SACCT)) {
        for (id, _) in parse_sacct(&text) {
            prop_assert!(!id.0.contains('.'));
        }
    }

    #[test]
    fn sbatch_never_panics(text in inputs(SBATCH)) {
        if let Ok(id) = parse_sbatch(&text) {
            prop_assert!(id.0.bytes().all(|b| b.is_ascii_digit()));
        }
    }
}
