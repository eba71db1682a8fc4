//! krait-checker: is a history serializable? Cobra's pipeline, exact at every step.
//!
//! Input: a [`History`] (from krait-history) and [`Options`]. Output: a [`Report`] — the
//! [`Verdict`] (ACCEPT, or REJECT with a [`Certificate`]), optionally a serial order, and
//! statistics and per-phase timings.
//!
//! Steps: per-transaction checks → known graph (session order, write→read, real-time edges
//! under `strict`) → read-modify-write chains and inferred anti-dependencies → one coalesced
//! constraint per pair of chains on a key → pruning by reachability until nothing changes →
//! SAT modulo acyclicity (krait-solver) per strongly connected component of what remains.

pub mod build;
pub mod cert;
mod deduce;
pub mod graph;
mod lists;
pub mod online;
pub mod realtime;

pub use cert::{Anomaly, CertConstraint, CertEdge, CertOption, CertTxn, Certificate};
pub use graph::EdgeKind;

use build::{Built, Constraint};
use graph::{ChainReach, Csr, Label, Node};
use krait_history::{History, Resolution, TxnId};
use krait_solver::{Budget, Engine, Outcome};
use rayon::prelude::*;
use serde::Serialize;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    Cdcl,
    BruteForce,
}

/// Switches. All techniques on by default; each can be turned off and the verdict stays exact.
#[derive(Clone, Debug)]
pub struct Options {
    /// Glue read-modify-writes into chains (§3.1 of the paper).
    pub combine: bool,
    /// One constraint per pair of chains instead of one per (reader, writer) (§3.2).
    pub coalesce: bool,
    /// Decide constraints by reachability before solving (§3.3).
    pub prune: bool,
    pub prune_rounds: u32,
    /// Strict serializability: real-time edges, with this clock-drift allowance in nanoseconds.
    pub strict: Option<u64>,
    pub solver: SolverKind,
    /// Seed decisions' polarity from the topological order.
    pub solver_order_phase: bool,
    pub solver_theory_propagation: bool,
    pub budget: Budget,
    /// Compute a serial order on ACCEPT.
    pub want_order: bool,
    /// Reachability index memory cap in bytes, above which pruning falls back to search.
    pub reach_memory_cap: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            combine: true,
            coalesce: true,
            prune: true,
            prune_rounds: 64,
            strict: None,
            solver: SolverKind::Cdcl,
            solver_order_phase: true,
            solver_theory_propagation: true,
            budget: Budget::unlimited(),
            want_order: false,
            reach_memory_cap: 4 << 30,
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "verdict", rename_all = "UPPERCASE")]
pub enum Verdict {
    Accept,
    Reject(Box<Certificate>),
    /// The solver's budget ran out before an answer.
    Unknown {
        reason: String,
    },
}

impl Verdict {
    pub fn is_accept(&self) -> bool {
        matches!(self, Verdict::Accept)
    }
    pub fn is_reject(&self) -> bool {
        matches!(self, Verdict::Reject(_))
    }
    pub fn certificate(&self) -> Option<&Certificate> {
        match self {
            Verdict::Reject(c) => Some(c),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    pub resolve: Duration,
    pub graph: Duration,
    pub prune: Duration,
    pub solve: Duration,
    pub certificate: Duration,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckStats {
    pub txns_checked: usize,
    pub unknown_outcome_excluded: usize,
    pub nodes: usize,
    pub known_edges: usize,
    pub realtime_edges: usize,
    pub constraints: usize,
    pub constraints_after_prune: usize,
    pub prune_rounds: u32,
    pub components: usize,
    pub largest_component_constraints: usize,
    pub conflicts: u64,
    pub decisions: u64,
    pub propagations: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub verdict: Verdict,
    pub stats: CheckStats,
    pub timings: Timings,
    /// A serial order of the transactions (external ids), on ACCEPT when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<u64>>,
}

/// Errors that are about the input or the options, not the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckError {
    MissingTimestamp { txn: String },
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::MissingTimestamp { txn } => write!(
                f,
                "transaction {txn} has no start/commit timestamp, which --strict needs (record timestamps, or check without --strict)"
            ),
        }
    }
}

