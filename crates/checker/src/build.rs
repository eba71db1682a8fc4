//! From a history to the known graph and the constraints: per-transaction checks, write→read and
//! session edges, read-modify-write chains, inferred anti-dependencies, and one coalesced
//! either/or constraint per pair of chains on a key.

use crate::cert::Certificate;
use crate::graph::{EdgeKind, Label, Node, NO_KEY};
use crate::Options;
use krait_history::{History, OpKind, Resolution, TxnId, TxnStatus, FROM_INIT, FROM_NOBODY};

/// The synthetic transaction that wrote every key's initial version.
pub const INIT: Node = 0;

/// One either/or constraint: exactly one of two edge sets is in the serial order's graph.
#[derive(Clone, Debug)]
pub struct Constraint {
    pub key: u32,
    /// (head, tail) of the two chains being ordered.
    pub a: (Node, Node),
    pub b: (Node, Node),
    /// Edges if chain a comes first, then edges if chain b comes first (ranges into the arena).
    pub first: (u32, u32),
    pub second: (u32, u32),
}

/// A chain of writes of one key, as the coalesced constraints see it.
#[derive(Clone, Copy, Debug)]
pub struct ChainRec {
    pub head: Node,
    pub tail: Node,
    /// The node standing for "after the tail and all its readers".
    pub gate: Node,
    pub gate_kind: EdgeKind,
}

pub struct Built {
    /// Nodes: INIT, then one per included transaction, then gate nodes.
    pub num_nodes: usize,
    /// Included transactions: node i+1 is `node_txn[i]`.
    pub node_txn: Vec<TxnId>,
    pub txn_node: Vec<Node>,
    pub first_gate: Node,
    pub edges: Vec<(Node, Node)>,
    pub labels: Vec<Label>,
    pub constraints: Vec<Constraint>,
    /// Edge arena for constraints: (u, v, label).
    pub cedges: Vec<(Node, Node, Label)>,
    /// Session chains for the reachability index: (chain, position) per node.
    pub chain_of: Vec<(u32, u32)>,
    pub num_chains: usize,
    pub excluded_unknown: usize,
    /// Chains awaiting pairing into constraints: `chain_recs[a..b]` for each (key, a, b).
    pub chain_recs: Vec<ChainRec>,
    pub chain_keys: Vec<(u32, u32, u32)>,
    /// Per gate node (from `first_gate` on): the chain tail whose readers it follows, and key.
    pub gate_of: Vec<(Node, u32)>,
}

