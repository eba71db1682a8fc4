//! The (key, writer, reader) read facts, sorted by key, then writer, then reader, without
//! duplicates: what chains are made of. Keys are dense ids, so counting sorts do it, in two
//! levels: first by blocks of keys, few enough that a scatter over them stays within the TLB
//! (one pass by key, scattered over ten thousand places, took half a second at 12M reads);
//! then each block, in cache and in parallel, by key and each key's facts by writer.
//!
//! On a large history the first level costs no pass of its own: the per-transaction pass
//! writes each fact straight into its key block ([`Layout`]), the places counted beforehand
//! from the reads' keys. Holding the facts once more, in the order they were stated, and
//! scattering them was a copy of every read: at 12M reads, 150 MB of fresh memory and a tenth
//! of the check. Facts come reader by reader and every pass is stable, so readers stay in
//! order.
//!
//! The layout holds each fact in 8 bytes, not 12 ([`pack`]: its key within the block and two
//! node numbers below 2^28), and a block is unpacked as it is sorted: at 80k read-heavy
//! transactions the layout's 12 million facts are 49 MB of fresh memory less, and every
//! fault and pass over them a third shorter.

use super::Node;
use krait_history::{History, OpKind};
use rayon::prelude::*;

/// (key, writer node, reader node).
pub(crate) type ReadFact = (u32, Node, Node);

/// Keys per block: 2^7.
const BLOCK_BITS: u32 = 7;
/// Fewer facts than this are sorted whole.
const SMALL: usize = 1 << 14;
/// Bits of each node number in a packed fact.
const NODE_BITS: u32 = 28;
const NODE_MASK: u32 = (1 << NODE_BITS) - 1;
/// Graphs of more nodes than this have their facts sorted unpacked.
pub(crate) const PACKED_NODES: usize = 1 << NODE_BITS;
/// A place no fact took (a transaction's reads of one key state one fact; a read of its own
/// write, none): its key bits (255) are no key of a block, so sorting drops it.
const HOLE: u64 = u64::MAX;

/// Fact `r` as the layout holds it: its key within its block, its writer, its reader.
#[inline]
fn pack(r: ReadFact) -> u64 {
    (u64::from(r.0 & ((1 << BLOCK_BITS) - 1)) << 56)
        | (u64::from(r.1) << NODE_BITS)
        | u64::from(r.2)
}

/// The fact packed in `p`, of the block whose first key is `base`.
#[inline]
fn unpack(p: u64, base: u32) -> ReadFact {
    (
        base + (p >> 56) as u32,
        (p >> NODE_BITS) as u32 & NODE_MASK,
        p as u32 & NODE_MASK,
    )
}

/// Where one range of transactions puts its read facts.
pub(crate) enum ReadOut<'a> {
    /// A list of its own, sorted with the others' afterwards ([`sort_facts`]).
    List(Vec<ReadFact>),
    /// Its places in each key block of a [`Layout`] not yet taken.
    Places(Vec<&'a mut [u64]>),
}

impl ReadOut<'_> {
    #[inline]
    pub(crate) fn push(&mut self, r: ReadFact) {
        match self {
            ReadOut::List(v) => v.push(r),
            ReadOut::Places(places) => {
                // The block's room shrinks from the front: one check a fact, where an index
                // into the room and a count beside it were three (readheavy-8000: this code's
                // instructions 31 → 25 million).
                let room = &mut places[(r.0 >> BLOCK_BITS) as usize];
                // Never empty: a block's places are its reads, and a fact is stated for a key
                // the transaction read.
                let (first, rest) = std::mem::take(room)
                    .split_first_mut()
                    .expect("a place for every read");
                *first = pack(r);
                *room = rest;
            }
        }
    }

    /// Marks the places no fact took; returns the list of a [`ReadOut::List`].
    pub(crate) fn finish(self) -> Vec<ReadFact> {
        match self {
            ReadOut::List(v) => v,
            ReadOut::Places(places) => {
                for p in places {
                    p.fill(HOLE);
                }
                Vec::new()
            }
        }
    }
}

