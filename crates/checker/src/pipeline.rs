//! One check, phase by phase: resolve each read's writer → build the known graph (or a finding)
//! → real-time edges under `strict` → facts carried from earlier online rounds → the level's
//! decision (today serializability: `ser`) → a certificate in words for a REJECT.
//!
//! A new isolation level adds its module beside `ser` and one arm where the decision is made.

use crate::graph::{self, Built, EdgeKind, Label, Node};
use crate::ser::{self, Decided};
use crate::{cert, realtime, CheckError, CheckStats, Options, Report, Timings, Verdict};
use krait_history::{History, TxnId};
use std::borrow::Cow;
use std::time::Instant;

/// The isolation levels a check can decide, each a module with its own constraints and
/// decision over the known graph; adding one adds a variant, its module, and its arms here.
/// Strict serializability is serializability over a graph with real-time edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Serializable,
}

impl Level {
    fn of(_opts: &Options) -> Level {
        Level::Serializable
    }
}

/// Facts an online round carries over from transactions no longer in its history: `hubs` extra
/// nodes (stand-ins for garbage-collected paths with many ends) and known edges between
/// transactions (their [`TxnId`] in the round's history) and hubs (`HUB | index`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Carried {
    /// Unknown outcomes an earlier round found read (so committed), whose readers may be gone.
    pub committed_unknown: Vec<TxnId>,
    pub hubs: u32,
    pub edges: Vec<(u32, u32)>,
}

/// Marks a hub in [`Carried::edges`].
pub(crate) const HUB: u32 = 1 << 31;

/// The graph an accepted check ended with, for garbage collection.
pub(crate) struct Final {
    pub b: Built,
    pub remaining: Vec<u32>,
}

/// Checks `h`; with `want_final`, an ACCEPT also returns its graph (online garbage collection).
pub(crate) fn run(
    h: &History,
    opts: &Options,
    carried: Option<&Carried>,
    want_final: bool,
) -> Result<(Report, Option<Final>), CheckError> {
    let t0 = Instant::now();
    // The timeout counts from the start of this check, not from when the options were made.
    let opts = match opts.timeout {
        Some(d) => {
            let mut o = opts.clone();
            let end = t0 + d;
            o.budget.deadline = Some(o.budget.deadline.map_or(end, |x| x.min(end)));
            Cow::Owned(o)
        }
        None => Cow::Borrowed(opts),
    };
    let r = krait_history::resolve(h);
    let mut timings = Timings {
        resolve: t0.elapsed(),
        ..Default::default()
    };
    let mut stats = CheckStats::default();
    let t1 = Instant::now();
    let committed_unknown = carried.map_or(&[][..], |c| &c.committed_unknown[..]);
    let level = Level::of(&opts);
    let mut b = match graph::build(h, &r, &opts, committed_unknown) {
        Ok((mut b, facts)) => {
            match level {
                Level::Serializable => ser::add_chains(&mut b, facts, &opts),
            }
            b
        }
        Err(finding) => {
            timings.graph = t1.elapsed();
            let t = Instant::now();
            let cert = cert::certify(h, &r, &finding);
            timings.certificate = t.elapsed();
            return Ok(ended(Verdict::Reject(Box::new(cert)), stats, timings));
        }
    };
    if let Some(drift) = opts.strict {
        stats.realtime_edges = realtime::add_edges(h, &mut b, drift)?;
    }
    if let Some(c) = carried {
        add_carried(&mut b, c);
    }
    stats.txns_checked = b.node_txn.len();
    stats.unknown_outcome_excluded = b.excluded_unknown;
    stats.constraints = b.constraints.len() + b.chain_pairs();
    timings.graph = t1.elapsed();

    let decided = match level {
        Level::Serializable => ser::decide(&mut b, &opts, &mut stats, &mut timings),
    };
    match decided {
        // Only the fence key broke: that is the violation to report.
        Decided::Accept { .. } | Decided::Unknown(_) if b.deferred.is_some() => {
            let t = Instant::now();
            let cert = cert::certify(h, &r, b.deferred.as_ref().unwrap());
            timings.certificate = t.elapsed();
            Ok(ended(Verdict::Reject(Box::new(cert)), stats, timings))
        }
        Decided::Accept { remaining, chosen } => {
            let order = opts
                .want_order
                .then(|| ser::serial_order(h, &b, &remaining, &chosen));
            let fin = want_final.then_some(Final { b, remaining });
            let report = Report {
                verdict: Verdict::Accept,
                stats,
                timings,
                order,
            };
            Ok((report, fin))
        }
        Decided::Cycle => {
            let t = Instant::now();
            let cert = cert::cycle_certificate(h, &r, &b);
            timings.certificate = t.elapsed();
            Ok(ended(Verdict::Reject(Box::new(cert)), stats, timings))
        }
        Decided::Unsat { remaining, core } => {
            let t = Instant::now();
            let cert = cert::unsat_certificate(h, &r, &b, &remaining, &core);
            timings.certificate = t.elapsed();
            Ok(ended(Verdict::Reject(Box::new(cert)), stats, timings))
        }
        Decided::Unknown(reason) => Ok(ended(Verdict::Unknown { reason }, stats, timings)),
    }
}

/// What earlier rounds knew, as known edges: hubs become extra nodes after the graph's own.
fn add_carried(b: &mut Built, c: &Carried) {
    let first_hub = b.num_nodes as Node;
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
    let edges: Vec<(Node, Node)> = c
        .edges
        .iter()
        .filter_map(|&(u, v)| Some((map(u)?, map(v)?)))
        .collect();
    for e in edges {
        b.edges.push(e);
        b.labels.push(label);
    }
    b.chain_of.resize(b.num_nodes, (u32::MAX, 0));
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
