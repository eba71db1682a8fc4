//! What pruning leaves goes to the SAT solver modulo acyclicity, one strongly connected component
//! at a time; on ACCEPT, a serial order from the chosen options.

use crate::graph::{self, Built, Csr, Known, Label, Node, NO_PAIR};
use crate::stats::CheckStats;
use crate::{Options, SolverKind};
use krait_history::History;
use krait_solver::{Engine, Lit, Outcome};
use rayon::prelude::*;

/// The known graph plus both options of every constraint listed and every open conditional
/// edge: a cycle any choice could close lies inside one of its strongly connected components.
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
    all.extend(b.cond.iter().map(|e| (e.u, e.v)));
    Csr::build(b.num_nodes, &all, false)
}

pub(super) enum Solved {
    /// For each remaining constraint, true if its first option was chosen; for each choice,
    /// the candidate read.
    Sat(Vec<bool>, Vec<u32>),
    /// An unsatisfiable core: remaining-constraint indices (positions in `remaining`), and
    /// choices.
    Unsat(Vec<u32>, Vec<u32>),
    Unknown(String),
}

/// What a solver variable stands for.
#[derive(Clone, Copy)]
enum VarOf {
    /// A remaining constraint (position in `remaining`).
    Constraint(u32),
    /// Choice `.0` read its candidate `.1`.
    Cand(u32, u32),
    /// Both the choice and the constraint of a conditional edge (their conjunction).
    Both(u32, u32),
}

/// One independent part of the problem: strongly connected components tied together by the
/// constraints, choices and conditional edges whose edges lie in them.
#[derive(Default)]
struct Group {
    comps: Vec<u32>,
    cons: Vec<u32>,
    choices: Vec<u32>,
    cond: Vec<u32>,
}

fn find(uf: &mut [u32], mut x: u32) -> u32 {
    while uf[x as usize] != x {
        uf[x as usize] = uf[uf[x as usize] as usize];
        x = uf[x as usize];
    }
    x
}

/// Splits the problem into independent groups (largest first, ties by component id so which
/// core a REJECT reports does not depend on hash order). Edges between components can close no
/// cycle and are left out; a choice none of whose edges lie inside a component takes its first
/// candidate (`free`).
fn groups(b: &Built, remaining: &[u32], comp: &[u32], ncomp: u32) -> (Vec<Group>, Vec<u32>) {
    let mut uf: Vec<u32> = (0..ncomp).collect();
    let inside = |u: Node, v: Node| comp[u as usize] == comp[v as usize];
    let mut cons_comp = vec![u32::MAX; b.constraints.len()];
    for &ci in remaining {
        let c = &b.constraints[ci as usize];
        let (u, _, _) = b.first_edges(c)[0];
        cons_comp[ci as usize] = comp[u as usize];
    }
    let mut choice_comp = vec![u32::MAX; b.choices.len()];
    for e in &b.cond {
        if !inside(e.u, e.v) {
            continue;
        }
        let mut c = comp[e.u as usize];
        if e.pair != NO_PAIR && cons_comp[e.pair as usize] != u32::MAX {
            let (x, y) = (find(&mut uf, c), find(&mut uf, cons_comp[e.pair as usize]));
            uf[x as usize] = y;
            c = y;
        }
        let ch = &mut choice_comp[e.choice as usize];
        if *ch == u32::MAX {
            *ch = c;
        } else {
            let (x, y) = (find(&mut uf, c), find(&mut uf, *ch));
            uf[x as usize] = y;
        }
    }
    let mut by_root: std::collections::BTreeMap<u32, Group> = Default::default();
    for &ci in remaining {
        let r = find(&mut uf, cons_comp[ci as usize]);
        by_root.entry(r).or_default().cons.push(ci);
    }
    let mut free = Vec::new();
    for (x, &c) in choice_comp.iter().enumerate() {
        if b.choices[x].num_alive() < 2 {
            continue;
        }
        if c == u32::MAX {
            free.push(x as u32);
        } else {
            let r = find(&mut uf, c);
            by_root.entry(r).or_default().choices.push(x as u32);
        }
    }
    for (i, e) in b.cond.iter().enumerate() {
        if inside(e.u, e.v) {
            let r = find(&mut uf, comp[e.u as usize]);
            by_root.entry(r).or_default().cond.push(i as u32);
        }
    }
    for x in 0..ncomp {
        let r = find(&mut uf, x);
        if let Some(g) = by_root.get_mut(&r) {
            g.comps.push(x);
        }
    }
    let mut gs: Vec<(u32, Group)> = by_root
        .into_iter()
        .filter(|(_, g)| !g.cons.is_empty() || !g.choices.is_empty())
        .collect();
    gs.sort_by_key(|(r, g)| (std::cmp::Reverse(g.cons.len() + g.choices.len()), *r));
    (gs.into_iter().map(|g| g.1).collect(), free)
}

