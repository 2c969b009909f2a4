//! Component-aware k-way start: a hypergraph that falls apart into connected components is
//! first a bin-packing problem, and only then a partitioning one. Components are packed
//! whole, heaviest first, each into the block where it fits most tightly (best fit
//! decreasing, up to the block's maximum weight). A component that fits no block whole is
//! split, and only it: it fills the roomiest blocks up to their perfect weight, one after
//! another, and its last piece goes where it fits most tightly. Each split component is
//! then partitioned on its own (multilevel) into pieces of exactly those sizes.
//!
//! Recursive bisection over all components at once cannot do this: every bisection under
//! the adaptive ε (≈ 0.5 % at k = 64) must hit its target almost exactly and cuts whichever
//! component straddles it, so up to k − 1 components are cut where packing cuts only the
//! ones that fit nowhere. On a connected hypergraph the plan is a single split into the k
//! blocks, i.e. the plain multilevel partition.

/// Where a component goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The whole component into this block.
    Whole(u32),
    /// The component is partitioned into these pieces.
    Split(Vec<Piece>),
}

/// One piece of a split component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Block the piece goes to.
    pub(crate) block: u32,
    /// Its target weight (the pieces' targets sum to the component's weight).
    pub(crate) target: i64,
    /// The most it may weigh: the room its block had left under its maximum weight.
    pub(crate) max: i64,
}

/// Plans the packing of components with weights `comp_weight` into blocks with targets
/// `perfect` and maxima `max_weights`. Deterministic (ties go to the lower id).
///
/// 1. A component heavier than a block's maximum fills fresh blocks to their targets, one
///    after another, until what is left of it fits a block; that rest becomes an item.
/// 2. The items (the other components and those rests) fill the remaining blocks one at a
///    time: the heaviest item that still fits under the block's maximum goes in, again and
///    again; when none fits and the block is still below its target, the heaviest item
///    left is cut and its piece fills the block to its target, the rest stays an item
///    (unless the block is already within a quarter of its slack of the target).
///
/// Every block is cut into at most once by step 2, so at most k − 1 components are cut
/// there, and only where whole components cannot fill a block; the last block takes
/// whatever is left.
pub(crate) fn plan(comp_weight: &[i64], perfect: &[i64], max_weights: &[i64]) -> Vec<Placement> {
    let k = perfect.len();
    let mut pieces: Vec<Vec<Piece>> = vec![Vec::new(); comp_weight.len()];
    let mut order: Vec<usize> = (0..comp_weight.len()).collect();
    order.sort_by_key(|&c| (std::cmp::Reverse(comp_weight[c]), c));
    let mut next_block = 0;
    // Items: (weight left, component), kept sorted heaviest first.
    let mut items: Vec<(i64, usize)> = Vec::with_capacity(order.len());
    for &c in &order {
        let mut left = comp_weight[c];
        while next_block + 1 < k && left > max_weights[next_block] {
            let b = next_block;
            pieces[c].push(Piece {
                block: b as u32,
                target: perfect[b],
                max: max_weights[b],
            });
            left -= perfect[b];
            next_block += 1;
        }
        if left > 0 || pieces[c].is_empty() {
            items.push((left, c));
        }
    }
    let by_weight = |a: &(i64, usize), b: &(i64, usize)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
    items.sort_by(by_weight);
    for b in next_block..k {
        let mut load = 0i64;
        let last = b + 1 == k;
        loop {
            let fit = if last {
                (!items.is_empty()).then_some(0)
            } else {
                items.iter().position(|&(w, _)| load + w <= max_weights[b])
            };
            if let Some(i) = fit {
                let (w, c) = items.remove(i);
                add_piece(&mut pieces[c], b, w, max_weights[b] - load);
                load += w;
                continue;
            }
            // A block within a quarter of its slack below its target is left as it is:
            // later blocks may take up to their maxima, and the last block takes the rest.
            if perfect[b] - load > (max_weights[b] - perfect[b]) / 4 && !items.is_empty() {
                let (w, c) = items.remove(0);
                let cut = perfect[b] - load;
                add_piece(&mut pieces[c], b, cut, max_weights[b] - load);
                load += cut;
                let rest = (w - cut, c);
                let at = items.partition_point(|x| by_weight(x, &rest).is_lt());
                items.insert(at, rest);
            }
            break;
        }
    }
    pieces
        .into_iter()
        .map(|p| match p.as_slice() {
            [only] => Placement::Whole(only.block),
            _ => Placement::Split(p),
        })
        .collect()
}

/// Adds `w` of a component to block `b` (merging with a piece already there).
fn add_piece(pieces: &mut Vec<Piece>, b: usize, w: i64, room: i64) {
    match pieces.iter_mut().find(|p| p.block as usize == b) {
        Some(p) => {
            p.target += w;
            p.max = p.max.max(p.target);
        }
        None => pieces.push(Piece {
            block: b as u32,
            target: w,
            max: room.max(w),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(pieces: &Placement) -> Vec<u32> {
        match pieces {
            Placement::Whole(b) => vec![*b],
            Placement::Split(p) => p.iter().map(|p| p.block).collect(),
        }
    }

    #[test]
    fn packs_components_whole_when_they_fit() {
        // Four blocks of 100 (max 103): 60+40, 70+30, 50+50, 100.
        let w = [60, 40, 70, 30, 50, 50, 100];
        let plan = plan(&w, &[100; 4], &[103; 4]);
        assert!(plan.iter().all(|p| matches!(p, Placement::Whole(_))));
        let mut load = [0i64; 4];
        for (c, p) in plan.iter().enumerate() {
            load[blocks(p)[0] as usize] += w[c];
        }
        assert_eq!(load, [100; 4]);
    }

    #[test]
    fn cuts_only_as_often_as_the_weights_force() {
        // 250 fills more than two blocks; 90 and 60 cannot share one: three cuts are needed.
        let w = [250, 90, 60];
        let plan = plan(&w, &[100; 4], &[103; 4]);
        let mut load = [0i64; 4];
        let mut cuts = 0;
        for (c, p) in plan.iter().enumerate() {
            match p {
                Placement::Whole(b) => load[*b as usize] += w[c],
                Placement::Split(pieces) => {
                    cuts += pieces.len() - 1;
                    assert_eq!(pieces.iter().map(|p| p.target).sum::<i64>(), w[c]);
                    for p in pieces {
                        assert!(p.target <= p.max);
                        load[p.block as usize] += p.target;
                    }
                }
            }
        }
        assert_eq!(cuts, 3, "{plan:?}");
        assert!(load.iter().all(|&l| l <= 103), "{load:?}");
    }

    #[test]
    fn a_single_component_is_split_over_every_block() {
        let plan = plan(&[398], &[100; 4], &[103; 4]);
        let Placement::Split(pieces) = &plan[0] else {
            panic!("{plan:?}")
        };
        assert_eq!(pieces.len(), 4);
        assert_eq!(pieces.iter().map(|p| p.target).sum::<i64>(), 398);
    }

    #[test]
    fn overfull_input_still_places_every_weight() {
        // More weight than the maxima allow (a too heavy vertex, say): nothing is lost.
        let plan = plan(&[300, 150], &[100; 2], &[103; 2]);
        let total: i64 = plan
            .iter()
            .zip([300, 150])
            .map(|(p, w)| match p {
                Placement::Whole(_) => w,
                Placement::Split(p) => p.iter().map(|p| p.target).sum(),
            })
            .sum();
        assert_eq!(total, 450);
    }
}
