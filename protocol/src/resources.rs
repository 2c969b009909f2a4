//! Named resources: what an agent offers besides cores and memory (GPUs, licences,
//! scratch space, FPGAs) and what a task asks for, as exact fixed-point amounts, so that
//! four `0.25` GPU shares make exactly one device and sums never drift.
//!
//! `gpus` is the one *indexed* resource: an agent offers a list of devices, and a request
//! takes either whole devices (`gpus = 2`) or a fraction of one (`gpus = 0.25`). Every
//! other name is a plain count the agent offers (`licenses = 4`, `scratch_gb = 500`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use thiserror::Error;

/// The name of the indexed GPU resource in requests and offers.
pub const GPUS: &str = "gpus";

/// The most named resources one request or offer may list.
pub const MAX_RESOURCE_NAMES: usize = 16;

/// An amount of a resource in ten-thousandths (the finest share is `0.0001`); on the
/// wire, a number (a whole one when it is whole).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(value_type = f64))]
pub struct ResourceAmount(u64);

/// Why an amount or a resource name was refused.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ResourceError {
    /// Not a finite number.
    #[error("{0} is not a number")]
    NotANumber(String),
    /// Zero or below.
    #[error("{0} must be above 0")]
    NotPositive(String),
    /// Above [`ResourceAmount::MAX_WHOLE`].
    #[error("{0} is more than the limit of {max}", max = ResourceAmount::MAX_WHOLE)]
    TooLarge(String),
    /// Finer than one ten-thousandth.
    #[error("{0} is finer than 0.0001, the smallest share")]
    TooFine(String),
    /// A GPU request above one device that is not a whole number of devices.
    #[error("{0} GPUs: ask for whole devices (1, 2, ...) or a share of one device (below 1)")]
    SplitDevices(String),
    /// A name that is not `[a-z][a-z0-9_]*`, at most 32 bytes, or one kept for cores/memory.
    #[error("resource name `{0}`: use 1-32 lowercase letters, digits or `_`, starting with a letter (not `cores` or `memory`)")]
    Name(String),
    /// More than [`MAX_RESOURCE_NAMES`] names.
    #[error("{0} resource names is more than the limit of {MAX_RESOURCE_NAMES}")]
    TooManyNames(usize),
}

impl ResourceAmount {
    /// Units in one whole resource.
    pub const UNIT: u64 = 10_000;
    /// The most of one resource a request may ask for or an agent offer (whole units).
    pub const MAX_WHOLE: u64 = 1_000_000;

    /// `n` whole units, if within [`Self::MAX_WHOLE`].
    pub fn whole(n: u64) -> Option<ResourceAmount> {
        (n <= Self::MAX_WHOLE).then_some(ResourceAmount(n * Self::UNIT))
    }

    /// An amount of ten-thousandths, if within [`Self::MAX_WHOLE`] whole units.
    pub fn from_units(units: u64) -> Option<ResourceAmount> {
        (units <= Self::MAX_WHOLE * Self::UNIT).then_some(ResourceAmount(units))
    }

    /// A positive amount given as a decimal number; NaN, infinities, zero, negatives,
    /// amounts above [`Self::MAX_WHOLE`] and shares finer than `0.0001` are refused.
    pub fn parse(x: f64) -> Result<ResourceAmount, ResourceError> {
        let shown = format!("{x}");
        if !x.is_finite() {
            return Err(ResourceError::NotANumber(shown));
        }
        if x <= 0.0 {
            return Err(ResourceError::NotPositive(shown));
        }
        if x > Self::MAX_WHOLE as f64 {
            return Err(ResourceError::TooLarge(shown));
        }
        let scaled = x * Self::UNIT as f64;
        let units = scaled.round();
        // A decimal with at most four places lands within rounding error of an integer.
        if (scaled - units).abs() > 1e-6 * scaled.max(1.0) || units < 1.0 {
            return Err(ResourceError::TooFine(shown));
        }
        Ok(ResourceAmount(units as u64))
    }

    /// The amount in ten-thousandths.
    pub fn units(self) -> u64 {
        self.0
    }