pub(super) fn solve(
    b: &Built,
    remaining: &[u32],
    opts: &Options,
    stats: &mut CheckStats,
) -> Solved {
    let open_choices = b.choices.iter().any(|c| c.num_alive() > 1);
    let mut picks: Vec<u32> = b
        .choices
        .iter()
        .map(|c| {
            (0..c.cands.len() as u32)
                .find(|&x| c.alive[x as usize])
                .unwrap_or(0)
        })
        .collect();
    if remaining.is_empty() && !open_choices {
        return Solved::Sat(Vec::new(), picks);
    }
    // Cycles can only lie inside a strongly connected component of the graph with both sides of
    // every constraint, and each constraint's edges lie inside one component: solve each alone.
    let csr = with_both_sides(b, remaining);
    let (comp, ncomp) = graph::scc(b.num_nodes, &csr);
    let (groups, _free) = groups(b, remaining, &comp, ncomp);
    let pos_of: std::collections::HashMap<u32, u32> = remaining
        .iter()
        .enumerate()
        .map(|(i, &c)| (c, i as u32))
        .collect();
    // Positions in the known graph's topological order (acyclic once pruning is done), for
    // the solver's first guesses.
    let mut topo_pos = vec![0u32; b.num_nodes];
    if !b.choices.is_empty() {
        let known = Csr::build(b.num_nodes, &b.edges, false);
        if let Ok(order) = graph::topo_order(b.num_nodes, &known) {
            for (i, &x) in order.iter().enumerate() {
                topo_pos[x as usize] = i as u32;
            }
        }
    }
    stats.components = groups.len();
    stats.largest_component_constraints = groups.first().map(|g| g.cons.len()).unwrap_or(0);
    // Members of each component that is part of a group, for local numbering.
    let mut wanted = vec![false; ncomp as usize];
    for g in &groups {
        for &c in &g.comps {
            wanted[c as usize] = true;
        }
    }
    let mut members: Vec<Vec<Node>> = vec![Vec::new(); ncomp as usize];
    for x in 0..b.num_nodes as Node {
        let c = comp[x as usize] as usize;
        if wanted[c] {
            members[c].push(x);
        }
    }
    let results: Vec<(Outcome, krait_solver::Stats, Vec<VarOf>)> = groups
        .par_iter()
        .map(|g| {
            let (p, vars) = problem(b, g, &members, &comp, &pos_of, &csr, &topo_pos);
            let (out, st) = run_engine(&p, opts, !b.commit_time.is_empty());
            (out, st, vars)
        })
        .collect();
    let mut chosen = vec![false; remaining.len()];
    let mut unknown = None;
    for (out, st, vars) in results {
        stats.conflicts += st.conflicts;
        stats.decisions += st.decisions;
        stats.propagations += st.propagations;
        match out {
            Outcome::Sat { model, .. } => {
                for (j, v) in vars.iter().enumerate() {
                    match *v {
                        VarOf::Constraint(i) => chosen[i as usize] = model[j],
                        VarOf::Cand(ch, x) if model[j] => picks[ch as usize] = x,
                        _ => {}
                    }
                }
            }
            Outcome::Unsat { core } => {
                let (mut cons, mut chs) = (Vec::new(), Vec::new());
                for v in core {
                    match vars[v.0 as usize] {
                        VarOf::Constraint(i) => cons.push(i),
                        VarOf::Cand(ch, _) => chs.push(ch),
                        VarOf::Both(ch, c) => {
                            chs.push(ch);
                            cons.extend(pos_of.get(&c));
                        }
                    }
                }
                cons.sort_unstable();
                cons.dedup();
                chs.sort_unstable();
                chs.dedup();
                return Solved::Unsat(cons, chs);
            }
            Outcome::Unknown(r) => {
                unknown = Some(format!("solver stopped ({r:?}) before an answer"))
            }
        }
    }
    match unknown {
        Some(r) => Solved::Unknown(r),
        None => Solved::Sat(chosen, picks),
    }
}

