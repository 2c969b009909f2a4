//! `hp-io DIR MIB`: an I/O-bound task. Writes MIB MiB to a new file in DIR in 1 MiB
//! blocks, fsyncs it, reads it back, checks it, and removes it.

#![forbid(unsafe_code)]

use std::io::{Read, Write};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(mib)) = (
        args.first(),
        args.get(1).and_then(|m| m.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: hp-io DIR MIB");
        std::process::exit(2);
    };
    std::fs::create_dir_all(dir)?;
    let path = std::path::Path::new(dir).join(format!("hp-io-{}.dat", std::process::id()));
    let block: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    let mut f = std::fs::File::create(&path)?;
    for _ in 0..mib {
        f.write_all(&block)?;
    }
    f.sync_all()?;
    drop(f);
    let mut back = Vec::with_capacity(mib << 20);
    std::fs::File::open(&path)?.read_to_end(&mut back)?;
    std::fs::remove_file(&path)?;
    let ok = back.len() == mib << 20 && back.chunks(1 << 20).all(|c| c == &block[..]);
    if !ok {
        eprintln!(
            "read back {} bytes that differ from what was written",
            back.len()
        );
        std::process::exit(1);
    }
    println!("{mib} MiB written, synced and read back");
    Ok(())
}
