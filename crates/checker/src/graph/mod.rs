//! Graph plumbing for the checker: labelled edge lists in CSR form, topological order and
//! strongly connected components; the known graph the checker builds from a history
//! (`known`, from the transactions that take part: `participants`), cycle and path search
//! (`paths`) and the reachability index pruning asks (`reach`).

mod choices;
mod known;
mod lists;
mod participants;
mod paths;
mod reach;
mod split;
mod thin;
mod txn_facts;
mod versions;

pub(crate) use choices::{cand_state, pair_state, Choice, CondEdge, Known, RuledOut, NO_PAIR};
pub(crate) use known::{build, walk_sessions, Built, ChainRec, Constraint, INIT};
pub(crate) use participants::{final_writes, participants, Participants};
pub(crate) use paths::{best_cycle, shortest_path, shortest_path_below, Cost};
pub(crate) use reach::{gate_preds, Budgeted, ChainReach, Reach, ReachCtx};
pub(crate) use thin::{add_into, Spare, NO_COMP};

use serde::Serialize;

pub type Node = u32;

/// What an edge means; kept per edge so a cycle can be explained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// Session order.
    Session,
    /// Real-time order (strict serializability); "rt" in JSON as in text.
    #[serde(rename = "rt")]
    RealTime,
    /// Write → read of the version written.
    Wr,
    /// Write → the next write of the key (version order).
    Ww,
    /// Read → the write that overwrote the version read (anti-dependency).
    Rw,
    /// Online mode: an order known through transactions already garbage-collected.
    Carried,
    /// Snapshot isolation: a transaction's snapshot precedes its commit (inside one
    /// transaction; certificates show it as the transaction itself).
    Within,
}

impl EdgeKind {
    /// The edge kind as drawn on a certificate's edge label (wr, ww, rw, so, rt…).
    pub fn short(self) -> &'static str {
        match self {
            EdgeKind::Session => "session",
            EdgeKind::RealTime => "rt",
            EdgeKind::Wr => "wr",
            EdgeKind::Ww => "ww",
            EdgeKind::Rw => "rw",
            EdgeKind::Carried => "carried",
            EdgeKind::Within => "within",
        }
    }
}

/// An edge's label: kind, key (u32::MAX if none), and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label {
    pub kind: EdgeKind,
    pub key: u32,
    /// u32::MAX for facts of the history; else the constraint whose resolution added it.
    pub constraint: u32,
}

pub const NO_KEY: u32 = u32::MAX;
pub const NO_CONSTRAINT: u32 = u32::MAX;

impl Label {
    pub fn fact(kind: EdgeKind, key: u32) -> Label {
        Label {
            kind,
            key,
            constraint: NO_CONSTRAINT,
        }
    }
}

/// Adjacency in compressed rows: `targets[start[u]..start[u+1]]` are u's successors, with the
/// edge's index into the edge list alongside.
pub struct Csr {
    pub start: Vec<u32>,
    pub targets: Vec<(Node, u32)>,
}

