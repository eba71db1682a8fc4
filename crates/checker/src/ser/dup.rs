//! Keys some read of which has several candidate writers (a value written more than once): the
//! plain polygraph, per key, with conditional anti-dependencies (VeriStrong's hyper-polygraph).
//! One constraint per pair of the key's writes orders them; a reader that read write `w` (known,
//! or as one candidate of its choice) must precede every write ordered after `w`. Chains and
//! coalescing need each read's writer, so such a key falls back to this, the others keep them.
//!
//! Pruning extends to choices: a candidate is ruled out when the known graph already puts the
//! reader before it, or another write of the key between it and the reader; a choice left with
//! one candidate is a known read. Conditional edges whose conditions pruning settled become
//! known edges (or vanish); the rest go to the solver.

use super::prune::Pruned;
use crate::graph::{
    cand_state, pair_state, Built, Choice, CondEdge, EdgeKind, Known, Label, Node, ReachCtx,
    RuledOut, INIT, NO_PAIR,
};

/// Conditional edges built at most. They grow with a key's reads × their candidates × its
/// writers, which on keys written thousands of times with a few values reaches billions;
/// past this (about 512 MB of edges) the check is unknown rather than out of memory.
const MAX_COND: usize = 1 << 24;

/// A key with choices, as built: its writers and, per writer, where the edges of "this version
/// before another" start (its plain readers' gate, its readers that write the key too, or
/// the writer itself), waiting for the first pruning round to pair them.
pub(crate) struct DupKey {
    pub key: u32,
    /// Writer nodes, sorted.
    pub writers: Vec<Node>,
    /// Per writer: (source node, edge kind) of its side's edges into the later writer.
    pub sources: Vec<Vec<(Node, EdgeKind)>>,
    /// The choices reading this key (indices into `Built::choices`).
    pub choices: Vec<u32>,
}

/// What one key brings: its writers (nodes, sorted), its known reads (key, writer, reader;
/// sorted by writer) and its choices. Readers that follow the initial version precede every
/// writer; several plain readers of a version share a gate node, as chains do.
pub(super) fn add_key(
    b: &mut Built,
    k: u32,
    writers: &[Node],
    reads: &[(u32, Node, Node)],
    choices: Vec<Choice>,
) {
    let readers = |w: Node| -> &[(u32, Node, Node)] {
        let lo = reads.partition_point(|r| r.1 < w);
        let hi = reads.partition_point(|r| r.1 <= w);
        &reads[lo..hi]
    };
    let rw = Label::fact(EdgeKind::Rw, k);
    let is_writer = |x: Node| writers.binary_search(&x).is_ok();
    // The initial version precedes every write: its readers precede every other writer.
    let (init_rmw, init_plain): (Vec<Node>, Vec<Node>) = readers(INIT)
        .iter()
        .map(|r| r.2)
        .partition(|&r| is_writer(r));
    if let Some((g, _)) = gate(b, INIT, k, &init_plain) {
        for &w in writers {
            b.push_edge(g, w, rw);
        }
    }
    // A reader that writes the key itself is the first writer after the initial version.
    for &r in &init_rmw {
        for &w in writers.iter().filter(|&&w| w != r) {
            b.push_edge(r, w, rw);
        }
    }
    let sources = writers
        .iter()
        .map(|&w| {
            let rs = readers(w);
            let (rmw, plain): (Vec<Node>, Vec<Node>) =
                rs.iter().map(|r| r.2).partition(|&r| is_writer(r));
            let mut out: Vec<(Node, EdgeKind)> =
                rmw.into_iter().map(|r| (r, EdgeKind::Rw)).collect();
            out.extend(gate(b, w, k, &plain));
            if out.is_empty() {
                out.push((w, EdgeKind::Ww));
            }
            out
        })
        .collect();
    let mut ids = Vec::with_capacity(choices.len());
    for mut c in choices {
        c.key = k;
        ids.push(b.choices.len() as u32);
        b.choices.push(c);
    }
    b.dup_pending.push(DupKey {
        key: k,
        writers: writers.to_vec(),
        sources,
        choices: ids,
    });
}

