//! How an application, or one workflow task, asks for resources besides cores and memory:
//! its `gpus` and `resources` fields, read with errors that name the field, and the one
//! [`ResourceRequest`] they make together.

use crate::resources::{ResourceAmount, ResourceError, ResourceRequest, GPUS};
use crate::spec::SpecError;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// Reads a `gpus` field, refusing NaN, negatives, zero, 2^64 and shares finer than
/// `0.0001` with an error naming the field.
pub fn de_gpus<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ResourceAmount>, D::Error> {
    Option::<f64>::deserialize(d)?
        .map(|x| {
            ResourceAmount::parse(x).map_err(|e| D::Error::custom(format!("field `gpus`: {e}")))
        })
        .transpose()
}

/// Reads a `resources` table of named counts, refusing a hostile amount with an error
/// naming `resources.NAME`.
pub fn de_named<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, ResourceAmount>, D::Error> {
    BTreeMap::<String, f64>::deserialize(d)?
        .into_iter()
        .map(|(name, x)| match ResourceAmount::parse(x) {
            Ok(a) => Ok((name, a)),
            Err(e) => Err(D::Error::custom(format!(
                "field `resources.{}`: {e}",
                shown(&name)
            ))),
        })
        .collect()
}

/// A name as an error shows it: at most 40 characters, escaped.
fn shown(name: &str) -> String {
    name.chars()
        .take(40)
        .collect::<String>()
        .escape_debug()
        .to_string()
}

/// The request `gpus` and `resources` make, checked: valid names, at most
/// [`crate::resources::MAX_RESOURCE_NAMES`], GPUs as whole devices or a share of one, and
/// no `gpus` inside `resources` (GPUs are asked for with their own field). `whose` prefixes
/// problems (`task \`t1\`: `), empty for an application.
pub fn request_of(
    gpus: Option<ResourceAmount>,
    named: &BTreeMap<String, ResourceAmount>,
    whose: &str,
) -> Result<ResourceRequest, SpecError> {
    if named.contains_key(GPUS) {
        return Err(SpecError::Field {
            field: "resources",
            problem: format!("{whose}ask for GPUs with the `gpus` field, not in `resources`"),
        });
    }
    let mut request = ResourceRequest(named.clone());
    if let Some(g) = gpus {
        request.0.insert(GPUS.to_string(), g);
    }
    request.validate().map_err(|e| SpecError::Field {
        field: match e {
            ResourceError::SplitDevices(_) => "gpus",
            _ => "resources",
        },
        problem: format!("{whose}{e}"),
    })?;
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    struct Fields {
        #[serde(default, deserialize_with = "de_gpus")]
        gpus: Option<ResourceAmount>,
        #[serde(default, deserialize_with = "de_named")]
        resources: BTreeMap<String, ResourceAmount>,
    }

    #[test]
    fn hostile_amounts_are_refused_naming_the_field() {
        for (json, want) in [
            (r#"{"gpus": -1}"#, "field `gpus`: -1 must be above 0"),
            (r#"{"gpus": 0}"#, "field `gpus`: 0 must be above 0"),
            (r#"{"gpus": 18446744073709551616}"#, "field `gpus`:"),
            (r#"{"gpus": 0.00001}"#, "finer than 0.0001"),
            (r#"{"resources": {"fpga": -2}}"#, "field `resources.fpga`"),
            (r#"{"resources": {"fpga": 1e300}}"#, "more than the limit"),
        ] {
            let err = serde_json::from_str::<Fields>(json)
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{json}: {err}");
        }
        let ok: Fields =
            serde_json::from_str(r#"{"gpus": 0.25, "resources": {"fpga": 1}}"#).unwrap();
        assert_eq!(ok.gpus.unwrap().units(), 2_500);
        assert_eq!(ok.resources["fpga"], ResourceAmount::whole(1).unwrap());
    }

    #[test]
    fn requests_refuse_gpus_among_named_resources_and_split_devices() {
        let one = ResourceAmount::whole(1).unwrap();
        let named: BTreeMap<String, ResourceAmount> = [("gpus".to_string(), one)].into();
        let err = request_of(None, &named, "").unwrap_err().to_string();
        assert!(err.starts_with("field `resources`:"), "{err}");
        let err = request_of(
            Some(ResourceAmount::parse(1.5).unwrap()),
            &BTreeMap::new(),
            "",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("field `gpus`:"), "{err}");
        let bad: BTreeMap<String, ResourceAmount> = [("Bad-Name".to_string(), one)].into();
        let err = request_of(None, &bad, "task `a`: ")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("field `resources`: task `a`: resource name"),
            "{err}"
        );
        let fpga: BTreeMap<String, ResourceAmount> = [("fpga".to_string(), one)].into();
        let req = request_of(Some(ResourceAmount::parse(0.5).unwrap()), &fpga, "").unwrap();
        assert_eq!(req.gpus().units(), 5_000);
        assert_eq!(req.0["fpga"], one);
    }
}
