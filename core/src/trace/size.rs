//! Memory sizes as people write them: `512GB`, `16G`, `1.5TiB`, `2048mb`, `4096` (bytes).
//! Multiples are binary (1 GB = 2^30 bytes), as in PBS/TORQUE and Slurm.

/// Why a size string was not understood.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{text:?} is not a size: write a number with an optional unit B, KB, MB, GB, TB (binary multiples, e.g. 512GB)")]
pub struct SizeError {
    /// The text that is not a size.
    pub text: String,
}

/// Parse a size into bytes.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let err = || SizeError {
        text: text.to_string(),
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| err())?;
    let unit = unit.trim().to_ascii_lowercase();
    let shift = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(err()),
    };
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(err());
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("16GB").unwrap(), 16 << 30);
        assert_eq!(parse_size("16g").unwrap(), 16 << 30);
        assert_eq!(parse_size("512GiB").unwrap(), 512 << 30);
        assert_eq!(parse_size("3gb").unwrap(), 3 << 30);
        assert_eq!(parse_size("1.5 KB").unwrap(), 1536);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("12 parsecs").is_err());
    }
}
