//! The second level on a shared GPU: which device a fraction of one (`gpus = 0.5`) goes
//! to. The runs holding fractions of one device are its co-runners, as the applications
//! sharing a node are a node's. The co-runner-aware policies (MAF, CA-RR) send the
//! fraction to the device where the measured slowdown is smallest: the worse of this
//! application's slowdown next to the device's current co-runners and each co-runner's
//! slowdown next to this application (runtime with the set / runtime alone on a device).
//! A set not measured yet counts as no slowdown, so it gets tried; an application never
//! measured alone on a device goes to an empty device when there is one, so that its
//! slowdowns have a baseline. All-core keeps applications on devices of their own where
//! it can; random keeps the pool's best fit. Ties go to the best fit: the least room left,
//! then the lowest index.

use super::SecondLevel;
use hetpilot_protocol::AppId;

/// A device with room for the fraction.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceCandidate {
    /// Its index on the agent's node.
    pub index: u32,
    /// Room left on it, in ten-thousandths of a device.
    pub room: u64,
    /// The applications whose runs hold a fraction of it now, sorted, without repeats.
    pub co_runners: Vec<AppId>,
}

/// The measured slowdown of an application next to a set of device co-runners (sorted),
/// `None` where that was not measured; the empty set gives 1 for an application measured
/// alone on a device.
pub type DeviceSlowdown<'a> = &'a dyn Fn(AppId, &[AppId]) -> Option<f64>;

/// The device `policy` gives a fraction of `app`'s among `candidates`; `None` when there
/// is no candidate.
pub fn choose_device(
    policy: SecondLevel,
    app: AppId,
    candidates: &[DeviceCandidate],
    slowdown: DeviceSlowdown<'_>,
) -> Option<u32> {
    let best_fit = |c: &DeviceCandidate| (c.room, c.index);
    let chosen = match policy {
        SecondLevel::Random => candidates.iter().min_by_key(|c| best_fit(c)),
        SecondLevel::AllCore => candidates
            .iter()
            .min_by_key(|c| (c.co_runners.iter().any(|&o| o != app), best_fit(c))),
        SecondLevel::Maf | SecondLevel::CaRoundRobin => {
            let baseline = slowdown(app, &[]).is_some();
            let shared_unexplored = |c: &DeviceCandidate| !baseline && !c.co_runners.is_empty();
            candidates.iter().min_by(|x, y| {
                let (cx, cy) = (cost(app, x, slowdown), cost(app, y, slowdown));
                cx.total_cmp(&cy)
                    .then(shared_unexplored(x).cmp(&shared_unexplored(y)))
                    .then(best_fit(x).cmp(&best_fit(y)))
            })
        }
    };
    chosen.map(|c| c.index)
}

/// The worst measured slowdown that sharing `device` with `app` causes; 1 on a device
/// nobody holds, and for sets not measured (or measured as a speed-up).
fn cost(app: AppId, device: &DeviceCandidate, slowdown: DeviceSlowdown<'_>) -> f64 {
    let measured = |a: AppId, set: &[AppId]| {
        slowdown(a, set)
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(1.0)
    };
    if device.co_runners.is_empty() {
        return 1.0;
    }
    let own = measured(app, &device.co_runners);
    device
        .co_runners
        .iter()
        .filter(|&&o| o != app)
        .map(|&o| measured(o, &[app]))
        .fold(own.max(1.0), f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn device(index: u32, room: u64, co_runners: &[u64]) -> DeviceCandidate {
        DeviceCandidate {
            index,
            room,
            co_runners: co_runners.iter().map(|&a| AppId(a)).collect(),
        }
    }

    /// Slowdowns keyed by (application, co-runner set).
    fn table(rows: &[(u64, &[u64], f64)]) -> HashMap<(AppId, Vec<AppId>), f64> {
        rows.iter()
            .map(|&(a, set, s)| ((AppId(a), set.iter().map(|&x| AppId(x)).collect()), s))
            .collect()
    }

    fn choose(
        policy: SecondLevel,
        app: u64,
        c: &[DeviceCandidate],
        t: &HashMap<(AppId, Vec<AppId>), f64>,
    ) -> Option<u32> {
        choose_device(policy, AppId(app), c, &|a, set| {
            t.get(&(a, set.to_vec())).copied()
        })
    }

    #[test]
    fn a_fraction_avoids_the_device_whose_co_runners_slow_it_most() {
        // Device 0 holds app 2 (half used), device 1 app 3 (half used), device 2 is empty.
        let c = [
            device(0, 5000, &[2]),
            device(1, 5000, &[3]),
            device(2, 10_000, &[]),
        ];
        // App 1 runs 3x slower next to app 2, 1.2x next to app 3.
        let t = table(&[(1, &[], 1.0), (1, &[2], 3.0), (1, &[3], 1.2)]);
        assert_eq!(
            choose(SecondLevel::Maf, 1, &c, &t),
            Some(2),
            "alone beats any slowdown"
        );
        let t = table(&[(1, &[], 1.0), (1, &[2], 3.0), (1, &[3], 0.9)]);
        assert_eq!(
            choose(SecondLevel::Maf, 1, &c, &t),
            Some(1),
            "no slowdown: pack with app 3"
        );
        assert_eq!(choose(SecondLevel::CaRoundRobin, 1, &c, &t), Some(1));
        // The co-runner's own slowdown counts too: app 3 suffers 2x next to app 1.
        let t = table(&[
            (1, &[], 1.0),
            (1, &[2], 3.0),
            (1, &[3], 0.9),
            (3, &[1], 2.0),
        ]);
        assert_eq!(choose(SecondLevel::Maf, 1, &c, &t), Some(2));
    }

    #[test]
    fn unmeasured_sets_are_tried_once_the_application_was_measured_alone() {
        let c = [
            device(0, 10_000, &[]),
            device(1, 2500, &[2]),
            device(2, 5000, &[3]),
        ];
        let alone = table(&[(1, &[], 1.0)]);
        for policy in SecondLevel::ALL
            .iter()
            .copied()
            .filter(|p| *p != SecondLevel::AllCore)
        {
            assert_eq!(choose(policy, 1, &c, &alone), Some(1), "{policy}: best fit");
        }
        // Never measured alone: the empty device first, for a baseline (random: best fit).
        let none = HashMap::new();
        assert_eq!(choose(SecondLevel::Maf, 1, &c, &none), Some(0));
        assert_eq!(choose(SecondLevel::Random, 1, &c, &none), Some(1));
        // Non-finite or non-positive measurements count as none.
        let t = table(&[(1, &[], 1.0), (1, &[2], f64::NAN), (1, &[3], -4.0)]);
        assert_eq!(choose(SecondLevel::Maf, 1, &c, &t), Some(1));
        assert_eq!(choose(SecondLevel::Maf, 1, &[], &t), None);
    }

    #[test]
    fn all_core_keeps_applications_on_devices_of_their_own() {
        let c = [
            device(0, 2500, &[2]),
            device(1, 5000, &[1]),
            device(2, 10_000, &[]),
        ];
        assert_eq!(
            choose(SecondLevel::AllCore, 1, &c, &HashMap::new()),
            Some(1)
        );
        assert_eq!(
            choose(SecondLevel::AllCore, 3, &c, &HashMap::new()),
            Some(2)
        );
        assert_eq!(choose(SecondLevel::Random, 3, &c, &HashMap::new()), Some(0));
    }
}