/// Room for every read fact, packed ([`pack`]), laid out by key block and, inside a block, by
/// range of transactions (so in reader order).
pub(crate) struct Layout {
    v: Vec<u64>,
    /// Per range, its reads per block.
    counts: Vec<Vec<u32>>,
    /// Whether each fact is stated once (the per-transaction pass states one per key and
    /// reader): then sorting has no duplicates to drop.
    unique: bool,
}

impl Layout {
    /// The layout for the reads of the transactions of nodes `ranges` (`node_txn[n - 1]` is
    /// node n's) in a graph of `num_nodes` nodes, or None where sorting the facts afterwards is
    /// the better way: few reads, list reads (which state facts out of reader order), or more
    /// nodes than a packed fact holds.
    pub(crate) fn of(
        h: &History,
        node_txn: &[u32],
        ranges: &[(Node, Node)],
        num_nodes: usize,
    ) -> Option<Layout> {
        if h.has_lists() || h.num_keys() == 0 || ranges.len() < 2 || num_nodes > PACKED_NODES {
            return None;
        }
        let blocks = (h.num_keys() >> BLOCK_BITS) + 1;
        let counts: Vec<Vec<u32>> = ranges
            .par_iter()
            .map(|&(lo, hi)| {
                let mut c = vec![0u32; blocks];
                for n in lo..hi {
                    let ops = h.ops(node_txn[n as usize - 1]);
                    let (kinds, keys) = (&h.op_kind[ops.clone()], &h.op_key[ops]);
                    for (&kind, &k) in kinds.iter().zip(keys) {
                        c[(k >> BLOCK_BITS) as usize] += u32::from(kind != OpKind::Write);
                    }
                }
                c
            })
            .collect();
        let total: usize = counts.iter().flatten().map(|&c| c as usize).sum();
        // Zeroed memory is the kernel's, untouched until a fact lands in it.
        (total >= SMALL).then(|| Layout {
            v: vec![0; total],
            counts,
            unique: true,
        })
    }

    /// Each range's places, block by block.
    pub(crate) fn split(&mut self) -> Vec<ReadOut<'_>> {
        let blocks = self.counts[0].len();
        let mut outs: Vec<Vec<&mut [u64]>> = self
            .counts
            .iter()
            .map(|_| Vec::with_capacity(blocks))
            .collect();
        let mut rest: &mut [u64] = &mut self.v;
        for b in 0..blocks {
            for (c, o) in self.counts.iter().zip(&mut outs) {
                let (mine, r) = std::mem::take(&mut rest).split_at_mut(c[b] as usize);
                o.push(mine);
                rest = r;
            }
        }
        outs.into_iter().map(ReadOut::Places).collect()
    }

    fn ends(&self) -> Vec<u32> {
        let mut at = 0;
        (0..self.counts[0].len())
            .map(|b| {
                at += self.counts.iter().map(|c| c[b]).sum::<u32>();
                at
            })
            .collect()
    }

    /// Room for this many facts (holes and duplicates included).
    pub(crate) fn len(&self) -> usize {
        self.v.len()
    }

    /// The facts, sorted and without duplicates, once every range's [`ReadOut`] is finished.
    pub(crate) fn sorted(self) -> Vec<ReadFact> {
        let ends = self.ends();
        let dedup = !self.unique;
        let blocks: Vec<Vec<ReadFact>> = split_blocks(&self.v, &ends)
            .into_par_iter()
            .enumerate()
            .map_init(Scratch::default, |scratch, (b, block)| {
                let mut out = Vec::new();
                sort_block(scratch, b, block, &mut out, dedup);
                out
            })
            .collect();
        blocks.concat()
    }

    /// What [`Self::sorted`] gives, block by block: `take(keys, facts)` gets each block's
    /// range of keys and its facts in order, as soon as that block and those before it are
    /// sorted, so that sorting the rest overlaps what `take` does (chaining them, which is
    /// one thread's work).
    pub(crate) fn sorted_in_order(self, mut take: impl FnMut(std::ops::Range<u32>, &[ReadFact])) {
        let ends = self.ends();
        let dedup = !self.unique;
        let blocks: Vec<(usize, &[u64])> = split_blocks(&self.v, &ends)
            .into_iter()
            .enumerate()
            .collect();
        // Each block's facts unpacked into room handed back once chained, and used again for
        // a later block: a few blocks' worth in all, not a second copy of them all. Each room
        // is as large as the largest block from the start: freed and allocated again, or grown
        // block after block, it came back from the kernel as fresh memory each time.
        let most = blocks.iter().map(|b| b.1.len()).max().unwrap_or(0);
        let room: std::sync::Mutex<Vec<Vec<ReadFact>>> = Default::default();
        let sorted = krait_history::in_order::map_in_order(
            blocks,
            |scratch: &mut Scratch, (b, block)| {
                let mut out = room.lock().ok().and_then(|mut r| r.pop());
                let out = out.get_or_insert_with(|| Vec::with_capacity(most));
                scratch
                    .facts
                    .reserve_exact(most.saturating_sub(scratch.facts.len()));
                sort_block(scratch, b, block, out, dedup);
                let out = std::mem::take(out);
                (b, out)
            },
            |(b, facts)| {
                let lo = (b as u32) << BLOCK_BITS;
                take(lo..lo + (1 << BLOCK_BITS), &facts);
                if let Ok(mut r) = room.lock() {
                    r.push(facts);
                }
                Ok::<(), ()>(())
            },
        );
        debug_assert!(sorted.is_ok());
    }
}

