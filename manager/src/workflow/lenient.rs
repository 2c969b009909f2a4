//! Lenient typed reading of workflow JSON: a field of an unexpected type reads as absent
//! (as `serde_json::Value`'s `as_str` / `as_f64` / `as_array` would make of it), and what
//! no field keeps is read past as it streams by, so reading a file costs about what is
//! kept of it, never a `Value` tree of the whole file.

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A JSON string or number, kept; any other value is read past.
#[derive(Debug, Default, Clone, PartialEq)]
pub enum Scalar {
    /// The field is not there.
    #[default]
    Absent,
    Str(String),
    /// A non-negative integer.
    UInt(u64),
    /// Any other number.
    Num(f64),
    /// `null`, a boolean, an array or an object.
    Other,
}

impl Scalar {
    /// Whether the field is there (whatever its type).
    pub fn is_present(&self) -> bool {
        *self != Scalar::Absent
    }

    /// The string, if it is one.
    pub fn into_string(self) -> Option<String> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Scalar::UInt(n) => Some(n as f64),
            Scalar::Num(x) => Some(x),
            _ => None,
        }
    }

    /// The non-negative integer, if it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Scalar::UInt(n) => Some(n),
            _ => None,
        }
    }
}

/// A JSON object read as `T` (`None`: the field is absent or not an object).
#[derive(Debug)]
pub struct Object<T>(pub Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Object(None)
    }
}

/// A JSON array read as its entries (`None`: the field is absent or not an array).
#[derive(Debug)]
pub struct List<T>(pub Option<Vec<T>>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(None)
    }
}

impl<T> List<T> {
    /// The entries (none when the field was not a list).
    pub fn into_vec(self) -> Vec<T> {
        self.0.unwrap_or_default()
    }
}

/// How the entries of a JSON array are kept as they stream in: each is read as `T`, and
/// `keep` (given its index) makes what the collection keeps of it, if anything; an `Err`
/// refuses the file with that message.
pub type Keep<T, U> = fn(usize, T) -> Result<Option<U>, String>;

/// Reads a JSON array of at most `max` entries into `C` through `keep`, refusing a longer
/// one as soon as its entry `max + 1` is read, with "more than MAX WHAT" (`None`: the
/// field is not an array).
pub fn collect<'de, D, T, U, C>(
    d: D,
    max: usize,
    what: &'static str,
    keep: Keep<T, U>,
) -> Result<Option<C>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
    C: Default + Extend<U>,
{
    d.deserialize_any(CollectVisitor {
        max,
        what,
        keep,
        into: PhantomData,
    })
}

/// The strings of a JSON array, its other entries dropped (empty: the field is absent or
/// not an array).
#[derive(Debug, Default)]
pub struct Strings(pub Vec<String>);

