//! krait-solver: SAT modulo graph acyclicity.
//!
//! Input: a [`Problem`] — graph nodes, edges that are always present, Boolean variables, edges
//! that are present exactly when a literal is true, and clauses. Output: an [`Outcome`] — SAT with
//! a model and a topological order of the resulting graph (a serial order), UNSAT with a core
//! (a set of variables whose edges alone, with the known edges, already admit no acyclic choice),
//! or Unknown when the budget ran out.
//!
//! Two engines implement [`Engine`]: [`Cdcl`], a conflict-driven clause-learning solver whose
//! acyclicity theory keeps an incremental topological order (Pearce–Kelly), and [`BruteForce`],
//! which enumerates assignments and serves as the oracle in tests. Nothing here knows about
//! histories.

#![warn(missing_docs)]

mod brute;
mod cdcl;
mod heap;
mod theory;

pub use brute::BruteForce;
pub use cdcl::{Cdcl, CdclOptions};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A graph node, numbered from 0.
pub type Node = u32;

/// A variable, numbered from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub u32);

/// A literal: a variable or its negation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lit(u32);

impl Lit {
    /// The literal that is true when `v` is.
    pub fn pos(v: Var) -> Lit {
        Lit(v.0 << 1)
    }
    /// The literal that is true when `v` is false.
    pub fn neg(v: Var) -> Lit {
        Lit((v.0 << 1) | 1)
    }
    /// `v` or its negation.
    pub fn new(v: Var, positive: bool) -> Lit {
        if positive {
            Lit::pos(v)
        } else {
            Lit::neg(v)
        }
    }
    /// Its variable.
    pub fn var(self) -> Var {
        Var(self.0 >> 1)
    }
    /// Whether it is the variable itself (not its negation).
    pub fn is_pos(self) -> bool {
        self.0 & 1 == 0
    }
    /// A dense index: 2·var + (negated).
    pub fn index(self) -> usize {
        self.0 as usize
    }
    /// The literal with this dense index.
    pub fn from_index(i: usize) -> Lit {
        Lit(i as u32)
    }
}

impl std::ops::Not for Lit {
    type Output = Lit;
    fn not(self) -> Lit {
        Lit(self.0 ^ 1)
    }
}

/// An instance. Nodes are `0..num_nodes`.
#[derive(Clone, Debug, Default)]
pub struct Problem {
    /// Graph nodes, numbered from 0.
    pub num_nodes: u32,
    /// Boolean variables, numbered from 0.
    pub num_vars: u32,
    /// Edges present in every solution.
    pub known_edges: Vec<(Node, Node)>,
    /// `(l, u, v)`: the edge u→v is present when `l` is true.
    pub lit_edges: Vec<(Lit, Node, Node)>,
    /// Clauses over the variables, each a disjunction of literals.
    pub clauses: Vec<Vec<Lit>>,
    /// The polarity to try first for some variables (a hint: it changes how fast, never what,
    /// the answer is); the others start true.
    pub phases: Vec<(Var, bool)>,
    /// Variables the search never decides: each is set only where the clauses imply it, and
    /// false where nothing does. Only for a variable that occurs in the clauses only as a
    /// positive literal (as one standing for a conjunction, `¬a ∨ ¬b ∨ v`): false then breaks
    /// no clause and adds no edge, so deciding it could only add conflicts.
    pub implied_only: Vec<Var>,
}

impl Problem {
    /// A problem over `num_nodes` nodes with no variables yet.
    pub fn new(num_nodes: u32) -> Self {
        Problem {
            num_nodes,
            ..Default::default()
        }
    }
    /// A fresh variable.
    pub fn new_var(&mut self) -> Var {
        self.num_vars += 1;
        Var(self.num_vars - 1)
    }
    /// An either/or constraint: exactly one of the two edge sets is present.
    pub fn add_choice(&mut self, first: &[(Node, Node)], second: &[(Node, Node)]) -> Var {
        let v = self.new_var();
        for &(a, b) in first {
            self.lit_edges.push((Lit::pos(v), a, b));
        }
        for &(a, b) in second {
            self.lit_edges.push((Lit::neg(v), a, b));
        }
        v
    }

