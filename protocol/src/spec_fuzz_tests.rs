//! Property tests of what a submitter sends: application specs as JSON (then validated),
//! command templates, and file names and URIs. Arbitrary text and valid specs with random
//! edits (hostile numbers, type confusion, missing and extra fields, long and unicode
//! names) give a value or a clear error, never a panic.

use super::*;
use crate::files::{parse_input, parse_output};
use proptest::prelude::*;
use serde_json::{json, Value};

const SAMPLES: &[&str] = &[
    r#"{"name":"a","command":"echo {}","tasks":{"array":{"start":1,"end":3}},"cores":2,"memory_mb":64,"env":{"A":"b"},"max_attempts":2,"timeout_secs":60,"workdir":"/tmp","output_dir":"out","inputs":["in/{}.txt",{"uri":"/shared/x","size":4,"sha256":"00"}],"outputs":["out/{}.res"],"data_intensive":true}"#,
    r#"{"name":"l","command":"grep {line} db {index}","tasks":{"lines":["x","y"]},"inputs":["store://s1/{}"],"outputs":["sftp://u@h:22/r/{}"]}"#,
    r#"{"name":"p","command":"run {q} --n={n}","tasks":{"params":[{"q":"a","n":"1"},{"q":"b","n":"2"}]},"inputs":["https://h/{q}.fa"]}"#,
];

fn nasty() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::sample::select(vec![
            json!(-1),
            json!(0),
            json!(1u64 << 44),
            json!(1u64 << 63),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e300),
            json!(0.5),
            json!(u32::MAX),
            json!(u64::from(u32::MAX) + 1),
            json!(null),
            json!(true),
            json!([]),
            json!({}),
            json!(""),
            json!(".."),
            json!("../../etc/passwd"),
            json!("/abs"),
            json!("\u{202E}x"),
            json!("a\0b"),
            json!("{}{"),
            json!("}"),
            json!("{nope}"),
            json!("'"),
            json!("store://../x"),
            json!("sftp://@:99999/x"),
            json!({"start": 0, "end": u64::MAX}),
            json!({"array": {"start": 0, "end": u64::MAX}}),
            json!({"array": {"start": 5, "end": 1}}),
        ]),
        (1usize..3000).prop_map(|n| json!("a".repeat(n))),
        (1usize..300).prop_map(|n| json!("é/".repeat(n))),
        "\\PC{0,20}".prop_map(Value::String),
        any::<i64>().prop_map(Value::from),
    ]
}

/// Applies an edit at the `pick`-th node (pre-order) of `v`.
fn edit(v: &mut Value, pick: &mut usize, op: u8, with: &Value) -> bool {
    if *pick == 0 {
        match (op % 4, &mut *v) {
            (0, Value::Object(m)) if !m.is_empty() => {
                let k = m.keys().next().cloned().expect("non-empty");
                m.remove(&k);
            }
            (1, Value::Object(m)) => {
                m.insert("extra".into(), with.clone());
            }
            (2, Value::Array(a)) => a.push(with.clone()),
            _ => *v = with.clone(),
        }
        return true;
    }
    *pick -= 1;
    match v {
        Value::Object(m) => m.values_mut().any(|c| edit(c, pick, op, with)),
        Value::Array(a) => a.iter_mut().any(|c| edit(c, pick, op, with)),
        _ => false,
    }
}

fn spec_text() -> impl Strategy<Value = String> {
    let mutated = (
        proptest::sample::select(SAMPLES),
        proptest::collection::vec((0usize..40, any::<u8>(), nasty()), 1..4),
    )
        .prop_map(|(sample, edits)| {
            let mut v: Value = serde_json::from_str(sample).expect("sample");
            for (mut pick, op, with) in edits {
                edit(&mut v, &mut pick, op, &with);
            }
            v.to_string()
        });
    prop_oneof![
        1 => "\\PC{0,300}",
        1 => proptest::sample::select(SAMPLES).prop_flat_map(|s| (0..s.len()).prop_map(move |n| s[..n].to_string())),
        6 => mutated,
    ]
}

fn inputs_of() -> impl Strategy<Value = Inputs> {
    prop_oneof![
        Just(Inputs::Lines),
        Just(Inputs::Array),
        proptest::collection::btree_set("[a-z]{1,3}", 0..3).prop_map(Inputs::Params),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn app_specs_never_panic(text in spec_text()) {
        if let Ok(spec) = serde_json::from_str::<AppSpec>(&text) {
            if let Ok(template) = spec.validate() {
                let n = spec.tasks.count().expect("validated counts fit");
                prop_assert!((1..=MAX_TASKS).contains(&n));
                let argv = match &spec.tasks {
                    TaskSource::Lines(l) => template.render(0, TaskInput::Line(&l[0])),
                    TaskSource::Array { start, .. } => template.render(0, TaskInput::Array(*start)),
                    TaskSource::Params(p) => template.render(0, TaskInput::Params(&p[0])),
                };
                prop_assert!(!argv.is_empty());
            }
        }
    }

    #[test]
    fn templates_never_panic(command in "\\PC{0,60}", inputs in inputs_of(), line in "\\PC{0,20}") {
        if let Ok(t) = Template::parse(&command, &inputs) {
            let params: BTreeMap<String, String> = match &inputs {
                Inputs::Params(names) => names.iter().map(|n| (n.clone(), line.clone())).collect(),
                _ => BTreeMap::new(),
            };
            let input = match inputs {
                Inputs::Lines => TaskInput::Line(&line),
                Inputs::Array => TaskInput::Array(u64::MAX),
                Inputs::Params(_) => TaskInput::Params(&params),
            };
            let _ = t.render(u64::MAX, input);
        }
    }

    #[test]
    fn file_names_never_panic(uri in prop_oneof![
        "\\PC{0,80}",
        "(sftp|store|https?)://\\PC{0,40}",
        "(sftp://[a-z@:0-9]{0,12}|store://[a-z.]{0,4})/[a-z./]{0,20}",
        (1usize..2000).prop_map(|n| "é".repeat(n)),
    ]) {
        for (_, name) in [parse_input(&uri), parse_output(&uri)].into_iter().flatten() {
            prop_assert!(!name.is_empty());
        }
    }
}
