//! What a check answers: the verdict (with its certificate), statistics, per-phase timings and,
//! on ACCEPT when asked, a serial order; and the errors that are about the input, not the verdict.

use crate::Certificate;
use serde::Serialize;
use std::time::Duration;

/// The answer about one history.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "verdict", rename_all = "UPPERCASE")]
pub enum Verdict {
    /// Some serial order explains every read.
    Accept,
    /// No serial order does; the certificate says why.
    Reject(Box<Certificate>),
    /// The solver's budget ran out before an answer.
    Unknown {
        /// Which limit stopped it.
        reason: String,
    },
}

impl Verdict {
    /// Whether the verdict is ACCEPT.
    pub fn is_accept(&self) -> bool {
        matches!(self, Verdict::Accept)
    }
    /// Whether the verdict is REJECT.
    pub fn is_reject(&self) -> bool {
        matches!(self, Verdict::Reject(_))
    }
    /// The certificate of a REJECT.
    pub fn certificate(&self) -> Option<&Certificate> {
        match self {
            Verdict::Reject(c) => Some(c),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
/// Wall-clock time per phase of one check.
pub struct Timings {
    /// Naming each read's writer.
    pub resolve: Duration,
    /// Building the known graph, chains and constraints.
    pub graph: Duration,
    /// Pruning by reachability.
    pub prune: Duration,
    /// The solver, on what pruning left.
    pub solve: Duration,
    /// Building the certificate of a REJECT.
    pub certificate: Duration,
}

#[derive(Clone, Debug, Default, Serialize)]
/// Sizes of what one check built and decided.
pub struct CheckStats {
    /// Transactions in the graph: committed ones, and unknown outcomes someone read from.
    pub txns_checked: usize,
    /// Unknown outcomes nobody read from, left out (they may never have committed).
    pub unknown_outcome_excluded: usize,
    /// Graph nodes: transactions, the initial state, gates, real-time points, hubs.
    pub nodes: usize,
    /// Known edges after pruning (facts and what pruning decided).
    pub known_edges: usize,
    /// Real-time edges (strict serializability).
    pub realtime_edges: usize,
    /// Either/or constraints before pruning.
    pub constraints: usize,
    /// Constraints left to the solver.
    pub constraints_after_prune: usize,
    /// Pruning passes run.
    pub prune_rounds: u32,
    /// Strongly connected components solved apart.
    pub components: usize,
    /// Constraints in the largest of them.
    pub largest_component_constraints: usize,
    /// Solver conflicts, decisions and propagations, summed over components.
    pub conflicts: u64,
    /// See `conflicts`.
    pub decisions: u64,
    /// See `conflicts`.
    pub propagations: u64,
}

/// Everything one check says.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// ACCEPT, REJECT with a certificate, or UNKNOWN.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// What was built and decided.
    pub stats: CheckStats,
    /// Time per phase.
    pub timings: Timings,
    /// A serial order of the transactions (external ids), on ACCEPT when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<u64>>,
}

/// Errors that are about the input or the options, not the verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Strict serializability needs every transaction's start and commit time.
    #[error("transaction {txn} has no start/commit timestamp, which --strict needs (record timestamps, or check without --strict)")]
    MissingTimestamp {
        /// The transaction, as the history names it.
        txn: String,
    },
}
