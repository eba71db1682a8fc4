//! Which transactions take part in a check, numbered as graph nodes, and which writes others
//! may read: shared by every level's graph.

use crate::findings::Finding;
use crate::graph::Node;
use krait_history::{History, OpKind, Resolution, TxnId, TxnStatus};

/// Which transactions take part: the committed ones, and those whose outcome is unknown but
/// that an included transaction read from (so they must have committed), or that the caller
/// knows were read (`committed_unknown`).
fn included(h: &History, r: &Resolution, committed_unknown: &[TxnId]) -> (Vec<bool>, usize) {
    let mut inc: Vec<bool> = h
        .txn_status
        .iter()
        .map(|&s| s == TxnStatus::Committed)
        .collect();
    for &t in committed_unknown {
        inc[t as usize] = true;
    }
    // Only unknown outcomes can be drawn in: without any, no pass over the reads is needed.
    if !h.txn_status.contains(&TxnStatus::Unknown) {
        return (inc, 0);
    }
    let mut writers: Vec<TxnId> = Vec::new();
    loop {
        let mut changed = false;
        for t in 0..h.num_txns() {
            if !inc[t] {
                continue;
            }
            for o in h.ops(t as TxnId) {
                writers.clear();
                writers.extend(r.writer_txn(o as u32));
                // Every element of a list read was appended by a transaction that committed.
                if let Some(list) = h.list_of(o as u32) {
                    let k = h.op_key[o];
                    writers.extend(
                        list.iter()
                            .filter_map(|&v| h.first_write(k, v))
                            .map(|w| r.op_txn[w as usize]),
                    );
                }
                for &w in &writers {
                    if !inc[w as usize] && h.txn_status[w as usize] == TxnStatus::Unknown {
                        inc[w as usize] = true;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    let excluded_unknown = (0..h.num_txns())
        .filter(|&t| !inc[t] && h.txn_status[t] == TxnStatus::Unknown)
        .count();
    (inc, excluded_unknown)
}

/// Which transactions take part, numbered as graph nodes (node i+1 is `node_txn[i]`).
pub(crate) struct Participants {
    pub inc: Vec<bool>,
    pub excluded_unknown: usize,
    pub node_txn: Vec<TxnId>,
    pub txn_node: Vec<Node>,
}

/// The participants (see [`included`]), or the first claim of Cobra's logs about one of their
/// reads that the history contradicts.
pub(crate) fn participants(
    h: &History,
    r: &Resolution,
    committed_unknown: &[TxnId],
) -> Result<Participants, Finding> {
    let (inc, excluded_unknown) = included(h, r, committed_unknown);
    for (op, problem) in &r.problems {
        if inc[r.op_txn[*op as usize] as usize] {
            return Err(Finding::ReadProblem {
                op: *op,
                problem: problem.clone(),
            });
        }
    }
    if let Some((op, problem)) = krait_history::initial_claim_problem(h, &inc) {
        return Err(Finding::ReadProblem { op, problem });
    }
    let mut node_txn = Vec::new();
    let mut txn_node = vec![u32::MAX; h.num_txns()];
    for t in 0..h.num_txns() {
        if inc[t] {
            txn_node[t] = node_txn.len() as Node + 1;
            node_txn.push(t as TxnId);
        }
    }
    Ok(Participants {
        inc,
        excluded_unknown,
        node_txn,
        txn_node,
    })
}

/// The writes their own transaction overwrites later (a write of the same key after them): the
/// intermediate versions no other transaction may read, usually none. Held as a sorted list
/// rather than a flag per op: the flag, looked up at each read's writer, was a miss in memory
/// per read on a large history, and the list is almost always empty.
pub(crate) struct Overwritten(Vec<u32>);

impl Overwritten {
    /// Found transaction by transaction, in parallel.
    pub(crate) fn of(h: &History) -> Overwritten {
        use rayon::prelude::*;
        let mut out: Vec<u32> = (0..h.num_txns() as u32)
            .into_par_iter()
            .with_min_len(1 << 10)
            .fold(
                || (Vec::new(), Vec::new()),
                |(mut out, mut w): (Vec<u32>, Vec<(u32, u32)>), t| {
                    w.clear();
                    w.extend(
                        h.ops(t)
                            .filter(|&o| h.op_kind[o] == OpKind::Write)
                            .map(|o| (h.op_key[o], o as u32)),
                    );
                    if w.len() > 1 {
                        w.sort_unstable();
                        out.extend(w.windows(2).filter(|p| p[0].0 == p[1].0).map(|p| p[0].1));
                    }
                    (out, w)
                },
            )
            .map(|(out, _)| out)
            .reduce(Vec::new, |mut a, b| {
                a.extend(b);
                a
            });
        out.sort_unstable();
        Overwritten(out)
    }

    /// Whether write op `o` is overwritten by its own transaction (an intermediate version).
    #[inline]
    pub(crate) fn contains(&self, o: u32) -> bool {
        !self.0.is_empty() && self.0.binary_search(&o).is_ok()
    }
}
