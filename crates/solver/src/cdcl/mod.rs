//! CDCL with the acyclicity theory in the loop: two watched literals, first-UIP learning, VSIDS,
//! phase saving seeded from the topological order, Luby restarts, learnt-clause reduction.
//! Theory lemmas (cycles) are added as clauses, so conflict analysis treats them like any other.

mod lazy;
mod propagate;
mod search;

use crate::heap::VarHeap;
use crate::theory::{Acyclic, AddResult, KNOWN};
use crate::{Budget, Engine, Lit, Node, Outcome, Problem, Stats, Var};

/// Switches of the CDCL engine; each can be turned off for ablation, the answer stays exact.
#[derive(Clone, Debug)]
pub struct CdclOptions {
    /// Choose a decision's polarity so that its edges agree with the current topological order
    /// (when one polarity does), rather than only the saved phase.
    pub order_phase: bool,
    /// Propagate literals whose edge would close a cycle with the edges present.
    pub theory_propagation: bool,
    /// Edges one theory-propagation check may scan.
    pub propagation_limit: usize,
    /// Shrink UNSAT cores by re-solving.
    pub minimize_core: bool,
    /// Before search, add ¬a ∨ ¬b for literal edges a = s→x and b = x→s' that would close a
    /// cycle with a known path s' ⇝ s (two-edge cycles through a shared node).
    pub two_cycle_clauses: bool,
    /// Leave undecided a variable one of whose options the topological order already agrees
    /// with; when nothing else is left, check that every such variable still has one (the
    /// order may have moved) and that the clauses hold with those options, deciding only the
    /// variables for which that fails. On contended histories most variables are of this kind,
    /// and without it every backjump throws away and redoes hundreds of thousands of decisions.
    pub lazy_decisions: bool,
}

impl Default for CdclOptions {
    fn default() -> Self {
        CdclOptions {
            order_phase: true,
            theory_propagation: true,
            propagation_limit: 64,
            minimize_core: true,
            two_cycle_clauses: false,
            lazy_decisions: true,
        }
    }
}

const UNDEF: i8 = 0;

/// A literal's value under an assignment of its variables (1 true, -1 false, 0 unassigned).
#[inline]
fn lit_value(assign: &[i8], l: Lit) -> i8 {
    let a = assign[l.var().0 as usize];
    if l.is_pos() {
        a
    } else {
        -a
    }
}
const NO_REASON: u32 = u32::MAX;

struct Clause {
    lits: Vec<Lit>,
    learnt: bool,
    activity: f32,
    deleted: bool,
}

/// Conflict-driven clause learning modulo acyclicity.
pub struct Cdcl {
    opts: CdclOptions,
    stats: Stats,
}

impl Cdcl {
    /// An engine with these switches.
    pub fn new(opts: CdclOptions) -> Self {
        Cdcl {
            opts,
            stats: Stats::default(),
        }
    }
}

impl Cdcl {
    /// Solves without checking or shrinking the UNSAT core.
    pub fn solve_raw(&mut self, p: &Problem, budget: &Budget) -> Outcome {
        let Some(theory) = Acyclic::new(p.num_nodes as usize, &p.known_edges) else {
            return Outcome::Unsat { core: Vec::new() };
        };
        let mut s = Search::new(p, theory, self.opts.clone());
        let out = s.run(budget);
        self.stats = s.stats.clone();
        self.stats.reorders = s.theory.reorders;
        out
    }
}

impl Default for Cdcl {
    fn default() -> Self {
        Cdcl::new(CdclOptions::default())
    }
}

impl Engine for Cdcl {
    fn name(&self) -> &'static str {
        "cdcl"
    }
    fn stats(&self) -> Stats {
        self.stats.clone()
    }
    fn solve(&mut self, p: &Problem, budget: &Budget) -> Outcome {
        match self.solve_raw(p, budget) {
            Outcome::Unsat { core } if !core.is_empty() => {
                // The level-0 conflict's variables are a candidate only: learnt clauses may have
                // resolved away others. A candidate that fails its re-solve gives way to all
                // variables.
                let all: Vec<Var> = (0..p.num_vars).map(Var).collect();
                if !self.opts.minimize_core || core.len() > 2000 {
                    return Outcome::Unsat {
                        core: crate::confirm_core(p, core).unwrap_or(all),
                    };
                }
                let tries = if core.len() > 300 { 0 } else { 200 };
                let min = crate::minimize_core(p, &core, 20_000, tries)
                    .or_else(|| {
                        if p.num_vars <= 300 {
                            crate::minimize_core(p, &all, 20_000, 200)
                        } else {
                            None
                        }
                    })
                    .unwrap_or(all);
                Outcome::Unsat { core: min }
            }
            o => o,
        }
    }
}

