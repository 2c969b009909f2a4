//! `hp-wfgen TASKS FILE`: writes a synthetic WfCommons WfFormat 1.5 instance of TASKS tasks
//! to FILE, laid out like the recorded instances (indented JSON, specification and
//! execution halves, about 1 KB per task), to measure what reading a large workflow costs.
//!
//! The tasks form layers of up to 1000; a task of layer l > 0 reads the outputs of two
//! tasks of layer l - 1, and layer 0 reads the workflow's one external input.

#![forbid(unsafe_code)]

use std::io::{BufWriter, Write};

const WIDTH: usize = 1000;

fn id(i: usize) -> String {
    format!("{i:08}")
}

/// The tasks task `i` of `n` reads from (layer above, same and next position).
fn parents(i: usize, n: usize) -> Vec<usize> {
    if i < WIDTH {
        return Vec::new();
    }
    let base = i - i % WIDTH - WIDTH;
    let mut p = vec![base + i % WIDTH, base + (i + 1) % WIDTH];
    p.retain(|&q| q < n);
    p.dedup();
    p
}

/// The tasks that read task `i`'s output.
fn children(i: usize, n: usize) -> Vec<usize> {
    let base = i - i % WIDTH + WIDTH;
    let mut c: Vec<usize> = [i % WIDTH, (i % WIDTH + WIDTH - 1) % WIDTH]
        .iter()
        .map(|k| base + k)
        .filter(|&q| q < n && parents(q, n).contains(&i))
        .collect();
    c.dedup();
    c
}

/// A JSON list of strings, one per line at `indent` spaces.
fn list(items: &[String], indent: usize) -> String {
    if items.is_empty() {
        return "[]".into();
    }
    let pad = " ".repeat(indent + 4);
    let body: Vec<String> = items.iter().map(|s| format!("{pad}\"{s}\"")).collect();
    format!("[\n{}\n{}]", body.join(",\n"), " ".repeat(indent))
}

fn output(i: usize) -> String {
    format!("task_{}_output.dat", id(i))
}

fn inputs(i: usize, n: usize) -> Vec<String> {
    let p = parents(i, n);
    if p.is_empty() {
        vec!["reference_database.fasta".into()]
    } else {
        p.into_iter().map(output).collect()
    }
}

fn write(n: usize, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{{\n    \"name\": \"synthetic-{n}\",\n    \"description\": \"hp-wfgen\",\n    \
         \"schemaVersion\": \"1.5\",\n    \"workflow\": {{\n        \"specification\": {{\n            \
         \"tasks\": ["
    )?;
    for i in 0..n {
        let sep = if i + 1 < n { "," } else { "" };
        let kids: Vec<String> = children(i, n).into_iter().map(id).collect();
        let pars: Vec<String> = parents(i, n).into_iter().map(id).collect();
        writeln!(
            out,
            "                {{\n                    \"name\": \"task_{0}\",\n                    \
             \"id\": \"{0}\",\n                    \"children\": {1},\n                    \
             \"parents\": {2},\n                    \"inputFiles\": {3},\n                    \
             \"outputFiles\": {4}\n                }}{sep}",
            id(i),
            list(&kids, 20),
            list(&pars, 20),
            list(&inputs(i, n), 20),
            list(&[output(i)], 20),
        )?;
    }
    writeln!(out, "            ],\n            \"files\": [")?;
    writeln!(
        out,
        "                {{\n                    \"id\": \"reference_database.fasta\",\n                    \
         \"sizeInBytes\": 52428800\n                }},"
    )?;
    for i in 0..n {
        let sep = if i + 1 < n { "," } else { "" };
        writeln!(
            out,
            "                {{\n                    \"id\": \"{}\",\n                    \
             \"sizeInBytes\": {}\n                }}{sep}",
            output(i),
            1000 + i * 37 % 100_000
        )?;
    }
    writeln!(
        out,
        "            ]\n        }},\n        \"execution\": {{\n            \
         \"makespanInSeconds\": {},\n            \"executedAt\": \"20240101T000000+0000\",\n            \
         \"tasks\": [",
        n / WIDTH * 10 + 10
    )?;
    for i in 0..n {
        let sep = if i + 1 < n { "," } else { "" };
        let mut args = Vec::new();
        for f in inputs(i, n) {
            args.push("--input".to_string());
            args.push(f);
        }
        args.push("--output".into());
        args.push(output(i));
        writeln!(
            out,
            "                {{\n                    \"id\": \"{}\",\n                    \
             \"runtimeInSeconds\": {}.{:03},\n                    \"command\": {{\n                        \
             \"program\": \"synthetic_task\",\n                        \"arguments\": {}\n                    \
             }},\n                    \"coreCount\": {},\n                    \"avgCPU\": 97.5,\n                    \
             \"readBytes\": 1048576,\n                    \"writtenBytes\": 524288,\n                    \
             \"memoryInBytes\": 268435456,\n                    \"machines\": [\n                        \
             \"node-{:03}\"\n                    ]\n                }}{sep}",
            id(i),
            1 + i % 9,
            i % 1000,
            list(&args, 24),
            1 + i % 4,
            i % 64
        )?;
    }
    writeln!(
        out,
        "            ],\n            \"machines\": []\n        }}\n    }}\n}}"
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(path)) = (args.first().and_then(|a| a.parse().ok()), args.get(1)) else {
        eprintln!("usage: hp-wfgen TASKS FILE");
        std::process::exit(2);
    };
    let file = std::fs::File::create(path).unwrap_or_else(|e| {
        eprintln!("hp-wfgen: {path}: {e}");
        std::process::exit(1);
    });
    let mut out = BufWriter::new(file);
    if let Err(e) = write(n, &mut out).and_then(|()| out.flush()) {
        eprintln!("hp-wfgen: {path}: {e}");
        std::process::exit(1);
    }
}
