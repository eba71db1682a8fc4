//! Read committed's and read atomic's premises as a SAT problem modulo acyclicity, for the
//! choice of writers of reads of repeated values (`repeated`): a variable per candidate
//! writer, write→read edges present when it is chosen, and each forced edge t3 → t1 present
//! when both reads behind it are (an auxiliary variable implied by the two). The solver then
//! steers clear of whole families of choices by itself, where learning them one violation at
//! a time took thousands of checks.
//!
//! Only what holds in every choice that satisfies the level goes in, so the encoding never
//! excludes a good choice: committed readers only (a transaction of unknown outcome takes part
//! only if someone reads it), session order among committed transactions, and forced edges of
//! readers with a read in doubt (the others' forced edges the exact check adds anyway). Causal
//! consistency forces at least read atomic's edges, so it gets those. Whatever the encoding
//! leaves out, the exact check of each proposed choice catches and `learn` learns.

use crate::graph::Node;
use crate::Level;
use krait_history::{
    FxHashMap, FxHashSet, History, OpKind, Resolution, TxnStatus, FROM_INIT, FROM_NOBODY,
};
use krait_solver::{Lit, Problem};

/// Literals in the clauses and edges of the encoding at most (each pair of reads behind a
/// forced edge is a clause): past it, the rest of the forced edges are left to learning, so
/// memory stays within a few hundred megabytes however many candidates the reads have.
const MAX_SIZE: usize = 1 << 22;

