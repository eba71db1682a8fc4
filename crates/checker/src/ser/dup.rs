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

use crate::graph::{
    cand_state, pair_state, Built, Choice, CondEdge, Constraint, EdgeKind, Known, Label, Node,
    ReachCtx, RuledOut, INIT, NO_PAIR,
};

/// What one key brings: its writers (nodes, sorted), its known reads (key, writer, reader;
/// sorted by writer) and its choices.
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
    // The initial version precedes every write: its readers precede every other writer.
    for r in readers(INIT) {
        for &w in writers.iter().filter(|&&w| w != r.2) {
            b.edges.push((r.2, w));
            b.labels.push(rw);
        }
    }
    // One constraint per pair of writers: constraint `base + pair_index(i, j)` orders i and j.
    let n = writers.len();
    let base = b.constraints.len() as u32;
    let side = |b: &mut Built, i: usize, j: usize| {
        let (wi, wj) = (writers[i], writers[j]);
        let s = b.cedges.len();
        for r in readers(wi).iter().filter(|r| r.2 != wj) {
            b.cedges.push((r.2, wj, rw));
        }
        if b.cedges.len() == s {
            b.cedges.push((wi, wj, Label::fact(EdgeKind::Ww, k)));
        }
    };
    for i in 0..n {
        for j in i + 1..n {
            let s = b.cedges.len() as u32;
            side(b, i, j);
            let m = b.cedges.len() as u32;
            side(b, j, i);
            let e = b.cedges.len() as u32;
            b.constraints.push(Constraint {
                key: k,
                a: (writers[i], writers[i]),
                b: (writers[j], writers[j]),
                first: (s, m),
                second: (m, e),
            });
        }
    }
    let pair = |i: usize, j: usize| -> (u32, bool) {
        let (lo, hi) = (i.min(j), i.max(j));
        let idx = lo * (2 * n - lo - 1) / 2 + (hi - lo - 1);
        (base + idx as u32, i < j)
    };
    let pos = |w: Node| writers.binary_search(&w).ok();
    for mut c in choices {
        let ci = b.choices.len() as u32;
        // The reader's own position among the writers (a read-modify-write) is no candidate's
        // successor to order: it follows its source by the write→read edge.
        for (x, &w) in c.cands.iter().enumerate() {
            let cand = x as u32;
            if w != INIT {
                let label = Label::fact(EdgeKind::Wr, k);
                b.cond.push(cond(w, c.reader, label, ci, cand, NO_PAIR, true));
            }
            for (j, &w2) in writers.iter().enumerate() {
                if w2 == w || w2 == c.reader {
                    continue;
                }
                let (p, first) = match pos(w) {
                    Some(i) => pair(i, j),
                    None => (NO_PAIR, true),
                };
                b.cond.push(cond(c.reader, w2, rw, ci, cand, p, first));
            }
        }
        c.key = k;
        b.choices.push(c);
    }
}

fn cond(u: Node, v: Node, label: Label, choice: u32, cand: u32, pair: u32, first: bool) -> CondEdge {
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
            let (x, y) = if e.first { (c.a.0, c.b.0) } else { (c.b.0, c.a.0) };
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
