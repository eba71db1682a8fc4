//! Causal consistency in online rounds (`checker::online`): one round's check, and the graph its
//! garbage collection works on.
//!
//! A transaction's causal past is complete when it is admitted (its session predecessor and
//! the writers it read come first), so the edges its reads force are computed once, in the
//! round that admits it, and kept from then on like any other edge: between kept transactions
//! they are carried to later rounds, through deleted ones folded into carried paths. Later
//! rounds recompute nothing for it, which matters: its causal past may by then run through
//! transactions that were deleted, and a carried edge cannot say whether the path it stands
//! for is causal (session order and write→read) or also holds forced edges.
//!
//! What a new transaction's causal past holds of the deleted and the old: every transaction
//! old when the round began (epoch ≤ the previous round's agree − 2) precedes it by session
//! order and write→read through the fence chain; a transaction that is not old reaches it, if
//! at all, through transactions still held, since a deleted one has only old ancestors. So its
//! causal past is what the round's own edges give, plus a floor on every session chain up to
//! its last old transaction ([`Fresh`]). A write deleted for good is one an old writer of the
//! same key follows, so a new read of it is a violation (the online stale read) and a new read
//! of another write of the key needs the forced edge from that follower alone.
//!
//! A transaction of unknown outcome takes part only once a read shows it committed, perhaps
//! rounds later: the edges its reads would force are computed while it is new
//! ([`Unconfirmed`]) and added in the round that finds it read.

use super::facts::Facts;
use super::{Forced, Rule};
use crate::graph::{EdgeKind, Label, Node, INIT, NO_KEY};
use crate::pipeline::{Carried, Final, HUB, START};
use crate::{cert, CheckError, CheckStats, Options, Report, Timings, Verdict};
use krait_history::{History, TxnId};
use std::time::Instant;

/// An online round's new transactions, and what every one of them has in its causal past.
pub(crate) struct Fresh {
    /// Per node of the round's facts: admitted this round.
    pub node: Vec<bool>,
    /// Per session chain: 1 + the last position on it of a transaction old when the round
    /// began (0: none).
    pub floor: Vec<u32>,
}

/// An edge a read of a transaction of unknown outcome forces, should the transaction turn out
/// to have committed (a read of one of its writes shows it): `t3` → `t1` (None: the initial
/// version) on `key`, forced by a read of `reader`. Transaction ids of the round's history.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unconfirmed {
    pub reader: TxnId,
    pub t3: TxnId,
    pub t1: Option<TxnId>,
    pub key: u32,
}

/// What a round of causal consistency decided: its report, the graph an ACCEPT leaves for
/// garbage collection, and the edges the new transactions of unknown outcome would force.
pub(crate) struct CausalRound {
    pub report: Report,
    pub fin: Option<Final>,
    pub unconfirmed: Vec<Unconfirmed>,
}

