//! Read-modify-write chains per key, the anti-dependencies they imply, and the either/or
//! constraints between chains: one coalesced constraint per pair (the paper's §3.1–3.2), or the
//! plain polygraph's one per (reader, writer) when coalescing is off.

use crate::graph::{add_into, Built, ChainRec, Constraint, EdgeKind, Label, Layout, Node, INIT};
use crate::Options;
use rayon::prelude::*;

/// Slices of a sorted list that share a key.
fn key_groups<T>(v: &[T], key: impl Fn(&T) -> u32) -> impl Iterator<Item = (u32, &[T])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= v.len() {
            return None;
        }
        let k = key(&v[i]);
        let mut j = i;
        while j < v.len() && key(&v[j]) == k {
            j += 1;
        }
        let out = (k, &v[i..j]);
        i = j;
        Some(out)
    })
}

/// [`chains_and_constraints`] of read facts still laid out by key block: each block is sorted
/// on every core and chained on this thread as soon as it and those before it are sorted, in
/// key order, so that the edges, gates and constraints are those of one pass over all keys.
/// Chaining is one thread's work; sorting the blocks after it had the other cores idle.
pub(super) fn chains_by_block(
    b: &mut Built,
    layout: Layout,
    writes: &[(u32, Node)],
    rmws: &[(u32, Node, Node)],
    opts: &Options,
) {
    reserve(b, layout.len(), writes.len());
    layout.sorted_in_order(|keys, reads| {
        let of_keys = |k: u32| keys.contains(&k);
        let ws = &writes[writes.partition_point(|w| w.0 < keys.start)..];
        let ws = &ws[..ws.partition_point(|w| of_keys(w.0))];
        let rs = &rmws[rmws.partition_point(|r| r.0 < keys.start)..];
        let rs = &rs[..rs.partition_point(|r| of_keys(r.0))];
        chains_and_constraints(b, reads, ws, rs, opts);
    });
}

/// Room for the edges of `reads` facts and `writes` writes.
fn reserve(b: &mut Built, reads: usize, writes: usize) {
    // At most an edge a read, and a few a chain: reserved once, not grown through copies.
    b.edges.reserve(reads + 2 * writes);
    b.spare.reserve(reads);
}

