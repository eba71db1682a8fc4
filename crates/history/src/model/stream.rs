//! A transaction on its own, as it arrives: read from a log still being written, or replayed
//! from a finished history, and not yet placed in a [`History`](super::History). Its keys are
//! interned by the caller's table ([`Keys`]), which the online checker keeps across polls; its
//! session is a number its producer assigns. The follower and the online checker share this
//! one record.

use super::{KeyId, OpKind, TxnStatus};

/// One transaction as it arrives.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TxnRecord {
    /// Its session, numbered by whoever produced the record: the follower numbers sessions in
    /// the order it first sees them (their names are in `Polled::new_sessions`, in that order);
    /// the online checker expects its own numbers (`Online::session`).
    pub session: u32,
    /// The transaction's id in the input.
    pub ext: u64,
    /// Its outcome.
    pub status: TxnStatus,
    /// Start timestamp, or [`NO_TIME`](super::NO_TIME).
    pub start: u64,
    /// Commit timestamp, or [`NO_TIME`](super::NO_TIME).
    pub commit: u64,
    /// (kind, key, value) per operation, in order.
    pub ops: Vec<(OpKind, KeyId, u64)>,
    /// (op index, list) of list-append reads (native logs).
    pub lists: Vec<(u32, Vec<u64>)>,
    /// (op index, the application's own value) where the log has one (native logs).
    pub app: Vec<(u32, String)>,
    /// Cobra: (value hash, named writer) per op; empty for native logs.
    pub claims: Vec<(u64, u64)>,
}

impl TxnRecord {
    /// Every (key, value) a read needs a write of: read values and list elements.
    pub fn needs(&self) -> impl Iterator<Item = (KeyId, u64)> + '_ {
        let reads = self
            .ops
            .iter()
            .filter(|o| o.0 == OpKind::Read)
            .map(|o| (o.1, o.2));
        let elements = self.lists.iter().flat_map(move |(i, l)| {
            let k = self.ops[*i as usize].1;
            l.iter().map(move |&v| (k, v))
        });
        reads.chain(elements)
    }
}

/// The caller's key table: name → id. Cobra's fence key is named "FZVERSION".
pub trait Keys {
    /// The id of a key, interned on first sight.
    fn key(&mut self, name: &str) -> KeyId;
    /// Marks a key as the fence key.
    fn fence_key(&mut self, k: KeyId);
}
