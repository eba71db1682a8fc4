//! Lazy decisions: a variable one of whose options the current topological order already
//! agrees with needs no decision. Adding that option's edges would not move the order, so any
//! set of such options keeps the graph acyclic; the only things that can spoil them are a later
//! reorder (the order moves under them) and the problem's own clauses. Both are checked when
//! nothing else is left to decide (`final_check`), and only the variables that fail are decided.
//!
//! Learnt clauses need no check: each follows from the problem's clauses and acyclicity, which
//! a completion passing the check satisfies.

use super::*;

/// A variable's lazy state: decided as usual, set aside, or to be decided because a final
/// check found that its set-aside option fails.
pub(super) const ACTIVE: u8 = 0;
pub(super) const DEFERRED: u8 = 1;
pub(super) const DECIDE: u8 = 2;

impl Search<'_> {
    /// Whether every edge of `l` goes forward in the current order.
    pub(super) fn agrees(&self, l: Lit) -> bool {
        self.lit_edges(l).all(|e| {
            let (a, b) = self.edges[e];
            self.theory.ord[a as usize] < self.theory.ord[b as usize]
        })
    }

    /// The option of `v` the order agrees with, if any. When both do, the one with edges (a
    /// variable that only switches an edge on is implied by clauses that want the edge, never
    /// against it), else the saved phase. A variable with no edges at all is a plain Boolean:
    /// the order says nothing about it, and it is decided as usual (None).
    pub(super) fn agreeing_option(&self, v: u32) -> Option<bool> {
        let pos = Lit::pos(Var(v));
        let (ep, en) = (
            self.lit_edges(pos).is_empty(),
            self.lit_edges(!pos).is_empty(),
        );
        if ep && en {
            return None;
        }
        match (self.agrees(pos), self.agrees(!pos)) {
            (true, true) if ep != en => Some(en),
            (true, true) => Some(self.phase[v as usize]),
            (true, false) => Some(true),
            (false, true) => Some(false),
            (false, false) => None,
        }
    }

    /// Sets `v` aside if the order agrees with one of its options and no final check asked
    /// for it to be decided; returns whether it did.
    pub(super) fn defer(&mut self, v: u32) -> bool {
        let i = v as usize;
        if self.lazy[i] == DECIDE || self.agreeing_option(v).is_none() {
            self.lazy[i] = ACTIVE;
            return false;
        }
        if self.lazy[i] != DEFERRED {
            self.lazy[i] = DEFERRED;
            self.deferred.push(v);
        }
        self.stats.deferrals += 1;
        true
    }

    fn decide_later(&mut self, v: u32, back: &mut Vec<u32>) {
        self.lazy[v as usize] = DECIDE;
        back.push(v);
    }

    /// Called when every variable is assigned or set aside. Returns the model if the set-aside
    /// variables, each taking the option the order agrees with, complete the assignment into a
    /// solution; otherwise puts the ones that fail back among the decisions and returns None.
    pub(super) fn final_check(&mut self) -> Option<Vec<bool>> {
        self.stats.final_checks += 1;
        let mut value: Vec<i8> = self.assign.clone();
        let mut back = Vec::new();
        let mut list = std::mem::take(&mut self.deferred);
        list.retain(|&v| {
            let i = v as usize;
            if self.lazy[i] != DEFERRED || self.assign[i] != UNDEF {
                if self.lazy[i] == DEFERRED {
                    self.lazy[i] = ACTIVE;
                }
                return false;
            }
            match self.agreeing_option(v) {
                Some(b) => {
                    value[i] = if b { 1 } else { -1 };
                    true
                }
                None => {
                    self.lazy[i] = DECIDE;
                    back.push(v);
                    false
                }
            }
        });
        self.deferred = list;
        if back.is_empty() {
            // The clauses, read with the completed assignment.
            for c in &self.p.clauses {
                if c.iter().any(|&l| lit_value(&value, l) == 1) {
                    continue;
                }
                // Propagation would have found it if all were assigned: some are set aside.
                for &l in c {
                    let v = l.var().0;
                    if self.lazy[v as usize] == DEFERRED && self.assign[v as usize] == UNDEF {
                        self.decide_later(v, &mut back);
                    }
                }
            }
        }
        if back.is_empty() {
            debug_assert!(value
                .iter()
                .zip(&self.decidable)
                .all(|(&a, &d)| a != UNDEF || !d));
            return Some(value.iter().map(|&a| a == 1).collect());
        }
        for v in back {
            self.heap.insert(v, &self.activity);
        }
        None
    }
}
