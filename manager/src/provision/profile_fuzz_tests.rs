//! Property tests of platform profiles (the provisioner's TOML files): arbitrary text and
//! the shipped profiles with random edits give a profile or an error naming the file,
//! never a panic.

use super::*;
use hetpilot_core::fuzz::inputs;
use proptest::prelude::*;

const SAMPLES: &[&str] = &[
    include_str!("../../../profiles/platforms/lab-small.toml"),
    include_str!("../../../profiles/platforms/lab-ssh.toml"),
    include_str!("../../../profiles/platforms/lab-torque.toml"),
    include_str!("../../../profiles/platforms/darth.toml"),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn platform_profiles_never_panic(text in inputs(SAMPLES)) {
        match PlatformProfile::parse(&text, Path::new("p.toml")) {
            Ok(p) => {
                prop_assert!(is_safe_name(&p.name));
                prop_assert!(p.nodes >= 1 && p.cores_per_node >= 1 && p.memory_per_node_mb >= 1);
                prop_assert!(p.pilot_walltime <= p.max_walltime);
            }
            Err(e) => prop_assert!(e.to_string().contains("p.toml"), "{e}"),
        }
    }
}
