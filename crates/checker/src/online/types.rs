//! What goes into and comes out of the online checker: transactions as they arrive, the
//! options, what each round did, and errors about the input stream.

use crate::Options;
use std::time::Duration;

/// How the online checker checks and collects.
#[derive(Clone, Debug)]
pub struct OnlineOptions {
    /// The switches of each round's check.
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
    /// Keep the commit times of admitted transactions until the caller takes them
    /// (`Online::take_admitted_commits`), to measure lag; off, nothing is kept.
    pub track_commits: bool,
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
            track_commits: false,
        }
    }
}

/// What one round did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RoundStats {
    /// The round's number, from 1.
    pub round: u64,
    /// Transactions admitted this round.
    pub new: usize,
    /// Transactions read but not admitted (their reads name writes not seen yet).
    pub waiting: usize,
    /// Transactions in this round's graph (live before deletion, plus new).
    pub checked: usize,
    /// Transactions held after this round's garbage collection.
    pub live: usize,
    /// Transactions this round's garbage collection deleted.
    pub deleted: usize,
    /// Transactions deleted so far.
    pub deleted_total: u64,
    /// Constraints of this round's check, before pruning.
    pub constraints: usize,
    /// Constraints of this round's check left to the solver.
    pub constraints_after_prune: usize,
    /// Causal consistency: the version-order edges the new transactions' reads forced (the
    /// level has no constraints; absent at ser and si).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forced_edges: Option<usize>,
    /// Edges carried into the next round from deleted transactions.
    pub carried_edges: usize,
    /// Hub nodes among them.
    pub hubs: u32,
    /// Keys whose initial version now stands for a deleted frontier writer's value.
    pub folded_keys: usize,
    /// The least epoch every session still sending has reached.
    pub epoch_agree: u32,
    /// Why garbage collection is held, when it is (sessions expected but not seen yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc_held: Option<String>,
    /// Whole round; of it, the check of the round's graph, and garbage collection.
    #[serde(serialize_with = "crate::stats::ms")]
    pub time: Duration,
    /// The check of the round's graph.
    #[serde(serialize_with = "crate::stats::ms")]
    pub check_time: Duration,
    /// Garbage collection.
    #[serde(serialize_with = "crate::stats::ms")]
    pub gc_time: Duration,
}

/// Errors about the input stream, not the verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OnlineError {
    /// Written values must be unique per key.
    #[error("transaction {txn} writes key {key:?} with value {value}, which another transaction already wrote: values repeat; watch with --repeated-values (which must be said from the start: garbage collection keeps more for it), or check the whole history at once")]
    DuplicateWrite {
        /// The second writer.
        txn: u64,
        /// The key.
        key: String,
        /// The value written twice.
        value: u64,
    },
    /// Fences number epochs along their chain: their values must stay unique.
    #[error("transaction {txn} writes the fence key {key:?} with value {value}, which another fence already wrote: fence values must be unique, even where other values repeat")]
    RepeatedFence {
        /// The second writer.
        txn: u64,
        /// The fence key.
        key: String,
        /// The value written twice.
        value: u64,
    },
    /// Transaction ids must be unique.
    #[error("transaction id {txn} is used twice")]
    DuplicateTxn {
        /// The id.
        txn: u64,
    },
    /// A session that appears after garbage collection began.
    #[error("session {name} appeared after transactions were garbage-collected; the epoch guarantee needs every session from the start (start watching before the clients, or use --no-gc)")]
    LateSession {
        /// The session's name.
        name: String,
    },
    /// A list-append read after garbage collection began.
    #[error("transaction {txn} has a list-append read, but transactions were already garbage-collected and a list needs its key's whole version order (check with --no-gc)")]
    ListsAfterGc {
        /// The reader.
        txn: u64,
    },
    /// A delete (`["w", key, null]`) while values are taken as unique: a later read of no row
    /// may have read it, another delete or the initial state.
    #[error("transaction {txn} deletes key {key:?} (writes null): a later read of no row may have read this delete, another one or the initial state; watch with --repeated-values, which takes deletes")]
    Delete {
        /// The deleting transaction.
        txn: u64,
        /// The key.
        key: String,
    },
    /// Causal consistency online where values repeat (or rows are deleted).
    #[error("causal consistency is checked in rounds only where every written value is unique, and here values repeat (or rows are deleted): a read's writer is then in doubt until every write it may have read has arrived, while the causal check fixes the edges a read forces once, in the round that admits it; check the whole history at once")]
    CausalRepeated,
    /// A saved state that cannot be restored, or a state that cannot be saved.
    #[error("online checker state: {0}")]
    State(String),
    /// The round's check refused its input.
    #[error(transparent)]
    Check(#[from] crate::CheckError),
}