    /// The same problem restricted to `vars`: other variables lose their edges and the clauses
    /// that mention them. UNSAT of the restriction implies UNSAT of the whole.
    pub fn restrict(&self, vars: &[Var]) -> Problem {
        let mut keep = vec![false; self.num_vars as usize];
        for v in vars {
            keep[v.0 as usize] = true;
        }
        Problem {
            num_nodes: self.num_nodes,
            num_vars: self.num_vars,
            known_edges: self.known_edges.clone(),
            lit_edges: self
                .lit_edges
                .iter()
                .copied()
                .filter(|(l, _, _)| keep[l.var().0 as usize])
                .collect(),
            clauses: self
                .clauses
                .iter()
                .filter(|c| c.iter().all(|l| keep[l.var().0 as usize]))
                .cloned()
                .collect(),
            phases: self.phases.clone(),
            implied_only: self.implied_only.clone(),
        }
    }

    /// Whether `model` satisfies every clause and leaves the graph acyclic (for checking answers).
    pub fn check_model(&self, model: &[bool]) -> bool {
        let val = |l: Lit| model[l.var().0 as usize] == l.is_pos();
        if !self.clauses.iter().all(|c| c.iter().any(|&l| val(l))) {
            return false;
        }
        let edges = self.known_edges.iter().copied().chain(
            self.lit_edges
                .iter()
                .filter(|(l, _, _)| val(*l))
                .map(|&(_, u, v)| (u, v)),
        );
        topo_order(self.num_nodes, edges).is_some()
    }
}

/// Kahn's algorithm; None if the graph has a cycle.
pub fn topo_order(n: u32, edges: impl Iterator<Item = (Node, Node)>) -> Option<Vec<Node>> {
    let n = n as usize;
    let mut adj: Vec<Vec<Node>> = vec![Vec::new(); n];
    let mut indeg = vec![0u32; n];
    for (u, v) in edges {
        adj[u as usize].push(v);
        indeg[v as usize] += 1;
    }
    let mut stack: Vec<Node> = (0..n as Node).filter(|&x| indeg[x as usize] == 0).collect();
    stack.reverse();
    let mut order = Vec::with_capacity(n);
    while let Some(x) = stack.pop() {
        order.push(x);
        for &y in &adj[x as usize] {
            indeg[y as usize] -= 1;
            if indeg[y as usize] == 0 {
                stack.push(y);
            }
        }
    }
    (order.len() == n).then_some(order)
}

/// What an engine answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Satisfiable: a model, and the graph it selects is acyclic.
    Sat {
        /// The value of each variable.
        model: Vec<bool>,
        /// Every node, in an order consistent with all present edges.
        order: Vec<Node>,
    },
    /// Unsatisfiable.
    Unsat {
        /// Variables whose edges (with the known edges) already make the problem UNSAT. Empty
        /// when the known edges alone have a cycle.
        core: Vec<Var>,
    },
    /// The budget ran out.
    Unknown(StopReason),
}

/// Which limit stopped a solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Too many conflicts.
    Conflicts,
    /// Past the deadline.
    Time,
    /// Another thread raised the interrupt flag.
    Interrupted,
}

/// Limits on one solve. Cloning shares the interrupt flag.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    /// Stop after this many conflicts.
    pub max_conflicts: Option<u64>,
    /// Stop at this instant.
    pub deadline: Option<Instant>,
    /// Stop when another thread sets this flag.
    pub interrupt: Option<Arc<AtomicBool>>,
}

impl Budget {
    /// No limit.
    pub fn unlimited() -> Self {
        Budget::default()
    }
    /// Stop `d` from now.
    pub fn with_timeout(mut self, d: Duration) -> Self {
        self.deadline = Some(Instant::now() + d);
        self
    }
    /// Stop after `n` conflicts.
    pub fn with_conflicts(mut self, n: u64) -> Self {
        self.max_conflicts = Some(n);
        self
    }
    /// A flag another thread may set to stop the solve.
    pub fn interrupt_flag(&mut self) -> Arc<AtomicBool> {
        self.interrupt
            .get_or_insert_with(|| Arc::new(AtomicBool::new(false)))
            .clone()
    }
    pub(crate) fn exceeded(&self, conflicts: u64) -> Option<StopReason> {
        if self.max_conflicts.is_some_and(|m| conflicts >= m) {
            return Some(StopReason::Conflicts);
        }
        if self
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
        {
            return Some(StopReason::Interrupted);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(StopReason::Time);
        }
        None
    }
}

