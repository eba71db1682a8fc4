//! A transaction on its own, as read from a log still being written: not yet placed in a
//! [`History`](super::History), its keys interned by the caller's table ([`Keys`]), which the
//! online checker keeps across polls.

use super::{KeyId, OpKind, TxnStatus};

/// One transaction read from a log.
#[derive(Clone, Debug)]
pub struct StreamTxn {
    /// The session's name (the `session` field, or the Cobra log's file stem).
    pub session: String,
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
    /// Cobra: (value hash, named writer) per op; empty for native logs.
    pub claims: Vec<(u64, u64)>,
}

/// The caller's key table: name → id. Cobra's fence key is named "FZVERSION".
pub trait Keys {
    /// The id of a key, interned on first sight.
    fn key(&mut self, name: &str) -> KeyId;
    /// Marks a key as the fence key.
    fn fence_key(&mut self, k: KeyId);
}