/// Sorts (key, writer, reader) facts, given in parts to be read one after another, and drops
/// duplicates. The first level places each part's facts in its key blocks, as a large
/// history's per-transaction pass does ([`Layout`]), each part on a thread of its own (joining
/// them first was another copy of every read).
pub(crate) fn sort_facts(
    parts: Vec<Vec<ReadFact>>,
    num_keys: usize,
    num_nodes: usize,
) -> Vec<ReadFact> {
    let total: usize = parts.iter().map(Vec::len).sum();
    if total < SMALL || num_keys == 0 || num_nodes > PACKED_NODES {
        let mut v = parts.concat();
        v.sort_unstable();
        v.dedup();
        return v;
    }
    let blocks = (num_keys >> BLOCK_BITS) + 1;
    let in_reader_order = parts.par_iter().all(|p| p.is_sorted_by_key(|r| r.2))
        && parts
            .iter()
            .filter_map(|p| Some((p.first()?.2, p.last()?.2)))
            .is_sorted_by(|a, b| a.1 <= b.0);
    let parts = if in_reader_order {
        parts
    } else {
        // Facts stated out of reader order (list reads): by reader first, as one part.
        let mut by_reader = vec![(0, 0, 0); total];
        counting_sort_into(parts.iter().flatten(), &mut by_reader, num_nodes, |r| r.2);
        vec![by_reader]
    };
    let counts = parts
        .par_iter()
        .map(|p| {
            let mut c = vec![0u32; blocks];
            for r in p {
                c[(r.0 >> BLOCK_BITS) as usize] += 1;
            }
            c
        })
        .collect();
    // A list read and the read of its last element may state the same fact.
    let mut layout = Layout {
        v: vec![0; total],
        counts,
        unique: false,
    };
    layout
        .split()
        .into_par_iter()
        .zip(parts.par_iter())
        .for_each(|(mut out, part)| {
            for &r in part {
                out.push(r);
            }
            out.finish();
        });
    drop(parts);
    layout.sorted()
}

/// `v` cut at the blocks' `ends`.
fn split_blocks<'v>(v: &'v [u64], ends: &[u32]) -> Vec<&'v [u64]> {
    let mut block_of = Vec::with_capacity(ends.len());
    let mut rest: &[u64] = v;
    let mut at = 0;
    for &end in ends {
        let (a, r) = rest.split_at(end as usize - at);
        block_of.push(a);
        (rest, at) = (r, end as usize);
    }
    block_of
}

/// Room [`sort_block`] uses again block after block on one thread.
#[derive(Default)]
struct Scratch {
    facts: Vec<ReadFact>,
    /// Per writer node, 1 + its number among the writers of the key being sorted, or 0.
    slot: Vec<u32>,
    /// The writers of that key, numbered as first seen, with how many facts each has.
    writers: Vec<(Node, u32)>,
}