impl Csr {
    pub fn build(n: usize, edges: &[(Node, Node)], reverse: bool) -> Csr {
        Csr::build_from(n, || {
            edges
                .iter()
                .map(move |&(u, v)| if reverse { (v, u) } else { (u, v) })
        })
    }
    /// [`Csr::build`] from edges made twice on demand (once to count, once to place), so a
    /// graph spread over several lists needs no copy of them all in one: on a million
    /// transactions that copy, with its labels, was most of a weak level's peak memory.
    /// Each target carries its edge's index in the order `edges` gives them.
    pub fn build_from<I: Iterator<Item = (Node, Node)>>(n: usize, edges: impl Fn() -> I) -> Csr {
        let mut start = vec![0u32; n + 1];
        let mut m = 0usize;
        for (s, _) in edges() {
            start[s as usize + 1] += 1;
            m += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut targets = vec![(0, 0); m];
        for (i, (s, t)) in edges().enumerate() {
            targets[fill[s as usize] as usize] = (t, i as u32);
            fill[s as usize] += 1;
        }
        Csr { start, targets }
    }
    #[inline]
    pub fn succ(&self, u: Node) -> &[(Node, u32)] {
        &self.targets[self.start[u as usize] as usize..self.start[u as usize + 1] as usize]
    }
}

/// Kahn's algorithm. Err with the nodes left over (all on or behind a cycle) if there is one.
pub fn topo_order(n: usize, csr: &Csr) -> Result<Vec<Node>, Vec<Node>> {
    topo_order_with(n, csr, None)
}

/// [`topo_order`] of the edges of `csr` and of `more` together (both over `n` nodes).
pub fn topo_order_with(n: usize, csr: &Csr, more: Option<&Csr>) -> Result<Vec<Node>, Vec<Node>> {
    let mut indeg = vec![0u32; n];
    for &(v, _) in csr
        .targets
        .iter()
        .chain(more.map_or(&[][..], |m| &m.targets))
    {
        indeg[v as usize] += 1;
    }
    let mut order: Vec<Node> = (0..n as Node).filter(|&x| indeg[x as usize] == 0).collect();
    let mut head = 0;
    while head < order.len() {
        let x = order[head];
        head += 1;
        let extra = more.map_or(&[][..], |m| m.succ(x));
        for &(y, _) in csr.succ(x).iter().chain(extra) {
            indeg[y as usize] -= 1;
            if indeg[y as usize] == 0 {
                order.push(y);
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err((0..n as Node).filter(|&x| indeg[x as usize] > 0).collect())
    }
}

/// Tarjan's strongly connected components, iteratively. Returns the component of every node;
/// components are numbered in reverse topological order.
pub fn scc(n: usize, csr: &Csr) -> (Vec<u32>, u32) {
    const UNSEEN: u32 = u32::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut comp = vec![UNSEEN; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<Node> = Vec::new();
    let mut call: Vec<(Node, u32)> = Vec::new();
    let mut next = 0u32;
    let mut ncomp = 0u32;
    for root in 0..n as Node {
        if index[root as usize] != UNSEEN {
            continue;
        }
        call.push((root, csr.start[root as usize]));
        index[root as usize] = next;
        low[root as usize] = next;
        next += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (u, ref mut pos)) = call.last_mut() {
            let end = csr.start[u as usize + 1];
            if *pos < end {
                let (v, _) = csr.targets[*pos as usize];
                *pos += 1;
                if index[v as usize] == UNSEEN {
                    index[v as usize] = next;
                    low[v as usize] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[v as usize] = true;
                    call.push((v, csr.start[v as usize]));
                } else if on_stack[v as usize] {
                    low[u as usize] = low[u as usize].min(index[v as usize]);
                }
            } else {
                call.pop();
                if let Some(&(p, _)) = call.last() {
                    low[p as usize] = low[p as usize].min(low[u as usize]);
                }
                if low[u as usize] == index[u as usize] {
                    loop {
                        let w = stack.pop().unwrap();
                        on_stack[w as usize] = false;
                        comp[w as usize] = ncomp;
                        if w == u {
                            break;
                        }
                    }
                    ncomp += 1;
                }
            }
        }
    }
    (comp, ncomp)
}

/// What the transactions state, key by key: external reads (key, writer node, reader node),
/// installed writes (key, writer node) and read-modify-write steps (key, predecessor, node);
/// reads whose writer is one of several (`amb`), and ambiguous reads that only one candidate
/// could explain (`resolved`: read op, write op or `FROM_INIT`).
#[derive(Default)]
pub(crate) struct Facts {
    pub reads: Vec<(u32, Node, Node)>,
    /// Reads as the transactions' ranges stated them, in node order (joined by the sort).
    pub read_parts: Vec<Vec<(u32, Node, Node)>>,
    pub writes: Vec<(u32, Node)>,
    pub rmws: Vec<(u32, Node, Node)>,
    pub amb: Vec<Choice>,
    pub resolved: Vec<(u32, u32)>,
}

/// Sorts (key, writer, reader) facts, given in parts to be read one after another. Keys are
/// dense ids below `num_keys`, so counting sorts do it (a comparison sort over a million reads
/// was a tenth of a read-heavy check): first by blocks of keys, few enough that the scatter
/// stays within the TLB (one pass by key, scattered over ten thousand places, took half a
/// second at 12M reads), straight from the parts (joining them first was another copy of
/// every read), each part on a thread of its own; then each block, in cache and in parallel,
/// by key and each key's facts by writer. Facts come reader by reader and every pass is
/// stable, so readers stay in order.
pub(crate) fn sort_facts(
    parts: Vec<Vec<(u32, Node, Node)>>,
    num_keys: usize,
    num_nodes: usize,
) -> Vec<(u32, Node, Node)> {
    use rayon::prelude::*;
    const BLOCK_BITS: u32 = 7;
    let total: usize = parts.iter().map(Vec::len).sum();
    if total < 1 << 14 || num_keys == 0 {
        let mut v = parts.concat();
        v.sort_unstable();
        return v;
    }
    let blocks = (num_keys >> BLOCK_BITS) + 1;
    let mut v = vec![(0, 0, 0); total];
    let in_reader_order = parts.par_iter().all(|p| p.is_sorted_by_key(|r| r.2))
        && parts
            .iter()
            .filter_map(|p| Some((p.first()?.2, p.last()?.2)))
            .is_sorted_by(|a, b| a.1 <= b.0);
    let ends = if in_reader_order {
        counting_sort_parts(&parts, &mut v, blocks, |r| r.0 >> BLOCK_BITS)
    } else {
        // Facts stated out of reader order (list reads): by reader first.
        let mut by_reader = vec![(0, 0, 0); total];
        counting_sort_into(parts.iter().flatten(), &mut by_reader, num_nodes, |r| r.2);
        counting_sort_into(by_reader.iter(), &mut v, blocks, |r| r.0 >> BLOCK_BITS)
    };
    drop(parts);
    let mut block_of = Vec::with_capacity(blocks);
    let mut rest: &mut [_] = &mut v;
    let mut at = 0;
    for &end in &ends {
        let (a, r) = rest.split_at_mut(end as usize - at);
        block_of.push(a);
        (rest, at) = (r, end as usize);
    }
    block_of
        .into_par_iter()
        .for_each_init(Vec::new, |scratch, block| {
            let Some(first) = block.first() else {
                return;
            };
            let base = first.0 & !((1 << BLOCK_BITS) - 1);
            scratch.clear();
            scratch.resize(block.len(), (0, 0, 0));
            let ends = counting_sort_into(block.iter(), scratch, 1 << BLOCK_BITS, |r| r.0 - base);
            let mut lo = 0;
            for &hi in &ends {
                scratch[lo..hi as usize].sort_by_key(|r| r.1);
                lo = hi as usize;
            }
            block.copy_from_slice(scratch);
        });
    v
}

/// A stable counting sort of `parts`, read one after another, by `field` (below `range`) into
/// `to` (as long as they are together), each part counted and scattered on a thread of its own
/// into the places of `to` that are its; returns where each value's run ends.
fn counting_sort_parts(
    parts: &[Vec<(u32, Node, Node)>],
    to: &mut [(u32, Node, Node)],
    range: usize,
    field: impl Fn(&(u32, Node, Node)) -> u32 + Sync,
) -> Vec<u32> {
    use rayon::prelude::*;
    let counts: Vec<Vec<u32>> = parts
        .par_iter()
        .map(|p| {
            let mut c = vec![0u32; range];
            for r in p {
                c[field(r) as usize] += 1;
            }
            c
        })
        .collect();
    // Value by value, part by part: the order of a stable sort.
    let mut places: Vec<Vec<&mut [(u32, Node, Node)]>> =
        parts.iter().map(|_| Vec::with_capacity(range)).collect();
    let mut ends = Vec::with_capacity(range);
    let mut rest = to;
    let mut at = 0u32;
    for v in 0..range {
        for (c, p) in counts.iter().zip(&mut places) {
            let (mine, r) = std::mem::take(&mut rest).split_at_mut(c[v] as usize);
            p.push(mine);
            rest = r;
            at += c[v];
        }
        ends.push(at);
    }
    parts.par_iter().zip(places).for_each(|(part, mut places)| {
        let mut fill = vec![0usize; range];
        for &r in part {
            let f = field(&r) as usize;
            places[f][fill[f]] = r;
            fill[f] += 1;
        }
    });
    ends
}

/// A stable counting sort of `from` by `field` (below `range`) into `to` (as long); returns
/// where each value's run ends.
fn counting_sort_into<'a>(
    from: impl Iterator<Item = &'a (u32, Node, Node)> + Clone,
    to: &mut [(u32, Node, Node)],
    range: usize,
    field: impl Fn(&(u32, Node, Node)) -> u32,
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
    fn facts(
        n: usize,
        keys: u32,
        nodes: u32,
        parts: usize,
        seed: u64,
    ) -> Vec<Vec<(u32, Node, Node)>> {
        let mut x = seed;
        let mut next = move |m: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as u32
        };
        let mut all: Vec<(u32, Node, Node)> = (0..n)
            .map(|_| (next(keys), next(nodes), next(nodes)))
            .collect();
        all.sort_by_key(|r| r.2);
        let per = n.div_ceil(parts);
        all.chunks(per).map(<[_]>::to_vec).collect()
    }

    #[test]
    fn sorting_facts_in_parts_is_sorting_them_whole() {
        for (n, keys, parts, seed) in [(100, 5, 1, 1), (50_000, 1000, 4, 2), (70_000, 300, 3, 3)] {
            let p = facts(n, keys, 5000, parts, seed);
            let mut want = p.concat();
            want.sort_unstable();
            assert_eq!(sort_facts(p, keys as usize, 5000), want, "{n} facts");
        }
    }

    #[test]
    fn facts_out_of_reader_order_are_sorted_too() {
        let mut p = facts(40_000, 700, 3000, 2, 4);
        p.swap(0, 1);
        let mut want = p.concat();
        want.sort_unstable();
        assert_eq!(sort_facts(p, 700, 3000), want);
    }
}
