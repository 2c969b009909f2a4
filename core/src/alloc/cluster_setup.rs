//! The clusters of a trace replay, from the words of a command line: processors per
//! cluster (`--clusters 8,128,128`), their speeds (`--speeds`), or a speed heterogeneity
//! spread over them in a chosen order. `hetpilot simulate live --swf` and
//! `hetpilot-research simulate alloc` both build their clusters here, so they run on the
//! same ones.

use super::model::Cluster;
use super::workload::heterogeneous_speeds;
use std::str::FromStr;

hetpilot_protocol::named_enum! {
    /// Which end of the cluster list is fastest under speed heterogeneity.
    pub enum SpeedOrder("speed order") {
        /// The last cluster fastest.
        Ascending = "ascending",
        /// The first cluster fastest.
        Descending = "descending",
    }
}

/// Why the clusters' words make no clusters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClusterSetupError {
    /// An item of a comma-separated list that is not a number of its kind.
    #[error("{what}: {given:?} is not a valid number")]
    NotANumber {
        /// The flag (`--speeds`).
        what: &'static str,
        /// The item.
        given: String,
    },
    /// `--speeds` names another number of clusters.
    #[error("--speeds lists {given} speeds for {clusters} clusters")]
    SpeedCount {
        /// Speeds given.
        given: usize,
        /// Clusters given.
        clusters: usize,
    },
    /// A speed heterogeneity outside [0, 1).
    #[error("--speed-heterogeneity must be in [0, 1), got {0}")]
    Heterogeneity(f64),
}

/// The items of a comma-separated list (`what` names the flag in errors); empty items
/// are skipped.
pub fn parse_list<T: FromStr>(text: &str, what: &'static str) -> Result<Vec<T>, ClusterSetupError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<T>().map_err(|_| ClusterSetupError::NotANumber {
                what,
                given: s.to_string(),
            })
        })
        .collect()
}

/// Speed heterogeneity `sh` spread over `n` clusters in `order`.
pub fn ordered_speeds(n: usize, sh: f64, order: SpeedOrder) -> Vec<f64> {
    let mut s = heterogeneous_speeds(n, sh);
    if order == SpeedOrder::Descending {
        s.reverse();
    }
    s
}

/// The speeds of `n` clusters: `speeds` (`--speeds`) if given, else `sh` spread in `order`.
pub fn cluster_speeds(
    n: usize,
    speeds: Option<&str>,
    sh: f64,
    order: SpeedOrder,
) -> Result<Vec<f64>, ClusterSetupError> {
    match speeds {
        Some(text) => {
            let s: Vec<f64> = parse_list(text, "--speeds")?;
            if s.len() != n {
                return Err(ClusterSetupError::SpeedCount {
                    given: s.len(),
                    clusters: n,
                });
            }
            Ok(s)
        }
        None if (0.0..1.0).contains(&sh) => Ok(ordered_speeds(n, sh, order)),
        None => Err(ClusterSetupError::Heterogeneity(sh)),
    }
}

/// One cluster per processor count, with its speed.
pub fn build_clusters(procs: &[u32], speeds: &[f64]) -> Vec<Cluster> {
    procs
        .iter()
        .zip(speeds)
        .map(|(&procs, &speed)| Cluster { procs, speed })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_speeds_and_orders_are_read_or_refused_naming_the_flag() {
        assert_eq!(
            parse_list::<u32>("8, 128,,50", "--clusters"),
            Ok(vec![8, 128, 50])
        );
        let err = parse_list::<u32>("8,x", "--clusters")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "--clusters: \"x\" is not a valid number");
        assert_eq!(
            cluster_speeds(2, Some("1,2,3"), 0.0, SpeedOrder::Ascending),
            Err(ClusterSetupError::SpeedCount {
                given: 3,
                clusters: 2
            })
        );
        assert_eq!(
            cluster_speeds(2, None, 1.0, SpeedOrder::Ascending),
            Err(ClusterSetupError::Heterogeneity(1.0))
        );
        let up = cluster_speeds(3, None, 0.5, SpeedOrder::Ascending).unwrap();
        let down = cluster_speeds(3, None, 0.5, SpeedOrder::Descending).unwrap();
        assert!(up[0] < up[2], "{up:?}");
        assert_eq!(down, up.iter().rev().copied().collect::<Vec<_>>());
        assert_eq!("descending".parse(), Ok(SpeedOrder::Descending));
        let clusters = build_clusters(&[8, 16], &[1.0, 2.0]);
        assert_eq!((clusters[1].procs, clusters[1].speed), (16, 2.0));
    }
}
