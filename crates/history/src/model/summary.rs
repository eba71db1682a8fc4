//! The counts `krait stats` and the summary line report: computed from the model alone, so every
//! format is summarized alike.

use super::{History, OpKind, TxnId, TxnStatus};

/// Counts for `krait stats` and the summary line.
#[derive(Clone, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct Summary {
    /// Sessions.
    pub sessions: usize,
    /// Transactions, whatever their outcome.
    pub txns: usize,
    /// Committed transactions.
    pub committed: usize,
    /// Aborted transactions.
    pub aborted: usize,
    /// Transactions whose outcome is unknown.
    pub unknown: usize,
    /// Reads, initial ones included.
    pub reads: usize,
    /// Writes.
    pub writes: usize,
    /// Writes of a (key, value) an earlier write already wrote: reads of those values may have
    /// several candidate writers.
    pub repeated_writes: usize,
    /// Distinct keys.
    pub keys: usize,
    /// Reads of the initial state.
    pub initial_reads: usize,
    /// Fence transactions.
    pub fences: usize,
    /// Whether any transaction has a timestamp.
    pub timestamps: bool,
}

/// Counts what the history holds.
pub fn summarize(h: &History) -> Summary {
    let mut s = Summary {
        sessions: h.num_sessions(),
        txns: h.num_txns(),
        keys: h.num_keys(),
        ..Default::default()
    };
    for st in &h.txn_status {
        match st {
            TxnStatus::Committed => s.committed += 1,
            TxnStatus::Aborted => s.aborted += 1,
            TxnStatus::Unknown => s.unknown += 1,
        }
    }
    // Counted on every core, in chunks whose counts fit 32 bits, adding comparisons rather
    // than branching on them, so that the compiler vectorizes it: a branch per operation cost
    // a few milliseconds on a million reads, and one thread's passes 25 ms on twelve million,
    // at the end of every check.
    use rayon::prelude::*;
    let (writes, initial_reads) = h
        .op_kind
        .par_chunks(1 << 16)
        .map(|c| {
            let (mut w, mut i) = (0u32, 0u32);
            for &k in c {
                w += u32::from(k == OpKind::Write);
                i += u32::from(k == OpKind::ReadInit);
            }
            (w as usize, i as usize)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    s.writes = writes;
    s.initial_reads = initial_reads;
    s.reads = h.op_kind.len() - s.writes;
    s.fences = (0..h.num_txns() as TxnId)
        .filter(|&t| h.is_fence(t))
        .count();
    s.timestamps = h.has_timestamps();
    s.repeated_writes = h.dup_writes.values().map(Vec::len).sum();
    s
}
