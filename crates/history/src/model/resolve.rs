//! Resolves every read to the write it observed, to the initial state, to nobody, or — where its
//! value was written more than once, or is also the initial value — to the list of writes it may
//! have observed; and records reads whose claims (Cobra's named writer and value hash) disagree
//! with the write they name.
//! These are facts about the history, not errors: the checker turns them into REJECTs.

use super::{History, OpId, OpKind, TxnId, DELETE_WRITE_ID};
use serde::Serialize;

/// `read_from[op]` for a read of the initial state.
pub const FROM_INIT: OpId = OpId::MAX;
/// `read_from[op]` for a read of a value no write in the history has.
pub const FROM_NOBODY: OpId = OpId::MAX - 1;
/// `read_from[op]` for a read of a value written more than once (or also the initial value):
/// [`Resolution::candidates`] lists the writes it may have read.
pub const FROM_AMBIGUOUS: OpId = OpId::MAX - 2;

/// A read whose claims disagree with the write it resolved to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReadProblem {
    /// Cobra: the read names writer transaction `claimed`, but the write it names is by another.
    WrongWriter {
        /// The writer transaction the read names (external id).
        claimed: u64,
        /// The transaction of the write it names (external id).
        actual: u64,
    },
    /// Cobra: the value hash read differs from the one written.
    ValueMismatch {
        /// The value hash the read saw.
        read: u64,
        /// The value hash the write wrote.
        written: u64,
    },
    /// The read names a delete, which Cobra's format cannot tell apart from other deletes.
    AmbiguousDelete,
}

/// Every read resolved: what it observed, and the problems found on the way.
pub struct Resolution {
    /// For each read op: the write op it observed, [`FROM_INIT`] or [`FROM_NOBODY`]. For writes:
    /// the op itself.
    pub read_from: Vec<OpId>,
    /// Transaction of each op.
    pub op_txn: Vec<TxnId>,
    /// Reads whose claims disagree with what they resolved to, in op order.
    pub problems: Vec<(OpId, ReadProblem)>,
    /// `(read, start, end)` for each [`FROM_AMBIGUOUS`] read, in op order: it may have read any
    /// of `cand_ops[start..end]` (write ops, in op order, and [`FROM_INIT`] first where the
    /// initial value matches). Empty for histories whose written values are unique.
    pub ambiguous: Vec<(OpId, u32, u32)>,
    /// The candidate lists of `ambiguous`, one after another.
    pub cand_ops: Vec<OpId>,
}

impl Resolution {
    /// The transaction whose write a read observed (None for initial reads and reads of nobody).
    pub fn writer_txn(&self, read: OpId) -> Option<TxnId> {
        let w = self.read_from[read as usize];
        (w < FROM_AMBIGUOUS).then(|| self.op_txn[w as usize])
    }
    /// The writes an ambiguous read may have read (empty for any other op).
    pub fn candidates(&self, read: OpId) -> &[OpId] {
        let i = self.ambiguous.partition_point(|a| a.0 < read);
        match self.ambiguous.get(i) {
            Some(&(o, a, b)) if o == read => &self.cand_ops[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// The transaction of every operation (the layout stores only ranges).
pub fn op_txns(h: &History) -> Vec<TxnId> {
    let mut op_txn = vec![0 as TxnId; h.num_ops()];
    for t in 0..h.num_txns() {
        for o in h.ops(t as TxnId) {
            op_txn[o] = t as TxnId;
        }
    }
    op_txn
}

/// Resolves every read of `h`.
pub fn resolve(h: &History) -> Resolution {
    let op_txn = op_txns(h);
    let mut read_from = vec![FROM_NOBODY; h.num_ops()];
    let mut problems = Vec::new();
    let mut ambiguous = Vec::new();
    let mut cand_ops = Vec::new();
    for o in 0..h.num_ops() {
        let (k, v) = (h.op_key[o], h.op_value[o]);
        read_from[o] = match h.op_kind[o] {
            OpKind::Write => o as OpId,
            OpKind::ReadInit => FROM_INIT,
            OpKind::Read => match h.write_index.get(&(k, v)) {
                // The common case, and the only one of a history with unique values.
                Some(&w) if h.init_value != Some(v) && !h.dup_writes.contains_key(&(k, v)) => w,
                Some(_) => {
                    let a = cand_ops.len() as u32;
                    if h.init_value == Some(v) {
                        cand_ops.push(FROM_INIT);
                    }
                    cand_ops.extend(h.writes_of(k, v));
                    ambiguous.push((o as OpId, a, cand_ops.len() as u32));
                    FROM_AMBIGUOUS
                }
                None if h.init_value == Some(v) => FROM_INIT,
                None => {
                    if h.cobra.is_some() && h.op_value[o] == DELETE_WRITE_ID {
                        problems.push((o as OpId, ReadProblem::AmbiguousDelete));
                    }
                    FROM_NOBODY
                }
            },
        };
        if let (Some(c), OpKind::Read) = (&h.cobra, h.op_kind[o]) {
            let w = read_from[o];
            if w < FROM_AMBIGUOUS {
                let actual = h.txn_ext[op_txn[w as usize] as usize];
                if c.read_writer[o] != actual {
                    problems.push((
                        o as OpId,
                        ReadProblem::WrongWriter {
                            claimed: c.read_writer[o],
                            actual,
                        },
                    ));
                } else if c.value_hash[o] != c.value_hash[w as usize] {
                    problems.push((
                        o as OpId,
                        ReadProblem::ValueMismatch {
                            read: c.value_hash[o],
                            written: c.value_hash[w as usize],
                        },
                    ));
                }
            }
        }
    }
    Resolution {
        read_from,
        op_txn,
        problems,
        ambiguous,
        cand_ops,
    }
}

/// The writer transaction of each read (None for initial reads, reads of nobody and ambiguous
/// reads).
pub fn writer_txns(h: &History) -> Vec<Option<TxnId>> {
    let r = resolve(h);
    (0..h.num_ops())
        .map(|o| {
            if h.op_kind[o] == OpKind::Write {
                None
            } else {
                r.writer_txn(o as OpId)
            }
        })
        .collect()
}
