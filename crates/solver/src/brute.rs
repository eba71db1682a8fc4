//! The oracle: tries every assignment. Only for small problems (tests).

use crate::{topo_order, Engine, Lit, Outcome, Problem, StopReason, Var};

/// Every assignment in turn, checking acyclicity of each: exponential, the oracle for tests.
pub struct BruteForce {
    /// Refuse (answer Unknown) above this many variables.
    pub max_vars: u32,
}

impl Default for BruteForce {
    fn default() -> Self {
        BruteForce { max_vars: 14 }
    }
}

impl Engine for BruteForce {
    fn name(&self) -> &'static str {
        "brute-force"
    }
    fn solve(&mut self, p: &Problem, _budget: &crate::Budget) -> Outcome {
        if p.num_vars > self.max_vars {
            return Outcome::Unknown(StopReason::Conflicts);
        }
        for bits in 0u64..(1u64 << p.num_vars) {
            let model: Vec<bool> = (0..p.num_vars).map(|i| bits >> i & 1 == 1).collect();
            let val = |l: Lit| model[l.var().0 as usize] == l.is_pos();
            if !p.clauses.iter().all(|c| c.iter().any(|&l| val(l))) {
                continue;
            }
            let edges = p.known_edges.iter().copied().chain(
                p.lit_edges
                    .iter()
                    .filter(|(l, _, _)| val(*l))
                    .map(|&(_, u, v)| (u, v)),
            );
            if let Some(order) = topo_order(p.num_nodes, edges) {
                return Outcome::Sat { model, order };
            }
        }
        Outcome::Unsat {
            core: (0..p.num_vars).map(Var).collect(),
        }
    }
}
