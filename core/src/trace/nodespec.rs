//! PBS/TORQUE node specifications as recorded in MetaCentrum traces (field 21 of Alea's SWF):
//! `count:ppn=P:prop:...[#excl]` groups joined by `+`, e.g. `8:ppn=8:x86_64:cl_zegox` or
//! `1:ppn=1+3:ppn=2`. Inside a group, `ppn=`, `gpus=`, `mem=` are resources, `^x` excludes
//! a property or host, `host=h` or a dotted host name pins a host, everything else is a
//! required property. A group may start with a host name instead of a count (one node).

use super::size::parse_size;

/// One `+`-separated group of a nodespec: identical nodes with their resources and
/// properties (the scheduler's placement block is `sched::NodeGroup`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodespecGroup {
    /// Number of nodes in the group.
    pub count: u32,
    /// CPUs per node (`ppn`, default 1).
    pub(crate) ppn: u32,
    /// GPUs per node (`gpus=`, default 0).
    pub(crate) gpus: u32,
    /// Memory per node when the group states it (`mem=3gb`), bytes.
    pub(crate) mem: Option<u64>,
    /// Required properties (`x86_64`, `cl_zewura`, `nodecpus80`, ...).
    pub(crate) properties: Vec<String>,
    /// Excluded properties or hosts (`^zewura12.cerit-sc.cz`).
    pub(crate) excluded: Vec<String>,
    /// Required host (`host=zewura10` or `zegox20.cerit-sc.cz`).
    pub(crate) host: Option<String>,
    /// `#excl`: whole nodes.
    pub(crate) exclusive: bool,
}

/// A nodespec that cannot be understood.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("nodespec {spec:?}: {reason}")]
pub struct NodespecError {
    pub(crate) spec: String,
    pub(crate) reason: String,
}

/// Parse a nodespec into its groups.
pub fn parse_nodespec(spec: &str) -> Result<Vec<NodespecGroup>, NodespecError> {
    let err = |reason: String| NodespecError {
        spec: spec.to_string(),
        reason,
    };
    let spec_trimmed = spec.trim();
    if spec_trimmed.is_empty() {
        return Err(err("empty".into()));
    }
    let mut groups = Vec::new();
    for group_text in spec_trimmed.split('+') {
        let (body, flags) = match group_text.split_once('#') {
            Some((b, f)) => (b, Some(f)),
            None => (group_text, None),
        };
        let mut group = NodespecGroup {
            count: 1,
            ppn: 1,
            exclusive: flags.is_some_and(|f| f.split('#').any(|x| x == "excl")),
            ..NodespecGroup::default()
        };
        for (position, token) in body.split(':').enumerate() {
            let token = token.trim();
            if token.is_empty() {
                return Err(err(format!("empty item in group {group_text:?}")));
            }
            let positive = |v: &str, what: &str| -> Result<u32, NodespecError> {
                v.parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0 || what == "gpus")
                    .ok_or_else(|| err(format!("{what}={v:?} is not a valid count")))
            };
            if position == 0 && token.chars().all(|c| c.is_ascii_digit()) {
                group.count = positive(token, "node count")?;
            } else if let Some(v) = token.strip_prefix("ppn=") {
                group.ppn = positive(v, "ppn")?;
            } else if let Some(v) = token.strip_prefix("gpus=") {
                group.gpus = positive(v, "gpus")?;
            } else if let Some(v) = token.strip_prefix("mem=") {
                group.mem = Some(parse_size(v).map_err(|e| err(e.to_string()))?);
            } else if let Some(v) = token.strip_prefix("host=") {
                group.host = Some(v.to_string());
            } else if let Some(v) = token.strip_prefix('^') {
                group.excluded.push(v.to_string());
            } else if token.contains('.') {
                group.host = Some(token.to_string());
            } else {
                group.properties.push(token.to_string());
            }
        }
        groups.push(group);
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_metacentrum_forms() {
        let g = parse_nodespec("1:ppn=64:x86_64:cl_zewura#excl").unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!((g[0].count, g[0].ppn), (1, 64));
        assert_eq!(g[0].properties, vec!["x86_64", "cl_zewura"]);
        assert!(g[0].exclusive);
        let g = parse_nodespec("1:ppn=1+3:ppn=2").unwrap();
        assert_eq!(
            g.iter().map(|x| (x.count, x.ppn)).collect::<Vec<_>>(),
            vec![(1, 1), (3, 2)]
        );
        let g = parse_nodespec("1:ppn=12:^zewura12.cerit-sc.cz:mem=3gb").unwrap();
        assert_eq!(g[0].excluded, vec!["zewura12.cerit-sc.cz"]);
        assert_eq!(g[0].mem, Some(3 << 30));
        let g = parse_nodespec("zegox20.cerit-sc.cz:ppn=4").unwrap();
        assert_eq!(g[0].host.as_deref(), Some("zegox20.cerit-sc.cz"));
        assert_eq!(g[0].count, 1);
    }

    #[test]
    fn rejects_nonsense() {
        assert!(parse_nodespec("").is_err());
        assert!(parse_nodespec("1:ppn=0")
            .unwrap_err()
            .to_string()
            .contains("ppn"));
        assert!(parse_nodespec("1::ppn=2").is_err());
        assert!(parse_nodespec("1:mem=lots").is_err());
    }
}