impl std::error::Error for CheckError {}

pub fn check(h: &History, opts: &Options) -> Result<Report, CheckError> {
    run(h, opts, None, false).map(|(r, _)| r)
}

/// Facts an online round carries over from transactions no longer in its history: `hubs` extra
/// nodes (stand-ins for garbage-collected paths with many ends) and known edges between
/// transactions (their [`TxnId`] in the round's history) and hubs (`HUB | index`).
#[derive(Clone, Debug, Default)]
pub struct Carried {
    /// Unknown outcomes an earlier round found read (so committed), whose readers may be gone.
    pub committed_unknown: Vec<TxnId>,
    pub hubs: u32,
    pub edges: Vec<(u32, u32)>,
}

/// Marks a hub in [`Carried::edges`].
pub const HUB: u32 = 1 << 31;

/// The graph an accepted check ended with, for garbage collection.
pub(crate) struct Final {
    pub b: Built,
    pub remaining: Vec<u32>,
}

pub(crate) fn run(
    h: &History,
    opts: &Options,
    carried: Option<&Carried>,
    want_final: bool,
) -> Result<(Report, Option<Final>), CheckError> {
    let t0 = Instant::now();
    let r = krait_history::resolve(h);
    let mut timings = Timings {
        resolve: t0.elapsed(),
        ..Default::default()
    };
    let mut stats = CheckStats::default();
    let t1 = Instant::now();
    let committed_unknown = carried.map_or(&[][..], |c| &c.committed_unknown[..]);
    let built = build::build(h, &r, opts, committed_unknown);
    let mut b = match built {
        Ok(b) => b,
        Err(cert) => {
            timings.graph = t1.elapsed();
            return Ok(ended(Verdict::Reject(cert), stats, timings));
        }
    };
    if let Some(drift) = opts.strict {
        stats.realtime_edges = realtime::add_edges(h, &mut b, drift)?;
    }
    let first_hub = b.num_nodes as Node;
    if let Some(c) = carried {
        b.num_nodes += c.hubs as usize;
        let map = |x: u32| -> Option<Node> {
            if x & HUB != 0 {
                Some(first_hub + (x & !HUB))
            } else {
                let n = b.txn_node[x as usize];
                (n != u32::MAX).then_some(n)
            }
        };
        let label = Label::fact(EdgeKind::Carried, graph::NO_KEY);
        for &(u, v) in &c.edges {
            if let (Some(x), Some(y)) = (map(u), map(v)) {
                b.edges.push((x, y));
                b.labels.push(label);
            }
        }
        b.chain_of.resize(b.num_nodes, (u32::MAX, 0));
    }
    stats.txns_checked = b.node_txn.len();
    stats.unknown_outcome_excluded = b.excluded_unknown;
    stats.constraints = b.constraints.len() + b.chain_pairs();
    timings.graph = t1.elapsed();

    let t2 = Instant::now();
    let pruned = prune(&mut b, opts, &mut stats);
    stats.nodes = b.num_nodes;
    stats.known_edges = b.edges.len();
    timings.prune = t2.elapsed();
    let remaining = match pruned {
        Ok(rem) => rem,
        Err(_) => {
            let t = Instant::now();
            let cert = cycle_certificate(h, &r, &b);
            timings.certificate = t.elapsed();
            return Ok(ended(Verdict::Reject(Box::new(cert)), stats, timings));
        }
    };
    stats.constraints_after_prune = remaining.len();

    let t3 = Instant::now();
    let solved = solve(&b, &remaining, opts, &mut stats);
    timings.solve = t3.elapsed();
    match solved {
        Solved::Sat(chosen) => {
            let order = opts
                .want_order
                .then(|| serial_order(h, &b, &remaining, &chosen));
            let fin = want_final.then_some(Final { b, remaining });
            Ok((
                Report {
                    verdict: Verdict::Accept,
                    stats,
                    timings,
                    order,
                },
                fin,
            ))
        }
        Solved::Unsat(core) => {
            let t = Instant::now();
            let cert = unsat_certificate(h, &r, &b, &remaining, &core);
            timings.certificate = t.elapsed();
            Ok(ended(Verdict::Reject(Box::new(cert)), stats, timings))
        }
        Solved::Unknown(reason) => Ok(ended(Verdict::Unknown { reason }, stats, timings)),
    }
}

