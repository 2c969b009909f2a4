//! Every staging policy by name: Het-HPS (ours and as the paper gives it) and the
//! baselines. Kept apart from the `StagingPolicy` trait, which the policies implement, so
//! the trait's module does not depend on its implementations.

use super::baselines::{Hps, Mct, MctSelection, Sjf};
use super::het_hps::HetHps;
use super::policy::StagingPolicy;

/// Names of all policies, in report order.
pub const POLICY_NAMES: [&str; 7] = [
    "het-hps",
    "het-hps-paper",
    "hps",
    "minmin",
    "maxmin",
    "sufferage",
    "sjf",
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
        "minmin" => Box::new(Mct(MctSelection::MinMin)),
        "maxmin" => Box::new(Mct(MctSelection::MaxMin)),
        "sufferage" => Box::new(Mct(MctSelection::Sufferage)),
        "sjf" => Box::new(Sjf),
        _ => return None,
    })
}