pub(super) fn chains_and_constraints(
    b: &mut Built,
    reads: &[(u32, Node, Node)],
    writes: &[(u32, Node)],
    rmws: &[(u32, Node, Node)],
    opts: &Options,
) {
    reserve(b, reads.len(), writes.len());
    let mut rd = key_groups(reads, |r| r.0).peekable();
    let mut rm = key_groups(rmws, |r| r.0).peekable();
    let mut chains: Vec<Vec<Node>> = Vec::new();
    // Sources of edges into one node, reused.
    let mut from: Vec<Node> = Vec::new();
    for (k, wr) in key_groups(writes, |w| w.0) {
        while rd.peek().is_some_and(|(rk, _)| *rk < k) {
            rd.next();
        }
        while rm.peek().is_some_and(|(rk, _)| *rk < k) {
            rm.next();
        }
        let kreads: &[(u32, Node, Node)] = match rd.peek() {
            Some((rk, s)) if *rk == k => s,
            _ => &[],
        };
        let krmw: &[(u32, Node, Node)] = match rm.peek() {
            Some((rk, s)) if *rk == k => s,
            _ => &[],
        };
        // Readers of a version, by binary search in the key's reads (sorted by writer).
        let readers = |w: Node| -> &[(u32, Node, Node)] {
            let lo = kreads.partition_point(|r| r.1 < w);
            let hi = kreads.partition_point(|r| r.1 <= w);
            &kreads[lo..hi]
        };
        let mut writers: Vec<Node> = wr.iter().map(|w| w.1).collect();
        if !readers(INIT).is_empty() {
            writers.insert(0, INIT);
        }
        if writers.len() < 2 && krmw.is_empty() {
            continue;
        }
        // Chains: follow read-modify-write successors from writers that succeed nobody.
        chains.clear();
        let succ_of = |w: Node| -> Option<Node> {
            let i = krmw.partition_point(|r| r.1 < w);
            (i < krmw.len() && krmw[i].1 == w).then(|| krmw[i].2)
        };
        // Writers that succeed another are not chain heads.
        let mut succeeding: Vec<Node> = krmw.iter().map(|r| r.2).collect();
        succeeding.sort_unstable();
        for &w in &writers {
            if succeeding.binary_search(&w).is_ok() {
                continue;
            }
            let mut chain = vec![w];
            let mut x = w;
            while let Some(s) = succ_of(x) {
                chain.push(s);
                x = s;
            }
            chains.push(chain);
        }
        // Inside a chain: readers of a non-last version precede the next write.
        for chain in &chains {
            for i in 0..chain.len() - 1 {
                let next = chain[i + 1];
                let pl = b.placer();
                from.clear();
                from.extend(
                    readers(chain[i])
                        .iter()
                        .filter(|r| r.2 != next)
                        .map(|r| pl.ends(r.2, next, EdgeKind::Rw).0),
                );
                let label = Label::fact(EdgeKind::Rw, k);
                add_into(b, &mut from, next, label, opts.thin_edges);
            }
        }
        if chains.len() < 2 {
            continue;
        }
        if opts.combine && opts.coalesce {
            // One node per chain stands for "after the tail and all its readers", so both
            // options of a constraint are single edges.
            let gates: Vec<(Node, EdgeKind)> = chains
                .iter()
                .map(|c| {
                    let tail = *c.last().unwrap();
                    let rs = readers(tail);
                    match rs.len() {
                        0 => (tail, EdgeKind::Ww),
                        1 => (rs[0].2, EdgeKind::Rw),
                        _ => {
                            let g = b.num_nodes as Node;
                            b.num_nodes += 1;
                            b.gate_of.push((tail, k));
                            let pl = b.placer();
                            from.clear();
                            from.extend(rs.iter().map(|r| pl.ends(r.2, g, EdgeKind::Rw).0));
                            let label = Label::fact(EdgeKind::Rw, k);
                            add_into(b, &mut from, g, label, opts.thin_edges);
                            (g, EdgeKind::Rw)
                        }
                    }
                })
                .collect();
            let init_chain = chains.iter().position(|c| c[0] == INIT);
            if let Some(ic) = init_chain {
                let tail = *chains[ic].last().unwrap();
                for (j, c) in chains.iter().enumerate() {
                    if j != ic {
                        b.push_edge(gates[ic].0, c[0], Label::fact(gates[ic].1, k));
                        // The tail's own version precedes the head too: a cycle through it
                        // alone is a write cycle (G0), which the readers' edge would hide.
                        if gates[ic].1 == EdgeKind::Rw && tail != INIT {
                            b.push_edge(tail, c[0], Label::fact(EdgeKind::Ww, k));
                        }
                    }
                }
            }
            // Pairs are formed later, once reachability can tell which are already decided.
            let first = b.chain_recs.len() as u32;
            for (i, c) in chains.iter().enumerate() {
                if Some(i) != init_chain {
                    b.chain_recs.push(ChainRec {
                        head: c[0],
                        tail: *c.last().unwrap(),
                        gate: gates[i].0,
                        gate_kind: gates[i].1,
                    });
                }
            }
            if b.chain_recs.len() as u32 - first >= 2 {
                b.chain_keys.push((k, first, b.chain_recs.len() as u32));
            } else {
                b.chain_recs.truncate(first as usize);
            }
        } else {
            explicit_constraints(b, k, &chains, &readers, opts.coalesce);
        }
    }
}

