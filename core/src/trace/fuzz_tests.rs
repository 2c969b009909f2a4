//! Property tests of the trace readers (SWF, Alea machine files, PBS nodespecs, sizes and
//! the `[[machine]]` platform profile): arbitrary text and mutated valid samples give a
//! value or a clear error, never a panic.

use super::*;
use crate::fuzz::inputs;
use proptest::prelude::*;

const SWF: &[&str] = &[
    "; Version: 2.2\n; MaxProcs: 128\n\n2 20 5 100 4 -1 -1 -1 50 -1 1 7 1 -1 1 -1 -1 -1\n1 10 0 30 -1 -1 -1 8 60 -1 1 3 1 -1 1 -1 -1 -1\n",
    "0 1356996147 0 56011 64 1 1024 64 86400 68719476736 1 62 1 1 -1 1 1 1 {1241,1241} q_1d 1:ppn=64:x86_64:cl_zewura#excl\n",
];
const MACHINES: &[&str] = &[
    "0\tzewura\t20\t80\t1\t529426432\n1\tzegox\t48\t12\t1\t94035968\n",
    "# c\n15\tadan\t61\t32\t1\t192\t5.9\t2\n",
];
const NODESPECS: &[&str] = &[
    "1:ppn=64:x86_64:cl_zewura#excl",
    "1:ppn=1+3:ppn=2",
    "1:ppn=12:^zewura12.cerit-sc.cz:mem=3gb:gpus=2",
    "zegox20.cerit-sc.cz:ppn=4",
];
const SIZES: &[&str] = &["512GB", "16g", "1.5 KiB", "4096", "3tb"];
const PROFILES: &[&str] = &[
    "[[machine]]\nname = \"t1\"\nnodes = 10\ncpus_per_node = 8\nmemory_per_node = \"16GB\"\n[[machine]]\nname = \"g\"\ncpus_per_node = 4\nmemory_per_node = 1024\ngpus_per_node = 2\nspeed = 1.5\nnode_cost = 3.0\nproperties = [\"gpu\"]\n",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn swf_never_panics(text in inputs(SWF), strict in any::<bool>()) {
        if let Ok(trace) = parse_swf(text.as_bytes(), SwfOptions { strict }) {
            prop_assert_eq!(trace.stats.jobs, trace.jobs.len());
            prop_assert!(trace.jobs.windows(2).all(|w| w[0].submit <= w[1].submit));
            prop_assert!(trace.jobs.iter().all(|j| j.submit.is_finite() && j.submit >= 0.0));
        }
    }

    #[test]
    fn alea_machines_never_panic(text in inputs(MACHINES)) {
        if let Ok(machines) = parse_alea_machines(&text) {
            prop_assert!(!machines.is_empty());
            prop_assert!(machines.iter().all(|m| m.problem().is_none()));
        }
    }

    #[test]
    fn nodespecs_never_panic(text in inputs(NODESPECS)) {
        if let Ok(groups) = parse_nodespec(&text) {
            prop_assert!(groups.iter().all(|g| g.count > 0 && g.ppn > 0));
        }
    }

    #[test]
    fn sizes_never_panic(text in inputs(SIZES)) {
        let _ = parse_size(&text);
    }

    #[test]
    fn platform_profiles_never_panic(text in inputs(PROFILES)) {
        if let Ok(machines) = parse_platform_profile(&text) {
            prop_assert!(machines.iter().all(|m| m.problem().is_none()));
        }
    }
}