/// The second level: block `b`'s packed facts, in cache, unpacked into `out`, by key (holes
/// dropped) and each key's facts by writer, without duplicates (dropped where `dedup`; where
/// not, there are none); `scratch` is room to use.
fn sort_block(
    scratch: &mut Scratch,
    b: usize,
    block: &[u64],
    out: &mut Vec<ReadFact>,
    dedup: bool,
) {
    out.clear();
    if block.is_empty() {
        return;
    }
    let base = (b as u32) << BLOCK_BITS;
    let width = 1usize << BLOCK_BITS;
    // By key, stably (a counting sort); holes counted apart and left out.
    let mut start = [0u32; (1 << BLOCK_BITS) + 1];
    let mut holes = 0;
    for &p in block {
        match (p >> 56) as usize {
            k if k < width => start[k + 1] += 1,
            _ => holes += 1,
        }
    }
    for i in 0..width {
        start[i + 1] += start[i];
    }
    let n = block.len() - holes;
    let mut facts = std::mem::take(&mut scratch.facts);
    facts.clear();
    facts.resize(n, (0, 0, 0));
    let mut fill = start;
    for &p in block {
        let k = (p >> 56) as usize;
        if k < width {
            facts[fill[k] as usize] = unpack(p, base);
            fill[k] += 1;
        }
    }
    out.resize(n, (0, 0, 0));
    for k in 0..width {
        let (lo, hi) = (start[k] as usize, start[k + 1] as usize);
        by_writer(scratch, &facts[lo..hi], &mut out[lo..hi]);
    }
    scratch.facts = facts;
    // Duplicates (a list read and the read of its last element) are next to each other. A
    // pass over every fact to find none was a tenth of sorting's instructions.
    if dedup {
        out.dedup();
    }
    debug_assert!(out.windows(2).all(|w| w[0] != w[1]), "a duplicate fact");
}

/// One key's facts (in reader order) into `to`, stably sorted by writer: a counting sort over
/// the key's writers, found through a table by node (the facts of one key name few writers,
/// and a comparison sort took a hundred instructions a fact, a tenth of a read-heavy check).
fn by_writer(scratch: &mut Scratch, from: &[ReadFact], to: &mut [ReadFact]) {
    let Scratch { slot, writers, .. } = scratch;
    writers.clear();
    for r in from {
        let w = r.1 as usize;
        if w >= slot.len() {
            slot.resize(w + 1, 0);
        }
        match slot[w] {
            0 => {
                writers.push((r.1, 1));
                slot[w] = writers.len() as u32;
            }
            s => writers[s as usize - 1].1 += 1,
        }
    }
    if writers.len() <= 1 {
        to.copy_from_slice(from);
    } else {
        // Each writer's first place: after the facts of every smaller writer.
        writers.sort_unstable_by_key(|w| w.0);
        let mut at = 0;
        for (i, (w, c)) in writers.iter_mut().enumerate() {
            slot[*w as usize] = i as u32 + 1;
            (*c, at) = (at, at + *c);
        }
        for &r in from {
            let c = &mut writers[slot[r.1 as usize] as usize - 1].1;
            to[*c as usize] = r;
            *c += 1;
        }
    }
    for &(w, _) in writers.iter() {
        slot[w as usize] = 0;
    }
}

