//! The weak levels — read committed, read atomic, causal consistency — after Biswas and Enea's
//! axioms: a history satisfies the level iff some commit order contains session order and
//! write→read and, for every read of x from t1 and every other writer t3 of x that the reader
//! "sees" by the level's rule, puts t3 before t1. The rule never depends on the commit order,
//! so the forced edges are computed once (`axioms`) and the level holds iff session order,
//! write→read and the forced edges are acyclic: polynomial, no constraints, no solver.
//!
//! - read committed: t3 was read by an earlier read of the same transaction;
//! - read atomic: t3 was read by the transaction at all, or precedes it in its session;
//! - causal: t3 is in the transaction's causal past (session order and write→read, transitively).
//!
//! Each read must name its writer: where values repeat, `repeated` tries the ways the reads
//! could be explained. The per-transaction checks (aborted, intermediate, future reads, own
//! writes not seen) are the same as for every level.

mod axioms;
mod encode;
mod facts;
mod learn;
pub(crate) mod online;
mod repeated;

use crate::graph::{EdgeKind, Label, Node, INIT};
use crate::{cert, CheckError, CheckStats, Level, Options, Report, Timings, Verdict};
use facts::Facts;
use krait_history::History;
use std::borrow::Cow;
use std::time::Instant;

/// Which rule of a level forced a version-order edge t3 → t1 (t2 read x from t1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rule {
    /// Read committed: t2 read t3 earlier (at op `via`).
    Earlier { via: u32 },
    /// Read atomic: t2 read from t3 (at op `via`).
    ReadFrom { via: u32 },
    /// Read atomic: t3 precedes t2 in its session.
    Session,
    /// Causal: t3 is in t2's causal past.
    Causal,
}

/// A forced edge: t3 → t1 on key `key`, because read `op` of t2 read x from t1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Forced {
    pub t3: Node,
    pub t1: Node,
    pub key: u32,
    pub op: u32,
    pub rule: Rule,
}

/// Checks `h` at a weak level.
pub(crate) fn run(h: &History, opts: &Options) -> Result<Report, CheckError> {
    let t0 = Instant::now();
    let r = krait_history::resolve(h);
    let name = opts.level.name(false);
    if h.has_lists() {
        return Err(CheckError::Unsupported(format!(
            "--level {name} does not check list-append histories yet (check ser or si)"
        )));
    }
    if opts.strict.is_some() {
        return Err(CheckError::Unsupported(format!(
            "--level {name} has no real-time variant (drop --strict)"
        )));
    }
    if !r.ambiguous.is_empty() {
        return repeated::run(h, r, opts, t0);
    }
    let again = || krait_history::resolve(h);
    let rep = check_resolved(h, Cow::Owned(r), opts, t0.elapsed(), Some(&again))?;
    Ok(rep.expect("a certificate was asked for"))
}

/// Checks `h` at a weak level with every read's writer named in `r` (resolved in
/// `resolved_in`); `again` gives `r` back for a certificate, as one handed over is dropped
/// once the facts hold what it says. Without `again` no certificate is made: a violation is
/// `None`.
pub(crate) fn check_resolved(
    h: &History,
    r: Cow<'_, krait_history::Resolution>,
    opts: &Options,
    resolved_in: std::time::Duration,
    again: Option<&dyn Fn() -> krait_history::Resolution>,
) -> Result<Option<Report>, CheckError> {
    let level = opts.level;
    let name = level.name(false);
    let mut timings = Timings {
        resolve: resolved_in,
        ..Default::default()
    };
    let mut stats = CheckStats::default();
    let t1 = Instant::now();
    let report =
        |verdict, stats, timings, order| Report::plain(name, verdict, stats, timings, order);
    let f = match Facts::build(h, &r, &[]) {
        Ok(f) => f,
        Err(_) if again.is_none() => return Ok(None),
        Err(finding) => {
            timings.graph = t1.elapsed();
            let cert = cert::certify(h, &r, &finding);
            return Ok(Some(report(
                Verdict::Reject(Box::new(cert)),
                stats,
                timings,
                None,
            )));
        }
    };
    // What the reads resolved to is in the facts now; a certificate resolves them again, so
    // the graph's peak memory does without them (8 bytes an operation).
    drop(r);
    stats.txns_checked = f.node_txn.len();
    stats.unknown_outcome_excluded = f.excluded_unknown;
    let forced = forced_edges(level, &f);
    timings.graph = t1.elapsed();
    let t = Instant::now();
    let n = f.num_nodes();
    stats.nodes = n;
    // The graph is made as a CSR straight from the facts and the forced edges: the labelled
    // edge list a certificate needs is made only for a cycle.
    let (sorted, edges) = topo_order_of(n, || graph_edges(&f, &forced));
    stats.known_edges = edges;
    stats.constraints = forced.len();
    let verdict = match sorted {
        Ok(order) => {
            timings.prune = t.elapsed();
            let order = opts.want_order.then(|| {
                order
                    .into_iter()
                    .filter(|&x| x != INIT)
                    .map(|x| h.txn_ext[f.node_txn[x as usize - 1] as usize])
                    .collect()
            });
            return Ok(Some(report(Verdict::Accept, stats, timings, order)));
        }
        Err(()) => {
            let Some(again) = again else {
                return Ok(None);
            };
            timings.prune = t.elapsed();
            let t = Instant::now();
            let r = again();
            let (edges, labels, why) = graph_of(&f, &forced);
            let c = cert::weak_certificate(h, &r, &f.node_txn, &edges, &labels, &why, &forced);
            timings.certificate = t.elapsed();
            Verdict::Reject(Box::new(c))
        }
    };
    Ok(Some(report(verdict, stats, timings, None)))
}