/// Where edges "after these readers" start: none without readers, the reader itself when one,
/// else a gate node all of them lead to. Readers that write the key are not given here.
fn gate(b: &mut Built, w: Node, k: u32, plain: &[Node]) -> Option<(Node, EdgeKind)> {
    match plain {
        [] => None,
        [r] => Some((*r, EdgeKind::Rw)),
        rs => {
            let g = b.num_nodes as Node;
            b.num_nodes += 1;
            b.gate_of.push((w, k));
            for &r in rs {
                b.push_edge(r, g, Label::fact(EdgeKind::Rw, k));
            }
            Some((g, EdgeKind::Rw))
        }
    }
}

/// The pairs and conditional edges of every pending key, once reachability can say which are
/// already decided (`reach`: the known graph's index and topological positions; without it,
/// all of them). A pair whose one order the known graph implies needs no constraint; a
/// conditional edge only matters for a writer that is neither known to precede the candidate
/// nor known to follow the reader. Returns the constraints added, or a choice whose every
/// candidate the known graph rules out, or more than [`MAX_COND`] conditional edges.
pub(super) fn expand(
    b: &mut Built,
    reach: Option<(&ReachCtx, &[u32])>,
) -> Result<std::ops::Range<u32>, Pruned> {
    let first = b.constraints.len() as u32;
    for d in std::mem::take(&mut b.dup_pending) {
        let mut pairs = std::collections::HashMap::new();
        pair_writers(b, &d, reach, &mut pairs);
        let by_chain = match reach.map(|r| &r.0.reach) {
            Some(crate::graph::Reach::Chains(cr)) => {
                let mut v: Vec<(u32, u32, u32)> = d
                    .writers
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| {
                        let (ch, p) = cr.chain_pos(x);
                        (ch, p, i as u32)
                    })
                    .collect();
                v.sort_unstable();
                Some(v)
            }
            _ => None,
        };
        for &ci in &d.choices {
            cond_edges(b, &d, ci, reach.map(|r| r.0), &pairs, by_chain.as_deref());
            if b.choices[ci as usize].num_alive() == 0 {
                return Err(Pruned::NoWriter(ci));
            }
            if b.cond.len() > MAX_COND {
                return Err(Pruned::TooLarge(b.cond.len()));
            }
        }
    }
    Ok(first..b.constraints.len() as u32)
}

/// One constraint per pair of the key's writers that the known graph does not order (writers
/// taken in topological order, with the shortcut of `Built::pair_chains`); `pairs` maps each
/// (earlier, later) writer index pair to its constraint.
fn pair_writers(
    b: &mut Built,
    d: &DupKey,
    reach: Option<(&ReachCtx, &[u32])>,
    pairs: &mut std::collections::HashMap<(u32, u32), u32>,
) {
    let k = d.key;
    let n = d.writers.len();
    let mut idx: Vec<u32> = (0..n as u32).collect();
    if let Some((_, pos)) = reach {
        idx.sort_unstable_by_key(|&i| pos[d.writers[i as usize] as usize]);
    }
    let side = |i: u32, j: u32| -> Vec<(Node, Node, Label)> {
        let wj = d.writers[j as usize];
        let es: Vec<_> = d.sources[i as usize]
            .iter()
            .filter(|s| s.0 != wj)
            .map(|&(s, kind)| (s, wj, Label::fact(kind, k)))
            .collect();
        if es.is_empty() {
            vec![(d.writers[i as usize], wj, Label::fact(EdgeKind::Ww, k))]
        } else {
            es
        }
    };
    let mut all_after = vec![false; n];
    for x in (0..n).rev() {
        let mut all = true;
        for y in x + 1..n {
            let (i, j) = (idx[x], idx[y]);
            if let Some((ctx, _)) = reach {
                let (wi, wj) = (d.writers[i as usize], d.writers[j as usize]);
                let placed = b.place_side(side(i, j), k, wi, wj);
                if placed.iter().all(|&(u, v, _)| ctx.implied(u, v)) {
                    if all_after[y] {
                        break;
                    }
                    continue;
                }
            }
            all = false;
            let (wi, wj) = (d.writers[i as usize], d.writers[j as usize]);
            let c = b.add_constraint(k, (wi, wi), (wj, wj), side(i, j), side(j, i));
            pairs.insert((i, j), c);
        }
        all_after[x] = all && reach.is_some();
    }
}

