//! The checker's switches: every technique on by default, each can be turned off and the verdict
//! stays exact (property tests compare all combinations with a brute-force oracle).

use krait_solver::Budget;
use serde::Serialize;
use std::time::Duration;

/// Which engine decides what pruning leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    /// krait's CDCL solver modulo acyclicity (the default).
    Cdcl,
    /// Every assignment in turn: the oracle for tests, exponential.
    BruteForce,
}

/// When one-shot serializability and snapshot isolation leave resolving each read's writer to
/// graph building ([`Options::defer_resolution`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Defer {
    /// Resolve every read in a pass of its own first.
    Never,
    /// Where it pays: many reads a write (`krait_history::Writers::worth_it`).
    #[default]
    WherePays,
    /// Wherever it applies, whatever it costs (for tests to take the path on small histories).
    Always,
}

/// The isolation level a check decides; `Options::strict` adds real time to either.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Some serial order explains every read (Adya's PL-3: no cycle of dependencies).
    #[default]
    Serializable,
    /// Snapshot isolation (Adya's G-SI): some version order leaves every dependency cycle with
    /// two anti-dependencies in a row; each transaction reads one snapshot and no two
    /// concurrent transactions write one key.
    SnapshotIsolation,
    /// Read committed (Biswas and Enea's axiom): a transaction's reads never go back to a
    /// version older than one its earlier reads saw the writer of.
    ReadCommitted,
    /// Read atomic: a transaction sees all of each transaction it sees (and its session's
    /// earlier writes).
    ReadAtomic,
    /// Causal consistency: a transaction sees every write in its causal past.
    Causal,
}

impl Level {
    /// The level's name, with real time when `strict` (as reports and `--json` print it).
    pub fn name(self, strict: bool) -> &'static str {
        match (self, strict) {
            (Level::Serializable, false) => "serializable",
            (Level::Serializable, true) => "strict-serializable",
            (Level::SnapshotIsolation, false) => "snapshot-isolation",
            (Level::SnapshotIsolation, true) => "strict-snapshot-isolation",
            // Real time is not part of these levels here (refused with them).
            (Level::ReadCommitted, _) => "read-committed",
            (Level::ReadAtomic, _) => "read-atomic",
            (Level::Causal, _) => "causal",
        }
    }

    /// Whether the level is decided by its forced edges alone (no version-order search).
    pub fn is_weak(self) -> bool {
        matches!(
            self,
            Level::ReadCommitted | Level::ReadAtomic | Level::Causal
        )
    }
}