/// A check that ends without an accepted graph (no serial order, nothing to collect).
fn ended(verdict: Verdict, stats: CheckStats, timings: Timings) -> (Report, Option<Final>) {
    let report = Report {
        verdict,
        stats,
        timings,
        order: None,
    };
    (report, None)
}

fn csr_of(b: &Built) -> Csr {
    Csr::build(b.num_nodes, &b.edges, false)
}

/// Predecessors of gate nodes, which reachability queries go through.
fn gate_preds(b: &Built) -> Csr {
    let n = b.num_nodes;
    let fg = b.first_gate;
    let rev: Vec<(Node, Node)> = b.edges.iter().copied().filter(|&(_, v)| v >= fg).collect();
    Csr::build(n, &rev, true)
}

enum Reach {
    Chains(ChainReach),
    /// Fallback without an index: search bounded by topological position.
    Search {
        pos: Vec<u32>,
    },
}

struct ReachCtx<'a> {
    reach: Reach,
    csr: &'a Csr,
    preds: &'a Csr,
    first_gate: Node,
}

impl ReachCtx<'_> {
    /// x ⇝ y in the known graph.
    fn reaches(&self, x: Node, y: Node) -> bool {
        if x == y {
            return true;
        }
        match &self.reach {
            Reach::Chains(cr) => {
                if y >= self.first_gate {
                    self.preds
                        .succ(y)
                        .iter()
                        .any(|&(p, _)| p == x || cr.reaches_chained(x, p))
                } else {
                    cr.reaches_chained(x, y)
                }
            }
            Reach::Search { pos } => {
                let py = pos[y as usize];
                if pos[x as usize] > py {
                    return false;
                }
                let mut seen = std::collections::HashSet::new();
                let mut stack = vec![x];
                seen.insert(x);
                while let Some(u) = stack.pop() {
                    for &(v, _) in self.csr.succ(u) {
                        if v == y {
                            return true;
                        }
                        if pos[v as usize] < py && seen.insert(v) {
                            stack.push(v);
                        }
                    }
                }
                false
            }
        }
    }
    /// Whether the known graph already orders `gate` (or, for a gate node, all its
    /// predecessors) before `head`, so the edge gate → head is implied.
    fn implied(&self, gate: Node, head: Node) -> bool {
        if gate >= self.first_gate {
            let preds = self.preds.succ(gate);
            !preds.is_empty() && preds.iter().all(|&(p, _)| self.reaches(p, head))
        } else {
            self.reaches(gate, head)
        }
    }

    /// Whether adding all these edges would close a cycle with the known graph.
    fn closes_cycle(&self, edges: &[(Node, Node, Label)]) -> bool {
        edges.iter().any(|&(u, v, _)| self.reaches(v, u))
    }
}

