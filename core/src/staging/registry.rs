//! Every staging policy by name: Het-HPS (ours and as the paper gives it), the paper's
//! baselines (online MinMin/MaxMin/Sufferage, SJF, HPS) and the clairvoyant MCT planners.
//! Kept apart from the `StagingPolicy` trait, which the policies implement, so the trait's
//! module does not depend on its implementations.

use super::baselines::{Hps, Mct, MctSelection, OnlineMctPolicy, Sjf};
use super::het_hps::HetHps;
use super::policy::StagingPolicy;

hetpilot_protocol::named_enum! {
    /// A staging policy, by its name on the command line and in reports; report order
    /// first, then the online heuristics' sensitivity variants.
    pub enum StagingAlgorithm("staging algorithm") {
        /// Het-HPS as we run it (capacity-aware start).
        HetHps = "het-hps",
        /// Het-HPS as the paper gives it.
        HetHpsPaper = "het-hps-paper",
        /// HPS.
        Hps = "hps",
        /// Online MinMin.
        MinMin = "minmin",
        /// Online MaxMin.
        MaxMin = "maxmin",
        /// Online Sufferage.
        Sufferage = "sufferage",
        /// Shortest job first.
        Sjf = "sjf",
        /// Clairvoyant MCT, MinMin selection.
        MinMinClairvoyant = "minmin-clairvoyant",
        /// Clairvoyant MCT, MaxMin selection.
        MaxMinClairvoyant = "maxmin-clairvoyant",
        /// Clairvoyant MCT, Sufferage selection.
        SufferageClairvoyant = "sufferage-clairvoyant",
        /// Online MinMin over idle nodes only (sensitivity variant).
        MinMinIdle = "minmin-idle",
        /// Online MaxMin over idle nodes only (sensitivity variant).
        MaxMinIdle = "maxmin-idle",
        /// Online Sufferage over idle nodes only (sensitivity variant).
        SufferageIdle = "sufferage-idle",
    }
}

impl StagingAlgorithm {
    /// Whether the reports run it by default; the sensitivity variants are named with
    /// `--algorithms`.
    pub fn in_report(self) -> bool {
        !matches!(
            self,
            StagingAlgorithm::MinMinIdle
                | StagingAlgorithm::MaxMinIdle
                | StagingAlgorithm::SufferageIdle
        )
    }

    /// The policy.
    pub fn build(self) -> Box<dyn StagingPolicy> {
        let online = |rule, idle_only| -> Box<dyn StagingPolicy> {
            Box::new(OnlineMctPolicy { rule, idle_only })
        };
        match self {
            StagingAlgorithm::HetHps => Box::new(HetHps::default()),
            StagingAlgorithm::HetHpsPaper => Box::new(HetHps {
                capacity_aware_start: false,
                ..HetHps::default()
            }),
            StagingAlgorithm::Hps => Box::new(Hps::default()),
            StagingAlgorithm::MinMin => online(MctSelection::MinMin, false),
            StagingAlgorithm::MinMinIdle => online(MctSelection::MinMin, true),
            StagingAlgorithm::MaxMin => online(MctSelection::MaxMin, false),
            StagingAlgorithm::MaxMinIdle => online(MctSelection::MaxMin, true),
            StagingAlgorithm::Sufferage => online(MctSelection::Sufferage, false),
            StagingAlgorithm::SufferageIdle => online(MctSelection::Sufferage, true),
            StagingAlgorithm::MinMinClairvoyant => Box::new(Mct(MctSelection::MinMin)),
            StagingAlgorithm::MaxMinClairvoyant => Box::new(Mct(MctSelection::MaxMin)),
            StagingAlgorithm::SufferageClairvoyant => Box::new(Mct(MctSelection::Sufferage)),
            StagingAlgorithm::Sjf => Box::new(Sjf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_algorithm_builds_the_policy_of_its_name() {
        for &algorithm in StagingAlgorithm::ALL {
            assert_eq!(algorithm.build().name(), algorithm.as_str());
        }
        let e = "fastest"
            .parse::<StagingAlgorithm>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("het-hps") && e.contains("sufferage-idle"), "{e}");
    }
}