/// Constraints with their edge sets spelled out (the paper's baselines): coalesced per pair of
/// chains, or one per (reader, other chain) as in the plain polygraph. A reader that is itself
/// the other chain's head is left out: it cannot precede itself, and it already follows the
/// version it read.
fn explicit_constraints<'a>(
    b: &mut Built,
    k: u32,
    chains: &[Vec<Node>],
    readers: &dyn Fn(Node) -> &'a [(u32, Node, Node)],
    coalesce: bool,
) {
    let init_chain = chains.iter().position(|c| c[0] == INIT);
    if let Some(ic) = init_chain {
        let tail = *chains[ic].last().unwrap();
        for (j, c) in chains.iter().enumerate() {
            if j == ic {
                continue;
            }
            let rs = readers(tail);
            let mut any = false;
            for r in rs.iter().filter(|r| r.2 != c[0]) {
                b.push_edge(r.2, c[0], Label::fact(EdgeKind::Rw, k));
                any = true;
            }
            // Under snapshot isolation the version order is an edge of its own (`graph::split`).
            if (!any || b.split) && tail != INIT {
                b.push_edge(tail, c[0], Label::fact(EdgeKind::Ww, k));
            }
        }
    }
    let set = |i: usize, j: usize| -> Vec<(Node, Node, Label)> {
        let tail = *chains[i].last().unwrap();
        let head = chains[j][0];
        let v: Vec<_> = readers(tail)
            .iter()
            .filter(|r| r.2 != head)
            .map(|r| (r.2, head, Label::fact(EdgeKind::Rw, k)))
            .collect();
        if v.is_empty() {
            vec![(tail, head, Label::fact(EdgeKind::Ww, k))]
        } else {
            v
        }
    };
    for i in 0..chains.len() {
        if Some(i) == init_chain {
            continue;
        }
        for j in 0..chains.len() {
            if j == i || Some(j) == init_chain {
                continue;
            }
            let (hi, ti, hj, tj) = (
                chains[i][0],
                *chains[i].last().unwrap(),
                chains[j][0],
                *chains[j].last().unwrap(),
            );
            if coalesce {
                if j < i {
                    continue;
                }
                b.add_constraint(k, (hi, ti), (hj, tj), set(i, j), set(j, i));
            } else {
                // For each edge of "i before j": that edge, or j precedes all of i. With no reader
                // of i's tail to speak for it, the edge is i's tail → j's head.
                for e in set(i, j) {
                    let back = (tj, hi, Label::fact(EdgeKind::Ww, k));
                    b.add_constraint(k, (hi, ti), (hj, tj), [e], [back]);
                }
            }
        }
    }
}