/// Decides constraints whose one side would close a cycle, adding the other side as known
/// edges, until nothing changes. Returns the undecided constraints, or the nodes of a cycle.
fn prune(b: &mut Built, opts: &Options, stats: &mut CheckStats) -> Result<Vec<u32>, Vec<Node>> {
    let mut remaining: Vec<u32> = (0..b.constraints.len() as u32).collect();
    let mut round = 0;
    loop {
        let csr = csr_of(b);
        let order = graph::topo_order(b.num_nodes, &csr)?;
        if !opts.prune {
            b.pair_chains(|_, _| false, None);
            remaining = (0..b.constraints.len() as u32).collect();
            break;
        }
        if round >= opts.prune_rounds || (remaining.is_empty() && b.chain_keys.is_empty()) {
            break;
        }
        round += 1;
        let preds = gate_preds(b);
        let mut topo_pos = vec![0u32; b.num_nodes];
        for (i, &x) in order.iter().enumerate() {
            topo_pos[x as usize] = i as u32;
        }
        let reach = if ChainReach::memory_needed(b.num_nodes, b.num_chains) <= opts.reach_memory_cap
        {
            Reach::Chains(ChainReach::build(
                b.num_nodes,
                b.num_chains,
                b.chain_of.clone(),
                &csr,
                &order,
            ))
        } else {
            Reach::Search {
                pos: topo_pos.clone(),
            }
        };
        let ctx = ReachCtx {
            reach,
            csr: &csr,
            preds: &preds,
            first_gate: b.first_gate,
        };
        if !b.chain_keys.is_empty() {
            // A pair whose one order the known graph already implies needs no constraint.
            let before = b.constraints.len() as u32;
            b.pair_chains(|x, y| ctx.implied(x.gate, y.head), Some(&topo_pos));
            remaining.extend(before..b.constraints.len() as u32);
        }
        // 0: undecided; 1: first is impossible, so second; 2: second impossible, so first.
        let decisions: Vec<u8> = remaining
            .par_iter()
            .map(|&ci| {
                let c = &b.constraints[ci as usize];
                if ctx.closes_cycle(b.first_edges(c)) {
                    1
                } else if ctx.closes_cycle(b.second_edges(c)) {
                    2
                } else {
                    0
                }
            })
            .collect();
        drop(ctx);
        let mut next = Vec::with_capacity(remaining.len());
        let mut changed = false;
        for (&ci, &d) in remaining.iter().zip(&decisions) {
            let c = b.constraints[ci as usize].clone();
            let add = match d {
                0 => {
                    next.push(ci);
                    continue;
                }
                1 => b.second_edges(&c).to_vec(),
                _ => b.first_edges(&c).to_vec(),
            };
            changed = true;
            // The version order chosen, tail before head, stated as well as the readers' edge,
            // so a cycle through the versions alone shows as the write cycle it is.
            let (tail, head) = if d == 1 {
                (c.b.1, c.a.0)
            } else {
                (c.a.1, c.b.0)
            };
            let extra = add
                .iter()
                .any(|&(u, v, l)| l.kind == EdgeKind::Rw && v == head && u != tail)
                .then(|| (tail, head, Label::fact(EdgeKind::Ww, c.key)));
            for (u, v, mut l) in add.into_iter().chain(extra) {
                l.constraint = ci;
                b.edges.push((u, v));
                b.labels.push(l);
            }
        }
        remaining = next;
        if !changed {
            break;
        }
    }
    stats.prune_rounds = round;
    Ok(remaining)
}

/// The known graph plus both options of every constraint listed: a cycle any choice could close
/// lies inside one of its strongly connected components.
pub(crate) fn with_both_sides(b: &Built, constraints: &[u32]) -> Csr {
    let mut all = b.edges.clone();
    for &ci in constraints {
        let c = &b.constraints[ci as usize];
        all.extend(
            b.first_edges(c)
                .iter()
                .chain(b.second_edges(c))
                .map(|&(u, v, _)| (u, v)),
        );
    }
    Csr::build(b.num_nodes, &all, false)
}

enum Solved {
    /// For each remaining constraint, true if its first option was chosen.
    Sat(Vec<bool>),
    /// Remaining-constraint indices (positions in `remaining`) of an unsatisfiable core.
    Unsat(Vec<u32>),
    Unknown(String),
}

