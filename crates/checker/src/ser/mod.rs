//! Serializability, the polygraph way (Cobra): read-modify-write chains and one coalesced
//! either/or constraint per pair of chains on a key (`chains`), decided by reachability where
//! the known graph already forces one side (`prune`), the rest by SAT modulo acyclicity
//! (`solve`). Strict serializability is the same decision over a graph with real-time edges.

mod chains;
#[cfg(test)]
mod chains_tests;
mod dup;
mod prune;
mod solve;

pub(crate) use dup::DupKey;
pub(crate) use solve::{serial_order, with_both_sides};

use crate::graph::{Built, Facts, Node};
use crate::stats::{CheckStats, Timings};
use crate::Options;
use std::time::Instant;

/// How the level's decision ended.
pub(crate) enum Decided {
    /// Acyclic: for each constraint still `remaining` after pruning, whether its first option
    /// was chosen; for each choice, the candidate read.
    Accept {
        remaining: Vec<u32>,
        chosen: Vec<bool>,
        picks: Vec<u32>,
    },
    /// The known graph, with what pruning deduced, has a cycle.
    Cycle,
    /// Pruning ruled out every candidate writer of this choice.
    NoWriter(u32),
    /// No choice of the `remaining` constraints (and of the `choices` listed) is acyclic;
    /// `core` (positions in `remaining`) with those choices already admits none.
    Unsat {
        remaining: Vec<u32>,
        core: Vec<u32>,
        choices: Vec<u32>,
    },
    /// The solver's budget ran out.
    Unknown(String),
}

/// Read-modify-write chains per key and the constraints between them, from what the
/// transactions stated (with `combine` off, every write is a chain of its own); a key some read
/// of which has several candidate writers gets the per-pair encoding of `dup` instead.
pub(crate) fn add_chains(b: &mut Built, mut f: Facts, opts: &Options) {
    if !opts.combine {
        f.rmws.clear();
    }
    if !f.amb.is_empty() {
        f.sort_reads();
        split_dup_keys(b, &mut f);
    }
    match f.read_blocks.take() {
        Some(layout) => chains::chains_by_block(b, layout, &f.writes, &f.rmws, opts),
        None => chains::chains_and_constraints(b, &f.reads, &f.writes, &f.rmws, opts),
    }
    b.chain_of.resize(b.num_nodes, (u32::MAX, 0));
}

/// Hands the keys with choices to `dup`, leaving the facts of the others for chains.
fn split_dup_keys(b: &mut Built, f: &mut Facts) {
    let mut amb = std::mem::take(&mut f.amb);
    amb.sort_by_key(|c| (c.key, c.reader));
    let mut keys: Vec<u32> = amb.iter().map(|c| c.key).collect();
    keys.dedup();
    let is_dup = |k: u32| keys.binary_search(&k).is_ok();
    let (dup_reads, reads): (Vec<_>, Vec<_>) = f.reads.iter().partition(|r| is_dup(r.0));
    let (dup_writes, writes): (Vec<_>, Vec<_>) = f.writes.iter().partition(|w| is_dup(w.0));
    f.reads = reads;
    f.writes = writes;
    f.rmws.retain(|r| !is_dup(r.0));
    let mut amb = amb.into_iter().peekable();
    for &k in &keys {
        let wlo = dup_writes.partition_point(|w| w.0 < k);
        let whi = dup_writes.partition_point(|w| w.0 <= k);
        let writers: Vec<Node> = dup_writes[wlo..whi].iter().map(|w| w.1).collect();
        let lo = dup_reads.partition_point(|r| r.0 < k);
        let hi = dup_reads.partition_point(|r| r.0 <= k);
        let mut choices = Vec::new();
        while let Some(c) = amb.next_if(|c| c.key == k) {
            choices.push(c);
        }
        dup::add_key(b, k, &writers, &dup_reads[lo..hi], choices);
    }
}

/// Prunes, then solves what is left; fills the stats and timings of both phases.
pub(crate) fn decide(
    b: &mut Built,
    opts: &Options,
    stats: &mut CheckStats,
    timings: &mut Timings,
) -> Decided {
    let t = Instant::now();
    let pruned = prune::prune(b, opts, stats);
    stats.nodes = b.num_nodes;
    stats.known_edges = b.edges.len();
    debug_assert_eq!(b.labels.len(), b.edges.len(), "one label an edge");
    stats.constraints_formed = b.constraints.len();
    timings.prune = t.elapsed();
    let remaining = match pruned {
        Ok(r) => r,
        Err(prune::Pruned::Cycle) => return Decided::Cycle,
        Err(prune::Pruned::NoWriter(c)) => return Decided::NoWriter(c),
        Err(prune::Pruned::TooLarge(n)) => {
            return Decided::Unknown(format!(
                "the reads of values written more than once need more than {n} conditional edges (reads × candidate writers × the key's writers), more than krait builds"
            ))
        }
    };
    stats.constraints_after_prune = remaining.len();
    let t = Instant::now();
    let solved = solve::solve(b, &remaining, opts, stats);
    timings.solve = t.elapsed();
    match solved {
        solve::Solved::Sat(chosen, picks) => Decided::Accept {
            remaining,
            chosen,
            picks,
        },
        solve::Solved::Unsat(core, choices) => Decided::Unsat {
            remaining,
            core,
            choices,
        },
        solve::Solved::Unknown(reason) => Decided::Unknown(reason),
    }
}
