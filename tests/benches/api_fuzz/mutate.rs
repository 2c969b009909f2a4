//! Hostile inputs for the API fuzz run: numbers at and past every integer width, long and
//! tricky strings, JSON edits (type confusion, missing and extra fields, deep nesting), raw
//! bodies that are not JSON, and path segments that try to escape, overflow or collide.

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use rand::seq::IndexedRandom;
use rand::Rng;
use serde_json::{json, Value};

/// A number no field expects: signs, widths, floats, f64 extremes.
pub fn nasty_number(rng: &mut impl Rng) -> Value {
    match rng.random_range(0..15) {
        0 => json!(0),
        1 => json!(-1),
        2 => json!(1u64 << 44),
        3 => json!(1u64 << 63),
        4 => json!(u64::MAX),
        5 => json!(i64::MIN),
        6 => json!(1e300),
        7 => json!(-1e300),
        8 => json!(0.5),
        9 => json!(u32::MAX),
        10 => json!(u64::from(u32::MAX) + 1),
        11 => json!((1u64 << 53) + 1),
        12 => json!(1e-300),
        13 => json!(i32::MIN),
        _ => json!(rng.random::<u64>()),
    }
}

/// A string no field expects: empty, dot names, overlong, bidi overrides, NUL, templates.
pub fn nasty_string(rng: &mut impl Rng) -> String {
    match rng.random_range(0..17) {
        0 => String::new(),
        1 => ".".into(),
        2 => "..".into(),
        3 => "../../etc/passwd".into(),
        4 => "a".repeat(256),
        5 => "é".repeat(200),
        6 => "x".repeat(70_000),
        7 => "\u{202E}txt.exe\u{202E}".into(),
        8 => "nul\0byte".into(),
        9 => "/abs/path".into(),
        10 => "line\nbreak\r\n".into(),
        11 => "{}{{}}{x}{".into(),
        12 => "sftp://127.0.0.1/../x".into(),
        13 => "store://nope/../x".into(),
        14 => "💣".repeat(70),
        15 => "local".into(),
        _ => "-1".into(),
    }
}

/// Any JSON value of any type.
pub fn nasty_value(rng: &mut impl Rng) -> Value {
    match rng.random_range(0..10) {
        0..=3 => nasty_number(rng),
        4..=6 => Value::String(nasty_string(rng)),
        7 => Value::Null,
        8 => json!(true),
        _ => json!([nasty_number(rng), {}]),
    }
}

/// Applies one to three random edits somewhere in `v`.
pub fn mutate(v: &mut Value, rng: &mut impl Rng) {
    for _ in 0..rng.random_range(1..=3) {
        edit(v, rng);
    }
}

fn edit(v: &mut Value, rng: &mut impl Rng) {
    match v {
        Value::Object(map) if !map.is_empty() && rng.random_bool(0.8) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = keys.choose(rng).expect("non-empty").clone();
            match rng.random_range(0..5) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    map.insert(key, nasty_value(rng));
                }
                2 => {
                    let extra = format!(
                        "extra_{}",
                        nasty_string(rng).chars().take(40).collect::<String>()
                    );
                    map.insert(extra, nasty_value(rng));
                }
                _ => edit(map.get_mut(&key).expect("chosen key"), rng),
            }
        }
        Value::Array(items) if !items.is_empty() && rng.random_bool(0.8) => {
            let i = rng.random_range(0..items.len());
            match rng.random_range(0..4) {
                0 => {
                    let copy = items[i].clone();
                    items.extend(std::iter::repeat_n(copy, 500));
                }
                1 => items[i] = nasty_value(rng),
                _ => edit(&mut items[i], rng),
            }
        }
        _ => *v = nasty_value(rng),
    }
}

/// A body that is not the JSON the route expects (or not JSON at all).
pub fn garbage_body(rng: &mut impl Rng) -> Vec<u8> {
    match rng.random_range(0..9) {
        0 => Vec::new(),
        1 => b"{".to_vec(),
        2 => {
            let depth = rng.random_range(100..20_000);
            let mut b = "[".repeat(depth);
            b.push_str(&"]".repeat(depth));
            b.into_bytes()
        }
        3 => b"{\"max\": NaN, \"wait_ms\": Infinity}".to_vec(),
        4 => (0..rng.random_range(1..512))
            .map(|_| rng.random())
            .collect(),
        5 => b"null".to_vec(),
        6 => format!("1{}", "0".repeat(5000)).into_bytes(),
        7 => b"{\"name\": \"\xff\xfe\"}".to_vec(),
        _ => {
            let depth = rng.random_range(100..5000);
            let mut b = "{\"a\":".repeat(depth);
            b.push('1');
            b.push_str(&"}".repeat(depth));
            b.into_bytes()
        }
    }
}

/// Percent-encodes one path segment.
pub fn encode(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

/// An id path parameter (`{app}`, `{agent}`, `{task}`), already encoded.
pub fn nasty_id(rng: &mut impl Rng) -> String {
    let raw = [
        "0",
        "1",
        "2",
        "18446744073709551615",
        "18446744073709551616",
        "9223372036854775808",
        "-1",
        "1.5",
        "1e3",
        "abc",
        "%00",
        "%E2%80%AE1",
        "%201",
        "..",
        ".",
        "%2e%2e",
        "1.18446744073709551615",
        "1.18446744073709551616",
        "18446744073709551615.0",
        "1.-1",
    ];
    match rng.random_range(0..10) {
        0 => "9".repeat(300),
        _ => raw.choose(rng).expect("non-empty").to_string(),
    }
}

/// A `{*name}` file path, already encoded (dot segments left literal on purpose).
pub fn nasty_file_name(rng: &mut impl Rng, file: &str, dir: &str) -> String {
    match rng.random_range(0..20) {
        0 => "..".into(),
        1 => ".".into(),
        2 => "%2e%2e".into(),
        3 => "../x".into(),
        4 => "a/../../x".into(),
        5 => "x/..".into(),
        6 => "%2e%2e/%2e%2e/etc/passwd".into(),
        7 => "a".repeat(256),
        8 => "a".repeat(4000),
        9 | 10 => format!("{file}/x"),
        11 | 12 => dir.to_string(),
        13 => String::new(),
        14 => "%00".into(),
        15 => encode("\u{202E}txt.exe"),
        16 => "a//b".into(),
        17 => "%2F..%2Fx".into(),
        18 => encode(&"é".repeat(130)),
        _ => format!("{dir}/./{file}"),
    }
}

/// A query-string value, encoded.
pub fn nasty_query_value(rng: &mut impl Rng) -> String {
    match rng.random_range(0..3) {
        0 => encode(&nasty_string(rng).chars().take(300).collect::<String>()),
        _ => encode(&nasty_number(rng).to_string()),
    }
}
