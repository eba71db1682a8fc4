//! What one check measured: sizes of what it built and decided, and time per phase.

use serde::Serialize;
use std::time::Duration;

#[derive(Clone, Debug, Default, Serialize)]
/// Wall-clock time per phase of one check (in JSON: milliseconds, as every time krait writes).
pub struct Timings {
    /// Naming each read's writer.
    #[serde(serialize_with = "ms")]
    pub resolve: Duration,
    /// Building the known graph, chains and constraints.
    #[serde(serialize_with = "ms")]
    pub graph: Duration,
    /// Pruning by reachability.
    #[serde(serialize_with = "ms")]
    pub prune: Duration,
    /// The solver, on what pruning left.
    #[serde(serialize_with = "ms")]
    pub solve: Duration,
    /// Building the certificate of a REJECT.
    #[serde(serialize_with = "ms")]
    pub certificate: Duration,
}

/// A duration as fractional milliseconds: one unit for every time in krait's JSON.
pub fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
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
    /// Of `constraints`, those formed and tested: the rest are pairs the known graph already
    /// orders, or whose order the pairs formed imply (`Built::pair_chains`).
    pub constraints_formed: usize,
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
    /// Reads with several candidate writers (a value written more than once), one per reading
    /// transaction and key.
    pub ambiguous_reads: usize,
    /// Of those, how many pruning left with more than one candidate.
    pub ambiguous_after_prune: usize,
    /// Edges left to the solver that hold only for some candidate writers.
    pub conditional_edges: usize,
}