impl Built {
    /// Forms one constraint per pair of chains of a key, leaving out pairs one of whose orders
    /// the known graph already implies (`before(a, b)`: a's gate reaches b's head), which add
    /// nothing. With the known graph's topological positions (`pos`), a key's chains are taken
    /// in order of their heads: only an earlier chain can come before a later one, and once a
    /// chain is known to precede a later chain that precedes everything after it, it precedes
    /// all of those too (head ⇝ tail ⇝ gate), so a key whose chains the graph already orders
    /// costs a linear scan, not every pair.
    pub fn pair_chains(
        &mut self,
        before: impl Fn(&ChainRec, &ChainRec) -> bool + Sync,
        pos: Option<&[u32]>,
    ) {
        use rayon::prelude::*;
        let recs = &self.chain_recs;
        let pairs: Vec<Vec<(u32, u32)>> = self
            .chain_keys
            .par_iter()
            .map(|&(_, a, b)| {
                let mut out = Vec::new();
                let Some(pos) = pos else {
                    for i in a..b {
                        for j in i + 1..b {
                            out.push((i, j));
                        }
                    }
                    return out;
                };
                let mut idx: Vec<u32> = (a..b).collect();
                idx.sort_unstable_by_key(|&i| pos[recs[i as usize].head as usize]);
                let n = idx.len();
                // all_after[x]: the chain at x precedes every chain after it in this order.
                let mut all_after = vec![false; n];
                for x in (0..n).rev() {
                    let ci = &recs[idx[x] as usize];
                    let mut all = true;
                    for y in x + 1..n {
                        let cj = &recs[idx[y] as usize];
                        if before(ci, cj) {
                            if all_after[y] {
                                break;
                            }
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
        for (&(k, _, _), ps) in self.chain_keys.iter().zip(pairs) {
            for (i, j) in ps {
                let (ci, cj) = (self.chain_recs[i as usize], self.chain_recs[j as usize]);
                let s = self.cedges.len() as u32;
                self.cedges
                    .push((ci.gate, cj.head, Label::fact(ci.gate_kind, k)));
                self.cedges
                    .push((cj.gate, ci.head, Label::fact(cj.gate_kind, k)));
                self.constraints.push(Constraint {
                    key: k,
                    a: (ci.head, ci.tail),
                    b: (cj.head, cj.tail),
                    first: (s, s + 1),
                    second: (s + 1, s + 2),
                });
            }
        }
        self.chain_keys.clear();
        self.chain_recs = Vec::new();
    }

    /// How many pairs [`Self::pair_chains`] would consider.
    pub fn chain_pairs(&self) -> usize {
        self.chain_keys
            .iter()
            .map(|&(_, a, b)| ((b - a) as usize * (b - a - 1) as usize) / 2)
            .sum()
    }

    pub fn txn_of(&self, n: Node) -> Option<TxnId> {
        if n == INIT || n >= self.first_gate {
            None
        } else {
            Some(self.node_txn[n as usize - 1])
        }
    }
    pub fn first_edges(&self, c: &Constraint) -> &[(Node, Node, Label)] {
        &self.cedges[c.first.0 as usize..c.first.1 as usize]
    }
    pub fn second_edges(&self, c: &Constraint) -> &[(Node, Node, Label)] {
        &self.cedges[c.second.0 as usize..c.second.1 as usize]
    }
}

/// Which transactions take part: the committed ones, and those whose outcome is unknown but
/// that an included transaction read from (so they must have committed), or that the caller
/// knows were read (`committed_unknown`).
fn included(h: &History, r: &Resolution, committed_unknown: &[TxnId]) -> (Vec<bool>, usize) {
    let mut inc: Vec<bool> = h
        .txn_status
        .iter()
        .map(|&s| s == TxnStatus::Committed)
        .collect();
    for &t in committed_unknown {
        inc[t as usize] = true;
    }
    loop {
        let mut changed = false;
        for t in 0..h.num_txns() {
            if !inc[t] {
                continue;
            }
            for o in h.ops(t as TxnId) {
                let mut writers: Vec<TxnId> = r.writer_txn(o as u32).into_iter().collect();
                // Every element of a list read was appended by a transaction that committed.
                if let Some(list) = h.list_of(o as u32) {
                    let k = h.op_key[o];
                    writers.extend(
                        list.iter()
                            .filter_map(|v| h.write_index.get(&(k, *v)))
                            .map(|&w| r.op_txn[w as usize]),
                    );
                }
                for w in writers {
                    if !inc[w as usize] && h.txn_status[w as usize] == TxnStatus::Unknown {
                        inc[w as usize] = true;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    let excluded_unknown = (0..h.num_txns())
        .filter(|&t| !inc[t] && h.txn_status[t] == TxnStatus::Unknown)
        .count();
    (inc, excluded_unknown)
}

pub fn build(
    h: &History,
    r: &Resolution,
    opts: &Options,
    committed_unknown: &[TxnId],
) -> Result<Built, Box<Certificate>> {
    let (inc, excluded_unknown) = included(h, r, committed_unknown);
    // Claims Cobra's logs make that the history contradicts.
    for (op, problem) in &r.problems {
        let t = r.op_txn[*op as usize];
        if inc[t as usize] {
            return Err(Box::new(Certificate::read_problem(h, r, *op, problem)));
        }
    }
    let mut node_txn = Vec::new();
    let mut txn_node = vec![u32::MAX; h.num_txns()];
    for t in 0..h.num_txns() {
        if inc[t] {
            txn_node[t] = node_txn.len() as Node + 1;
            node_txn.push(t as TxnId);
        }
    }
    let ntx = node_txn.len() + 1;
    let mut edges: Vec<(Node, Node)> = Vec::new();
    let mut labels: Vec<Label> = Vec::new();
    let mut chain_of = vec![(u32::MAX, 0u32); ntx];
    // Session order, skipping transactions that are not included. A transaction whose outcome
    // is unknown started after its session's earlier commits, but its commit may land after the
    // session's later transactions (the client gave up waiting and went on): it gets an edge in
    // from the last committed transaction before it and none out, and a chain of its own so the
    // session's chain stays totally ordered. Later transactions follow that last commit.
    let mut num_chains = h.num_sessions() + 1;
    for s in 0..h.num_sessions() {
        let mut prev: Option<Node> = None;
        let mut pos = 0;
        for t in h.session_range(s) {
            let n = txn_node[t as usize];
            if n == u32::MAX {
                continue;
            }
            let unknown = h.txn_status[t as usize] == TxnStatus::Unknown;
            if unknown {
                chain_of[n as usize] = (num_chains as u32, 0);
                num_chains += 1;
            } else {
                chain_of[n as usize] = (s as u32, pos);
                pos += 1;
            }
            if let Some(p) = prev {
                edges.push((p, n));
                labels.push(Label::fact(EdgeKind::Session, NO_KEY));
            }
            if !unknown {
                prev = Some(n);
            }
        }
    }
    chain_of[INIT as usize] = (h.num_sessions() as u32, 0);

    // Per transaction: external reads (key, writer node, reader node), installed writes
    // (key, writer node), read-modify-writes (key, predecessor node, node).
    let mut reads: Vec<(u32, Node, Node)> = Vec::new();
    let mut writes: Vec<(u32, Node)> = Vec::new();
    let mut rmws: Vec<(u32, Node, Node)> = Vec::new();
    let mut scratch: Vec<(u32, u32, u32)> = Vec::new(); // (key, last own write op, external source)
    const NONE: u32 = u32::MAX;
    // No external read yet (FROM_NOBODY reads are rejected before they are recorded).
    const NO_SRC: u32 = FROM_NOBODY;
    for (i, &t) in node_txn.iter().enumerate() {
        let node = i as Node + 1;
        scratch.clear();
        let ops = h.ops(t);
        for o in ops.clone() {
            let k = h.op_key[o];
            let slot = match scratch.iter().position(|s| s.0 == k) {
                Some(p) => p,
                None => {
                    scratch.push((k, NONE, NO_SRC));
                    scratch.len() - 1
                }
            };
            match h.op_kind[o] {
                OpKind::Write => scratch[slot].1 = o as u32,
                OpKind::Read | OpKind::ReadInit => {
                    let src = r.read_from[o];
                    let own = scratch[slot].1;
                    if own != NONE {
                        if src != own {
                            return Err(Box::new(Certificate::own_write_not_seen(
                                h, r, t, o as u32, own,
                            )));
                        }
                        continue;
                    }
                    if src == FROM_NOBODY {
                        return Err(Box::new(Certificate::read_of_nobody(h, r, o as u32)));
                    }
                    if src != FROM_INIT {
                        let w = r.op_txn[src as usize];
                        if w == t {
                            return Err(Box::new(Certificate::future_read(h, r, t, o as u32)));
                        }
                        if !inc[w as usize] {
                            return Err(Box::new(Certificate::aborted_read(h, r, o as u32)));
                        }
                        // The version must be the writer's last write of the key.
                        if h.ops(w)
                            .filter(|&x| x > src as usize)
                            .any(|x| h.op_kind[x] == OpKind::Write && h.op_key[x] == k)
                        {
                            return Err(Box::new(Certificate::intermediate_read(h, r, o as u32)));
                        }
                    }
                    let prev = scratch[slot].2;
                    if prev != NO_SRC && prev != src {
                        return Err(Box::new(Certificate::non_repeatable(h, r, t, k, prev, src)));
                    }
                    scratch[slot].2 = src;
                }
            }
        }
        for &(k, own, src) in &scratch {
            let src_node = match src {
                NO_SRC => None,
                FROM_INIT => Some(INIT),
                s => Some(txn_node[r.op_txn[s as usize] as usize]),
            };
            if let Some(w) = src_node {
                reads.push((k, w, node));
                if w != INIT {
                    edges.push((w, node));
                    labels.push(Label::fact(EdgeKind::Wr, k));
                }
            }
            if own != NONE {
                writes.push((k, node));
                if let Some(w) = src_node {
                    rmws.push((k, w, node));
                }
            }
        }
    }
    // Read-modify-writes the transactions made themselves, as opposed to steps of a list.
    let mut real_rmws = if h.has_lists() {
        rmws.clone()
    } else {
        Vec::new()
    };
    real_rmws.sort_unstable();
    crate::lists::lists(
        h,
        r,
        &inc,
        &txn_node,
        &mut reads,
        &mut rmws,
        &mut edges,
        &mut labels,
    )?;
    reads.sort_unstable();
    // A list read and the read of its last element may state the same read.
    reads.dedup();
    writes.sort_unstable();
    rmws.sort_unstable();
    // Several reads may reveal the same step of a version order.
    rmws.dedup();
    if h.has_lists() {
        // A version directly follows one version: a list read and a read-modify-write (or two
        // lists) that put different ones right before it cannot both be true.
        let mut by_succ: Vec<(u32, Node, Node)> = rmws.iter().map(|&(k, p, n)| (k, n, p)).collect();
        by_succ.sort_unstable();
        for w in by_succ.windows(2) {
            if w[0].0 == w[1].0 && w[0].1 == w[1].1 {
                let t = |n: Node| (n != INIT).then(|| node_txn[n as usize - 1]);
                return Err(Box::new(Certificate::two_predecessors(
                    h,
                    r,
                    w[0].0,
                    t(w[0].1).unwrap(),
                    t(w[0].2),
                    t(w[1].2),
                )));
            }
        }
    }
    if opts.combine {
        for w in rmws.windows(2) {
            if w[0].0 == w[1].0 && w[0].1 == w[1].1 {
                let t1 = node_txn[w[0].2 as usize - 1];
                let t2 = node_txn[w[1].2 as usize - 1];
                let p = if w[0].1 == INIT {
                    None
                } else {
                    Some(node_txn[w[0].1 as usize - 1])
                };
                if h.has_lists()
                    && (real_rmws.binary_search(&w[0]).is_err()
                        || real_rmws.binary_search(&w[1]).is_err())
                {
                    return Err(Box::new(Certificate::two_successors(
                        h, r, w[0].0, p, t1, t2,
                    )));
                }
                return Err(Box::new(Certificate::lost_update(h, r, w[0].0, p, t1, t2)));
            }
        }
    } else {
        rmws.clear();
    }

    let mut b = Built {
        num_nodes: ntx,
        node_txn,
        txn_node,
        first_gate: ntx as Node,
        edges,
        labels,
        constraints: Vec::new(),
        cedges: Vec::new(),
        chain_of,
        num_chains,
        excluded_unknown,
        chain_recs: Vec::new(),
        chain_keys: Vec::new(),
        gate_of: Vec::new(),
    };
    chains_and_constraints(&mut b, &reads, &writes, &rmws, opts);
    b.chain_of.resize(b.num_nodes, (u32::MAX, 0));
    Ok(b)
}

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

fn chains_and_constraints(
    b: &mut Built,
    reads: &[(u32, Node, Node)],
    writes: &[(u32, Node)],
    rmws: &[(u32, Node, Node)],
    opts: &Options,
) {
    let mut rd = key_groups(reads, |r| r.0).peekable();
    let mut rm = key_groups(rmws, |r| r.0).peekable();
    let mut chains: Vec<Vec<Node>> = Vec::new();
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
                for r in readers(chain[i]) {
                    if r.2 != chain[i + 1] {
                        b.edges.push((r.2, chain[i + 1]));
                        b.labels.push(Label::fact(EdgeKind::Rw, k));
                    }
                }
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
                            for r in rs {
                                b.edges.push((r.2, g));
                                b.labels.push(Label::fact(EdgeKind::Rw, k));
                            }
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
                        b.edges.push((gates[ic].0, c[0]));
                        b.labels.push(Label::fact(gates[ic].1, k));
                        // The tail's own version precedes the head too: a cycle through it
                        // alone is a write cycle (G0), which the readers' edge would hide.
                        if gates[ic].1 == EdgeKind::Rw && tail != INIT {
                            b.edges.push((tail, c[0]));
                            b.labels.push(Label::fact(EdgeKind::Ww, k));
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
                b.edges.push((r.2, c[0]));
                b.labels.push(Label::fact(EdgeKind::Rw, k));
                any = true;
            }
            if !any && tail != INIT {
                b.edges.push((tail, c[0]));
                b.labels.push(Label::fact(EdgeKind::Ww, k));
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
                let s = b.cedges.len() as u32;
                b.cedges.extend(set(i, j));
                let m = b.cedges.len() as u32;
                b.cedges.extend(set(j, i));
                let e = b.cedges.len() as u32;
                b.constraints.push(Constraint {
                    key: k,
                    a: (hi, ti),
                    b: (hj, tj),
                    first: (s, m),
                    second: (m, e),
                });
            } else {
                // For each edge of "i before j": that edge, or j precedes all of i. With no reader
                // of i's tail to speak for it, the edge is i's tail → j's head.
                for (u, v, l) in set(i, j) {
                    let s = b.cedges.len() as u32;
                    b.cedges.push((u, v, l));
                    b.cedges.push((tj, hi, Label::fact(EdgeKind::Ww, k)));
                    b.constraints.push(Constraint {
                        key: k,
                        a: (hi, ti),
                        b: (hj, tj),
                        first: (s, s + 1),
                        second: (s + 1, s + 2),
                    });
                }
            }
        }
    }
}
