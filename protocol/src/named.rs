//! Enums whose values have names: one table gives each variant its name, and from it come
//! the serde names, `Display`, `FromStr` (whose error lists every valid name) and `ALL`.
//! Policies in settings files and error codes on the wire use it, so a name is checked
//! where it is read, against the one list there is.

use std::fmt;

/// A name that is none of an enum's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What the name was meant to be ("first-level policy").
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// Every valid name, in the enum's order.
    pub valid: Vec<&'static str>,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} `{}` (one of: {})",
            self.what,
            self.given.escape_debug(),
            self.valid.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// Declares an enum of unit variants, each with its name:
///
/// ```
/// hetpilot_protocol::named_enum! {
///     /// A colour.
///     pub enum Colour("colour") {
///         /// Red.
///         Red = "red",
///         /// Dark blue.
///         DarkBlue = "dark-blue",
///     }
/// }
/// assert_eq!("dark-blue".parse::<Colour>(), Ok(Colour::DarkBlue));
/// assert_eq!(Colour::Red.to_string(), "red");
/// assert!(Colour::Red == "red");
/// assert_eq!(serde_json::to_string(&Colour::DarkBlue).unwrap(), "\"dark-blue\"");
/// let e = "green".parse::<Colour>().unwrap_err().to_string();
/// assert_eq!(e, "unknown colour `green` (one of: red, dark-blue)");
/// let e = serde_json::from_str::<Colour>("\"green\"").unwrap_err().to_string();
/// assert!(e.starts_with("unknown colour `green` (one of: red, dark-blue)"), "{e}");
/// ```
///
/// The calling crate needs `serde` (with `derive`) among its dependencies.
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:tt, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value's name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// Read through `FromStr`, so that a wrong name in a file or the environment is
        /// answered with every valid one.
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let name = <::std::string::String as serde::Deserialize>::deserialize(d)?;
                name.parse().map_err(<D::Error as serde::de::Error>::custom)
            }
        }

        /// Compares with a name, as reports and tests do.
        impl ::std::cmp::PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::named::UnknownName;

            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| $crate::named::UnknownName {
                        what: $what,
                        given: s.to_owned(),
                        valid: Self::ALL.iter().map(|v| v.as_str()).collect(),
                    })
            }
        }
    };
}