/// One group as a solver problem over its own nodes, and what each variable stands for.
fn problem(
    b: &Built,
    g: &Group,
    members: &[Vec<Node>],
    comp: &[u32],
    pos_of: &std::collections::HashMap<u32, u32>,
    csr: &Csr,
    topo_pos: &[u32],
) -> (krait_solver::Problem, Vec<VarOf>) {
    let mut nodes: Vec<Node> = g
        .comps
        .iter()
        .flat_map(|&c| members[c as usize].iter().copied())
        .collect();
    nodes.sort_unstable();
    let local = |x: Node| nodes.binary_search(&x).unwrap() as u32;
    let inside = |u: Node, v: Node| comp[u as usize] == comp[v as usize];
    let mut p = krait_solver::Problem::new(nodes.len() as u32);
    let mut vars = Vec::new();
    let known = b.edges.len() as u32;
    for &x in &nodes {
        for &(y, e) in csr.succ(x) {
            if e < known && inside(x, y) {
                p.known_edges.push((local(x), local(y)));
            }
        }
    }
    // Constraint variables first, in the order of `g.cons`.
    let mut cons_var = std::collections::HashMap::new();
    for &ci in &g.cons {
        let c = &b.constraints[ci as usize];
        let map = |es: &[(Node, Node, Label)]| -> Vec<(u32, u32)> {
            es.iter()
                .filter(|&&(u, v, _)| inside(u, v))
                .map(|&(u, v, _)| (local(u), local(v)))
                .collect()
        };
        let v = p.add_choice(&map(b.first_edges(c)), &map(b.second_edges(c)));
        // With timestamps, the chain that committed first likely comes first.
        if let (Some(&ta), Some(&tb)) = (
            b.commit_time.get(c.a.0 as usize),
            b.commit_time.get(c.b.0 as usize),
        ) {
            if ta != krait_history::NO_TIME && tb != krait_history::NO_TIME {
                p.phases.push((v, ta <= tb));
            }
        }
        cons_var.insert(ci, v);
        vars.push(VarOf::Constraint(pos_of[&ci]));
    }
    // One variable per open candidate, at least one of each choice's read. The solver first
    // tries the candidate the timestamps suggest, else the one latest before the reader in
    // the known graph's order, the others not.
    let mut cand_var = std::collections::HashMap::new();
    for &ch in &g.choices {
        let c = &b.choices[ch as usize];
        let open: Vec<u32> = (0..c.cands.len() as u32)
            .filter(|&x| c.alive[x as usize])
            .collect();
        let rpos = topo_pos[c.reader as usize];
        let best = if open.contains(&c.guess) {
            c.guess
        } else {
            open.iter()
                .copied()
                .filter(|&x| topo_pos[c.cands[x as usize] as usize] < rpos)
                .max_by_key(|&x| topo_pos[c.cands[x as usize] as usize])
                .unwrap_or(open[0])
        };
        let mut clause = Vec::new();
        for x in open {
            let v = p.new_var();
            vars.push(VarOf::Cand(ch, x));
            cand_var.insert((ch, x), v);
            clause.push(Lit::pos(v));
            p.phases.push((v, x == best));
        }
        p.clauses.push(clause);
    }
    for &i in &g.cond {
        let e = &b.cond[i as usize];
        let (u, v) = (local(e.u), local(e.v));
        let cl = cand_var.get(&(e.choice, e.cand)).map(|&v| Lit::pos(v));
        let pl = (e.pair != NO_PAIR)
            .then(|| cons_var.get(&e.pair))
            .flatten()
            .map(|&v| Lit::new(v, e.first));
        if e.cyclic {
            // The edge would close a cycle: its conditions never hold together.
            match (cl, pl) {
                (Some(a), Some(c)) => p.clauses.push(vec![!a, !c]),
                (Some(l), None) | (None, Some(l)) => p.clauses.push(vec![!l]),
                (None, None) => p.known_edges.push((u, v)),
            }
            continue;
        }
        match (cl, pl) {
            (None, None) => p.known_edges.push((u, v)),
            (Some(l), None) | (None, Some(l)) => p.lit_edges.push((l, u, v)),
            (Some(a), Some(c)) => {
                // The edge holds when both do: a variable implied by their conjunction.
                let both = p.new_var();
                vars.push(VarOf::Both(e.choice, e.pair));
                p.implied_only.push(both);
                p.clauses.push(vec![!a, !c, Lit::pos(both)]);
                p.lit_edges.push((Lit::pos(both), u, v));
            }
        }
    }
    (p, vars)
}

