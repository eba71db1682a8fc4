//! From a history to the known graph: which transactions take part, per-transaction checks,
//! session order and write→read edges, and the read-modify-write steps that later become chains.
//! A read no serial order can explain is returned as a typed [`Finding`], not in words.

use super::thin::Spare;
use super::{Choice, CondEdge, EdgeKind, Facts, Known, Label, Labels, Node, NO_KEY};
use crate::findings::Finding;
use crate::Options;
use krait_history::{History, Resolution, TxnId, TxnStatus};
use rayon::prelude::*;

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
    /// Nodes: INIT, then one per included transaction (its commit), then under snapshot
    /// isolation one per transaction for its snapshot (from `first_start`), then gate nodes.
    pub num_nodes: usize,
    /// Whether transactions are split into snapshot and commit nodes (see `split`).
    pub split: bool,
    pub first_start: Node,
    /// Included transactions: node i+1 is `node_txn[i]`.
    pub node_txn: Vec<TxnId>,
    pub txn_node: Vec<Node>,
    pub first_gate: Node,
    pub edges: Vec<(Node, Node)>,
    pub labels: Labels,
    /// Known edges others imply through a session chain (`thin`): not searched, put back for
    /// certificates. Only kept with `keep_spare`: an accepted check never needs them, and on
    /// read-heavy histories they outnumber the graph's own edges (14M at 80k transactions ×
    /// 160 reads, 280 MB), so a check that needs a certificate builds the graph again to get
    /// them (`pipeline`).
    pub spare: Spare,
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
    /// A violation found on the collector's fence key only (a lost update of fences), held back
    /// so that a violation of the workload's own keys, if any, is reported instead. Everything
    /// the fence key states is then left out of the graph, which only removes constraints: a
    /// cycle found without them is a cycle with them, and without one the held-back violation
    /// is the verdict.
    pub deferred: Option<Finding>,
    /// Reads with several candidate writers, and the edges that hold depending on which one
    /// was read (empty when written values are unique).
    pub choices: Vec<Choice>,
    /// Each transaction node's commit time where the clients recorded one (`NO_TIME` else),
    /// for the solver's first guesses; empty without timestamps.
    pub commit_time: Vec<u64>,
    /// Per node, the time pruning's topological order places it by among the nodes ready
    /// (`graph::topo_order_timed`); empty where the history has no times or the order is
    /// not asked for.
    pub order_time: Vec<u64>,
    pub cond: Vec<CondEdge>,
    /// Keys with choices, waiting for the first pruning round to pair their writers.
    pub dup_pending: Vec<crate::ser::DupKey>,
    /// Per constraint, the option pruning chose (`Open` if none).
    pub decided: Vec<Known>,
}

impl Built {
    /// A graph of known edges alone, no constraints: what a weak level's online round hands
    /// to garbage collection. `chain_of` (per node) places the nodes on session chains.
    pub(crate) fn plain(
        node_txn: Vec<TxnId>,
        txn_node: Vec<Node>,
        num_nodes: usize,
        edges: Vec<(Node, Node)>,
        labels: Labels,
        chain_of: Vec<(u32, u32)>,
        num_chains: usize,
    ) -> Built {
        let first = node_txn.len() as Node + 1;
        Built {
            num_nodes,
            split: false,
            first_start: first,
            node_txn,
            txn_node,
            first_gate: first,
            edges,
            labels,
            spare: Spare::new(false),
            constraints: Vec::new(),
            cedges: Vec::new(),
            chain_of,
            num_chains,
            excluded_unknown: 0,
            chain_recs: Vec::new(),
            chain_keys: Vec::new(),
            gate_of: Vec::new(),
            deferred: None,
            choices: Vec::new(),
            commit_time: Vec::new(),
            order_time: Vec::new(),
            cond: Vec::new(),
            dup_pending: Vec::new(),
            decided: Vec::new(),
        }
    }