/// The edges `level` forces on the facts.
fn forced_edges(level: Level, f: &Facts) -> Vec<Forced> {
    match level {
        Level::ReadCommitted => axioms::read_committed(f),
        Level::ReadAtomic => axioms::read_atomic(f),
        // None: session order and write→read close a cycle already, which the check finds.
        _ => axioms::causal(f, None).unwrap_or_default(),
    }
}

/// None if `level` holds with the writers `r` names; else, per violation found, the reads
/// of repeated values whose chosen writers it needs (see `learn`).
fn violations(
    h: &History,
    r: &krait_history::Resolution,
    level: Level,
    learner: &learn::Learner,
) -> Option<Vec<Vec<u32>>> {
    let f = match Facts::build(h, r, &[]) {
        Ok(f) => f,
        Err(finding) => return Some(vec![learner.of_finding(r, &finding)]),
    };
    let forced = forced_edges(level, &f);
    match topo_order_of(f.num_nodes(), || graph_edges(&f, &forced)).0 {
        Ok(_) => None,
        Err(()) => Some(learner.of_cycles(r, &f, &forced)),
    }
}

/// A topological order of the graph on `n` nodes whose edges `edges` makes (twice: to count,
/// then to place), or `Err` on a cycle; and the number of edges. Targets alone, 4 bytes an
/// edge: the edge a certificate names is found again on its own graph.
fn topo_order_of<I: Iterator<Item = (Node, Node)>>(
    n: usize,
    edges: impl Fn() -> I,
) -> (Result<Vec<Node>, ()>, usize) {
    let mut start = vec![0u32; n + 1];
    let mut indeg = vec![0u32; n];
    let mut m = 0usize;
    for (u, v) in edges() {
        start[u as usize + 1] += 1;
        indeg[v as usize] += 1;
        m += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut targets = vec![0 as Node; m];
    for (u, v) in edges() {
        targets[fill[u as usize] as usize] = v;
        fill[u as usize] += 1;
    }
    drop(fill);
    let mut order: Vec<Node> = (0..n as Node).filter(|&x| indeg[x as usize] == 0).collect();
    let mut head = 0;
    while head < order.len() {
        let x = order[head] as usize;
        head += 1;
        for &y in &targets[start[x] as usize..start[x + 1] as usize] {
            indeg[y as usize] -= 1;
            if indeg[y as usize] == 0 {
                order.push(y);
            }
        }
    }
    (if order.len() == n { Ok(order) } else { Err(()) }, m)
}

/// The edges of [`graph_of`], in its order, without labels.
fn graph_edges<'a>(f: &'a Facts, forced: &'a [Forced]) -> impl Iterator<Item = (Node, Node)> + 'a {
    let known = f.known.iter().map(|&(u, v, _)| (u, v));
    let forced = forced
        .iter()
        .flat_map(|e| std::iter::once((e.t3, e.t1)).chain((e.t1 == INIT).then_some((INIT, e.t3))));
    known.chain(forced)
}

/// Session order, write→read and the forced edges, labelled; `why[i]` is the forced edge (index
/// into `forced`) behind edge i, if any. An edge forced into the initial state (t3 before it) is
/// a cycle with the initial state's precedence over t3's write, stated as the edge it is.
fn graph_of(f: &Facts, forced: &[Forced]) -> (Vec<(Node, Node)>, Vec<Label>, Vec<u32>) {
    let mut edges = Vec::with_capacity(f.known.len() + forced.len());
    let mut labels = Vec::with_capacity(edges.capacity());
    let mut why = Vec::with_capacity(edges.capacity());
    for &(u, v, l) in &f.known {
        edges.push((u, v));
        labels.push(l);
        why.push(u32::MAX);
    }
    for (i, e) in forced.iter().enumerate() {
        edges.push((e.t3, e.t1));
        labels.push(Label::fact(EdgeKind::Ww, e.key));
        why.push(i as u32);
        if e.t1 == INIT {
            edges.push((INIT, e.t3));
            labels.push(Label::fact(EdgeKind::Ww, e.key));
            why.push(u32::MAX);
        }
    }
    (edges, labels, why)
}
