//! Resolves every read to the write it observed, to the initial state, or to nobody; and
//! records reads whose claims (Cobra's named writer and value hash) disagree with that write.
//! These are facts about the history, not errors: the checker turns them into REJECTs.

use super::{History, OpId, OpKind, TxnId, DELETE_WRITE_ID};
use serde::Serialize;

/// `read_from[op]` for a read of the initial state.
pub const FROM_INIT: OpId = OpId::MAX;
/// `read_from[op]` for a read of a value no write in the history has.
pub const FROM_NOBODY: OpId = OpId::MAX - 1;

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
}

impl Resolution {
    /// The transaction whose write a read observed (None for initial reads and reads of nobody).
    pub fn writer_txn(&self, read: OpId) -> Option<TxnId> {
        let w = self.read_from[read as usize];
        (w != FROM_INIT && w != FROM_NOBODY).then(|| self.op_txn[w as usize])
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
    for o in 0..h.num_ops() {
        read_from[o] = match h.op_kind[o] {
            OpKind::Write => o as OpId,
            OpKind::ReadInit => FROM_INIT,
            OpKind::Read => match h.write_index.get(&(h.op_key[o], h.op_value[o])) {
                Some(&w) => w,
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
            if w != FROM_NOBODY {
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
    }
}

/// The writer transaction of each read (None for initial reads and reads of nobody).
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