/// Adds to `p` (whose variables `base[d]..` are the candidates of `doubt[d]`) the graph of
/// `level`'s premises over nodes 0 (the initial state) and t + 1 for transaction t.
pub(super) fn encode(
    h: &History,
    r: &Resolution,
    doubt: &[(u32, Vec<u32>)],
    base: &[u32],
    level: Level,
    p: &mut Problem,
) {
    let node = |t: u32| t + 1;
    p.num_nodes = h.num_txns() as u32 + 1;
    let committed = |t: usize| h.txn_status[t] == TxnStatus::Committed;
    // Session order among committed transactions, and each one's place on its session.
    let mut place = vec![(u32::MAX, 0u32); h.num_txns()];
    for s in 0..h.num_sessions() {
        let mut prev: Option<u32> = None;
        let mut at = 0;
        for t in h.session_txns[s]..h.session_txns[s + 1] {
            if !committed(t as usize) {
                continue;
            }
            place[t as usize] = (s as u32, at);
            at += 1;
            if let Some(q) = prev {
                p.known_edges.push((node(q), node(t)));
            }
            prev = Some(t);
        }
    }
    let so_before = |a: Node, b: Node| {
        a != 0 && b != 0 && {
            let (sa, pa) = place[a as usize - 1];
            let (sb, pb) = place[b as usize - 1];
            sa != u32::MAX && sa == sb && pa < pb
        }
    };
    let mut which: FxHashMap<u32, usize> = FxHashMap::default();
    for (d, (o, _)) in doubt.iter().enumerate() {
        which.insert(*o, d);
    }
    let mut writes: FxHashSet<(u32, u32)> = FxHashSet::default();
    for t in 0..h.num_txns() as u32 {
        for o in h.ops(t) {
            if h.op_kind[o] == OpKind::Write {
                writes.insert((t, h.op_key[o]));
            }
        }
    }
    let writer_node = |w: u32| -> Option<Node> {
        match w {
            FROM_INIT => Some(0),
            FROM_NOBODY => None,
            w if w >= krait_history::FROM_AMBIGUOUS => None,
            w => Some(node(r.op_txn[w as usize])),
        }
    };
    // Per (session, key), the last committed writer so far (read atomic's session rule).
    let mut last_writer: FxHashMap<(u32, u32), Node> = FxHashMap::default();
    // One variable per forced edge, shared by every pair of reads that forces it.
    let mut aux: FxHashMap<(Node, Node), Lit> = FxHashMap::default();
    // One reader's external reads: (key, its candidates (writer node, the literal choosing
    // it, None if certain)).
    let mut reads: Vec<(u32, Vec<(Node, Option<Lit>)>)> = Vec::new();
    let mut own: FxHashSet<u32> = FxHashSet::default();
    for t2 in 0..h.num_txns() as u32 {
        if !committed(t2 as usize) {
            continue;
        }
        let n2 = node(t2);
        reads.clear();
        own.clear();
        let mut in_doubt = false;
        for o in h.ops(t2) {
            let k = h.op_key[o];
            if h.op_kind[o] == OpKind::Write {
                own.insert(k);
                continue;
            }
            if own.contains(&k) || h.list_of(o as u32).is_some() {
                continue;
            }
            let cands: Vec<(Node, Option<Lit>)> = match which.get(&(o as u32)) {
                Some(&d) => {
                    in_doubt = true;
                    doubt[d]
                        .1
                        .iter()
                        .enumerate()
                        .filter_map(|(j, &w)| {
                            let v = krait_solver::Var(base[d] + j as u32);
                            writer_node(w).map(|x| (x, Some(Lit::pos(v))))
                        })
                        .collect()
                }
                None => writer_node(r.read_from[o]).map_or(Vec::new(), |x| vec![(x, None)]),
            };
            for &(w, l) in &cands {
                if w != 0 && w != n2 {
                    match l {
                        None => p.known_edges.push((w, n2)),
                        Some(l) => p.lit_edges.push((l, w, n2)),
                    }
                }
            }
            reads.push((k, cands));
        }
        if in_doubt && size(p) < MAX_SIZE {
            // Forced edges t3 → t1: read j of x from t1, read i of t3, t3 writes x.
            for (j, (x, c1)) in reads.iter().enumerate() {
                for (i, (_, c3)) in reads.iter().enumerate() {
                    let rule = match level {
                        Level::ReadCommitted => i < j,
                        _ => i != j,
                    };
                    if !rule {
                        continue;
                    }
                    for &(t3, l3) in c3 {
                        if t3 == 0 || t3 == n2 || !writes.contains(&(t3 - 1, *x)) {
                            continue;
                        }
                        for &(t1, l1) in c1 {
                            if t1 != t3 && t1 != n2 && !so_before(t3, t1) {
                                forced(p, &mut aux, t3, t1, l3, l1);
                            }
                        }
                    }
                }
            }
        }
        let (s, _) = place[t2 as usize];
        if level != Level::ReadCommitted {
            // Read atomic: the session's last committed writer of x before t2 precedes t1.
            for (x, c1) in &reads {
                if let Some(&t3) = last_writer.get(&(s, *x)) {
                    for &(t1, l1) in c1 {
                        if t1 != t3 && !so_before(t3, t1) {
                            forced(p, &mut aux, t3, t1, None, l1);
                        }
                    }
                }
            }
        }
        for &k in &own {
            last_writer.insert((s, k), n2);
        }
    }
}

/// Literals in `p`'s clauses and edges, roughly.
fn size(p: &Problem) -> usize {
    p.clauses.len() * 3 + p.lit_edges.len() + p.known_edges.len()
}

/// The edge t3 → t1 when both `l3` and `l1` hold (None: certain), through `aux`'s variable for
/// that edge when both are choices; an edge into the initial state cannot be, so its premises
/// are a clause instead.
fn forced(
    p: &mut Problem,
    aux: &mut FxHashMap<(Node, Node), Lit>,
    t3: Node,
    t1: Node,
    l3: Option<Lit>,
    l1: Option<Lit>,
) {
    if t1 == 0 {
        p.clauses
            .push([l3, l1].into_iter().flatten().map(|l| !l).collect());
        return;
    }
    match (l3, l1) {
        (None, None) => p.known_edges.push((t3, t1)),
        (Some(l), None) | (None, Some(l)) => p.lit_edges.push((l, t3, t1)),
        (Some(a), Some(b)) => {
            let v = *aux.entry((t3, t1)).or_insert_with(|| {
                let x = p.new_var();
                // Set only when both reads imply it: a guess would add edges for nothing.
                p.implied_only.push(x);
                let v = Lit::pos(x);
                p.lit_edges.push((v, t3, t1));
                v
            });
            p.clauses.push(vec![!a, !b, v]);
        }
    }
}