    /// The amount as a decimal number (exact for every amount this type holds).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / Self::UNIT as f64
    }

    /// Whether it is a whole number of units.
    pub fn is_whole(self) -> bool {
        self.0.is_multiple_of(Self::UNIT)
    }

    /// Its whole units, rounded down.
    pub fn whole_units(self) -> u64 {
        self.0 / Self::UNIT
    }

    /// Zero.
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self + other`, `None` past `u64`.
    pub fn checked_add(self, other: ResourceAmount) -> Option<ResourceAmount> {
        self.0.checked_add(other.0).map(ResourceAmount)
    }

    /// `self - other`, `None` below zero.
    pub fn checked_sub(self, other: ResourceAmount) -> Option<ResourceAmount> {
        self.0.checked_sub(other.0).map(ResourceAmount)
    }
}

impl fmt::Display for ResourceAmount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.0 / Self::UNIT, self.0 % Self::UNIT);
        if frac == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{frac:04}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

impl Serialize for ResourceAmount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_whole() {
            s.serialize_u64(self.whole_units())
        } else {
            s.serialize_f64(self.as_f64())
        }
    }
}

impl<'de> Deserialize<'de> for ResourceAmount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let x = f64::deserialize(d)?;
        ResourceAmount::parse(x).map_err(serde::de::Error::custom)
    }
}

/// Checks a resource name: `[a-z][a-z0-9_]*`, 1-32 bytes, not `cores` or `memory`
/// (those are fields of their own).
pub fn check_name(name: &str) -> Result<(), ResourceError> {
    let ok = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !matches!(name, "cores" | "memory" | "memory_mb");
    if ok {
        Ok(())
    } else {
        Err(ResourceError::Name(name.chars().take(40).collect()))
    }
}

/// What one task asks for besides cores and memory: resource name → amount (`gpus`
/// among them). Empty: a CPU-only task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct ResourceRequest(pub BTreeMap<String, ResourceAmount>);

impl ResourceRequest {
    /// Checks names, the number of names and the GPU rule (whole devices, or a share of
    /// one device below 1).
    pub fn validate(&self) -> Result<(), ResourceError> {
        if self.0.len() > MAX_RESOURCE_NAMES {
            return Err(ResourceError::TooManyNames(self.0.len()));
        }
        for (name, amount) in &self.0 {
            check_name(name)?;
            if amount.is_zero() {
                return Err(ResourceError::NotPositive(format!("{name} = 0")));
            }
            if name == GPUS && amount.whole_units() >= 1 && !amount.is_whole() {
                return Err(ResourceError::SplitDevices(amount.to_string()));
            }
        }
        Ok(())
    }

    /// The GPUs asked for (zero when none).
    pub fn gpus(&self) -> ResourceAmount {
        self.0.get(GPUS).copied().unwrap_or_default()
    }

    /// Whether it asks for nothing besides cores and memory.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Who made a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum GpuVendor {
    /// NVIDIA (bound with `CUDA_VISIBLE_DEVICES`).
    Nvidia,
    /// AMD (bound with `ROCR_VISIBLE_DEVICES` / `HIP_VISIBLE_DEVICES`).
    Amd,
}

/// One GPU an agent may give to its tasks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GpuDevice {
    /// The device's index on its node, as the driver numbers it (`nvidia-smi`'s index).
    pub index: u32,
    /// The driver's stable id (`GPU-…` for NVIDIA); tasks are bound by it.
    pub uuid: String,
    /// The model, e.g. `NVIDIA H100 80GB HBM3`.
    pub model: String,
    /// Device memory, MiB.
    pub memory_mib: u64,
    /// Who made it.
    pub vendor: GpuVendor,
}

/// The most GPUs one agent may offer.
pub const MAX_GPUS_PER_AGENT: usize = 64;

/// What an agent offers besides cores and memory, sent at registration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResourceOffer {
    /// The GPUs its batch job granted it (all of the node's when no batch system says).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuDevice>,
    /// Plain counts, by name (`licenses`, `scratch_gb`, `fpga`); never `gpus`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub named: BTreeMap<String, ResourceAmount>,
}

impl ResourceOffer {
    /// Whether it offers nothing besides cores and memory.
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty() && self.named.is_empty()
    }
}

/// One GPU, or a share of one, granted to a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GpuShare {
    /// The device's index on the agent's node.
    pub index: u32,
    /// The device's UUID (what the task's `CUDA_VISIBLE_DEVICES` names).
    pub uuid: String,
    /// How much of it: 1 for a whole device.
    pub amount: ResourceAmount,
}

/// The resources one run was granted besides cores, chosen by the manager from the
/// agent's offer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResourceGrant {
    /// The devices (or shares of one) the run may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuShare>,
    /// Plain counts taken from the agent's offer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub named: BTreeMap<String, ResourceAmount>,
}

impl ResourceGrant {
    /// Whether it grants nothing.
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty() && self.named.is_empty()
    }

    /// The devices it grants a fraction of (less than one whole device), by index: the
    /// ones its run may share with other runs.
    pub fn fractional_gpus(&self) -> impl Iterator<Item = u32> + '_ {
        self.gpus
            .iter()
            .filter(|s| s.amount.units() < ResourceAmount::UNIT)
            .map(|s| s.index)
    }
}

/// The grant as a person reads it: `gpus 0,1` for whole devices, `gpus 1 (0.5)` for a
/// share of one, then the plain counts (`licenses 2`), separated by `; `; empty when it
/// grants nothing.
impl fmt::Display for ResourceGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::with_capacity(1 + self.named.len());
        if !self.gpus.is_empty() {
            let devices: Vec<String> = self
                .gpus
                .iter()
                .map(|g| match g.amount.units() {
                    ResourceAmount::UNIT => g.index.to_string(),
                    _ => format!("{} ({})", g.index, g.amount),
                })
                .collect();
            parts.push(format!("{GPUS} {}", devices.join(",")));
        }
        parts.extend(self.named.iter().map(|(name, n)| format!("{name} {n}")));
        f.write_str(&parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_parse_exactly_and_hostile_values_are_refused() {
        assert_eq!(ResourceAmount::parse(0.25).unwrap().units(), 2_500);
        assert_eq!(ResourceAmount::parse(0.0001).unwrap().units(), 1);
        assert_eq!(
            ResourceAmount::parse(2.0).unwrap(),
            ResourceAmount::whole(2).unwrap()
        );
        let four: u64 = (0..4)
            .map(|_| ResourceAmount::parse(0.25).unwrap().units())
            .sum();
        assert_eq!(four, ResourceAmount::UNIT);
        for (x, want) in [
            (f64::NAN, "is not a number"),
            (f64::INFINITY, "is not a number"),
            (-1.0, "must be above 0"),
            (0.0, "must be above 0"),
            (18446744073709551616.0, "more than the limit"),
            (0.00001, "finer than 0.0001"),
            (0.12345, "finer than 0.0001"),
        ] {
            let err = ResourceAmount::parse(x).unwrap_err().to_string();
            assert!(err.contains(want), "{x}: {err}");
        }
    }

    #[test]
    fn grants_show_their_devices_shares_and_counts() {
        let share = |index: u32, x: f64| GpuShare {
            index,
            uuid: format!("GPU-{index}"),
            amount: ResourceAmount::parse(x).unwrap(),
        };
        let two = ResourceGrant {
            gpus: vec![share(0, 1.0), share(1, 1.0)],
            named: BTreeMap::from([("licenses".into(), ResourceAmount::whole(2).unwrap())]),
        };
        assert_eq!(two.to_string(), "gpus 0,1; licenses 2");
        let half = ResourceGrant {
            gpus: vec![share(1, 0.5)],
            ..Default::default()
        };
        assert_eq!(half.to_string(), "gpus 1 (0.5)");
        assert_eq!(ResourceGrant::default().to_string(), "");
    }

    #[test]
    fn amounts_show_and_travel_as_plain_numbers() {
        let a = ResourceAmount::parse(0.25).unwrap();
        assert_eq!(a.to_string(), "0.25");
        assert_eq!(ResourceAmount::whole(3).unwrap().to_string(), "3");
        assert_eq!(serde_json::to_string(&a).unwrap(), "0.25");
        assert_eq!(
            serde_json::to_string(&ResourceAmount::whole(2).unwrap()).unwrap(),
            "2"
        );
        let back: ResourceAmount = serde_json::from_str("0.5").unwrap();
        assert_eq!(back.units(), 5_000);
        let err = serde_json::from_str::<ResourceAmount>("-2").unwrap_err();
        assert!(err.to_string().contains("must be above 0"), "{err}");
        assert!(serde_json::from_str::<ResourceAmount>("\"x\"").is_err());
    }

    #[test]
    fn requests_check_names_and_the_gpu_rule() {
        let req = |pairs: &[(&str, f64)]| {
            ResourceRequest(
                pairs
                    .iter()
                    .map(|(n, a)| (n.to_string(), ResourceAmount::parse(*a).unwrap()))
                    .collect(),
            )
        };
        assert!(req(&[("gpus", 2.0), ("fpga", 1.0)]).validate().is_ok());
        assert!(req(&[("gpus", 0.25)]).validate().is_ok());
        assert_eq!(req(&[("gpus", 0.25)]).gpus().units(), 2_500);
        let err = req(&[("gpus", 1.5)]).validate().unwrap_err().to_string();
        assert!(err.contains("whole devices"), "{err}");
        for bad in ["", "Fpga", "1x", "cores", "memory", "a-b", &"x".repeat(33)] {
            let err = req(&[(bad, 1.0)]).validate().unwrap_err().to_string();
            assert!(err.contains("resource name"), "{bad}: {err}");
        }
        let many: Vec<(String, f64)> = (0..17).map(|i| (format!("r{i}"), 1.0)).collect();
        let many: Vec<(&str, f64)> = many.iter().map(|(n, a)| (n.as_str(), *a)).collect();
        assert!(req(&many).validate().is_err());
    }
}
