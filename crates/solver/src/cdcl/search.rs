//! The search: VSIDS decisions with saved phases, first-UIP conflict analysis, backtracking,
//! learnt-clause reduction, Luby restarts, and the UNSAT core of the final conflict.

use super::*;

impl Search<'_> {
    pub(super) fn bump_var(&mut self, v: usize) {
        self.activity[v] += self.var_inc;
        if self.activity[v] > 1e100 {
            for a in self.activity.iter_mut() {
                *a *= 1e-100;
            }
            self.var_inc *= 1e-100;
        }
        self.heap.bumped(v as u32, &self.activity);
    }

    /// First-UIP conflict analysis. Returns the learnt clause (asserting literal first) and the
    /// level to go back to.
    pub(super) fn analyze(&mut self, mut confl: u32) -> (Vec<Lit>, u32) {
        let mut learnt = vec![Lit::pos(Var(0))];
        let mut path = 0;
        let mut p: Option<Lit> = None;
        let mut index = self.trail.len();
        let cur = self.decision_level();
        loop {
            {
                let c = &mut self.clauses[confl as usize];
                if c.learnt {
                    c.activity += self.cla_inc;
                }
            }
            let lits = self.clauses[confl as usize].lits.clone();
            for q in lits {
                if Some(q.var()) == p.map(|p| p.var()) {
                    continue;
                }
                let v = q.var().0 as usize;
                if !self.seen[v] && self.level[v] > 0 {
                    self.seen[v] = true;
                    self.bump_var(v);
                    if self.level[v] >= cur {
                        path += 1;
                    } else {
                        learnt.push(q);
                    }
                }
            }
            loop {
                index -= 1;
                if self.seen[self.trail[index].var().0 as usize] {
                    break;
                }
            }
            let pl = self.trail[index];
            p = Some(pl);
            self.seen[pl.var().0 as usize] = false;
            path -= 1;
            if path == 0 {
                break;
            }
            confl = self.reason[pl.var().0 as usize];
        }
        learnt[0] = !p.unwrap();
        // Drop literals implied by others in the clause (local minimization).
        let keep: Vec<bool> = learnt
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                if i == 0 {
                    return true;
                }
                let r = self.reason[l.var().0 as usize];
                if r == NO_REASON {
                    return true;
                }
                !self.clauses[r as usize].lits.iter().all(|&x| {
                    x.var() == l.var()
                        || self.seen[x.var().0 as usize]
                        || self.level[x.var().0 as usize] == 0
                })
            })
            .collect();
        for &l in &learnt[1..] {
            self.seen[l.var().0 as usize] = false;
        }
        let mut out: Vec<Lit> = learnt
            .iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(&l, _)| l)
            .collect();
        let mut bt = 0;
        if out.len() > 1 {
            let mut mi = 1;
            for i in 2..out.len() {
                if self.level[out[i].var().0 as usize] > self.level[out[mi].var().0 as usize] {
                    mi = i;
                }
            }
            out.swap(1, mi);
            bt = self.level[out[1].var().0 as usize];
        }
        (out, bt)
    }

    pub(super) fn backtrack(&mut self, lvl: u32) {
        if self.decision_level() <= lvl {
            return;
        }
        let lim = self.trail_lim[lvl as usize];
        while self.trail.len() > lim {
            let l = self.trail.pop().unwrap();
            let v = l.var().0 as usize;
            self.phase[v] = l.is_pos();
            self.assign[v] = UNDEF;
            self.reason[v] = NO_REASON;
            self.heap.insert(v as u32, &self.activity);
        }
        while let Some(&(pos, count)) = self.theory_marks.last() {
            if pos < lim {
                break;
            }
            self.theory.undo_to(count);
            self.theory_marks.pop();
        }
        self.trail_lim.truncate(lvl as usize);
        self.qhead = lim;
        self.thead = self.thead.min(lim);
    }

    pub(super) fn pick_branch(&mut self) -> Option<Lit> {
        loop {
            let v = self.heap.pop(&self.activity)?;
            if self.assign[v as usize] != UNDEF || !self.decidable[v as usize] {
                continue;
            }
            if self.opts.lazy_decisions && self.defer(v) {
                continue;
            }
            let mut pos = self.phase[v as usize];
            if self.opts.order_phase {
                let vp = Lit::pos(Var(v));
                let (ap, an) = (self.agrees(vp), self.agrees(!vp));
                if ap != an {
                    pos = ap;
                }
            }
            return Some(Lit::new(Var(v), pos));
        }
    }

    pub(super) fn reduce_db(&mut self) {
        let mut locked = vec![false; self.clauses.len()];
        for l in &self.trail {
            let r = self.reason[l.var().0 as usize];
            if r != NO_REASON {
                locked[r as usize] = true;
            }
        }
        let mut acts: Vec<(f32, u32)> = self
            .clauses
            .iter()
            .enumerate()
            .filter(|(i, c)| c.learnt && !c.deleted && !locked[*i] && c.lits.len() > 2)
            .map(|(i, c)| (c.activity, i as u32))
            .collect();
        acts.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        for &(_, i) in acts.iter().take(acts.len() / 2) {
            self.clauses[i as usize].deleted = true;
            self.clauses[i as usize].lits.clear();
            self.clauses[i as usize].lits.shrink_to_fit();
            self.num_learnts -= 1;
        }
        for ws in self.watches.iter_mut() {
            let cl = &self.clauses;
            ws.retain(|(c, _)| !cl[*c as usize].deleted);
        }
    }

    /// Variables behind a conflict at level 0: every variable whose forced value it depends on.
    pub(super) fn final_core(&mut self, confl: u32) -> Vec<Var> {
        let mut seen = vec![false; self.nvars];
        let mut stack = vec![confl];
        let mut visited_clause = vec![false; self.clauses.len()];
        let mut core = Vec::new();
        while let Some(c) = stack.pop() {
            if visited_clause[c as usize] {
                continue;
            }
            visited_clause[c as usize] = true;
            for &l in &self.clauses[c as usize].lits {
                let v = l.var().0 as usize;
                if !seen[v] {
                    seen[v] = true;
                    core.push(Var(v as u32));
                    let r = self.reason[v];
                    if r != NO_REASON {
                        stack.push(r);
                    }
                }
            }
        }
        core.sort();
        core
    }

    pub(super) fn add_two_cycle_clauses(&mut self) {
        // In- and out-going literal edges per node, capped so hot nodes stay cheap.
        const CAP: usize = 48;
        let n = self.p.num_nodes as usize;
        let mut inc: Vec<Vec<(Lit, Node)>> = vec![Vec::new(); n];
        let mut outg: Vec<Vec<(Lit, Node)>> = vec![Vec::new(); n];
        for &(l, u, v) in &self.p.lit_edges {
            if outg[u as usize].len() < CAP {
                outg[u as usize].push((l, v));
            }
            if inc[v as usize].len() < CAP {
                inc[v as usize].push((l, u));
            }
        }
        let mut new = Vec::new();
        for x in 0..n {
            for &(a, s) in &inc[x] {
                for &(b, s2) in &outg[x] {
                    if a.var() == b.var() {
                        continue;
                    }
                    // Known edges only: the theory holds no literal edges at level 0 yet.
                    if self
                        .theory
                        .reaches(s2, s, self.opts.propagation_limit)
                        .is_some()
                    {
                        new.push(vec![!a, !b]);
                    }
                }
            }
        }
        for c in new {
            self.add_clause(c, false);
        }
    }

    pub(super) fn run(&mut self, budget: &Budget) -> Outcome {
        for c in &self.p.clauses {
            let mut c = c.clone();
            c.sort();
            c.dedup();
            if c.windows(2).any(|w| w[0] == !w[1]) {
                continue;
            }
            match c.len() {
                0 => return Outcome::Unsat { core: Vec::new() },
                1 => {
                    let cid = self.add_clause(c.clone(), false);
                    match self.value(c[0]) {
                        1 => {}
                        -1 => {
                            return Outcome::Unsat {
                                core: vec![c[0].var()],
                            }
                        }
                        _ => self.enqueue(c[0], cid),
                    }
                }
                _ => {
                    self.add_clause(c, false);
                }
            }
        }
        if self.opts.two_cycle_clauses {
            self.add_two_cycle_clauses();
        }
        let mut restart_n = 0u32;
        let mut conflicts_here = 0u64;
        let mut limit = luby(restart_n) * 100.0;
        let mut max_learnts = (self.p.clauses.len() / 3).max(2000) as f64;
        loop {
            if let Some(confl) = self.propagate() {
                self.stats.conflicts += 1;
                conflicts_here += 1;
                if self.decision_level() == 0 {
                    let core = self.final_core(confl);
                    return Outcome::Unsat { core };
                }
                // A theory lemma may lie entirely below the current level.
                let max_lvl = self.clauses[confl as usize]
                    .lits
                    .iter()
                    .map(|l| self.level[l.var().0 as usize])
                    .max()
                    .unwrap_or(0);
                if max_lvl < self.decision_level() {
                    self.backtrack(max_lvl);
                    if max_lvl == 0 {
                        let core = self.final_core(confl);
                        return Outcome::Unsat { core };
                    }
                }
                let (learnt, bt) = self.analyze(confl);
                self.backtrack(bt);
                let asserting = learnt[0];
                let cid = self.add_clause(learnt, true);
                self.enqueue(asserting, cid);
                self.var_inc /= 0.95;
                self.cla_inc /= 0.999;
                if let Some(r) = budget.exceeded(self.stats.conflicts) {
                    return Outcome::Unknown(r);
                }
            } else {
                if conflicts_here as f64 >= limit {
                    self.stats.restarts += 1;
                    restart_n += 1;
                    conflicts_here = 0;
                    limit = luby(restart_n) * 100.0;
                    self.backtrack(0);
                }
                if self.num_learnts as f64 >= max_learnts + self.trail.len() as f64 {
                    self.reduce_db();
                    max_learnts *= 1.1;
                }
                match self.pick_branch() {
                    None => {
                        let model = if self.opts.lazy_decisions {
                            match self.final_check() {
                                Some(m) => m,
                                None => continue,
                            }
                        } else {
                            self.assign.iter().map(|&a| a == 1).collect()
                        };
                        return Outcome::Sat {
                            model,
                            order: self.theory.order(),
                        };
                    }
                    Some(l) => {
                        self.stats.decisions += 1;
                        self.trail_lim.push(self.trail.len());
                        self.enqueue(l, NO_REASON);
                    }
                }
            }
        }
    }
}

fn luby(mut x: u32) -> f64 {
    let mut size = 1u64;
    let mut seq = 0u32;
    while size < x as u64 + 1 {
        seq += 1;
        size = 2 * size + 1;
    }
    while size - 1 != x as u64 {
        size = (size - 1) >> 1;
        seq -= 1;
        x %= size as u32;
    }
    2f64.powi(seq as i32)
}
