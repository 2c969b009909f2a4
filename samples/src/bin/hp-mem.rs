//! `hp-mem MIB STEPS`: a memory-bound task. Builds a random cyclic permutation over MIB
//! MiB of u64 slots and follows it for STEPS dependent loads (pointer chasing), so the
//! run time is dominated by cache misses and its peak RSS is about MIB MiB.

#![forbid(unsafe_code)]

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let [mib, steps] = args[..] else {
        eprintln!("usage: hp-mem MIB STEPS");
        std::process::exit(2);
    };
    let n = (mib as usize * 1024 * 1024 / 8).max(2);
    // Sattolo's algorithm: a single cycle through every slot.
    let mut next: Vec<u64> = (0..n as u64).collect();
    let mut rng: u64 = 0x2545_F491_4F6C_DD1D;
    for i in (1..n).rev() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let j = (rng % i as u64) as usize;
        next.swap(i, j);
    }
    let mut at = 0usize;
    for _ in 0..steps {
        at = next[at] as usize;
    }
    println!("{at}");
}
