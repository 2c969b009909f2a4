//! The value syntax of application files, shared by `hetpilot submit` and the manager's
//! `POST /v1/workflows?format=tasks`: memory sizes (`512M`, `2G`) and durations (`10m`).

use anyhow::{anyhow, bail};

/// Parses `512M`, `2G`, `1024K`, `300` (MiB) into MiB.
pub fn parse_memory_mb(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let (num, unit) = t.split_at(
        t.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(t.len()),
    );
    let value: f64 = num
        .parse()
        .map_err(|_| anyhow!("`{s}` is not a memory size (like 512M or 2G)"))?;
    let mib = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" | "M" => value,
        "K" => value / 1024.0,
        "G" => value * 1024.0,
        "T" => value * 1024.0 * 1024.0,
        _ => bail!("`{s}`: unknown unit `{unit}` (use K, M, G or T)"),
    };
    let mib = mib.ceil();
    // 2^64 is the first f64 past u64::MAX (`as` would saturate a larger size silently);
    // `value` is digits and dots, never NaN, so infinity is caught here too.
    if mib >= 18_446_744_073_709_551_616.0 {
        bail!("`{s}` is too large a memory size");
    }
    Ok(mib as u64)
}

/// Parses `90s`, `10m`, `2h`, or plain seconds.
pub fn parse_duration_secs(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(secs);
    }
    let d = humantime::parse_duration(t)
        .map_err(|e| anyhow!("`{s}` is not a duration (like 90s, 10m, 2h): {e}"))?;
    Ok(d.as_secs().max(1))
}
