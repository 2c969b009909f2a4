//! Property tests of runtime profiles (applications × platforms, the two-level scheduler's
//! TOML): arbitrary text and the shipped profile with random edits give a profile or an
//! error naming the file, never a panic.

use super::*;
use crate::fuzz::inputs;
use proptest::prelude::*;

const SAMPLES: &[&str] = &[include_str!("../../../profiles/two-level/profile.toml")];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn runtime_profiles_never_panic(text in inputs(SAMPLES)) {
        match RuntimeProfile::from_toml_str("profile.toml", &text) {
            Ok(p) => {
                for a in 0..p.applications().len() {
                    for j in 0..p.platforms().len() {
                        let r = p.one_core(a, j);
                        prop_assert!(r.is_finite() && r > 0.0);
                    }
                }
            }
            Err(e) => prop_assert!(e.to_string().contains("profile.toml"), "{e}"),
        }
    }
}
