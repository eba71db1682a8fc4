//! Real-time order for strict serializability without quadratic edges. Ti precedes Tj when Ti's
//! (known) commit plus the clock-drift allowance is before Tj's start. Instead of every such pair, commit
//! times become a chain of time-point nodes: Ti → point(commit_i), point → next point, and the
//! latest point p with time(p) + drift < start_j → Tj. Then Ti ⇝ Tj through points exactly when
//! Ti precedes Tj in real time, with 3n edges.

use crate::graph::Built;
use crate::graph::{EdgeKind, Label, Node, NO_KEY};
use crate::CheckError;
use krait_history::{History, TxnStatus, NO_TIME};

/// Adds the real-time edges; returns how many edges were added.
pub fn add_edges(h: &History, b: &mut Built, drift: u64) -> Result<usize, CheckError> {
    let mut commits: Vec<(u64, Node)> = Vec::with_capacity(b.node_txn.len());
    for (i, &t) in b.node_txn.iter().enumerate() {
        let (s, c) = (h.txn_start[t as usize], h.txn_commit[t as usize]);
        // An unknown outcome may have committed at any time after it started: whatever time the
        // log gives as its end bounds nothing, so it precedes nobody in real time.
        let unknown = h.txn_status[t as usize] == TxnStatus::Unknown;
        if s == NO_TIME || (c == NO_TIME && !unknown) {
            return Err(CheckError::MissingTimestamp {
                txn: h.display_txn(t),
            });
        }
        if !unknown {
            commits.push((c, i as Node + 1));
        }
    }
    commits.sort_unstable();
    let before = b.edges.len();
    let first_point = b.num_nodes as Node;
    b.num_nodes += commits.len();
    let label = Label::fact(EdgeKind::RealTime, NO_KEY);
    for (k, &(_, n)) in commits.iter().enumerate() {
        b.edges.push((n, first_point + k as Node));
        b.labels.push(label);
        if k + 1 < commits.len() {
            b.edges
                .push((first_point + k as Node, first_point + k as Node + 1));
            b.labels.push(label);
        }
    }
    for i in 0..b.node_txn.len() {
        let start = h.txn_start[b.node_txn[i] as usize];
        // Points whose time + drift < start are a prefix; link the last of them.
        let cnt = commits.partition_point(|&(c, _)| c.saturating_add(drift) < start);
        if cnt > 0 {
            // Into the snapshot under snapshot isolation: real time orders commit before start.
            b.push_edge(first_point + cnt as Node - 1, i as Node + 1, label);
        }
    }
    b.chain_of.resize(b.num_nodes, (u32::MAX, 0));
    Ok(b.edges.len() - before)
}
