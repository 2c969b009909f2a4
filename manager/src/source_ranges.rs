//! The source address ranges an agent registration must come from: a platform's
//! `register_from` and a registration token's `--from`. A token found on disk is then not
//! enough to register an agent from anywhere else. Ranges are CIDR blocks (`10.1.0.0/16`,
//! `2001:db8::/32`; a bare address is a block of one) parsed with `ipnet`. An IPv4-mapped
//! IPv6 address (`::ffff:10.1.2.3`, how a dual-stack listener sees an IPv4 peer) is the
//! IPv4 address it carries, and matches an IPv4 range and a mapped IPv6 range alike.

use ipnet::IpNet;
use std::net::IpAddr;
use std::sync::Arc;
use thiserror::Error;

/// Most ranges one list may hold.
pub const MAX_RANGES: usize = 64;

/// A non-empty list of address ranges (cheap to clone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRanges(Arc<[IpNet]>);

/// Why a list of ranges was refused; the caller names the field.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RangeError {
    #[error("`{0}` is not an address range like 10.1.0.0/16, 2001:db8::/32 or 127.0.0.1")]
    Malformed(String),
    #[error("`{given}` has address bits set past its prefix: write {network}")]
    HostBits { given: String, network: IpNet },
    #[error("no range given: leave it out to allow any source address")]
    Empty,
    #[error("{0} ranges is more than {MAX_RANGES}")]
    TooMany(usize),
}

impl SourceRanges {
    /// Parses ranges, each `ADDRESS/PREFIX` or a bare address.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<SourceRanges, RangeError> {
        if items.is_empty() {
            return Err(RangeError::Empty);
        }
        if items.len() > MAX_RANGES {
            return Err(RangeError::TooMany(items.len()));
        }
        let nets = items
            .iter()
            .map(|item| parse_one(item.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SourceRanges(nets.into()))
    }

    /// Parses a comma-separated list (`--from`, and how a token's ranges are stored).
    pub fn parse_list(text: &str) -> Result<SourceRanges, RangeError> {
        let count = text.split(',').count();
        if count > MAX_RANGES {
            return Err(RangeError::TooMany(count));
        }
        SourceRanges::parse(&text.split(',').collect::<Vec<_>>())
    }

    /// Whether `peer` lies in one of the ranges.
    pub fn contains(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        let mapped = match peer {
            IpAddr::V4(v4) => Some(IpAddr::V6(v4.to_ipv6_mapped())),
            IpAddr::V6(_) => None,
        };
        self.0
            .iter()
            .any(|net| net.contains(&peer) || mapped.is_some_and(|m| net.contains(&m)))
    }

    /// The ranges as written in CIDR form.
    pub fn to_strings(&self) -> Vec<String> {
        self.0.iter().map(IpNet::to_string).collect()
    }
}

impl std::fmt::Display for SourceRanges {
    /// The comma-separated list [`SourceRanges::parse_list`] reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_strings().join(","))
    }
}

/// Longest piece of a refused item quoted back in an error.
const QUOTED: usize = 64;

fn parse_one(item: &str) -> Result<IpNet, RangeError> {
    let item = item.trim();
    let net = item
        .parse::<IpNet>()
        .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| RangeError::Malformed(quoted(item)))?;
    if net.trunc() != net {
        return Err(RangeError::HostBits {
            given: quoted(item),
            network: net.trunc(),
        });
    }
    Ok(net)
}

/// `item` safe to show: at most [`QUOTED`] characters, control characters escaped.
fn quoted(item: &str) -> String {
    let mut shown: String = item.chars().take(QUOTED).collect();
    if shown.len() < item.len() {
        shown.push('…');
    }
    shown.escape_debug().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_inside_and_outside_the_ranges() {
        let r = SourceRanges::parse(&["10.1.0.0/16", "127.0.0.1", "2001:db8::/32"]).unwrap();
        assert_eq!(r.to_string(), "10.1.0.0/16,127.0.0.1/32,2001:db8::/32");
        for inside in ["10.1.255.3", "127.0.0.1", "2001:db8::7"] {
            assert!(r.contains(ip(inside)), "{inside}");
        }
        for outside in ["10.2.0.1", "127.0.0.2", "2001:db9::1", "::1"] {
            assert!(!r.contains(ip(outside)), "{outside}");
        }
        assert_eq!(SourceRanges::parse_list(&r.to_string()).unwrap(), r);
    }

    #[test]
    fn ipv4_mapped_ipv6_is_the_ipv4_address_it_carries() {
        let v4 = SourceRanges::parse(&["10.1.0.0/16"]).unwrap();
        assert!(v4.contains(ip("::ffff:10.1.2.3")));
        assert!(!v4.contains(ip("::ffff:10.2.2.3")));
        let mapped = SourceRanges::parse(&["::ffff:10.1.0.0/112"]).unwrap();
        assert!(mapped.contains(ip("10.1.2.3")));
        assert!(mapped.contains(ip("::ffff:10.1.2.3")));
        assert!(!mapped.contains(ip("10.2.0.1")));
    }

    #[test]
    fn malformed_lists_are_refused_saying_why() {
        use RangeError::*;
        let bad = |items: &[&str]| SourceRanges::parse(items).unwrap_err();
        assert_eq!(bad(&[]), Empty);
        assert_eq!(bad(&["10.0.0.0/33"]), Malformed("10.0.0.0/33".into()));
        assert_eq!(bad(&["10.0.0.300/8"]), Malformed("10.0.0.300/8".into()));
        assert_eq!(bad(&["fe80::1%eth0"]), Malformed("fe80::1%eth0".into()));
        assert_eq!(bad(&[""]), Malformed("".into()));
        assert_eq!(bad(&["any"]), Malformed("any".into()));
        assert_eq!(
            bad(&["10.1.2.3/16"]).to_string(),
            "`10.1.2.3/16` has address bits set past its prefix: write 10.1.0.0/16"
        );
        let long = format!("\u{1b}[31m{}", "9".repeat(10_000));
        let shown = bad(&[long.as_str()]).to_string();
        assert!(shown.len() < 200 && shown.contains("\\u{1b}"), "{shown}");
        let many = vec!["10.0.0.0/8"; MAX_RANGES + 1];
        assert_eq!(bad(&many), TooMany(MAX_RANGES + 1));
        assert_eq!(
            SourceRanges::parse_list(&many.join(",")).unwrap_err(),
            TooMany(MAX_RANGES + 1)
        );
        assert!(SourceRanges::parse_list("10.0.0.0/8,").is_err());
    }
}