/// A stable counting sort of `from` by `field` (below `range`) into `to` (as long); returns
/// where each value's run ends.
fn counting_sort_into<'a>(
    from: impl Iterator<Item = &'a ReadFact> + Clone,
    to: &mut [ReadFact],
    range: usize,
    field: impl Fn(&ReadFact) -> u32,
) -> Vec<u32> {
    let mut start = vec![0u32; range + 1];
    for r in from.clone() {
        start[field(r) as usize + 1] += 1;
    }
    for i in 0..range {
        start[i + 1] += start[i];
    }
    for &r in from {
        let f = field(&r) as usize;
        to[start[f] as usize] = r;
        start[f] += 1;
    }
    start.truncate(range);
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Facts in reader order, split into parts, of `keys` keys and `nodes` nodes.
    fn facts(n: usize, keys: u32, nodes: u32, parts: usize, seed: u64) -> Vec<Vec<ReadFact>> {
        let mut rng = super::super::test_rng::Rng(seed);
        let mut next = move |m: u32| rng.below(m.into()) as u32;
        let mut all: Vec<ReadFact> = (0..n)
            .map(|_| (next(keys), next(nodes), next(nodes)))
            .collect();
        all.sort_by_key(|r| r.2);
        let per = n.div_ceil(parts);
        all.chunks(per).map(<[_]>::to_vec).collect()
    }

    fn sorted_whole(p: &[Vec<ReadFact>]) -> Vec<ReadFact> {
        let mut want = p.concat();
        want.sort_unstable();
        want.dedup();
        want
    }

    #[test]
    fn sorting_facts_in_parts_is_sorting_them_whole() {
        for (n, keys, parts, seed) in [(100, 5, 1, 1), (50_000, 1000, 4, 2), (70_000, 300, 3, 3)] {
            let p = facts(n, keys, 5000, parts, seed);
            let want = sorted_whole(&p);
            assert_eq!(sort_facts(p, keys as usize, 5000), want, "{n} facts");
        }
    }

    /// Keys whose reads see one version beside keys whose reads see several sort as sorting
    /// them whole does.
    #[test]
    fn facts_of_few_and_of_many_versions_are_sorted_too() {
        let mut rng = super::super::test_rng::Rng(8);
        let mut next = move |m: u32| rng.below(m.into()) as u32;
        let keys = 600;
        let mut all: Vec<ReadFact> = (0..60_000)
            .map(|_| {
                let k = next(keys);
                (k, k * 7 + next(1 + k % 12), next(4000))
            })
            .collect();
        all.sort_by_key(|r| r.2);
        let p: Vec<Vec<ReadFact>> = all.chunks(20_000).map(<[_]>::to_vec).collect();
        let want = sorted_whole(&p);
        assert_eq!(sort_facts(p, keys as usize, 8000), want);
    }

    #[test]
    fn facts_out_of_reader_order_are_sorted_too() {
        let mut p = facts(40_000, 700, 3000, 2, 4);
        p.swap(0, 1);
        let want = sorted_whole(&p);
        assert_eq!(sort_facts(p, 700, 3000), want);
    }

    /// Every fact a layout may hold (any key of a block, nodes below 2^28) comes back
    /// unpacked as it was, and none packs to a hole.
    #[test]
    fn packed_facts_unpack_as_they_were() {
        let top = (PACKED_NODES - 1) as Node;
        for b in [0u32, 1, 77] {
            let base = b << BLOCK_BITS;
            for k in [0, 1, 63, (1 << BLOCK_BITS) - 1] {
                for (w, r) in [(0, 0), (0, top), (top, 0), (top, top), (12_345, 6_789_012)] {
                    let f = (base + k, w, r);
                    assert_ne!(pack(f), HOLE);
                    assert_eq!(unpack(pack(f), base), f);
                }
            }
        }
    }

    /// Facts written straight into their blocks, with room to spare (reads that stated no
    /// fact) and duplicates, come out as sorting them whole does.
    #[test]
    fn facts_placed_by_block_are_sorted_as_a_whole() {
        for (n, keys, parts, seed) in [(20_000, 1000, 4, 5), (60_000, 130, 3, 6), (30_000, 9, 2, 7)]
        {
            let mut p = facts(n, keys, 4000, parts, seed);
            // Some facts stated twice, as list reads and a last element's read may.
            for (i, part) in p.iter_mut().enumerate() {
                let again = part[i * 7 % part.len()];
                let at = part.partition_point(|r| r.2 <= again.2);
                part.insert(at, again);
            }
            let want = sorted_whole(&p);
            let blocks = (keys as usize >> BLOCK_BITS) + 1;
            // Room per block: each fact's, plus spare places every third key.
            let counts: Vec<Vec<u32>> = p
                .iter()
                .map(|part| {
                    let mut c = vec![0u32; blocks];
                    for r in part {
                        c[(r.0 >> BLOCK_BITS) as usize] += 1 + u32::from(r.0 % 3 == 0);
                    }
                    c
                })
                .collect();
            let total = counts.iter().flatten().sum::<u32>() as usize;
            let mut layout = Layout {
                v: vec![7; total],
                counts,
                unique: false,
            };
            for (mut out, part) in layout.split().into_iter().zip(&p) {
                for &r in part {
                    out.push(r);
                }
                assert!(out.finish().is_empty());
            }
            assert_eq!(layout.sorted(), want, "{n} facts");
        }
    }
}