fn solve(b: &Built, remaining: &[u32], opts: &Options, stats: &mut CheckStats) -> Solved {
    if remaining.is_empty() {
        return Solved::Sat(Vec::new());
    }
    // Cycles can only lie inside a strongly connected component of the graph with both sides of
    // every constraint, and each constraint's edges lie inside one component: solve each alone.
    let csr = with_both_sides(b, remaining);
    let (comp, _) = graph::scc(b.num_nodes, &csr);
    let mut by_comp: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
    for (i, &ci) in remaining.iter().enumerate() {
        let c = &b.constraints[ci as usize];
        let (u, _, _) = b.first_edges(c)[0];
        by_comp.entry(comp[u as usize]).or_default().push(i as u32);
    }
    let mut groups: Vec<(u32, Vec<u32>)> = by_comp.into_iter().collect();
    // Largest first (they take longest); the component id breaks ties, so which core a REJECT
    // reports does not depend on hash order.
    groups.sort_by_key(|g| (std::cmp::Reverse(g.1.len()), g.0));
    stats.components = groups.len();
    stats.largest_component_constraints = groups.first().map(|g| g.1.len()).unwrap_or(0);
    // Members of each component, for local numbering.
    let mut members: std::collections::HashMap<u32, Vec<Node>> =
        groups.iter().map(|g| (g.0, Vec::new())).collect();
    for x in 0..b.num_nodes as Node {
        if let Some(m) = members.get_mut(&comp[x as usize]) {
            m.push(x);
        }
    }
    let results: Vec<(Outcome, krait_solver::Stats, Vec<u32>)> = groups
        .par_iter()
        .map(|(cid, cons)| {
            let nodes = &members[cid];
            let local = |x: Node| nodes.binary_search(&x).ok().map(|i| i as u32);
            let mut p = krait_solver::Problem::new(nodes.len() as u32);
            let known = b.edges.len() as u32;
            for &x in nodes {
                for &(y, e) in csr.succ(x) {
                    if e < known && comp[y as usize] == *cid {
                        p.known_edges.push((local(x).unwrap(), local(y).unwrap()));
                    }
                }
            }
            for &i in cons {
                let c = &b.constraints[remaining[i as usize] as usize];
                let map = |es: &[(Node, Node, Label)]| -> Vec<(u32, u32)> {
                    es.iter()
                        .filter(|&&(u, v, _)| comp[u as usize] == *cid && comp[v as usize] == *cid)
                        .map(|&(u, v, _)| (local(u).unwrap(), local(v).unwrap()))
                        .collect()
                };
                p.add_choice(&map(b.first_edges(c)), &map(b.second_edges(c)));
            }
            let (out, st) = match opts.solver {
                SolverKind::Cdcl => {
                    let mut s = krait_solver::Cdcl::new(krait_solver::CdclOptions {
                        order_phase: opts.solver_order_phase,
                        theory_propagation: opts.solver_theory_propagation,
                        ..Default::default()
                    });
                    let o = s.solve(&p, &opts.budget);
                    (o, s.stats())
                }
                SolverKind::BruteForce => {
                    let mut s = krait_solver::BruteForce::default();
                    (s.solve(&p, &opts.budget), Default::default())
                }
            };
            (out, st, cons.clone())
        })
        .collect();
    let mut chosen = vec![false; remaining.len()];
    let mut unknown = None;
    for (out, st, cons) in results {
        stats.conflicts += st.conflicts;
        stats.decisions += st.decisions;
        stats.propagations += st.propagations;
        match out {
            Outcome::Sat { model, .. } => {
                for (j, &i) in cons.iter().enumerate() {
                    chosen[i as usize] = model[j];
                }
            }
            Outcome::Unsat { core } => {
                return Solved::Unsat(core.iter().map(|v| cons[v.0 as usize]).collect());
            }
            Outcome::Unknown(r) => {
                unknown = Some(format!("solver stopped ({r:?}) before an answer"))
            }
        }
    }
    match unknown {
        Some(r) => Solved::Unknown(r),
        None => Solved::Sat(chosen),
    }
}

fn serial_order(h: &History, b: &Built, remaining: &[u32], chosen: &[bool]) -> Vec<u64> {
    let mut edges = b.edges.clone();
    for (i, &ci) in remaining.iter().enumerate() {
        let c = &b.constraints[ci as usize];
        let es = if chosen[i] {
            b.first_edges(c)
        } else {
            b.second_edges(c)
        };
        edges.extend(es.iter().map(|&(u, v, _)| (u, v)));
    }
    let csr = Csr::build(b.num_nodes, &edges, false);
    let order = graph::topo_order(b.num_nodes, &csr).expect("a satisfying choice is acyclic");
    order
        .into_iter()
        .filter_map(|n| b.txn_of(n))
        .map(|t| h.txn_ext[t as usize])
        .collect()
}