/// Checks an online round's history `h` under causal consistency: session order, write→read,
/// the edges `carried` from earlier rounds (forced edges among them), the edges `confirmed`
/// (computed when their reader, of unknown outcome, was new, for when a read shows it
/// committed: only those of readers that take part count) and the edges the reads of the
/// transactions `fresh[t]` force, whose causal past includes every transaction with `old[t]`.
///
/// A new transaction of unknown outcome nobody read yet takes no part, but its causal past is
/// complete only now: the edges its reads would force are returned, to be added in the round
/// that finds it read (their ends kept until then).
pub(crate) fn causal_round(
    h: &History,
    opts: &Options,
    carried: &Carried,
    fresh: &[bool],
    old: &[bool],
    confirmed: &[Unconfirmed],
) -> Result<CausalRound, CheckError> {
    let t0 = Instant::now();
    let name = opts.level.name(false);
    if opts.strict.is_some() {
        return Err(CheckError::Unsupported(format!(
            "--level {name} has no real-time variant (drop --strict)"
        )));
    }
    let r = krait_history::resolve(h);
    if h.has_lists() || !r.ambiguous.is_empty() {
        return Err(CheckError::Unsupported(format!(
            "--level {name} is checked online only where every written value is unique per key and there are no list-append reads (check the whole history instead)"
        )));
    }
    let mut timings = Timings {
        resolve: t0.elapsed(),
        ..Default::default()
    };
    let mut stats = CheckStats::default();
    let t1 = Instant::now();
    let f = match Facts::build(h, &r, &carried.committed_unknown) {
        Ok(f) => f,
        Err(finding) => {
            timings.graph = t1.elapsed();
            let cert = cert::certify(h, &r, &finding);
            let v = Verdict::Reject(Box::new(cert));
            return Ok(CausalRound {
                report: Report::plain(name, v, stats, timings, None),
                fin: None,
                unconfirmed: Vec::new(),
            });
        }
    };
    let n = f.num_nodes();
    let txn_node = txn_nodes(h, &f);
    // None: session order and write→read close a cycle, which the search below finds.
    let forced = super::axioms::causal(&f, Some(&fresh_of(&f, fresh, old))).unwrap_or_default();
    // New transactions of unknown outcome that take no part: what they would force.
    let unknown: Vec<TxnId> = (0..h.num_txns() as TxnId)
        .filter(|&t| {
            fresh[t as usize]
                && txn_node[t as usize] == u32::MAX
                && h.txn_status[t as usize] == krait_history::TxnStatus::Unknown
        })
        .collect();
    let unconfirmed = if unknown.is_empty() {
        Vec::new()
    } else {
        would_force(h, &r, carried, &unknown, old)
    };
    stats.txns_checked = f.node_txn.len();
    stats.unknown_outcome_excluded = f.excluded_unknown;
    stats.constraints = forced.len();
    let num_nodes = n + carried.hubs as usize;
    let (edges, labels, why) = round_graph(&f, &forced, carried, confirmed, &txn_node);
    stats.nodes = num_nodes;
    stats.known_edges = edges.len();
    timings.graph = t1.elapsed();
    let t = Instant::now();
    let csr = crate::graph::Csr::build(num_nodes, &edges, false);
    let acyclic = crate::graph::topo_order(num_nodes, &csr).is_ok();
    drop(csr);
    timings.prune = t.elapsed();
    if !acyclic {
        let t = Instant::now();
        let c = cert::weak_certificate(h, &r, &f.node_txn, &edges, &labels, &why, &forced);
        timings.certificate = t.elapsed();
        let v = Verdict::Reject(Box::new(c));
        return Ok(CausalRound {
            report: Report::plain(name, v, stats, timings, None),
            fin: None,
            unconfirmed,
        });
    }
    let mut chain_of = f.chain_of.clone();
    chain_of.resize(num_nodes, (u32::MAX, 0));
    let b = crate::graph::Built::plain(
        f.node_txn.clone(),
        txn_node,
        num_nodes,
        edges,
        labels.iter().copied().collect(),
        chain_of,
        f.num_chains as usize,
    );
    let fin = Final {
        b,
        remaining: Vec::new(),
        read_from: r.read_from,
        op_txn: r.op_txn,
        assumed: Vec::new(),
    };
    let report = Report::plain(name, Verdict::Accept, stats, timings, None);
    Ok(CausalRound {
        report,
        fin: Some(fin),
        unconfirmed,
    })
}

/// Node per transaction of `h` (`u32::MAX`: takes no part).
fn txn_nodes(h: &History, f: &Facts) -> Vec<Node> {
    let mut txn_node = vec![u32::MAX; h.num_txns()];
    for (i, &t) in f.node_txn.iter().enumerate() {
        txn_node[t as usize] = i as Node + 1;
    }
    txn_node
}

