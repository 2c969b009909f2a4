//! Property tests of the hMETIS and partition file readers: arbitrary text and mutated valid
//! files give a hypergraph or an error naming a line, never a panic or a huge allocation.

use super::*;
use crate::fuzz::inputs;
use proptest::prelude::*;

const SAMPLES: &[&str] = &[
    "% comment\n2 3\n1 2\n2 3\n",
    "2 3 1\n5 1 2\n7 2 3\n",
    "1 3 10\n1 2 3\n4\n5\n6\n",
    "2 3 11\n5 1 2\n7 2 3\n1\n2\n3\n",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn hmetis_never_panics(text in inputs(SAMPLES)) {
        match read_hmetis(text.as_bytes()) {
            Ok(hg) => {
                // What was read writes back to the same hypergraph.
                prop_assert_eq!(read_hmetis(write_hmetis(&hg).as_bytes()).unwrap(), hg);
            }
            Err(e) => prop_assert!(matches!(e, StagingError::Hmetis { .. }), "{e}"),
        }
    }

    #[test]
    fn partition_files_never_panic(
        text in inputs(&["0\n1\n1\n", "2\n0\n"]),
        n in 0usize..8,
        k in 0usize..4,
    ) {
        if let Ok(parts) = read_partition(text.as_bytes(), n, k) {
            prop_assert_eq!(parts.len(), n);
            prop_assert!(parts.iter().all(|&p| (p as usize) < k));
        }
    }
}