impl Built {
    /// Forms one constraint per pair of chains of a key, leaving out pairs one of whose orders
    /// the known graph already implies (`before(a, b)`: a's gate reaches b's head), which add
    /// nothing. With the known graph's topological positions (`pos`), a key's chains are taken
    /// in order of their heads: only an earlier chain can come before a later one, and once a
    /// chain is known to precede a later chain that precedes everything after it, it precedes
    /// all of those too (head ⇝ tail ⇝ gate), so a key whose chains the graph already orders
    /// costs a linear scan, not every pair.
    ///
    /// With `skip_unobserved` (serializability only), a pair of single-write chains nobody
    /// reads is left out: no read can tell which of the two came first, and whatever order
    /// the other edges allow, placing them as a topological order of it has them keeps every
    /// cycle out. Satisfiability, and so the verdict, is unchanged; on write-heavy histories
    /// these are most pairs.
    ///
    /// With `reaches` (the known graph's reachability, serializability only), a chain whose
    /// head already leads to a later chain's head or gate is *forced* before it: the other
    /// order closes a cycle. Such a pair is still formed (pruning decides it and adds its
    /// edge), but the earlier chain's pairs with the chains the later one's head leads to are
    /// left out: in every acyclic choice its gate precedes them through that head, so their
    /// constraints add nothing. On read-heavy keys, whose versions' readers the known graph
    /// does not yet place before the next write but whose writes it does order, this forms
    /// about one constraint per version instead of one per pair of versions.
    pub fn pair_chains<R: Fn(Node, Node) -> bool + Sync>(
        &mut self,
        before: impl Fn(&ChainRec, &ChainRec) -> bool + Sync,
        pos: Option<&[u32]>,
        skip_unobserved: bool,
        reaches: Option<R>,
    ) {
        let reaches = reaches.filter(|_| !self.split);
        let skip_unobserved = skip_unobserved && !self.split;
        // A single write nobody reads: its gate is itself.
        let lone = |a: &ChainRec| skip_unobserved && a.head == a.gate;
        let unobserved = |a: &ChainRec, b: &ChainRec| lone(a) && lone(b);
        let recs = &self.chain_recs;
        let pairs: Vec<Vec<(u32, u32)>> = self
            .chain_keys
            .par_iter()
            .map(|&(_, a, b)| {
                let mut out = Vec::new();
                let Some(pos) = pos else {
                    for i in a..b {
                        for j in i + 1..b {
                            if !unobserved(&recs[i as usize], &recs[j as usize]) {
                                out.push((i, j));
                            }
                        }
                    }
                    return out;
                };
                let mut idx: Vec<u32> = (a..b).collect();
                idx.sort_unstable_by_key(|&i| pos[recs[i as usize].head as usize]);
                let n = idx.len();
                let head = |x: usize| recs[idx[x] as usize].head;
                // heads_on[x]: the known graph leads from the head at x through the head of
                // every chain after it.
                let mut heads_on = vec![false; n];
                if let Some(r) = &reaches {
                    heads_on[n - 1] = true;
                    for x in (0..n - 1).rev() {
                        heads_on[x] = heads_on[x + 1] && r(head(x), head(x + 1));
                    }
                }
                let reach = |u: Node, v: Node| reaches.as_ref().is_some_and(|r| r(u, v));
                let forced =
                    |x: &ChainRec, y: &ChainRec| reach(x.head, y.head) || reach(x.head, y.gate);
                let mut via: Vec<Node> = Vec::new();
                // all_after[x]: the chain at x precedes every chain after it in this order.
                let mut all_after = vec![false; n];
                // A lone chain's partners are the chains someone reads after it; any other
                // chain's are all chains after it.
                let every: Vec<usize> = (0..n).collect();
                let observed: Vec<usize> =
                    (0..n).filter(|&x| !lone(&recs[idx[x] as usize])).collect();
                let mut lone_after = 0usize;
                for x in (0..n).rev() {
                    let ci = &recs[idx[x] as usize];
                    let mut all = true;
                    let partners = if lone(ci) {
                        // Its pairs with the lone chains after it are skipped, unordered.
                        all = lone_after == 0;
                        lone_after += 1;
                        &observed[observed.partition_point(|&y| y <= x)..]
                    } else {
                        &every[x + 1..]
                    };
                    // Heads of the chains x was forced before: x precedes what they lead to.
                    via.clear();
                    for &y in partners {
                        let cj = &recs[idx[y] as usize];
                        if before(ci, cj) {
                            if all_after[y] {
                                break;
                            }
                        } else if via.iter().any(|&h| reach(h, cj.head)) {
                            continue;
                        } else if forced(ci, cj) {
                            out.push((idx[x].min(idx[y]), idx[x].max(idx[y])));
                            if heads_on[y] || all_after[y] {
                                break;
                            }
                            via.push(cj.head);
                        } else if !before(cj, ci) {
                            let (i, j) = (idx[x].min(idx[y]), idx[x].max(idx[y]));
                            out.push((i, j));
                            all = false;
                        }
                    }
                    all_after[x] = all;
                }
                out.sort_unstable();
                out
            })
            .collect();
        let keys = std::mem::take(&mut self.chain_keys);
        let npairs: usize = pairs.iter().map(Vec::len).sum();
        // Sized once: grown by doubling, the arrays were copied again and again.
        self.constraints.reserve(npairs);
        self.cedges.reserve(2 * npairs);
        if self.split {
            for (&(k, _, _), ps) in keys.iter().zip(pairs) {
                for (i, j) in ps {
                    let (ci, cj) = (self.chain_recs[i as usize], self.chain_recs[j as usize]);
                    let [first, second] = pair_sides(k, &ci, &cj);
                    self.add_constraint(
                        k,
                        (ci.head, ci.tail),
                        (cj.head, cj.tail),
                        [first],
                        [second],
                    );
                }
            }
        } else {
            // Unsplit, each pair's constraint is one edge a side, so every constraint's place
            // and its edges' are known ahead: written on every core, as `add_constraint` would
            // write them one by one (most of that time is first touches of the arrays' pages).
            // 80k read-heavy transactions, 222 thousand pairs: 24.0 ms one by one, 17.5 sized
            // once, 12.7 on two cores (medians of 5 runs each, alternating).
            let flat: Vec<(u32, u32, u32)> = keys
                .iter()
                .zip(&pairs)
                .flat_map(|(&(k, _, _), ps)| ps.iter().map(move |&(i, j)| (k, i, j)))
                .collect();
            let recs = &self.chain_recs;
            let base = self.cedges.len() as u32;
            self.cedges
                .par_extend((0..2 * flat.len()).into_par_iter().map(|e| {
                    let (k, i, j) = flat[e / 2];
                    pair_sides(k, &recs[i as usize], &recs[j as usize])[e % 2]
                }));
            self.constraints
                .par_extend(flat.par_iter().enumerate().map(|(n, &(k, i, j))| {
                    let (ci, cj) = (recs[i as usize], recs[j as usize]);
                    let s = base + 2 * n as u32;
                    Constraint {
                        key: k,
                        a: (ci.head, ci.tail),
                        b: (cj.head, cj.tail),
                        first: (s, s + 1),
                        second: (s + 1, s + 2),
                    }
                }));
        }
        self.chain_recs = Vec::new();
    }

