//! `hp-cpu ITERATIONS [SEED]`: a compute-bound task. Runs a xorshift/multiply hash chain
//! ITERATIONS times in registers (no memory traffic) and prints the final value.

#![forbid(unsafe_code)]

fn main() {
    let mut args = std::env::args().skip(1);
    let iterations: u64 = match args.next().and_then(|a| a.parse().ok()) {
        Some(n) => n,
        None => {
            eprintln!("usage: hp-cpu ITERATIONS [SEED]");
            std::process::exit(2);
        }
    };
    let mut x: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15)
        | 1;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
    println!("{x:016x}");
}