/// The edges choice `ci` brings: the write → read edge of each candidate, and the reader before
/// each writer that could come after that candidate.
fn cond_edges(
    b: &mut Built,
    d: &DupKey,
    ci: u32,
    ctx: Option<&ReachCtx>,
    pairs: &std::collections::HashMap<(u32, u32), u32>,
    by_chain: Option<&[(u32, u32, u32)]>,
) {
    let k = d.key;
    let rw = Label::fact(EdgeKind::Rw, k);
    let c = &b.choices[ci as usize];
    let (reader, cands) = (c.reader, c.cands.clone());
    let pos = |w: Node| d.writers.binary_search(&w).ok().map(|i| i as u32);
    for (x, &w) in cands.iter().enumerate() {
        let cand = x as u32;
        // Candidates the known graph already rules out get no edges.
        let ruled = if w != INIT && ctx.is_some_and(|cx| cx.reaches(b.start(reader), w)) {
            Err(RuledOut::ReaderFirst)
        } else {
            relevant_writers(d, w, (reader, b.start(reader)), ctx, by_chain)
                .map_err(|by| RuledOut::Overwritten { by })
        };
        let relevant = match ruled {
            Ok(r) => r,
            Err(why) => {
                let c = &mut b.choices[ci as usize];
                c.alive[x] = false;
                c.why[x] = Some(why);
                continue;
            }
        };
        if w != INIT {
            let label = Label::fact(EdgeKind::Wr, k);
            let (u, v) = b.ends(w, reader, EdgeKind::Wr);
            b.cond.push(cond(u, v, label, ci, cand, NO_PAIR, true));
        }
        for j in relevant {
            let w2 = d.writers[j as usize];
            if w2 == w || w2 == reader {
                continue;
            }
            let (pair, first) = match pos(w) {
                None => (NO_PAIR, true),
                Some(i) => match (pairs.get(&(i, j)), pairs.get(&(j, i))) {
                    (Some(&p), _) => (p, true),
                    (_, Some(&p)) => (p, false),
                    // No constraint: the known graph orders the two already.
                    _ if ctx.is_some_and(|cx| cx.reaches(w, w2)) => (NO_PAIR, true),
                    _ => continue,
                },
            };
            let (u, v) = b.ends(reader, w2, EdgeKind::Rw);
            b.cond.push(cond(u, v, rw, ci, cand, pair, first));
        }
    }
}

/// The writers (indices) a reader of candidate `w` might have to precede: all of them, less
/// (with the chain index; `by_chain`: the key's writers as (chain, position, index), sorted)
/// those known to precede `w` or to follow the reader. Per session chain both are runs at its
/// ends, found by binary search; and if a writer known to follow `w` is known to precede the
/// reader, `w` cannot be what it read: that writer is the error. The reader is given as its
/// node and its snapshot node (the same under serializability), which is where its reads are.
fn relevant_writers(
    d: &DupKey,
    w: Node,
    (reader, snap): (Node, Node),
    ctx: Option<&ReachCtx>,
    by_chain: Option<&[(u32, u32, u32)]>,
) -> Result<Vec<u32>, Node> {
    let (Some(ctx), Some(by_chain)) = (ctx, by_chain) else {
        return Ok((0..d.writers.len() as u32).collect());
    };
    let crate::graph::Reach::Chains(cr) = &ctx.reach else {
        return Ok((0..d.writers.len() as u32).collect());
    };
    let node = |t: &(u32, u32, u32)| d.writers[t.2 as usize];
    let mut out = Vec::new();
    let mut s = 0;
    while s < by_chain.len() {
        let ch = by_chain[s].0;
        let e = s + by_chain[s..].partition_point(|t| t.0 == ch);
        let run = &by_chain[s..e];
        s = e;
        // Followers of the reader: positions from the first the reader reaches.
        let hi = run.partition_point(|t| t.1 < cr.first_reached(snap, ch));
        // Predecessors of the candidate: a prefix (an earlier node reaches what a later does).
        let lo = if w == INIT {
            0
        } else {
            run[..hi].partition_point(|t| ctx.reaches(node(t), w))
        };
        // The first writer after the candidate; if it precedes the reader, so do all before it.
        let after = if w == INIT {
            lo
        } else {
            lo + run[lo..hi].partition_point(|t| !ctx.reaches(w, node(t)))
        };
        if let Some(t) = run[after..hi]
            .iter()
            .find(|t| node(t) != reader && node(t) != w)
        {
            if ctx.reaches(node(t), snap) {
                return Err(node(t));
            }
        }
        out.extend(run[lo..hi].iter().map(|t| t.2));
    }
    Ok(out)
}