/// `timed`: the phases come from the clients' timestamps, which know the database's order
/// better than the known graph's topological order does, so that order does not override them.
fn run_engine(
    p: &krait_solver::Problem,
    opts: &Options,
    timed: bool,
) -> (Outcome, krait_solver::Stats) {
    match opts.solver {
        SolverKind::Cdcl => {
            let mut s = krait_solver::Cdcl::new(krait_solver::CdclOptions {
                order_phase: opts.solver_order_phase && !timed,
                theory_propagation: opts.solver_theory_propagation,
                lazy_decisions: opts.solver_lazy,
                ..Default::default()
            });
            let o = s.solve(p, &opts.budget);
            (o, s.stats())
        }
        SolverKind::BruteForce => {
            let mut s = krait_solver::BruteForce::default();
            (s.solve(p, &opts.budget), Default::default())
        }
    }
}

/// The edges of the graph a satisfying choice selects: known ones, each remaining constraint's
/// chosen option, and the conditional edges the chosen candidates and options make hold.
fn chosen_edges(b: &Built, remaining: &[u32], chosen: &[bool], picks: &[u32]) -> Vec<(Node, Node)> {
    let mut edges = b.edges.clone();
    let mut side = vec![Known::Open; b.constraints.len()];
    for (i, &ci) in remaining.iter().enumerate() {
        let c = &b.constraints[ci as usize];
        side[ci as usize] = if chosen[i] { Known::True } else { Known::False };
        let es = if chosen[i] {
            b.first_edges(c)
        } else {
            b.second_edges(c)
        };
        edges.extend(es.iter().map(|&(u, v, _)| (u, v)));
    }
    for e in &b.cond {
        let pair_holds = e.pair == NO_PAIR || {
            let s = match side[e.pair as usize] {
                Known::Open => b
                    .decided
                    .get(e.pair as usize)
                    .copied()
                    .unwrap_or(Known::Open),
                s => s,
            };
            (s == Known::True) == e.first
        };
        if picks[e.choice as usize] == e.cand && pair_holds {
            edges.push((e.u, e.v));
        }
    }
    edges
}

/// A serial order of the transactions (external ids) from a satisfying choice; under snapshot
/// isolation their commit order, with, per transaction, how many before it its snapshot holds.
pub(crate) fn serial_order(
    h: &History,
    b: &Built,
    remaining: &[u32],
    chosen: &[bool],
    picks: &[u32],
) -> (Vec<u64>, Vec<u32>) {
    let edges = chosen_edges(b, remaining, chosen, picks);
    let csr = Csr::build(b.num_nodes, &edges, false);
    let order = graph::topo_order(b.num_nodes, &csr).expect("a satisfying choice is acyclic");
    let mut out = Vec::with_capacity(b.node_txn.len());
    let mut snaps = Vec::new();
    let mut seen_at = vec![0u32; if b.split { b.node_txn.len() } else { 0 }];
    for n in order {
        let Some(t) = b.txn_of(n) else { continue };
        if b.is_start(n) {
            seen_at[(n - b.first_start) as usize] = out.len() as u32;
            continue;
        }
        if b.split {
            snaps.push(seen_at[n as usize - 1]);
        }
        out.push(h.txn_ext[t as usize]);
    }
    (out, snaps)
}
