//! Pruning (§3.3): decide each constraint one of whose options would close a cycle with the
//! known graph, add the other option as known edges, until nothing changes.

use crate::graph::{
    self, gate_preds, Budgeted, Built, ChainReach, EdgeKind, Known, Label, NodeRows, Reach,
    ReachCtx,
};
use crate::stats::CheckStats;
use crate::Options;
use rayon::prelude::*;

/// A pass testing at most this many constraints searches instead of building the index
/// (`Options::prune_search_few`).
const FEW: usize = 64;

/// Pairs formed without the known graph's reachability.
const NO_REACH: Option<fn(graph::Node, graph::Node) -> bool> = None;

/// Marks a decision whose chosen side the known graph already implies.
const IMPLIED: u8 = 4;

/// How pruning ended without leaving constraints to solve.
pub(super) enum Pruned {
    /// The known graph has a cycle.
    Cycle,
    /// Every candidate writer of this choice is ruled out.
    NoWriter(u32),
    /// The reads of repeated values need more conditional edges than krait builds (this many
    /// at least).
    TooLarge(usize),
}

/// Decides constraints whose one side would close a cycle, adding the other side as known
/// edges, and rules out candidate writers the known graph excludes, until nothing changes.
/// Returns the undecided constraints.
pub(super) fn prune(
    b: &mut Built,
    opts: &Options,
    stats: &mut CheckStats,
) -> Result<Vec<u32>, Pruned> {
    let mut remaining: Vec<u32> = (0..b.constraints.len() as u32).collect();
    let mut round = 0;
    // The graph (edge count, node count) last found acyclic: edges are only ever added, so a
    // last pass that added none needs no second look.
    let mut acyclic_at = (usize::MAX, 0);
    // Gate predecessors and the graph they were taken from: only edges into gates change them.
    let mut preds_at: Option<(NodeRows, usize, usize)> = None;
    // A topological order of the graph as of `acyclic_at`: a pass whose new edges all go
    // forward in it leaves it one (so the graph acyclic), with nothing to recompute.
    let mut order_at: Option<Vec<graph::Node>> = None;
    // The last graph built and how many edges it has: a pass of few searches looks at it and at
    // the edges added since, not at a new copy of it all.
    let mut csr_at: Option<(NodeRows, usize)> = None;
    loop {
        let open_choices = b.choices.iter().any(|c| c.num_alive() > 1);
        let done = round >= opts.prune_rounds
            || (remaining.is_empty()
                && b.chain_keys.is_empty()
                && b.dup_pending.is_empty()
                && !open_choices);
        if opts.prune && done && acyclic_at == (b.edges.len(), b.num_nodes) {
            break;
        }
        // Only constraints to test, and few: searching costs less than the index.
        let few = opts.prune
            && !done
            && opts.prune_search_few
            && remaining.len() <= FEW
            && b.chain_keys.is_empty()
            && b.dup_pending.is_empty()
            && b.choices.is_empty();
        let ordered = order_at.is_some() && acyclic_at == (b.edges.len(), b.num_nodes);
        // A pass of few searches, and the last pass (which only asks whether the graph is
        // acyclic), look at the graph built before and at the edges added since, not at a new
        // copy of it all.
        let extend = opts.prune && (few || done);
        // Gate predecessors change only with edges into gates.
        let preds_kept = matches!(&preds_at, Some((_, m, n))
            if *n == b.num_nodes && b.edges[*m..].iter().all(|&(_, v)| v < b.first_gate));
        let bref: &Built = b;
        let (csr, more) = match csr_at.take() {
            Some((c, m)) if extend && c.start.len() == bref.num_nodes + 1 => {
                let more = NodeRows::build(bref.num_nodes, &bref.edges[m..], false);
                (c, Some((more, m)))
            }
            _ => (NodeRows::build(bref.num_nodes, &bref.edges, false), None),
        };
        let added = more.as_ref().map(|m| &m.0);
        let kept_order = order_at.take().filter(|_| ordered);
        // The order is one thread's work, and so are the gates' predecessors: side by side
        // (beside the rows, which take every core, the predecessors held one of them back).
        let (order, fresh_preds) = rayon::join(
            || match kept_order {
                Some(o) => Ok(o),
                None if bref.order_time.is_empty() => {
                    graph::topo_order_with(bref.num_nodes, &csr, added)
                }
                None => graph::topo_order_timed(bref.num_nodes, &csr, added, &bref.order_time),
            },
            || (opts.prune && !done && !preds_kept).then(|| gate_preds(bref)),
        );
        let order = order.map_err(|_| Pruned::Cycle)?;
        acyclic_at = (b.edges.len(), b.num_nodes);
        if !opts.prune {
            b.pair_chains(|_, _| false, None, opts.skip_unobserved, NO_REACH);
            super::dup::expand(b, None)?;
            remaining = (0..b.constraints.len() as u32).collect();
            break;
        }
        if done {
            break;
        }
        round += 1;
        let preds = match (fresh_preds, preds_at.take()) {
            (Some(p), _) | (None, Some((p, _, _))) => p,
            (None, None) => unreachable!("gate predecessors are built unless kept"),
        };
        let preds_of = (b.edges.len(), b.num_nodes);
        let mut topo_pos = vec![0u32; b.num_nodes];
        for (i, &x) in order.iter().enumerate() {
            topo_pos[x as usize] = i as u32;
        }
        let reach = if few {
            Reach::Few(Budgeted::new(
                topo_pos.clone(),
                2 * csr.targets.len() + 1024,
            ))
        } else {
            reach_index(b, opts, &csr, &order, &topo_pos)
        };
        let ctx = ReachCtx {
            reach,
            csr: &csr,
            more: more.as_ref().map(|m| &m.0),
            preds: &preds,
            first_gate: b.first_gate,
        };
        if !b.chain_keys.is_empty() {
            // A pair whose one order the known graph already implies needs no constraint.
            let before = b.constraints.len() as u32;
            let pl = b.placer();
            b.pair_chains(
                |x, y| {
                    let (u, v) = pl.ends(x.gate, y.head, x.gate_kind);
                    ctx.implied(u, v)
                        && pl
                            .version_edge(x.tail, y.head)
                            .is_none_or(|(t, h)| ctx.reaches(t, h))
                },
                Some(&topo_pos),
                opts.skip_unobserved,
                opts.pair_by_heads.then_some(|x, y| ctx.reaches(x, y)),
            );
            remaining.extend(before..b.constraints.len() as u32);
        }
        if !b.dup_pending.is_empty() {
            let added = super::dup::expand(b, Some((&ctx, &topo_pos)));
            remaining.extend(added?);
        }
        // 0: undecided; 1: first is impossible, so second; 2: second impossible, so first;
        // plus IMPLIED when the known graph already has every edge of the side that holds.
        let implied = |ctx: &ReachCtx, edges: &[(graph::Node, graph::Node, Label)]| {
            IMPLIED * u8::from(edges.iter().all(|&(u, v, _)| ctx.implied(u, v)))
        };
        let decide = |ctx: &ReachCtx| -> Vec<u8> {
            remaining
                .par_iter()
                .map(|&ci| {
                    let c = &b.constraints[ci as usize];
                    if ctx.closes_cycle(b.first_edges(c)) {
                        1 | implied(ctx, b.second_edges(c))
                    } else if ctx.closes_cycle(b.second_edges(c)) {
                        2 | implied(ctx, b.first_edges(c))
                    } else {
                        0
                    }
                })
                .collect()
        };
        let mut decisions = decide(&ctx);
        if matches!(&ctx.reach, Reach::Few(s) if s.exhausted()) {
            // Some answers may be wrong: all of them again, from the index of the whole graph.
            let whole = more
                .is_some()
                .then(|| NodeRows::build(b.num_nodes, &b.edges, false));
            let csr = whole.as_ref().unwrap_or(&csr);
            let ctx = ReachCtx {
                reach: reach_index(b, opts, csr, &order, &topo_pos),
                csr,
                more: None,
                ..ctx
            };
            decisions = decide(&ctx);
        }
        let mut changed = false;
        // Constraint → whether its first option is the one conditional edges ruled out.
        let mut forced: std::collections::HashMap<u32, bool> = Default::default();
        if !b.choices.is_empty() {
            let (ch, f) = super::dup::prune_choices(b, &ctx).map_err(Pruned::NoWriter)?;
            changed |= ch;
            forced.extend(f);
        }
        drop(ctx);
        preds_at = Some((preds, preds_of.0, preds_of.1));
        b.decided.resize(b.constraints.len(), Known::Open);
        let mut next = Vec::with_capacity(remaining.len());
        let mut batch = Vec::new();
        for (&ci, &d) in remaining.iter().zip(&decisions) {
            let (d, skip) = match (d, forced.get(&ci)) {
                (0, Some(&first_impossible)) => (2 - u8::from(first_impossible), false),
                _ => (d & !IMPLIED, d & IMPLIED != 0),
            };
            if d == 0 {
                next.push(ci);
                continue;
            }
            changed = true;
            b.decided[ci as usize] = if d == 1 { Known::False } else { Known::True };
            if skip {
                // Paths the known graph has already say it: the same reachability without
                // another edge (dense contended keys decide millions of these, so their
                // constraints are not even read here).
                continue;
            }
            let c = &b.constraints[ci as usize];
            let (key, (tail, head), (lo, hi)) = if d == 1 {
                (c.key, (c.b.1, c.a.0), c.second)
            } else {
                (c.key, (c.a.1, c.b.0), c.first)
            };
            // The version order chosen, tail before head, stated as well as the readers' edge,
            // so a cycle through the versions alone shows as the write cycle it is.
            let add = &b.cedges[lo as usize..hi as usize];
            // (Under snapshot isolation the option states it already: `graph::split`.)
            let extra = add
                .iter()
                .filter(|_| !b.split)
                .any(|&(u, v, l)| l.kind == EdgeKind::Rw && v == head && u != tail)
                .then(|| (tail, head, Label::fact(EdgeKind::Ww, key)));
            for (u, v, mut l) in add.iter().copied().chain(extra) {
                l.constraint = ci;
                batch.push((u, v, l));
            }
        }
        if opts.thin_edges {
            thin_by_chains(&mut batch, &b.chain_of);
        }
        let forward = batch
            .iter()
            .all(|&(u, v, _)| topo_pos[u as usize] < topo_pos[v as usize]);
        for (u, v, l) in batch {
            b.edges.push((u, v));
            b.labels.push(l);
        }
        if forward {
            acyclic_at = (b.edges.len(), b.num_nodes);
            order_at = Some(order);
        }
        let covered = more.map_or(preds_of.0, |m| m.1);
        csr_at = Some((csr, covered));
        remaining = next;
        if !b.cond.is_empty() {
            changed |= super::dup::settle(b);
        }
        if !changed {
            break;
        }
    }
    // A round limit can stop pruning before pairs were formed: they are all constraints then.
    if !b.chain_keys.is_empty() {
        let before = b.constraints.len() as u32;
        b.pair_chains(|_, _| false, None, opts.skip_unobserved, NO_REACH);
        remaining.extend(before..b.constraints.len() as u32);
    }
    if !b.dup_pending.is_empty() {
        remaining.extend(super::dup::expand(b, None)?);
    }
    stats.prune_rounds = round;
    Ok(remaining)
}

