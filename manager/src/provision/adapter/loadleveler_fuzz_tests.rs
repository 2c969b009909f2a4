//! Property tests of the LoadLeveler output parsers (`llsubmit`, `llq`, `llq -l`): arbitrary
//! and mutated outputs give states or a parse error, never a panic.

use super::*;
use hetpilot_core::fuzz::inputs;
use proptest::prelude::*;

const STANDARD: &[&str] = &[include_str!("fixtures/llq-standard.txt")];
const LONG: &[&str] = &[include_str!("fixtures/llq-l-running.txt")];
const LLSUBMIT: &[&str] = &["llsubmit: The job \"login1.example.org.123\" has been submitted.\n"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn llq_standard_never_panics(text in inputs(STANDARD), exit in any::<Option<i32>>()) {
        for code in llq::parse_standard(&text).values() {
            let _ = llq::state_of_code(code, exit);
        }
    }

    #[test]
    fn llq_long_never_panics(text in inputs(LONG)) {
        for step in llq::parse_long(&text).values() {
            let _ = llq::state_of_status(step);
        }
    }

    #[test]
    fn llsubmit_never_panics(text in inputs(LLSUBMIT)) {
        if let Ok(id) = parse_llsubmit(&text) {
            prop_assert!(!id.0.is_empty());
        }
    }
}