/// Switches. All techniques on by default; each can be turned off and the verdict stays exact.
#[derive(Clone, Debug)]
pub struct Options {
    /// The level to check.
    pub level: Level,
    /// Glue read-modify-writes into chains (§3.1 of the paper).
    pub combine: bool,
    /// One constraint per pair of chains instead of one per (reader, writer) (§3.2).
    pub coalesce: bool,
    /// Decide constraints by reachability before solving (§3.3).
    pub prune: bool,
    /// Pruning adds, of the edges it decides in one pass, only those no other one implies
    /// through a session (reachability is the same; the graph stays sparse).
    pub thin_edges: bool,
    /// Serializability and snapshot isolation, on keys whose values repeat: reject at once when
    /// more committed transactions read a value and then overwrote the key than there are
    /// versions holding that value (`graph::versions`: a lost update, whichever writes they read).
    pub count_versions: bool,
    /// Serializability: form no constraint between two single-write chains nobody reads (no
    /// read can tell their order, so any acyclic choice of the rest places them).
    pub skip_unobserved: bool,
    /// Serializability, with pruning: where the known graph leads from a write through the
    /// next writes of its key, pair it only with the first of them it is known to precede,
    /// not with every later one (each of those pairs would be decided the same way, and adds
    /// nothing the first does not imply).
    pub pair_by_heads: bool,
    /// Weak levels on histories whose values repeat: check serializability first; where it
    /// holds, so does every weaker level (some choice of each read's writer is serializable,
    /// and that choice satisfies them all), and the ways the reads could be explained are not
    /// tried one by one.
    pub weak_ser_first: bool,
    /// Weak levels on histories whose values repeat: leave out of a read's possible writers
    /// those no level allows it to have read (an aborted, an overwritten or its own later
    /// write), so fewer choices are tried.
    pub weak_prune_candidates: bool,
    /// Weak levels on histories whose values repeat: from a choice of writers that breaks the
    /// level, learn which reads' writers the violation needs and try no other choice that
    /// keeps them (otherwise the choices are tried one by one).
    pub weak_learn: bool,
    /// With `weak_learn`: give the solver read committed's or read atomic's edges for every
    /// choice up front (a variable per candidate writer), so it proposes only choices that
    /// keep them acyclic, instead of learning each family of broken choices by a check.
    pub weak_encode: bool,
    /// Where values repeat and the clients recorded timestamps: the solver first tries, for
    /// each read, the write current at its transaction's likeliest snapshot, and for each pair
    /// of writes the order they committed in (`crate::guess`), instead of the known graph's
    /// topological order.
    pub time_guess: bool,
    /// A pruning pass that tests only a few constraints (and pairs no chains) answers them by
    /// searches of the known graph instead of building the reachability index, which costs
    /// nodes × sessions; past a budget of edges searched it builds the index after all.
    pub prune_search_few: bool,
    /// Pruning's topological order of the known graph takes, of the nodes ready, a gate first
    /// and else the transaction that started first (where the history has times): on a
    /// history whose start order is a serial order the edges pruning decides then go forward
    /// in it, and the next pass needs no new order. Any order gives the same verdict.
    pub time_order: bool,
    /// One-shot serializability and snapshot isolation on a history whose reads each have one
    /// write or none to have observed: resolve each read where graph building looks at it
    /// anyway, in a table of the writes with their transactions, instead of in a pass of its
    /// own that stores every read's writer ([`krait_history::resolve_deferred`]); when, says
    /// [`Defer`]. A certificate resolves them all again; the verdict is the same either way.
    pub defer_resolution: Defer,
    /// Pruning passes at most (each adds what it decided, so the next may decide more).
    pub prune_rounds: u32,
    /// Strict serializability: real-time edges, with this clock-drift allowance in nanoseconds.
    pub strict: Option<u64>,
    /// The engine for what pruning leaves.
    pub solver: SolverKind,
    /// Seed decisions' polarity from the topological order.
    pub solver_order_phase: bool,
    /// Let the acyclicity theory propagate (off: it only detects conflicts).
    pub solver_theory_propagation: bool,
    /// Leave undecided the solver variables the topological order already satisfies, and
    /// decide only those a final check finds spoilt.
    pub solver_lazy: bool,
    /// Limits on the solver (conflicts, a deadline, an interrupt flag); when one is reached
    /// the verdict is [`crate::Verdict::Unknown`].
    pub budget: Budget,
    /// Wall-clock limit on solving, counted from the start of the check; past it the verdict
    /// is [`crate::Verdict::Unknown`].
    pub timeout: Option<Duration>,
    /// Compute a serial order on ACCEPT.
    pub want_order: bool,
    /// Reachability index memory cap in bytes, above which pruning falls back to search.
    pub reach_memory_cap: usize,
    /// Each session ran its transactions one after another, so a transaction follows every
    /// committed one before it in its session (the default). Off, every transaction is taken
    /// as a session of its own: for clients whose sessions issue transactions concurrently.
    /// One-shot checks only (online rounds refuse it).
    pub session_order: bool,
    /// Certificates a REJECT found by a cycle may carry: the verdict's, then one per other
    /// anomaly class the known graph shows (1: the verdict's alone).
    pub max_anomalies: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            level: Level::Serializable,
            combine: true,
            coalesce: true,
            prune: true,
            skip_unobserved: true,
            pair_by_heads: true,
            thin_edges: true,
            count_versions: true,
            weak_ser_first: true,
            weak_prune_candidates: true,
            weak_learn: true,
            weak_encode: true,
            time_guess: true,
            prune_search_few: true,
            time_order: true,
            defer_resolution: Defer::WherePays,
            prune_rounds: 64,
            strict: None,
            solver: SolverKind::Cdcl,
            solver_order_phase: true,
            solver_theory_propagation: true,
            solver_lazy: true,
            budget: Budget::unlimited(),
            timeout: None,
            want_order: false,
            reach_memory_cap: 4 << 30,
            max_anomalies: 8,
            session_order: true,
        }
    }
}
