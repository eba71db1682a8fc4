//! What pruning leaves goes to the SAT solver modulo acyclicity, one strongly connected component
//! at a time; on ACCEPT, a serial order from the chosen options.

use crate::graph::{self, Built, Csr, Label, Node};
use crate::stats::CheckStats;
use crate::{Options, SolverKind};
use krait_history::History;
use krait_solver::{Engine, Outcome};
use rayon::prelude::*;

/// The known graph plus both options of every constraint listed: a cycle any choice could close
/// lies inside one of its strongly connected components.
pub(crate) fn with_both_sides(b: &Built, constraints: &[u32]) -> Csr {
    let mut all = b.edges.clone();
    for &ci in constraints {
        let c = &b.constraints[ci as usize];
        all.extend(
            b.first_edges(c)
                .iter()
                .chain(b.second_edges(c))
                .map(|&(u, v, _)| (u, v)),
        );
    }
    Csr::build(b.num_nodes, &all, false)
}

pub(super) enum Solved {
    /// For each remaining constraint, true if its first option was chosen.
    Sat(Vec<bool>),
    /// Remaining-constraint indices (positions in `remaining`) of an unsatisfiable core.
    Unsat(Vec<u32>),
    Unknown(String),
}

pub(super) fn solve(
    b: &Built,
    remaining: &[u32],
    opts: &Options,
    stats: &mut CheckStats,
) -> Solved {
    if remaining.is_empty() {
        return Solved::Sat(Vec::new());
    }
    // Cycles can only lie inside a strongly connected component of the graph with both sides of
    // every constraint, and each constraint's edges lie inside one component: solve each alone.
    let csr = with_both_sides(b, remaining);
    let (comp, _) = graph::scc(b.num_nodes, &csr);
    let mut by_comp: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
    for (i, &ci) in remaining.iter().enumerate() {
        let c = &b.constraints[ci as usize];
        let (u, _, _) = b.first_edges(c)[0];
        by_comp.entry(comp[u as usize]).or_default().push(i as u32);
    }
    let mut groups: Vec<(u32, Vec<u32>)> = by_comp.into_iter().collect();
    // Largest first (they take longest); the component id breaks ties, so which core a REJECT
    // reports does not depend on hash order.
    groups.sort_by_key(|g| (std::cmp::Reverse(g.1.len()), g.0));
    stats.components = groups.len();
    stats.largest_component_constraints = groups.first().map(|g| g.1.len()).unwrap_or(0);
    // Members of each component, for local numbering.
    let mut members: std::collections::HashMap<u32, Vec<Node>> =
        groups.iter().map(|g| (g.0, Vec::new())).collect();
    for x in 0..b.num_nodes as Node {
        if let Some(m) = members.get_mut(&comp[x as usize]) {
            m.push(x);
        }
    }
    let results: Vec<(Outcome, krait_solver::Stats, Vec<u32>)> = groups
        .par_iter()
        .map(|(cid, cons)| {
            let nodes = &members[cid];
            let local = |x: Node| nodes.binary_search(&x).ok().map(|i| i as u32);
            let mut p = krait_solver::Problem::new(nodes.len() as u32);
            let known = b.edges.len() as u32;
            for &x in nodes {
                for &(y, e) in csr.succ(x) {
                    if e < known && comp[y as usize] == *cid {
                        p.known_edges.push((local(x).unwrap(), local(y).unwrap()));
                    }
                }
            }
            for &i in cons {
                let c = &b.constraints[remaining[i as usize] as usize];
                let map = |es: &[(Node, Node, Label)]| -> Vec<(u32, u32)> {
                    es.iter()
                        .filter(|&&(u, v, _)| comp[u as usize] == *cid && comp[v as usize] == *cid)
                        .map(|&(u, v, _)| (local(u).unwrap(), local(v).unwrap()))
                        .collect()
                };
                p.add_choice(&map(b.first_edges(c)), &map(b.second_edges(c)));
            }
            let (out, st) = match opts.solver {
                SolverKind::Cdcl => {
                    let mut s = krait_solver::Cdcl::new(krait_solver::CdclOptions {
                        order_phase: opts.solver_order_phase,
                        theory_propagation: opts.solver_theory_propagation,
                        ..Default::default()
                    });
                    let o = s.solve(&p, &opts.budget);
                    (o, s.stats())
                }
                SolverKind::BruteForce => {
                    let mut s = krait_solver::BruteForce::default();
                    (s.solve(&p, &opts.budget), Default::default())
                }
            };
            (out, st, cons.clone())
        })
        .collect();
    let mut chosen = vec![false; remaining.len()];
    let mut unknown = None;
    for (out, st, cons) in results {
        stats.conflicts += st.conflicts;
        stats.decisions += st.decisions;
        stats.propagations += st.propagations;
        match out {
            Outcome::Sat { model, .. } => {
                for (j, &i) in cons.iter().enumerate() {
                    chosen[i as usize] = model[j];
                }
            }
            Outcome::Unsat { core } => {
                return Solved::Unsat(core.iter().map(|v| cons[v.0 as usize]).collect());
            }
            Outcome::Unknown(r) => {
                unknown = Some(format!("solver stopped ({r:?}) before an answer"))
            }
        }
    }
    match unknown {
        Some(r) => Solved::Unknown(r),
        None => Solved::Sat(chosen),
    }
}

pub(crate) fn serial_order(h: &History, b: &Built, remaining: &[u32], chosen: &[bool]) -> Vec<u64> {
    let mut edges = b.edges.clone();
    for (i, &ci) in remaining.iter().enumerate() {
        let c = &b.constraints[ci as usize];
        let es = if chosen[i] {
            b.first_edges(c)
        } else {
            b.second_edges(c)
        };
        edges.extend(es.iter().map(|&(u, v, _)| (u, v)));
    }
    let csr = Csr::build(b.num_nodes, &edges, false);
    let order = graph::topo_order(b.num_nodes, &csr).expect("a satisfying choice is acyclic");
    order
        .into_iter()
        .filter_map(|n| b.txn_of(n))
        .map(|t| h.txn_ext[t as usize])
        .collect()
}
