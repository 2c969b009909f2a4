//! SAT workload (Section 6.1): 4 hot-spot regions of the earth, each a grid of data
//! chunks in (x, y, time) with one 4.5 MB chunk per file; chunks are declustered over the
//! storage nodes along a Hilbert curve in (x, y), shifted per time step. A task is a
//! spatio-temporal window query: 5 × 3 × 2 chunks (30 files) at high overlap and 2 × 2 × 2
//! (8 files) at medium and low overlap. Queries of a region fall uniformly in a hot area
//! sized so that the batch's overlap (1 − distinct/requests) comes out near 85 %, 40 % or
//! 10 %; queries of different regions never overlap. Task order is shuffled.

use rand::seq::SliceRandom;
use rand::Rng;

use crate::staging::model::{DataFile, Task, Workload};
use crate::staging::workload::{FileTable, Overlap};

const REGIONS: usize = 4;
const CHUNK_BYTES: u64 = 4_718_592; // 4.5 MiB
const TIME_STEPS: u32 = 4;

/// Generates a SAT batch of `tasks` tasks.
pub(crate) fn generate_sat(
    overlap: Overlap,
    tasks: usize,
    storage_nodes: u32,
    rng: &mut impl Rng,
) -> Workload {
    let (target, window) = match overlap {
        Overlap::High => (0.85, (5u32, 3u32, 2u32)),
        Overlap::Medium => (0.40, (2, 2, 2)),
        Overlap::Low => (0.10, (2, 2, 2)),
    };
    let per_task = (window.0 * window.1 * window.2) as f64;
    let mut table = FileTable::new();
    let mut out = Vec::with_capacity(tasks);
    for region in 0..REGIONS {
        let queries = tasks / REGIONS + usize::from(region < tasks % REGIONS);
        // Hot area A × A × TIME_STEPS so that distinct ≈ (1 − target) × requests. Random
        // placement covers the area only partly, so aim a bit higher than the union.
        let distinct = (1.0 - target) * per_task * queries as f64;
        let area = (distinct / TIME_STEPS as f64 * 1.25).sqrt().ceil() as u32;
        let side_x = area.max(window.0);
        let side_y = area.max(window.1);
        for _ in 0..queries {
            let x0 = rng.random_range(0..=side_x - window.0);
            let y0 = rng.random_range(0..=side_y - window.1);
            let t0 = rng.random_range(0..=TIME_STEPS.max(window.2) - window.2);
            let mut files = Vec::with_capacity(per_task as usize);
            for x in x0..x0 + window.0 {
                for y in y0..y0 + window.1 {
                    for t in t0..t0 + window.2 {
                        files.push(table.id((region, x, y, t), || DataFile {
                            size_bytes: CHUNK_BYTES,
                            storage: ((hilbert_index(x, y) + t as u64 + region as u64)
                                % storage_nodes as u64) as u32,
                        }));
                    }
                }
            }
            out.push(Task { files });
        }
    }
    out.shuffle(rng);
    Workload {
        files: table.files,
        tasks: out,
    }
}

/// Position of (x, y) along a Hilbert curve over a 2^16 × 2^16 grid.
fn hilbert_index(x: u32, y: u32) -> u64 {
    let (mut x, mut y) = (x as u64, y as u64);
    let n: u64 = 1 << 16;
    let mut d = 0;
    let mut s = n / 2;
    while s > 0 {
        let rx = u64::from(x & s > 0);
        let ry = u64::from(y & s > 0);
        d += s * s * ((3 * rx) ^ ry);
        if ry == 0 {
            if rx == 1 {
                x = n - 1 - x;
                y = n - 1 - y;
            }
            std::mem::swap(&mut x, &mut y);
        }
        s /= 2;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::hilbert_index;

    #[test]
    fn hilbert_neighbours_are_adjacent_on_the_curve() {
        // The curve visits every cell of a 4×4 corner block before leaving it.
        let mut idx: Vec<u64> = (0..4)
            .flat_map(|x| (0..4).map(move |y| hilbert_index(x, y)))
            .collect();
        idx.sort_unstable();
        assert_eq!(idx, (0..16).collect::<Vec<u64>>());
    }
}
