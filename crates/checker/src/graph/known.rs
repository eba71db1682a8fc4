//! From a history to the known graph: which transactions take part, per-transaction checks,
//! session order and write→read edges, and the read-modify-write steps that later become chains.
//! A read no serial order can explain is returned as a typed [`Finding`], not in words.

use super::{Choice, CondEdge, EdgeKind, Facts, Known, Label, Node, NO_KEY};
use crate::findings::{Finding, NoWriter};
use crate::Options;
use krait_history::{
    History, OpKind, Resolution, TxnId, TxnStatus, FROM_AMBIGUOUS, FROM_INIT, FROM_NOBODY,
};

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
    pub labels: Vec<Label>,
    /// Known edges others imply through a session chain (`thin`): not searched, put back for
    /// certificates.
    pub spare: Vec<(Node, Node, Label)>,
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
    pub cond: Vec<CondEdge>,
    /// Keys with choices, waiting for the first pruning round to pair their writers.
    pub dup_pending: Vec<crate::ser::DupKey>,
    /// Per constraint, the option pruning chose (`Open` if none).
    pub decided: Vec<Known>,
}

impl Built {
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

use super::participants::{final_writes, participants, Participants};
use super::thin::WrThinner;

/// The known graph of `h` and what its transactions stated (the raw material of a level's
/// constraints), or the first finding that rules out every serial order. `committed_unknown`:
/// unknown outcomes known (from earlier rounds) to have committed.
pub fn build(
    h: &History,
    r: &Resolution,
    opts: &Options,
    committed_unknown: &[TxnId],
) -> Result<(Built, Facts), Finding> {
    let Participants {
        inc,
        excluded_unknown,
        node_txn,
        txn_node,
    } = participants(h, r, committed_unknown)?;
    let ntx = node_txn.len() + 1;
    let mut b = Built {
        num_nodes: ntx,
        split: false,
        first_start: ntx as Node,
        node_txn,
        txn_node,
        first_gate: ntx as Node,
        edges: Vec::new(),
        labels: Vec::new(),
        spare: Vec::new(),
        constraints: Vec::new(),
        cedges: Vec::new(),
        chain_of: vec![(u32::MAX, 0u32); ntx],
        num_chains: 0,
        excluded_unknown,
        chain_recs: Vec::new(),
        chain_keys: Vec::new(),
        gate_of: Vec::new(),
        deferred: None,
        choices: Vec::new(),
        cond: Vec::new(),
        dup_pending: Vec::new(),
        decided: Vec::new(),
    };
    if opts.level == crate::Level::SnapshotIsolation {
        b.split_nodes();
    }
    session_order(h, &mut b);
    b.split_chains();
    let mut f = Facts::default();
    let mut ks = KeySlots::new(h);
    let mut thin = WrThinner::new(opts.thin_edges, b.num_chains, b.num_nodes);
    for i in 0..b.node_txn.len() {
        txn_facts(h, r, &inc, &mut b, i as Node + 1, &mut f, &mut ks)?;
        thin.add(&mut b, &ks.wr_buf);
    }
    // Read-modify-writes the transactions made themselves, as opposed to steps of a list.
    let mut real_rmws = if h.has_lists() {
        f.rmws.clone()
    } else {
        Vec::new()
    };
    real_rmws.sort_unstable();
    super::lists::lists(h, r, &inc, &mut b, &mut f)?;
    super::sort_by_key_then_rest(&mut f.reads, h.num_keys(), b.num_nodes);
    // A list read and the read of its last element may state the same read.
    f.reads.dedup();
    f.writes.sort_unstable();
    f.rmws.sort_unstable();
    // Several reads may reveal the same step of a version order.
    f.rmws.dedup();
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

/// What the per-transaction pass reuses: which writes are final in their transaction (one pass
/// over all ops, so no read scans its writer's ops again), and a slot per key stamped with the
/// transaction using it (so a transaction of many ops finds its key's slot at once).
pub(super) struct KeySlots {
    final_write: Vec<bool>,
    stamp: Vec<u32>,
    slot: Vec<u32>,
    /// (key, last own write op, external source, first external read op)
    scratch: Vec<(u32, u32, u32, u32)>,
    /// Per writer node, the last reader given a write→read edge from it.
    wr_stamp: Vec<u32>,
    /// The current reader's write→read edges (placed, one per writer), for [`WrThinner`].
    wr_buf: Vec<(Node, Node, Label)>,
}

impl KeySlots {
    pub(super) fn new(h: &History) -> KeySlots {
        KeySlots {
            final_write: final_writes(h),
            slot: vec![0; h.num_keys()],
            stamp: vec![u32::MAX; h.num_keys()],
            scratch: Vec::new(),
            wr_stamp: vec![u32::MAX; h.num_txns() + 1],
            wr_buf: Vec::new(),
        }
    }
    /// Whether write op `o` is overwritten by its own transaction (an intermediate version).
    fn overwritten(&self, o: u32) -> bool {
        !self.final_write[o as usize]
    }
}

/// One transaction's reads and writes, key by key: its own reads must see its own latest write,
/// an external read must name a committed writer's final version and be the same every time;
/// write→read edges go into the known graph. A read whose value several writes wrote keeps the
/// candidates that could be its writer; with one left it is an ordinary read.
fn txn_facts(
    h: &History,
    r: &Resolution,
    inc: &[bool],
    b: &mut Built,
    node: Node,
    f: &mut Facts,
    ks: &mut KeySlots,
) -> Result<(), Finding> {
    const NONE: u32 = u32::MAX;
    // No external read yet (FROM_NOBODY reads are rejected before they are recorded).
    const NO_SRC: u32 = FROM_NOBODY;
    let t = b.node_txn[node as usize - 1];
    // Reused across transactions; a finding ends the build, so one lost on `?` costs nothing.
    let mut scratch = std::mem::take(&mut ks.scratch);
    scratch.clear();
    ks.wr_buf.clear();
    for o in h.ops(t) {
        let k = h.op_key[o];
        let slot = if ks.stamp[k as usize] == node {
            ks.slot[k as usize] as usize
        } else {
            ks.stamp[k as usize] = node;
            ks.slot[k as usize] = scratch.len() as u32;
            scratch.push((k, NONE, NO_SRC, NONE));
            scratch.len() - 1
        };
        if h.op_kind[o] == OpKind::Write {
            scratch[slot].1 = o as u32;
            continue;
        }
        let op = o as u32;
        let mut src = r.read_from[o];
        let own = scratch[slot].1;
        if own != NONE {
            // By value: another write of the same value is the same version to this reader.
            let seen = src == own
                || (h.op_kind[o] == OpKind::Read && h.op_value[o] == h.op_value[own as usize]);
            if !seen {
                return Err(Finding::OwnWriteNotSeen { txn: t, op, own });
            }
            continue;
        }
        if src == FROM_NOBODY {
            return Err(Finding::ReadOfNobody { op });
        }
        if src == FROM_AMBIGUOUS {
            let (prev, first) = (scratch[slot].2, scratch[slot].3);
            if prev != NO_SRC
                && h.op_kind[first as usize] == OpKind::Read
                && h.op_value[first as usize] == h.op_value[o]
            {
                // The same value again: the same version, whichever write that is.
                match prev {
                    FROM_AMBIGUOUS => open_choice(f, k).ops.push(op),
                    _ => f.resolved.push((op, prev)),
                }
                continue;
            }
            src = viable_writer(h, r, inc, t, op, f, ks)?;
        } else if src != FROM_INIT {
            let w = r.op_txn[src as usize];
            if w == t {
                return Err(Finding::FutureRead { txn: t, op });
            }
            if !inc[w as usize] {
                return Err(Finding::AbortedRead { op });
            }
            if ks.overwritten(src) {
                return Err(Finding::IntermediateRead { op });
            }
        }
        let (prev, first) = (scratch[slot].2, scratch[slot].3);
        // An ambiguous read of another value than the first read's is another version.
        if prev != NO_SRC && (src != prev || src == FROM_AMBIGUOUS) {
            return Err(Finding::NonRepeatable {
                txn: t,
                key: k,
                first,
                second: op,
            });
        }
        scratch[slot].2 = src;
        scratch[slot].3 = op;
    }
    for &(k, own, src, _) in &scratch {
        let src_node = match src {
            NO_SRC | FROM_AMBIGUOUS => None,
            FROM_INIT => Some(INIT),
            s => Some(b.txn_node[r.op_txn[s as usize] as usize]),
        };
        if src == FROM_AMBIGUOUS {
            let c = open_choice(f, k);
            c.reader = node;
            c.cands = c
                .cand_ops
                .iter()
                .map(|&w| match w {
                    FROM_INIT => INIT,
                    w => b.txn_node[r.op_txn[w as usize] as usize],
                })
                .collect();
        }
        if let Some(w) = src_node {
            f.reads.push((k, w, node));
            // One write→read edge per (writer, reader) pair is enough for the graph; the fence
            // key's are kept apart, as they may be left out (see `forget_key`).
            let fence = h.fence_key == Some(k);
            if w != INIT && fence {
                b.push_edge(w, node, Label::fact(EdgeKind::Wr, k));
            } else if w != INIT && ks.wr_stamp[w as usize] != node {
                ks.wr_stamp[w as usize] = node;
                let (u, v) = b.ends(w, node, EdgeKind::Wr);
                ks.wr_buf.push((u, v, Label::fact(EdgeKind::Wr, k)));
            }
        }
        if own != NONE {
            f.writes.push((k, node));
            if let Some(w) = src_node {
                f.rmws.push((k, w, node));
            }
        }
    }
    ks.scratch = scratch;
    Ok(())
}

/// The choice this transaction opened for key `k` (its reader is set once the transaction's
/// reads are all seen; until then it is 0, which no reader is).
fn open_choice(f: &mut Facts, k: u32) -> &mut Choice {
    f.amb
        .iter_mut()
        .rev()
        .find(|c| c.key == k && c.reader == 0)
        .expect("opened by the transaction's first read of the key")
}

/// The candidates of ambiguous read `op` of transaction `t` that could be its writer: the
/// initial state, or a final write of a transaction that takes part and is not `t`. With one
/// left, that is the read's source (recorded in `f.resolved`); with more, a [`Choice`] is
/// opened (`FROM_AMBIGUOUS` returned); with none, every candidate's reason is the finding.
fn viable_writer(
    h: &History,
    r: &Resolution,
    inc: &[bool],
    t: TxnId,
    op: u32,
    f: &mut Facts,
    ks: &KeySlots,
) -> Result<u32, Finding> {
    let cands = r.candidates(op);
    let mut ok: Vec<u32> = Vec::with_capacity(cands.len());
    let mut why = Vec::new();
    for &c in cands {
        if c == FROM_INIT {
            ok.push(c);
            continue;
        }
        let w = r.op_txn[c as usize];
        let reason = if w == t {
            NoWriter::Own
        } else if !inc[w as usize] {
            NoWriter::NotCommitted
        } else if ks.overwritten(c) {
            NoWriter::Overwritten
        } else {
            ok.push(c);
            continue;
        };
        why.push((c, reason));
    }
    match ok.len() {
        0 => Err(Finding::NoWriter { op, why }),
        1 => {
            f.resolved.push((op, ok[0]));
            Ok(ok[0])
        }
        n => {
            f.amb.push(Choice {
                key: h.op_key[op as usize],
                reader: 0,
                ops: vec![op],
                cands: Vec::new(),
                cand_ops: ok,
                alive: vec![true; n],
                why: vec![None; n],
            });
            Ok(FROM_AMBIGUOUS)
        }
    }
}

/// Leaves out every fact about key `k`: its reads, writes, read-modify-write steps and the
/// write→read (or list) edges already in the graph.
fn forget_key(b: &mut Built, f: &mut Facts, k: u32) {
    f.reads.retain(|r| r.0 != k);
    f.writes.retain(|w| w.0 != k);
    f.rmws.retain(|r| r.0 != k);
    (b.edges, b.labels) = b
        .edges
        .iter()
        .zip(&b.labels)
        .filter(|(_, l)| l.key != k)
        .map(|(&e, &l)| (e, l))
        .unzip();
    b.spare.retain(|e| e.2.key != k);
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