/// The known edges with these indices, with their labels.
fn labelled(b: &Built, ids: &[u32]) -> Vec<(Node, Node, Label)> {
    ids.iter()
        .map(|&e| {
            (
                b.edges[e as usize].0,
                b.edges[e as usize].1,
                b.labels[e as usize],
            )
        })
        .collect()
}

fn edge_cost(labels: &[Label]) -> impl Fn(u32) -> graph::Cost + '_ {
    move |e| match labels[e as usize].kind {
        EdgeKind::Rw => graph::Cost::Rw,
        EdgeKind::Session => graph::Cost::Session,
        _ => graph::Cost::Other,
    }
}

/// Node visits a certificate's cycle search may spend once it has a cycle (a few linear passes
/// over a million-transaction component).
const CYCLE_SEARCH_BUDGET: usize = 4_000_000;

fn cycle_certificate(h: &History, r: &Resolution, b: &Built) -> Certificate {
    let csr = csr_of(b);
    let (comp, ncomp) = graph::scc(b.num_nodes, &csr);
    // Smallest non-trivial component first (lowest id among equals, so the choice is stable):
    // its cycles are the shortest to read.
    let mut size = vec![0u32; ncomp as usize];
    for &c in &comp {
        size[c as usize] += 1;
    }
    let cid = (0..ncomp)
        .filter(|&c| size[c as usize] > 1)
        .min_by_key(|&c| (size[c as usize], c))
        .expect("a cycle exists");
    let members: Vec<Node> = (0..b.num_nodes as Node)
        .filter(|&x| comp[x as usize] == cid)
        .collect();
    let starts: Vec<Node> = members
        .iter()
        .copied()
        .filter(|&x| x < b.first_gate)
        .collect();
    let cyc = graph::best_cycle(
        &csr,
        &comp,
        cid,
        &starts,
        edge_cost(&b.labels),
        64,
        CYCLE_SEARCH_BUDGET,
    )
    .expect("a cycle in an SCC");
    let es = labelled(b, &cyc);
    let x = cert::Explainer { h, r, b };
    let d = deduce::Deducer::new(cert::Explainer { h, r, b }, &csr);
    let cycle = x.path(&es, &|i| d.note(cyc[i]));
    let anomaly = cert::classify(&cycle);
    let names: Vec<String> = cycle.iter().map(|e| e.from.clone()).collect();
    let summary = format!(
        "{}: cycle {} -> {}",
        anomaly.name(),
        names.join(" -> "),
        names[0]
    );
    Certificate {
        anomaly,
        summary,
        txns: x.txns_of_edges(&es),
        cycle,
        constraints: Vec::new(),
        cases: Vec::new(),
    }
}