    /// Adds the constraint that orders chain `a` (head, tail) and chain `b` on key `k`: exactly
    /// one of the edge sets `first` (a before b) and `second` holds, given between transaction
    /// (or gate) nodes and placed here (see `graph::split`). Returns its index.
    pub(super) fn add_constraint(
        &mut self,
        k: u32,
        a: (Node, Node),
        b: (Node, Node),
        first: impl IntoIterator<Item = (Node, Node, Label)>,
        second: impl IntoIterator<Item = (Node, Node, Label)>,
    ) -> u32 {
        let s = self.cedges.len() as u32;
        // Unsplit, edges stand where they are given (no copy on this hot path).
        if self.split {
            let first = self.place_side(first, k, a.1, b.0);
            self.cedges.extend(first);
        } else {
            self.cedges.extend(first);
        }
        let m = self.cedges.len() as u32;
        if self.split {
            let second = self.place_side(second, k, b.1, a.0);
            self.cedges.extend(second);
        } else {
            self.cedges.extend(second);
        }
        let e = self.cedges.len() as u32;
        self.constraints.push(Constraint {
            key: k,
            a,
            b,
            first: (s, m),
            second: (m, e),
        });
        self.constraints.len() as u32 - 1
    }

    /// How many pairs [`Self::pair_chains`] would consider.
    pub fn chain_pairs(&self) -> usize {
        self.chain_keys
            .iter()
            .map(|&(_, a, b)| ((b - a) as usize * (b - a - 1) as usize) / 2)
            .sum()
    }
}

/// The one edge of each side of the constraint ordering chains `ci` and `cj` of key `k`: the
/// gate of the chain put first to the head of the other.
fn pair_sides(k: u32, ci: &ChainRec, cj: &ChainRec) -> [(Node, Node, Label); 2] {
    [
        (ci.gate, cj.head, Label::fact(ci.gate_kind, k)),
        (cj.gate, ci.head, Label::fact(cj.gate_kind, k)),
    ]
}