impl Built {
    /// How many writer pairs the pending keys would pair (before pruning says which need no
    /// constraint), for the count of constraints before pruning.
    pub fn dup_pairs(&self) -> usize {
        self.dup_pending
            .iter()
            .map(|d| d.writers.len() * d.writers.len().saturating_sub(1) / 2)
            .sum()
    }
}

fn cond(
    u: Node,
    v: Node,
    label: Label,
    choice: u32,
    cand: u32,
    pair: u32,
    first: bool,
) -> CondEdge {
    CondEdge {
        u,
        v,
        label,
        choice,
        cand,
        pair,
        first,
        cyclic: false,
    }
}

/// What the known graph (as `ctx` sees it) says about the conditional edges: one it already
/// implies is dropped; one that would close a cycle rules out its candidate (when its version
/// order holds), rules out its version order (when its candidate is the one read: returned as
/// (constraint, whether its first option is the impossible one)), or else becomes a clause that
/// its two conditions never hold together. Returns whether anything changed and the version
/// orders ruled out, or the choice left with no candidate.
pub(super) fn prune_choices(
    b: &mut Built,
    ctx: &ReachCtx,
) -> Result<(bool, Vec<(u32, bool)>), u32> {
    let mut changed = false;
    let mut forced = Vec::new();
    let cond = std::mem::take(&mut b.cond);
    let mut keep = Vec::with_capacity(cond.len());
    let mut emptied = None;
    for mut e in cond {
        let cs = cand_state(&b.choices, e.choice, e.cand);
        let mut ps = pair_state(&b.decided, e.pair, e.first);
        if ps == Known::Open {
            // The known graph may already order the pair's two writes.
            let c = &b.constraints[e.pair as usize];
            let (x, y) = if e.first {
                (c.a.0, c.b.0)
            } else {
                (c.b.0, c.a.0)
            };
            if ctx.reaches(x, y) {
                ps = Known::True;
            } else if ctx.reaches(y, x) {
                ps = Known::False;
            }
        }
        if cs == Known::False || ps == Known::False {
            changed = true;
            continue;
        }
        let closes = e.cyclic || ctx.reaches(e.v, e.u);
        if !closes {
            if ctx.reaches(e.u, e.v) {
                // Implied already, whatever its conditions.
                changed = true;
            } else {
                keep.push(e);
            }
            continue;
        }
        match (cs, ps) {
            (Known::Open, Known::True) => {
                let c = &mut b.choices[e.choice as usize];
                c.alive[e.cand as usize] = false;
                c.why[e.cand as usize] = Some(if e.label.kind == EdgeKind::Wr {
                    RuledOut::ReaderFirst
                } else {
                    RuledOut::Overwritten { by: e.v }
                });
                if c.num_alive() == 0 {
                    emptied.get_or_insert(e.choice);
                }
                changed = true;
            }
            (Known::True, Known::Open) => {
                forced.push((e.pair, e.first));
                keep.push(e);
            }
            _ => {
                changed |= !e.cyclic;
                e.cyclic = true;
                keep.push(e);
            }
        }
    }
    b.cond = keep;
    match emptied {
        Some(c) => Err(c),
        None => Ok((changed || !forced.is_empty(), forced)),
    }
}

/// Moves every conditional edge whose conditions pruning settled: into the known graph when
/// both hold, out of the problem when one fails. Returns whether any became known.
pub(super) fn settle(b: &mut Built) -> bool {
    let mut added = false;
    let cond = std::mem::take(&mut b.cond);
    let mut open = Vec::with_capacity(cond.len());
    for e in cond {
        let c = cand_state(&b.choices, e.choice, e.cand);
        let p = pair_state(&b.decided, e.pair, e.first);
        match (c, p) {
            (Known::False, _) | (_, Known::False) => {}
            (Known::True, Known::True) => {
                let mut l = e.label;
                // An anti-dependency that holds by a version order pruning chose says so.
                if e.pair != NO_PAIR {
                    l.constraint = e.pair;
                }
                // Placed when made.
                b.edges.push((e.u, e.v));
                b.labels.push(l);
                added = true;
            }
            _ => open.push(e),
        }
    }
    b.cond = open;
    added
}