/// Reads past a map's entries.
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Reads past a sequence's entries.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Visitor methods that read a JSON null, boolean, number or string as `$none`.
macro_rules! scalars_read_as {
    ($none:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(match u64::try_from(v) {
            Ok(n) => Scalar::UInt(n),
            Err(_) => Scalar::Num(v as f64),
        })
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::UInt(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Num(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        skip_seq(seq)?;
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar, A::Error> {
        skip_map(map)?;
        Ok(Scalar::Other)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Object<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_read_as!(Object(None));

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Object<T>, A::Error> {
        skip_seq(seq)?;
        Ok(Object(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjectVisitor(PhantomData))
    }
}

struct CollectVisitor<T, U, C> {
    max: usize,
    what: &'static str,
    keep: Keep<T, U>,
    into: PhantomData<C>,
}

impl<'de, T, U, C> Visitor<'de> for CollectVisitor<T, U, C>
where
    T: Deserialize<'de>,
    C: Default + Extend<U>,
{
    type Value = Option<C>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_read_as!(None);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<C>, A::Error> {
        let mut kept = C::default();
        let mut read = 0;
        while let Some(entry) = seq.next_element()? {
            if read == self.max {
                return Err(de::Error::custom(format_args!(
                    "more than {} {}",
                    self.max, self.what
                )));
            }
            kept.extend((self.keep)(read, entry).map_err(de::Error::custom)?);
            read += 1;
        }
        Ok(Some(kept))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<C>, A::Error> {
        skip_map(map)?;
        Ok(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        collect(d, usize::MAX, "entries", |_, t| Ok(Some(t))).map(List)
    }
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let entries = List::<Scalar>::deserialize(d)?.into_vec();
        Ok(Strings(
            entries
                .into_iter()
                .filter_map(Scalar::into_string)
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct Probe {
        s: Scalar,
        o: Object<Inner>,
        l: List<Scalar>,
        names: Strings,
    }

    #[derive(Deserialize, Debug)]
    struct Inner {
        x: Scalar,
    }

    fn probe(text: &str) -> Probe {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn each_field_reads_as_value_would_read_it() {
        let p = probe(
            r#"{"s": "a", "o": {"x": 3, "y": [1]}, "l": [1, "b"], "names": ["c", 1, {}, "d"]}"#,
        );
        assert_eq!(p.s, Scalar::Str("a".into()));
        assert_eq!(p.o.0.unwrap().x.as_u64(), Some(3));
        assert_eq!(p.l.into_vec().len(), 2);
        assert_eq!(p.names.0, ["c", "d"]);
        // Numbers as `Value::as_f64` / `as_u64` see them.
        for (text, f, u) in [
            ("7", Some(7.0), Some(7)),
            ("-2", Some(-2.0), None),
            ("1.5", Some(1.5), None),
            ("10.0", Some(10.0), None),
            ("\"7\"", None, None),
        ] {
            let s = probe(&format!(r#"{{"s": {text}}}"#)).s;
            assert_eq!((s.as_f64(), s.as_u64()), (f, u), "{text}");
        }
    }

    #[test]
    fn a_field_of_another_type_reads_as_absent_and_is_read_past() {
        let p =
            probe(r#"{"s": {"deep": [[[1]]]}, "o": [1, 2], "l": {"a": 1}, "names": "x", "z": 1}"#);
        assert_eq!(p.s, Scalar::Other);
        assert!(p.s.is_present());
        assert!(p.o.0.is_none());
        assert!(p.l.0.is_none());
        assert!(p.names.0.is_empty());
        let p = probe(r#"{"s": null, "o": null, "l": true, "names": 3}"#);
        assert_eq!(p.s, Scalar::Other);
        assert!(p.o.0.is_none() && p.l.0.is_none() && p.names.0.is_empty());
        assert!(!probe("{}").s.is_present());
    }

    #[derive(Deserialize, Debug)]
    struct Bounded {
        #[serde(deserialize_with = "odd_numbers")]
        l: Option<Vec<u64>>,
    }

    /// At most five numbers, the odd ones kept; a string is refused.
    fn odd_numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
        collect(d, 5, "things", |i, s: Scalar| match s {
            Scalar::Str(_) => Err(format!("entry #{i} is a string")),
            s => Ok(s.as_u64().filter(|n| n % 2 == 1)),
        })
    }

    #[test]
    fn a_collected_list_keeps_what_keep_makes_of_each_entry_and_no_more_than_its_bound() {
        let ok: Bounded = serde_json::from_str(r#"{"l": [1, 2, 3, 4, 5]}"#).unwrap();
        assert_eq!(ok.l.unwrap(), [1, 3, 5]);
        let err = serde_json::from_str::<Bounded>(r#"{"l": [1, 2, 3, 4, 5, 6, "#).unwrap_err();
        // Refused at the sixth entry, before the (truncated) rest is read.
        assert!(err.to_string().starts_with("more than 5 things"), "{err}");
        let err = serde_json::from_str::<Bounded>(r#"{"l": [1, "x"]}"#).unwrap_err();
        assert!(err.to_string().starts_with("entry #1 is a string"), "{err}");
        let not_a_list: Bounded = serde_json::from_str(r#"{"l": {"a": [1]}}"#).unwrap();
        assert!(not_a_list.l.is_none());
    }
}