fn unsat_certificate(
    h: &History,
    r: &Resolution,
    b: &Built,
    remaining: &[u32],
    core: &[u32],
) -> Certificate {
    let x = cert::Explainer { h, r, b };
    let csr = csr_of(b);
    let d = deduce::Deducer::new(cert::Explainer { h, r, b }, &csr);
    let mut txn_ids: Vec<TxnId> = Vec::new();
    let mut constraints = Vec::new();
    for &i in core {
        let c: &Constraint = &b.constraints[remaining[i as usize] as usize];
        let key = h.keys[c.key as usize].clone();
        let (ha, hb) = (x.node_name(c.a.0), x.node_name(c.b.0));
        for n in [c.a.0, c.a.1, c.b.0, c.b.1] {
            if let Some(t) = b.txn_of(n) {
                txn_ids.push(t);
            }
        }
        let assumed = |_| cert::EdgeNote {
            assumed: true,
            ..Default::default()
        };
        let option = |es: &[(Node, Node, Label)], choice: String| CertOption {
            choice,
            edges: es
                .iter()
                .map(|&(u, v, l)| x.path(&[(u, v, l)], &assumed).remove(0))
                .collect(),
            closes_cycle: es
                .iter()
                .find_map(|&(u, v, l)| {
                    let path = graph::shortest_path(&csr, v, u)?;
                    let mut es = labelled(b, &path);
                    es.push((u, v, l));
                    let last = es.len() - 1;
                    Some(x.path(&es, &|i| {
                        if i == last {
                            assumed(i)
                        } else {
                            d.note(path[i])
                        }
                    }))
                })
                .unwrap_or_default(),
        };
        constraints.push(CertConstraint {
            key: key.clone(),
            options: [
                option(
                    b.first_edges(c),
                    format!("chain of {key} from {ha} before chain from {hb}"),
                ),
                option(
                    b.second_edges(c),
                    format!("chain of {key} from {hb} before chain from {ha}"),
                ),
            ],
        });
    }
    let summary = format!(
        "{}: {} version-order choices, each of whose combinations closes a cycle",
        Anomaly::Unsatisfiable.name(),
        core.len()
    );
    let cases = if core.len() <= MAX_CASE_CONSTRAINTS {
        case_analysis(&x, &d, b, remaining, core, &constraints)
    } else {
        Vec::new()
    };
    Certificate {
        anomaly: Anomaly::Unsatisfiable,
        summary,
        cycle: Vec::new(),
        constraints,
        cases,
        txns: {
            let mut seen = Vec::new();
            for t in txn_ids {
                if !seen.contains(&t) {
                    seen.push(t);
                }
            }
            seen.into_iter()
                .map(|t| cert::describe_txn(h, r, t))
                .collect()
        },
    }
}

/// Cores up to this size are explained case by case (2^n cases).
const MAX_CASE_CONSTRAINTS: usize = 4;

/// Every combination of the core's choices, each with the cycle it closes: a complete,
/// checkable proof that no choice works.
fn case_analysis(
    x: &cert::Explainer,
    d: &deduce::Deducer,
    b: &Built,
    remaining: &[u32],
    core: &[u32],
    described: &[CertConstraint],
) -> Vec<cert::CertCase> {
    let mut cases = Vec::new();
    for mask in 0u32..(1 << core.len()) {
        let mut edges = b.edges.clone();
        let mut labels = b.labels.clone();
        let mut choices = Vec::new();
        for (j, &i) in core.iter().enumerate() {
            let c = &b.constraints[remaining[i as usize] as usize];
            let first = mask >> j & 1 == 0;
            let es = if first {
                b.first_edges(c)
            } else {
                b.second_edges(c)
            };
            for &(u, v, l) in es {
                edges.push((u, v));
                labels.push(l);
            }
            choices.push(described[j].options[usize::from(!first)].choice.clone());
        }
        let csr = Csr::build(b.num_nodes, &edges, false);
        let (comp, ncomp) = graph::scc(b.num_nodes, &csr);
        let mut size = vec![0u32; ncomp as usize];
        for &c in &comp {
            size[c as usize] += 1;
        }
        // The smallest non-trivial component, the lowest id among equals: a stable choice.
        let Some(cid) = (0..ncomp)
            .filter(|&c| size[c as usize] > 1)
            .min_by_key(|&c| (size[c as usize], c))
        else {
            continue;
        };
        let m: Vec<Node> = (0..b.num_nodes as Node)
            .filter(|&n| comp[n as usize] == cid)
            .collect();
        let starts: Vec<Node> = m.iter().copied().filter(|&n| n < b.first_gate).collect();
        let cost = edge_cost(&labels);
        if let Some(cyc) =
            graph::best_cycle(&csr, &comp, cid, &starts, cost, 32, CYCLE_SEARCH_BUDGET)
        {
            let es: Vec<(Node, Node, Label)> = cyc
                .iter()
                .map(|&e| (edges[e as usize].0, edges[e as usize].1, labels[e as usize]))
                .collect();
            // Edges past the known ones are this case's choices.
            let known = b.edges.len() as u32;
            let note = |i: usize| {
                if cyc[i] >= known {
                    cert::EdgeNote {
                        assumed: true,
                        ..Default::default()
                    }
                } else {
                    d.note(cyc[i])
                }
            };
            cases.push(cert::CertCase {
                choices,
                cycle: x.path(&es, &note),
            });
        }
    }
    cases
}
