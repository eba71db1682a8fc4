//! Propagation: two watched literals for clauses, and the acyclicity theory for edge literals
//! (an edge that would close a cycle is refuted by the cycle's lemma).

use super::*;

impl Search<'_> {
    /// Unit propagation over clauses, then the theory for new assignments; repeats to a fixpoint.
    /// Returns a conflicting clause.
    pub(super) fn propagate(&mut self) -> Option<u32> {
        loop {
            while self.qhead < self.trail.len() {
                let p = self.trail[self.qhead];
                self.qhead += 1;
                self.stats.propagations += 1;
                if let Some(c) = self.propagate_lit(p) {
                    return Some(c);
                }
            }
            if self.thead < self.trail.len() {
                let l = self.trail[self.thead];
                let pos = self.thead;
                self.thead += 1;
                if let Some(c) = self.theory_assign(l, pos) {
                    return Some(c);
                }
                continue;
            }
            return None;
        }
    }

    pub(super) fn propagate_lit(&mut self, p: Lit) -> Option<u32> {
        if !self.watched[p.index()] {
            return None;
        }
        let false_lit = !p;
        let mut ws = std::mem::take(&mut self.watches[p.index()]);
        let mut i = 0;
        let mut j = 0;
        let mut conflict = None;
        while i < ws.len() {
            let (cid, blocker) = ws[i];
            i += 1;
            if self.value(blocker) == 1 {
                ws[j] = (cid, blocker);
                j += 1;
                continue;
            }
            let c = &mut self.clauses[cid as usize];
            if c.deleted {
                continue;
            }
            if c.lits[0] == false_lit {
                c.lits.swap(0, 1);
            }
            let first = c.lits[0];
            if first != blocker && lit_value(&self.assign, first) == 1 {
                ws[j] = (cid, first);
                j += 1;
                continue;
            }
            let mut found = false;
            for k in 2..c.lits.len() {
                if lit_value(&self.assign, c.lits[k]) != -1 {
                    c.lits.swap(1, k);
                    let nw = c.lits[1];
                    self.watches[(!nw).index()].push((cid, first));
                    self.watched[(!nw).index()] = true;
                    found = true;
                    break;
                }
            }
            if found {
                continue;
            }
            ws[j] = (cid, first);
            j += 1;
            if self.value(first) == -1 {
                conflict = Some(cid);
                while i < ws.len() {
                    ws[j] = ws[i];
                    j += 1;
                    i += 1;
                }
            } else {
                self.enqueue(first, cid);
            }
        }
        ws.truncate(j);
        self.watches[p.index()] = ws;
        conflict
    }

    pub(super) fn lit_edges(&self, l: Lit) -> std::ops::Range<usize> {
        self.edge_start[l.index()] as usize..self.edge_start[l.index() + 1] as usize
    }

    /// Adds the edges of a newly true literal to the theory; on a cycle, adds the lemma
    /// "not all of these literals" and returns it as the conflict.
    pub(super) fn theory_assign(&mut self, l: Lit, pos: usize) -> Option<u32> {
        let range = self.lit_edges(l);
        if range.is_empty() {
            return None;
        }
        self.theory_marks.push((pos, self.theory.num_added()));
        let mut reordered = false;
        for e in range.clone() {
            let (u, v) = self.edges[e];
            match self.theory.add_edge(u, v, l.index() as u32) {
                AddResult::Cycle(labels) => {
                    self.stats.theory_conflicts += 1;
                    let lemma = self.lemma(l, &labels);
                    let cid = self.add_clause(lemma, true);
                    return Some(cid);
                }
                AddResult::Ok(r) => reordered |= r,
            }
        }
        // An edge that agrees with the current order rarely makes a neighbour's edge close a
        // cycle; checking after every such edge cost far more than it saved (measured on
        // BlindW-RW without pruning). Check when the order moved, and at level 0.
        if self.opts.theory_propagation && (reordered || self.decision_level() == 0) {
            for e in range {
                let (u, v) = self.edges[e];
                for x in [u, v] {
                    let (a, b) = (
                        self.node_lit_start[x as usize] as usize,
                        self.node_lit_start[x as usize + 1] as usize,
                    );
                    for k in a..b {
                        let cand = Lit::from_index(self.node_lits[k] as usize);
                        if self.value(cand) != UNDEF {
                            continue;
                        }
                        if let Some(labels) = self.closes_cycle(cand) {
                            // labels are all true literals at or below this level: a valid reason.
                            let mut reason = vec![!cand];
                            let mut seen_lits: Vec<u32> = Vec::new();
                            for lab in labels {
                                if !seen_lits.contains(&lab) {
                                    seen_lits.push(lab);
                                    reason.push(!Lit::from_index(lab as usize));
                                }
                            }
                            // Watch the implied literal and the most recently assigned other one.
                            self.order_for_watch(&mut reason);
                            let cid = self.add_clause(reason, true);
                            self.stats.theory_propagations += 1;
                            self.enqueue(!cand, cid);
                        }
                    }
                }
            }
        }
        None
    }

    /// Whether one of `cand`'s edges would close a cycle with the present edges.
    pub(super) fn closes_cycle(&mut self, cand: Lit) -> Option<Vec<u32>> {
        for e in self.lit_edges(cand) {
            let (u, v) = self.edges[e];
            if let Some(labels) = self.theory.reaches(v, u, self.opts.propagation_limit) {
                return Some(labels);
            }
        }
        None
    }

    pub(super) fn lemma(&self, l: Lit, labels: &[u32]) -> Vec<Lit> {
        let mut lemma = vec![!l];
        for &lab in labels {
            debug_assert_ne!(lab, KNOWN);
            let x = !Lit::from_index(lab as usize);
            if !lemma.contains(&x) {
                lemma.push(x);
            }
        }
        self.order_for_watch(&mut lemma);
        lemma
    }

    /// Puts the literals with the highest decision levels first (the watch invariant for a
    /// clause added while all but possibly its first literal are false).
    pub(super) fn order_for_watch(&self, lits: &mut [Lit]) {
        if lits.len() < 2 {
            return;
        }
        // Keep position 0 if it is unassigned (an implied literal), else sort it in too.
        let start = if self.value(lits[0]) == UNDEF { 1 } else { 0 };
        let mut best = start;
        for i in start..lits.len() {
            if self.level[lits[i].var().0 as usize] > self.level[lits[best].var().0 as usize] {
                best = i;
            }
        }
        lits.swap(start, best);
        if start == 0 && lits.len() > 1 {
            let mut best = 1;
            for i in 1..lits.len() {
                if self.level[lits[i].var().0 as usize] > self.level[lits[best].var().0 as usize] {
                    best = i;
                }
            }
            lits.swap(1, best);
        }
    }
}
