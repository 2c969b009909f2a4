//! The trace of `hetpilot simulate live --swf`, read the way `hetpilot-research simulate
//! alloc` reads it (plain or `.gz`); its clusters are built by the core's
//! `alloc::cluster_setup`, as that command's are.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::Context;
use hetpilot::trace::{parse_swf, SwfOptions, SwfTrace};

/// Read an SWF file, decompressing `.gz`.
pub fn load_swf(path: &Path, strict: bool) -> anyhow::Result<SwfTrace> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let trace = parse_swf(BufReader::new(reader), SwfOptions { strict })
        .with_context(|| format!("{}", path.display()))?;
    if let Some(warning) = trace.stats.skipped_warning(&path.display().to_string()) {
        eprintln!("warning: {warning}");
    }
    Ok(trace)
}