/// What an engine did, for tuning and reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Branching decisions.
    pub decisions: u64,
    /// Conflicts (each learns a clause).
    pub conflicts: u64,
    /// Literals propagated by clauses.
    pub propagations: u64,
    /// Literals propagated by the acyclicity theory.
    pub theory_propagations: u64,
    /// Conflicts the acyclicity theory found (cycles).
    pub theory_conflicts: u64,
    /// Topological-order repairs.
    pub reorders: u64,
    /// Restarts.
    pub restarts: u64,
    /// Clauses learnt.
    pub learnt_clauses: u64,
    /// Variables left undecided because the order already agreed with an option (counted
    /// each time one is set aside).
    pub deferrals: u64,
    /// Times the set-aside variables were checked against the order and the clauses.
    pub final_checks: u64,
}

/// A decision procedure for [`Problem`]s.
pub trait Engine {
    /// Its name, for tables.
    fn name(&self) -> &'static str;
    /// Decides `p` within `budget`.
    fn solve(&mut self, p: &Problem, budget: &Budget) -> Outcome;
    /// What the last solve did.
    fn stats(&self) -> Stats {
        Stats::default()
    }
}

/// Re-solves `candidate` alone; Some(candidate) if that is UNSAT.
pub fn confirm_core(p: &Problem, candidate: Vec<Var>) -> Option<Vec<Var>> {
    let sub = p.restrict(&candidate);
    let mut s = Cdcl::new(CdclOptions {
        minimize_core: false,
        ..Default::default()
    });
    matches!(
        s.solve_raw(&sub, &Budget::unlimited().with_conflicts(200_000)),
        Outcome::Unsat { .. }
    )
    .then_some(candidate)
}

/// Shrinks an UNSAT core candidate: first checks the candidate really is UNSAT on its own, then
/// drops variables one at a time while it stays UNSAT, within a conflict budget per attempt.
pub fn minimize_core(
    p: &Problem,
    candidate: &[Var],
    budget_per_try: u64,
    max_tries: usize,
) -> Option<Vec<Var>> {
    let unsat = |vars: &[Var]| -> bool {
        let sub = p.restrict(vars);
        let mut s = Cdcl::new(CdclOptions {
            minimize_core: false,
            ..Default::default()
        });
        matches!(
            s.solve_raw(&sub, &Budget::unlimited().with_conflicts(budget_per_try)),
            Outcome::Unsat { .. }
        )
    };
    if !unsat(candidate) {
        return None;
    }
    let mut core: Vec<Var> = candidate.to_vec();
    let mut i = 0;
    let mut tries = 0;
    while i < core.len() && tries < max_tries {
        let mut trial = core.clone();
        trial.remove(i);
        tries += 1;
        if unsat(&trial) {
            core = trial;
        } else {
            i += 1;
        }
    }
    Some(core)
}

/// Cobra-shaped instances for benchmarks and tests: `n` transactions in `sessions` sessions
/// (session chains), read edges from recent transactions, and `k` either/or constraints between
/// transactions close in a hidden serial order, one option agreeing with it. Always SAT unless
/// `violations` constraints are made to contradict the known graph.
pub fn cobra_shaped(n: u32, k: u32, sessions: u32, window: u32, seed: u64) -> Problem {
    let mut s = seed | 1;
    let mut rnd = move |m: u32| -> u32 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 32) % m as u64) as u32
    };
    let mut p = Problem::new(n);
    // Node i is the i-th transaction of the hidden serial order.
    let mut last: Vec<Option<u32>> = vec![None; sessions as usize];
    for i in 0..n {
        let sid = rnd(sessions) as usize;
        if let Some(prev) = last[sid] {
            p.known_edges.push((prev, i));
        }
        last[sid] = Some(i);
        for _ in 0..2 {
            if i > 0 {
                let back = 1 + rnd(window.min(i));
                p.known_edges.push((i - back, i));
            }
        }
    }
    for _ in 0..k {
        let a = rnd(n.saturating_sub(window).max(1));
        let b = a + 1 + rnd(window - 1);
        let c = a + rnd(b - a);
        let d = b.min(n - 1);
        // One option agrees with the hidden order (a before b), the other (d before c) does
        // not; which polarity is which is random, so a fixed default phase has no advantage.
        let v = p.new_var();
        let agree = rnd(2) == 0;
        p.lit_edges.push((Lit::new(v, agree), a, b.min(n - 1)));
        if c != d {
            p.lit_edges.push((Lit::new(v, !agree), d, c));
        }
    }
    p
}
