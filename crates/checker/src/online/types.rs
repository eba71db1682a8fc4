//! What goes into and comes out of the online checker: transactions as they arrive, the
//! options, what each round did, and errors about the input stream.

use crate::Options;
use krait_history::{KeyId, OpKind, TxnStatus};
use std::time::Duration;

/// A transaction as it arrives.
#[derive(Clone, Debug)]
pub struct TxnIn {
    pub session: u32,
    pub ext: u64,
    pub status: TxnStatus,
    pub start: u64,
    pub commit: u64,
    pub ops: Vec<(OpKind, KeyId, u64)>,
    /// (op index, list) of list-append reads: the op reads the list's last element.
    pub lists: Vec<(u32, Vec<u64>)>,
    /// Cobra's claims per op: (value hash, named writer txn); empty when the format has none.
    pub claims: Vec<(u64, u64)>,
}

impl TxnIn {
    /// Every (key, value) a read needs a write of: read values and list elements.
    pub(super) fn needs(&self) -> impl Iterator<Item = (KeyId, u64)> + '_ {
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

#[derive(Clone, Debug)]
pub struct OnlineOptions {
    pub check: Options,
    /// Garbage collection (off: every transaction stays, each round re-checks everything).
    pub gc: bool,
    /// A synthetic or deleted node reaching more kept nodes than this becomes a hub.
    pub hub_cap: usize,
    /// Nodes a frontier search may visit before it gives up (and keeps the writer); used only
    /// when the reachability index would not fit in `check.reach_memory_cap`.
    pub frontier_limit: usize,
    /// Reduce carried edges to a transitive reduction (off: carry every path's ends).
    pub reduce: bool,
    /// Let a frontier writer that is its keys' only possible latest version become their
    /// initial version, and go (off: frontier writers stay until overwritten).
    pub fold: bool,
    /// Largest node count for which carried edges are reduced (bitsets: n² bits).
    pub reduce_cap: usize,
    /// Admit at most this many transactions a round (0: no limit), drawn from the sessions in
    /// turn; a reader is admitted only with the writers it names.
    pub max_admit: usize,
    /// Watch mode: how long a read may name a write no log holds (besides two full sweeps of
    /// the logs) before it is rejected; logs written with buffering can lag this much.
    pub read_wait: Duration,
}

impl Default for OnlineOptions {
    fn default() -> Self {
        OnlineOptions {
            check: Options::default(),
            gc: true,
            hub_cap: 8,
            frontier_limit: 64,
            reduce: true,
            fold: true,
            reduce_cap: 40_000,
            max_admit: 0,
            read_wait: Duration::from_secs(10),
        }
    }
}

/// What one round did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RoundStats {
    pub round: u64,
    /// Transactions admitted this round.
    pub new: usize,
    /// Transactions read but not admitted (their reads name writes not seen yet).
    pub waiting: usize,
    /// Transactions in this round's graph (live before deletion, plus new).
    pub checked: usize,
    /// Transactions held after this round's garbage collection.
    pub live: usize,
    pub deleted: usize,
    pub deleted_total: u64,
    pub constraints: usize,
    pub constraints_after_prune: usize,
    pub carried_edges: usize,
    pub hubs: u32,
    /// Keys whose initial version now stands for a deleted frontier writer's value.
    pub folded_keys: usize,
    pub epoch_agree: u32,
    /// Whole round; of it, the check of the round's graph, and garbage collection.
    #[serde(serialize_with = "ser_ms")]
    pub time: Duration,
    #[serde(serialize_with = "ser_ms")]
    pub check_time: Duration,
    #[serde(serialize_with = "ser_ms")]
    pub gc_time: Duration,
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// Errors about the input stream, not the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnlineError {
    DuplicateWrite { txn: u64, key: String, value: u64 },
    DuplicateTxn { txn: u64 },
    LateSession { name: String },
    ListsAfterGc { txn: u64 },
    Check(crate::CheckError),
}

impl std::fmt::Display for OnlineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OnlineError::DuplicateWrite { txn, key, value } => write!(
                f,
                "transaction {txn} writes key {key:?} with value {value}, which another transaction already wrote (written values must be unique per key)"
            ),
            OnlineError::DuplicateTxn { txn } => write!(f, "transaction id {txn} is used twice"),
            OnlineError::LateSession { name } => write!(
                f,
                "session {name} appeared after transactions were garbage-collected; the epoch guarantee needs every session from the start (start watching before the clients, or use --no-gc)"
            ),
            OnlineError::ListsAfterGc { txn } => write!(
                f,
                "transaction {txn} has a list-append read, but transactions were already garbage-collected and a list needs its key's whole version order (check with --no-gc)"
            ),
            OnlineError::Check(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for OnlineError {}
