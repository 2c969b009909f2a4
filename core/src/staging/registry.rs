//! Every staging policy by name: Het-HPS (ours and as the paper gives it), the paper's
//! baselines (online MinMin/MaxMin/Sufferage, SJF, HPS) and the clairvoyant MCT planners. Kept apart from the `StagingPolicy` trait, which the policies implement, so
//! the trait's module does not depend on its implementations.

use super::baselines::{Hps, Mct, MctSelection, OnlineMctPolicy, Sjf};
use super::het_hps::HetHps;
use super::policy::StagingPolicy;

/// Names of all policies, in report order.
pub const POLICY_NAMES: [&str; 10] = [
    "het-hps",
    "het-hps-paper",
    "hps",
    "minmin",
    "maxmin",
    "sufferage",
    "sjf",
    "minmin-clairvoyant",
    "maxmin-clairvoyant",
    "sufferage-clairvoyant",
];

/// The online heuristics' sensitivity variants (MCT over idle nodes only), not in
/// [`POLICY_NAMES`]: name them with `--algorithms`.
pub const SENSITIVITY_POLICY_NAMES: [&str; 3] = ["minmin-idle", "maxmin-idle", "sufferage-idle"];

/// The policy called `name`.
pub fn policy_by_name(name: &str) -> Option<Box<dyn StagingPolicy>> {
    Some(match name {
        "het-hps" => Box::new(HetHps::default()),
        "het-hps-paper" => Box::new(HetHps {
            capacity_aware_start: false,
            ..HetHps::default()
        }),
        "hps" => Box::new(Hps::default()),
        "minmin" => Box::new(OnlineMctPolicy {
            rule: MctSelection::MinMin,
            idle_only: false,
        }),
        "minmin-idle" => Box::new(OnlineMctPolicy {
            rule: MctSelection::MinMin,
            idle_only: true,
        }),
        "maxmin" => Box::new(OnlineMctPolicy {
            rule: MctSelection::MaxMin,
            idle_only: false,
        }),
        "maxmin-idle" => Box::new(OnlineMctPolicy {
            rule: MctSelection::MaxMin,
            idle_only: true,
        }),
        "sufferage" => Box::new(OnlineMctPolicy {
            rule: MctSelection::Sufferage,
            idle_only: false,
        }),
        "sufferage-idle" => Box::new(OnlineMctPolicy {
            rule: MctSelection::Sufferage,
            idle_only: true,
        }),
        "minmin-clairvoyant" => Box::new(Mct(MctSelection::MinMin)),
        "maxmin-clairvoyant" => Box::new(Mct(MctSelection::MaxMin)),
        "sufferage-clairvoyant" => Box::new(Mct(MctSelection::Sufferage)),
        "sjf" => Box::new(Sjf),
        _ => return None,
    })
}