    pub fn txn_of(&self, n: Node) -> Option<TxnId> {
        if n == INIT || n >= self.first_gate {
            None
        } else if n >= self.first_start {
            Some(self.node_txn[(n - self.first_start) as usize])
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

use super::participants::{participants, Participants};

/// The known graph of `h` and what its transactions stated (the raw material of a level's
/// constraints), or the first finding that rules out every serial order. `committed_unknown`:
/// unknown outcomes known (from earlier rounds) to have committed; `spare`: what to keep of
/// the edges thinning leaves out (see [`Built::spare`]).
pub fn build(
    h: &History,
    r: &Resolution,
    opts: &Options,
    committed_unknown: &[TxnId],
    spare: Spare,
) -> Result<(Built, Facts), Finding> {
    let Participants {
        inc,
        excluded_unknown,
        node_txn,
        txn_node,
    } = participants(h, r, committed_unknown)?;
    let ntx = node_txn.len() + 1;
    let chain_of = vec![(u32::MAX, 0u32); ntx];
    let mut b = Built::plain(
        node_txn,
        txn_node,
        ntx,
        Vec::new(),
        Labels::default(),
        chain_of,
        0,
    );
    b.spare = spare;
    b.excluded_unknown = excluded_unknown;
    if opts.level == crate::Level::SnapshotIsolation {
        b.split_nodes();
    }
    session_order(h, &mut b);
    b.split_chains();
    // Start times: on the simulated store, commit times put a reader that saw an old version
    // after the write that replaced it (28 thousand of 247 thousand decided edges backward at
    // 80k read-heavy transactions, against none by start).
    if opts.time_order && !b.split && h.has_timestamps() {
        b.order_time = std::iter::once(0)
            .chain(b.node_txn.iter().map(|&t| h.txn_start[t as usize]))
            .collect();
    }

    let mut f = super::txn_facts::all_facts(h, r, &inc, &mut b, opts.thin_edges)?;

    // Read-modify-writes the transactions made themselves, as opposed to steps of a list.
    let mut real_rmws = if h.has_lists() {
        f.rmws.clone()
    } else {
        Vec::new()
    };
    real_rmws.sort_unstable();
    super::lists::lists(h, r, &inc, &mut b, &mut f)?;
    // Facts laid out by block (never with list reads, the only facts stated after the pass)
    // stay so: chaining sorts them block by block as it goes (`Facts::reads`).
    if f.read_blocks.is_none() {
        let mut parts = std::mem::take(&mut f.read_parts);
        parts.push(std::mem::take(&mut f.reads));
        // A list read and the read of its last element may state the same read: sorted
        // without duplicates.
        f.reads = super::sort_facts(parts, h.num_keys(), b.num_nodes);
    }
    // On every core: on one, the two sorts were a few milliseconds with the others idle.
    rayon::join(
        || f.writes.par_sort_unstable(),
        || f.rmws.par_sort_unstable(),
    );
    // Several reads may reveal the same step of a version order.
    f.rmws.dedup();
    // Only the levels that forbid lost updates come here with it (the weak ones allow them).
    if opts.count_versions && !opts.level.is_weak() {
        super::versions::count_versions(h)?;
    }
    if let Err(finding) = one_step_each(h, &b, &f.rmws, &real_rmws, opts) {
        // one_step_each reports the fence key only when no other key has such a finding.
        match (finding_key(&finding), h.fence_key) {
            (Some(k), Some(fk)) if k == fk => {
                forget_key(&mut b, &mut f, fk);
                b.deferred = Some(finding);
            }
            _ => return Err(finding),
        }
    }
    Ok((b, f))
}

/// Session order over the included transactions, as every level takes it. A transaction whose
/// outcome is unknown started after its session's earlier commits, but its commit may land after
/// the session's later transactions (the client gave up waiting and went on): it follows the last
/// committed transaction before it and precedes nobody, on a chain of its own (numbered from
/// `first_free`) so the session's chain stays totally ordered. `visit(node, session, (chain,
/// position), the last committed node before it, unknown)`; returns the number of chains.
pub(crate) fn walk_sessions(
    h: &History,
    txn_node: &[Node],
    first_free: usize,
    mut visit: impl FnMut(Node, u32, (u32, u32), Option<Node>, bool),
) -> usize {
    let mut num_chains = first_free;
    for s in 0..h.num_sessions() {
        let mut prev: Option<Node> = None;
        let mut pos = 0;
        for t in h.session_range(s) {
            let n = txn_node[t as usize];
            if n == u32::MAX {
                continue;
            }
            let unknown = h.txn_status[t as usize] == TxnStatus::Unknown;
            let at = if unknown {
                num_chains += 1;
                (num_chains as u32 - 1, 0)
            } else {
                pos += 1;
                (s as u32, pos - 1)
            };
            visit(n, s as u32, at, prev, unknown);
            if !unknown {
                prev = Some(n);
            }
        }
    }
    num_chains
}

/// Session order into the known graph, with the session chains of the reachability index (the
/// initial state on a chain of its own).
fn session_order(h: &History, b: &mut Built) {
    let txn_node = std::mem::take(&mut b.txn_node);
    let first_free = h.num_sessions() + 1;
    b.num_chains = walk_sessions(h, &txn_node, first_free, |n, _, at, prev, _| {
        b.chain_of[n as usize] = at;
        if let Some(p) = prev {
            b.push_edge(p, n, Label::fact(EdgeKind::Session, NO_KEY));
        }
    });
    b.txn_node = txn_node;
    b.chain_of[INIT as usize] = (h.num_sessions() as u32, 0);
}

/// Leaves out every fact about key `k`: its reads, writes, read-modify-write steps and the
/// write→read (or list) edges already in the graph.
fn forget_key(b: &mut Built, f: &mut Facts, k: u32) {
    f.sort_reads();
    f.reads.retain(|r| r.0 != k);
    f.writes.retain(|w| w.0 != k);
    f.rmws.retain(|r| r.0 != k);
    (b.edges, b.labels) = b
        .edges
        .iter()
        .zip(b.labels.iter())
        .filter(|(_, l)| l.key != k)
        .map(|(&e, l)| (e, l))
        .unzip();
    b.spare.edges.retain(|e| e.2.key != k);
}

/// The key a version-order finding is about.
fn finding_key(f: &Finding) -> Option<u32> {
    match *f {
        Finding::LostUpdate { key, .. } | Finding::TwoSuccessors { key, .. } => Some(key),
        _ => None,
    }
}

/// A version directly follows one version and is directly followed by at most one (`rmws`
/// sorted): two read-modify-writes of one version are a lost update; with lists, a list read
/// and a read-modify-write (or two lists) that disagree are an incompatible order.
fn one_step_each(
    h: &History,
    b: &Built,
    rmws: &[(u32, Node, Node)],
    real_rmws: &[(u32, Node, Node)],
    opts: &Options,
) -> Result<(), Finding> {
    let txn = |n: Node| (n != INIT).then(|| b.node_txn[n as usize - 1]);
    if h.has_lists() {
        let mut by_succ: Vec<(u32, Node, Node)> = rmws.iter().map(|&(k, p, n)| (k, n, p)).collect();
        by_succ.sort_unstable();
        for w in by_succ.windows(2) {
            if w[0].0 == w[1].0 && w[0].1 == w[1].1 {
                return Err(Finding::TwoPredecessors {
                    key: w[0].0,
                    txn: txn(w[0].1).unwrap(),
                    a: txn(w[0].2),
                    b: txn(w[1].2),
                });
            }
        }
    }
    if !opts.combine {
        return Ok(());
    }
    // A lost update on the collector's fence key says little about the workload: one on its
    // own keys is reported first when there is one.
    let mut on_fence = None;
    for w in rmws.windows(2) {
        if w[0].0 == w[1].0 && w[0].1 == w[1].1 {
            let (key, from) = (w[0].0, txn(w[0].1));
            let (t1, t2) = (txn(w[0].2).unwrap(), txn(w[1].2).unwrap());
            let from_list = |x| real_rmws.binary_search(x).is_err();
            let finding = if h.has_lists() && (from_list(&w[0]) || from_list(&w[1])) {
                Finding::TwoSuccessors { key, from, t1, t2 }
            } else {
                Finding::LostUpdate { key, from, t1, t2 }
            };
            if h.fence_key != Some(key) {
                return Err(finding);
            }
            on_fence.get_or_insert(finding);
        }
    }
    on_fence.map_or(Ok(()), Err)
}
