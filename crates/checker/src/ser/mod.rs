//! Serializability, the polygraph way (Cobra): read-modify-write chains and one coalesced
//! either/or constraint per pair of chains on a key (`chains`), decided by reachability where
//! the known graph already forces one side (`prune`), the rest by SAT modulo acyclicity
//! (`solve`). Strict serializability is the same decision over a graph with real-time edges.

mod chains;
mod prune;
mod solve;

pub(crate) use solve::{serial_order, with_both_sides};

use crate::graph::{Built, Facts};
use crate::stats::{CheckStats, Timings};
use crate::Options;
use std::time::Instant;

/// How the level's decision ended.
pub(crate) enum Decided {
    /// Acyclic: for each constraint still `remaining` after pruning, whether its first option
    /// was chosen.
    Accept {
        remaining: Vec<u32>,
        chosen: Vec<bool>,
    },
    /// The known graph, with what pruning deduced, has a cycle.
    Cycle,
    /// No choice of the `remaining` constraints is acyclic; `core` (positions in `remaining`)
    /// already admits none.
    Unsat { remaining: Vec<u32>, core: Vec<u32> },
    /// The solver's budget ran out.
    Unknown(String),
}

/// Read-modify-write chains per key and the constraints between them, from what the
/// transactions stated (with `combine` off, every write is a chain of its own).
pub(crate) fn add_chains(b: &mut Built, mut f: Facts, opts: &Options) {
    if !opts.combine {
        f.rmws.clear();
    }
    chains::chains_and_constraints(b, &f.reads, &f.writes, &f.rmws, opts);
    b.chain_of.resize(b.num_nodes, (u32::MAX, 0));
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
    timings.prune = t.elapsed();
    let Ok(remaining) = pruned else {
        return Decided::Cycle;
    };
    stats.constraints_after_prune = remaining.len();
    let t = Instant::now();
    let solved = solve::solve(b, &remaining, opts, stats);
    timings.solve = t.elapsed();
    match solved {
        solve::Solved::Sat(chosen) => Decided::Accept { remaining, chosen },
        solve::Solved::Unsat(core) => Decided::Unsat { remaining, core },
        solve::Solved::Unknown(reason) => Decided::Unknown(reason),
    }
}