/// The round's new transactions among `f`'s nodes, and the floor of their causal past: on
/// every chain, up to its last transaction old when the round began.
fn fresh_of(f: &Facts, fresh: &[bool], old: &[bool]) -> Fresh {
    let mut floor = vec![0u32; f.num_chains as usize];
    let mut node = vec![false; f.num_nodes()];
    for (i, &t) in f.node_txn.iter().enumerate() {
        let x = i + 1;
        node[x] = fresh[t as usize];
        let (ch, pos) = f.chain_of[x];
        if old[t as usize] && ch != u32::MAX {
            floor[ch as usize] = floor[ch as usize].max(pos + 1);
        }
    }
    Fresh { node, floor }
}

/// The edges the reads of the transactions `unknown` (new, of unknown outcome, read by nobody
/// yet) would force if they committed: the round's facts again with them taken as committed,
/// only their reads looked at.
fn would_force(
    h: &History,
    r: &krait_history::Resolution,
    carried: &Carried,
    unknown: &[TxnId],
    old: &[bool],
) -> Vec<Unconfirmed> {
    let mut committed = carried.committed_unknown.clone();
    committed.extend_from_slice(unknown);
    // A finding about one of them (an aborted read, say) counts only if it committed: the
    // round that finds it read states it again. The others are then taken one by one.
    let Ok(f) = Facts::build(h, r, &committed) else {
        return match unknown {
            [_] => Vec::new(),
            _ => unknown
                .iter()
                .flat_map(|&t| would_force(h, r, carried, &[t], old))
                .collect(),
        };
    };
    let mut only = vec![false; h.num_txns()];
    for &t in unknown {
        only[t as usize] = true;
    }
    let forced = super::axioms::causal(&f, Some(&fresh_of(&f, &only, old))).unwrap_or_default();
    let txn = |x: Node| f.node_txn[x as usize - 1];
    forced
        .iter()
        .map(|e| Unconfirmed {
            reader: r.op_txn[e.op as usize],
            t3: txn(e.t3),
            t1: (e.t1 != INIT).then(|| txn(e.t1)),
            key: e.key,
        })
        .collect()
}

/// The round's edges, labelled, with `why[i]` the forced edge behind edge i (`u32::MAX`: none):
/// session order and write→read, the forced ones, the carried edges (hubs numbered after the
/// transactions), and the `confirmed` edges of readers that take part (labelled carried too:
/// computed in an earlier round).
fn round_graph(
    f: &Facts,
    forced: &[Forced],
    carried: &Carried,
    confirmed: &[Unconfirmed],
    txn_node: &[Node],
) -> (Vec<(Node, Node)>, Vec<Label>, Vec<u32>) {
    let n = f.num_nodes();
    let (mut edges, mut labels, mut why) = super::graph_of(f, forced);
    let map = |x: u32| -> Option<Node> {
        if x & HUB != 0 {
            Some(n as Node + (x & !HUB))
        } else {
            debug_assert!(x & START == 0, "causal consistency has no snapshot nodes");
            let v = txn_node[x as usize];
            (v != u32::MAX).then_some(v)
        }
    };
    let label = Label::fact(EdgeKind::Carried, NO_KEY);
    for &(u, v) in &carried.edges {
        if let (Some(u), Some(v)) = (map(u), map(v)) {
            edges.push((u, v));
            labels.push(label);
            why.push(u32::MAX);
        }
    }
    let node = |t: TxnId| Some(txn_node[t as usize]).filter(|&x| x != u32::MAX);
    for u in confirmed {
        let (Some(_), Some(t3)) = (node(u.reader), node(u.t3)) else {
            continue;
        };
        let Some(t1) = u.t1.map_or(Some(INIT), node) else {
            continue;
        };
        edges.push((t3, t1));
        labels.push(label);
        why.push(u32::MAX);
        if t1 == INIT {
            // The initial version precedes t3's: a cycle, stated as the edge it is.
            edges.push((INIT, t3));
            labels.push(Label::fact(EdgeKind::Ww, u.key));
            why.push(u32::MAX);
        }
    }
    debug_assert!(forced
        .iter()
        .all(|e| e.rule == Rule::Causal && e.t3 != INIT));
    (edges, labels, why)
}
