//! A quick driver for tuning the staging partitioner without building the manager: the same
//! arguments and JSON as `hetpilot-research partition FILE -k K -e EPS --seed S --json`.
//!
//! `cargo run --release -p hetpilot-core --example partition_hgr -- partition FILE -k 16 --json`
//! (`--parts OUT` also writes the block of every vertex, one a line, for diagnostics).

use std::io::BufReader;
use std::time::Instant;

use hetpilot_core::staging::{hmetis, partition, PartitionSettings};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let file = args
        .iter()
        .skip(1)
        .find(|a| a.ends_with(".hgr"))
        .expect("an .hgr file");
    let k: usize = value("-k").expect("-k K").parse().expect("k");
    let eps: f64 = value("-e").map_or(0.03, |e| e.parse().expect("eps"));
    let seed: u64 = value("--seed").map_or(0, |s| s.parse().expect("seed"));
    let hg = hmetis::read_hmetis(BufReader::new(std::fs::File::open(file).expect("open")))
        .expect("hMETIS");
    let start = Instant::now();
    let p = partition(&hg, &PartitionSettings::new(k, eps, seed)).expect("partition");
    let seconds = start.elapsed().as_secs_f64();
    if let Some(out) = value("--parts") {
        let text: Vec<String> = p.parts.iter().map(|b| b.to_string()).collect();
        std::fs::write(out, text.join("\n")).expect("write --parts");
    }
    println!(
        "{{\"km1\": {}, \"imbalance\": {}, \"feasible\": {}, \"seconds\": {seconds}}}",
        p.km1, p.imbalance, p.feasible
    );
}
