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

/// The policy called `name`.
pub fn policy_by_name(name: &str) -> Option<Box<dyn StagingPolicy>> {
    Some(match name {
        "het-hps" => Box::new(HetHps::default()),
        "het-hps-paper" => Box::new(HetHps {
            capacity_aware_start: false,
            ..HetHps::default()
        }),
        "hps" => Box::new(Hps::default()),
        "minmin" => Box::new(OnlineMctPolicy(MctSelection::MinMin)),
        "maxmin" => Box::new(OnlineMctPolicy(MctSelection::MaxMin)),
        "sufferage" => Box::new(OnlineMctPolicy(MctSelection::Sufferage)),
        "minmin-clairvoyant" => Box::new(Mct(MctSelection::MinMin)),
        "maxmin-clairvoyant" => Box::new(Mct(MctSelection::MaxMin)),
        "sufferage-clairvoyant" => Box::new(Mct(MctSelection::Sufferage)),
        "sjf" => Box::new(Sjf),
        _ => return None,
    })
}
