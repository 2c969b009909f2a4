//! `hetpilot simulate <kind>`: trace-driven simulations. Each kind lives in its own file.

mod alloc;
mod fairshare;

use clap::{Args as ClapArgs, Subcommand};

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    kind: Kind,
}

#[derive(Debug, Subcommand)]
enum Kind {
    /// Rigid parallel jobs across heterogeneous clusters: FCFS/SJF with BF, FF or TLPA.
    Alloc(alloc::Args),
    /// Multi-resource fairshare on a MetaCentrum trace: penalties and a fairshare queue.
    Fairshare(fairshare::Args),
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.kind {
        Kind::Alloc(a) => alloc::run(a),
        Kind::Fairshare(a) => fairshare::run(a),
    }
}
