//! Histories spelled out transaction by transaction, for tests and examples: small, any session
//! order, and built through the same builder as every reader.

use super::{History, HistoryBuilder, OpKind, TxnStatus, NATIVE_FENCE_KEY, NO_TIME};

/// A transaction spelled out, for building small histories in tests and examples.
#[derive(Clone, Debug)]
pub struct SimpleTxn {
    /// The session (sessions are numbered from 0, named `s<n>`).
    pub session: usize,
    /// The transaction's external id.
    pub id: u64,
    /// Its outcome.
    pub status: TxnStatus,
    /// (kind, key, value); the value of a `ReadInit` is ignored.
    pub ops: Vec<(OpKind, String, u64)>,
    /// (op index, list) for list-append reads.
    pub lists: Vec<(usize, Vec<u64>)>,
    /// Start timestamp, or [`NO_TIME`].
    pub start: u64,
    /// Commit timestamp, or [`NO_TIME`].
    pub commit: u64,
}

impl SimpleTxn {
    /// A committed transaction without operations or timestamps.
    pub fn new(session: usize, id: u64) -> Self {
        SimpleTxn {
            session,
            id,
            status: TxnStatus::Committed,
            ops: Vec::new(),
            lists: Vec::new(),
            start: NO_TIME,
            commit: NO_TIME,
        }
    }
    /// Adds a read of `value`.
    pub fn r(mut self, key: &str, value: u64) -> Self {
        self.ops.push((OpKind::Read, key.to_string(), value));
        self
    }
    /// Adds a read of the initial state.
    pub fn r0(mut self, key: &str) -> Self {
        self.ops.push((OpKind::ReadInit, key.to_string(), 0));
        self
    }
    /// A list-append read that returned this whole list (`[]`: the initial, empty list).
    pub fn rl(mut self, key: &str, list: &[u64]) -> Self {
        self.lists.push((self.ops.len(), list.to_vec()));
        match list.last() {
            Some(&v) => self.ops.push((OpKind::Read, key.to_string(), v)),
            None => self.ops.push((OpKind::ReadInit, key.to_string(), 0)),
        }
        self
    }
    /// Adds a write of `value`.
    pub fn w(mut self, key: &str, value: u64) -> Self {
        self.ops.push((OpKind::Write, key.to_string(), value));
        self
    }
    /// Sets the outcome.
    pub fn status(mut self, s: TxnStatus) -> Self {
        self.status = s;
        self
    }
    /// Sets the start and commit timestamps.
    pub fn times(mut self, start: u64, commit: u64) -> Self {
        self.start = start;
        self.commit = commit;
        self
    }
}

/// Why [`build_history`] refused its transactions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Transaction ids must be unique.
    #[error("txn id {0} used twice")]
    DuplicateTxn(u64),
}

/// Builds a history from transactions listed in any order; each session keeps the order in
/// which its transactions appear. A transaction id used twice is an error; values written more
/// than once are not.
pub fn build_history(txns: &[SimpleTxn]) -> Result<History, BuildError> {
    let mut b = HistoryBuilder::new();
    let nsessions = txns.iter().map(|t| t.session + 1).max().unwrap_or(0);
    for s in 0..nsessions {
        b.begin_session(format!("s{s}"));
        for t in txns.iter().filter(|t| t.session == s) {
            for (i, (kind, key, value)) in t.ops.iter().enumerate() {
                let k = b.key(key);
                if key == NATIVE_FENCE_KEY {
                    b.set_fence_key(k);
                }
                b.op(*kind, k, *value);
                if let Some((_, l)) = t.lists.iter().find(|l| l.0 == i) {
                    b.list(l);
                }
            }
            b.finish_txn(t.id, t.status, t.start, t.commit)
                .map_err(|_| BuildError::DuplicateTxn(t.id))?;
        }
    }
    Ok(b.finish())
}
