//! Test-only input generators for the parsers' property tests: arbitrary text,
//! and valid samples with random edits (hostile numbers and names in place of a token,
//! lines dropped, duplicated or cut short) so that the generated inputs get past the first
//! syntax check and reach the deeper validation.

use proptest::prelude::*;

/// Replacements for one token: numbers past every width, signs, floats' specials, empty,
/// overlong and bidi-override names.
pub(crate) const NASTY: &[&str] = &[
    "-1",
    "0",
    "-0",
    "2147483647",
    "-2147483648",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1152921504606846976",
    "99999999999999999999999999999999999999",
    "1e400",
    "-1e400",
    "1e-400",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "",
    " ",
    "\u{202E}evil",
    "é",
    "💣",
    "\"",
    "'",
    "[",
    "{",
    "=",
    ":",
    ";",
    "%",
    "#",
    "\t",
    "\0",
    "..",
];

/// A very long token (names over 255 bytes, numbers with thousands of digits).
fn long_token() -> impl Strategy<Value = String> {
    prop_oneof![
        (1usize..5000).prop_map(|n| "a".repeat(n)),
        (1usize..5000).prop_map(|n| "9".repeat(n)),
        (1usize..2000).prop_map(|n| "é".repeat(n)),
    ]
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(NASTY).prop_map(str::to_string),
        1 => long_token(),
        2 => "\\PC{0,12}",
    ]
}

/// One edit of a text: the `pos`-th token (maximal run of letters, digits, `.`, `-`, `+`)
/// replaced, a line dropped or duplicated, or the text cut at a character.
#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, String),
    DropLine(usize),
    DuplicateLine(usize),
    Cut(usize),
    Insert(usize, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        6 => (any::<usize>(), token()).prop_map(|(p, t)| Edit::Replace(p, t)),
        1 => any::<usize>().prop_map(Edit::DropLine),
        1 => any::<usize>().prop_map(Edit::DuplicateLine),
        1 => any::<usize>().prop_map(Edit::Cut),
        1 => (any::<usize>(), token()).prop_map(|(p, t)| Edit::Insert(p, t)),
    ]
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '.' | '-' | '+' | '_')
}

fn apply(text: &str, edit: &Edit) -> String {
    match edit {
        Edit::Replace(pos, with) => {
            let mut spans = Vec::new();
            let mut start = None;
            for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
                match (start, is_word(c) && i < text.len()) {
                    (None, true) => start = Some(i),
                    (Some(s), false) => {
                        spans.push((s, i));
                        start = None;
                    }
                    _ => {}
                }
            }
            if spans.is_empty() {
                return format!("{text}{with}");
            }
            let (s, e) = spans[pos % spans.len()];
            format!("{}{with}{}", &text[..s], &text[e..])
        }
        Edit::DropLine(n) | Edit::DuplicateLine(n) => {
            let mut lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return text.to_string();
            }
            let i = n % lines.len();
            if matches!(edit, Edit::DropLine(_)) {
                lines.remove(i);
            } else {
                lines.insert(i, lines[i]);
            }
            lines.join("\n")
        }
        Edit::Cut(n) => {
            let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
            match cuts.len() {
                0 => String::new(),
                len => text[..cuts[n % len]].to_string(),
            }
        }
        Edit::Insert(n, with) => {
            let cuts: Vec<usize> = text
                .char_indices()
                .map(|(i, _)| i)
                .chain([text.len()])
                .collect();
            let at = cuts[n % cuts.len()];
            format!("{}{with}{}", &text[..at], &text[at..])
        }
    }
}

/// `sample` with one to four random edits.
pub(crate) fn mutated(sample: &'static str) -> impl Strategy<Value = String> {
    proptest::collection::vec(edit(), 1..5).prop_map(move |edits| {
        edits
            .iter()
            .fold(sample.to_string(), |text, e| apply(&text, e))
    })
}

/// Any text: arbitrary printable and control characters, or arbitrary bytes read lossily.
pub(crate) fn garbage() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,400}",
        ".{0,400}",
        proptest::collection::vec(any::<u8>(), 0..400)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

/// Any of the given valid samples, mutated, or garbage.
pub fn inputs(samples: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        1 => garbage(),
        4 => proptest::sample::select(samples).prop_flat_map(mutated),
    ]
}

#[test]
fn edits_keep_the_text_around_them() {
    assert_eq!(apply("1 2 3", &Edit::Replace(1, "x".into())), "1 x 3");
    assert_eq!(apply("a\nb", &Edit::DuplicateLine(1)), "a\nb\nb");
    assert_eq!(apply("ab", &Edit::Cut(1)), "a");
}