/// The reachability index over session chains, or where it would take more memory than
/// allowed, searches bounded by topological position.
fn reach_index(
    b: &Built,
    opts: &Options,
    csr: &NodeRows,
    order: &[graph::Node],
    topo_pos: &[u32],
) -> Reach {
    if ChainReach::memory_needed(b.num_nodes, b.num_chains) <= opts.reach_memory_cap {
        Reach::Chains(ChainReach::build(
            b.num_nodes,
            b.num_chains,
            b.chain_of.clone(),
            csr,
            order,
        ))
    } else {
        Reach::Search {
            pos: topo_pos.to_vec(),
        }
    }
}

/// Leaves out of a round's new edges those that others in it imply through a session chain:
/// of the edges from one node into one chain only the one to the earliest position, and of the
/// edges into one node from one chain only the one from the latest. Reachability, and so every
/// later decision, is the same; the graph the next rounds and the solver search stays sparse
/// (on contended keys most decided edges are of this kind: a gate before every later write of
/// each session).
fn thin_by_chains(batch: &mut Vec<(graph::Node, graph::Node, Label)>, chain_of: &[(u32, u32)]) {
    let at = |x: graph::Node| chain_of.get(x as usize).copied().unwrap_or((u32::MAX, 0));
    let pair = |node: graph::Node, chain: u32| (u64::from(node) << 32) | u64::from(chain);
    // From one node into one chain: the earliest target.
    let kept = first_of_each(batch, 0..batch.len() as u32, |e| {
        let (c, p) = at(e.1);
        (pair(e.0, c), p)
    });
    // Into one node from one chain: the latest source.
    let kept = first_of_each(batch, kept.into_iter(), |e| {
        let (c, p) = at(e.0);
        (pair(e.1, c), u32::MAX - p)
    });
    *batch = kept.into_iter().map(|i| batch[i as usize]).collect();
}