struct Search<'p> {
    p: &'p Problem,
    opts: CdclOptions,
    theory: Acyclic,
    nvars: usize,
    assign: Vec<i8>,
    level: Vec<u32>,
    reason: Vec<u32>,
    trail: Vec<Lit>,
    trail_lim: Vec<usize>,
    qhead: usize,
    /// Trail position up to which the theory has seen assignments.
    thead: usize,
    /// (trail position of the literal, theory edge count before its edges).
    theory_marks: Vec<(usize, usize)>,
    clauses: Vec<Clause>,
    watches: Vec<Vec<(u32, Lit)>>,
    /// Whether a literal has ever been watched: most edge literals never are, and checking a
    /// byte here saves a cache miss on the watch list for each propagation.
    watched: Vec<bool>,
    /// CSR: edges of each literal.
    edge_start: Vec<u32>,
    edges: Vec<(Node, Node)>,
    /// CSR: for each node, the literals with an edge touching it.
    node_lit_start: Vec<u32>,
    node_lits: Vec<u32>,
    activity: Vec<f64>,
    var_inc: f64,
    cla_inc: f32,
    heap: VarHeap,
    phase: Vec<bool>,
    /// Whether the search may decide each variable (see `Problem::implied_only`).
    decidable: Vec<bool>,
    seen: Vec<bool>,
    /// Variables left undecided because the order agreed with one of their options (a
    /// variable may stand here stale: `lazy` says whether it still counts).
    deferred: Vec<u32>,
    lazy: Vec<u8>,
    stats: Stats,
    num_learnts: usize,
}

impl<'p> Search<'p> {
    fn new(p: &'p Problem, theory: Acyclic, opts: CdclOptions) -> Self {
        let nvars = p.num_vars as usize;
        let nlits = 2 * nvars;
        let mut edge_start = vec![0u32; nlits + 1];
        for &(l, _, _) in &p.lit_edges {
            edge_start[l.index() + 1] += 1;
        }
        for i in 0..nlits {
            edge_start[i + 1] += edge_start[i];
        }
        let mut fill = edge_start.clone();
        let mut edges = vec![(0, 0); p.lit_edges.len()];
        for &(l, u, v) in &p.lit_edges {
            edges[fill[l.index()] as usize] = (u, v);
            fill[l.index()] += 1;
        }
        let n = p.num_nodes as usize;
        let mut node_lit_start = vec![0u32; n + 1];
        for &(_, u, v) in &p.lit_edges {
            node_lit_start[u as usize + 1] += 1;
            node_lit_start[v as usize + 1] += 1;
        }
        for i in 0..n {
            node_lit_start[i + 1] += node_lit_start[i];
        }
        let mut fill = node_lit_start.clone();
        let mut node_lits = vec![0u32; 2 * p.lit_edges.len()];
        for &(l, u, v) in &p.lit_edges {
            for x in [u, v] {
                node_lits[fill[x as usize] as usize] = l.index() as u32;
                fill[x as usize] += 1;
            }
        }
        let mut heap = VarHeap::new(nvars);
        let activity = vec![0.0; nvars];
        for v in 0..nvars {
            heap.insert(v as u32, &activity);
        }
        Search {
            p,
            opts,
            theory,
            nvars,
            assign: vec![UNDEF; nvars],
            level: vec![0; nvars],
            reason: vec![NO_REASON; nvars],
            trail: Vec::new(),
            trail_lim: Vec::new(),
            qhead: 0,
            thead: 0,
            theory_marks: Vec::new(),
            clauses: Vec::new(),
            watches: vec![Vec::new(); nlits],
            watched: vec![false; nlits],
            edge_start,
            edges,
            node_lit_start,
            node_lits,
            activity,
            var_inc: 1.0,
            cla_inc: 1.0,
            heap,
            decidable: {
                let mut d = vec![true; nvars];
                for &v in &p.implied_only {
                    d[v.0 as usize] = false;
                }
                d
            },
            phase: {
                let mut ph = vec![true; nvars];
                for &(v, b) in &p.phases {
                    ph[v.0 as usize] = b;
                }
                ph
            },
            seen: vec![false; nvars],
            deferred: Vec::new(),
            lazy: vec![lazy::ACTIVE; nvars],
            stats: Stats::default(),
            num_learnts: 0,
        }
    }

    #[inline]
    fn value(&self, l: Lit) -> i8 {
        lit_value(&self.assign, l)
    }

    fn decision_level(&self) -> u32 {
        self.trail_lim.len() as u32
    }

    fn enqueue(&mut self, l: Lit, reason: u32) {
        let v = l.var().0 as usize;
        self.assign[v] = if l.is_pos() { 1 } else { -1 };
        self.level[v] = self.decision_level();
        self.reason[v] = reason;
        self.trail.push(l);
    }

    /// Adds a clause; the first two literals are watched, so callers put the most relevant
    /// (unassigned or last-falsified) ones first.
    fn add_clause(&mut self, lits: Vec<Lit>, learnt: bool) -> u32 {
        let id = self.clauses.len() as u32;
        if lits.len() >= 2 {
            self.watches[(!lits[0]).index()].push((id, lits[1]));
            self.watches[(!lits[1]).index()].push((id, lits[0]));
            self.watched[(!lits[0]).index()] = true;
            self.watched[(!lits[1]).index()] = true;
        }
        if learnt {
            self.num_learnts += 1;
            self.stats.learnt_clauses += 1;
        }
        self.clauses.push(Clause {
            lits,
            learnt,
            activity: 0.0,
            deleted: false,
        });
        id
    }
}
