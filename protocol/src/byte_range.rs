//! The one HTTP `Range` form file servers here honour: a single `bytes=A-B` or `bytes=A-`.
//! Shared by the manager's file service and the agent's file store.

/// A range that is not one satisfiable range of the file (answer 416).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsatisfiable;

/// The inclusive byte range `spec` asks for within a file of `len` bytes.
pub fn parse(spec: &str, len: u64) -> Result<(u64, u64), Unsatisfiable> {
    let (a, b) = spec
        .strip_prefix("bytes=")
        .and_then(|r| r.split_once('-'))
        .ok_or(Unsatisfiable)?;
    let start: u64 = a.trim().parse().map_err(|_| Unsatisfiable)?;
    let end: u64 = match b.trim() {
        "" => len.saturating_sub(1),
        b => b
            .parse::<u64>()
            .map_err(|_| Unsatisfiable)?
            .min(len.saturating_sub(1)),
    };
    if start >= len || end < start {
        return Err(Unsatisfiable);
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::{parse, Unsatisfiable};

    #[test]
    fn one_range_within_the_file() {
        assert_eq!(parse("bytes=0-9", 100), Ok((0, 9)));
        assert_eq!(parse("bytes=90-", 100), Ok((90, 99)));
        assert_eq!(parse("bytes=90-500", 100), Ok((90, 99)), "clipped");
        for bad in [
            "bytes=100-",
            "bytes=5-4",
            "bytes=-5",
            "items=0-1",
            "bytes=0-1,3-4",
        ] {
            assert_eq!(parse(bad, 100), Err(Unsatisfiable), "{bad}");
        }
        assert_eq!(
            parse("bytes=0-", 0),
            Err(Unsatisfiable),
            "nothing in an empty file"
        );
    }
}