/// The indices `of` into `edges`, sorted by `key` (a group, a node and a chain; then a rank),
/// only the first of each group kept where the group's chain is one (u32::MAX: on none, every
/// edge kept); ties by index. Each edge is sorted as one 16-byte word (group, rank, index): a
/// key looked up per comparison was a scattered read of the chain table each time, and the
/// edges sorted with their keys beside them, 40 bytes each, took 30–40 ms at 80k read-heavy
/// transactions (442 thousand decided edges).
fn first_of_each<E>(
    edges: &[E],
    of: impl Iterator<Item = u32>,
    key: impl Fn(&E) -> (u64, u32),
) -> Vec<u32> {
    let mut keyed: Vec<u128> = of
        .map(|i| {
            let (group, rank) = key(&edges[i as usize]);
            (u128::from(group) << 64) | (u128::from(rank) << 32) | u128::from(i)
        })
        .collect();
    // On every core (a small round's stays on this thread): on one, 80k read-heavy
    // transactions' first round sorted for tens of milliseconds with the other cores idle.
    keyed.par_sort_unstable();
    let group = |k: u128| (k >> 64) as u64;
    keyed.dedup_by(|later, first| {
        group(*later) == group(*first) && group(*later) as u32 != u32::MAX
    });
    keyed.into_iter().map(|k| k as u32).collect()
}
