//! CDCL with the acyclicity theory in the loop: two watched literals, first-UIP learning, VSIDS,
//! phase saving seeded from the topological order, Luby restarts, learnt-clause reduction.
//! Theory lemmas (cycles) are added as clauses, so conflict analysis treats them like any other.

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
}

impl Default for CdclOptions {
    fn default() -> Self {
        CdclOptions {
            order_phase: true,
            theory_propagation: true,
            propagation_limit: 64,
            minimize_core: true,
            two_cycle_clauses: false,
        }
    }
}

const UNDEF: i8 = 0;
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
    seen: Vec<bool>,
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
            phase: vec![true; nvars],
            seen: vec![false; nvars],
            stats: Stats::default(),
            num_learnts: 0,
        }
    }

    #[inline]
    fn value(&self, l: Lit) -> i8 {
        let a = self.assign[l.var().0 as usize];
        if l.is_pos() {
            a
        } else {
            -a
        }
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

    /// Unit propagation over clauses, then the theory for new assignments; repeats to a fixpoint.
    /// Returns a conflicting clause.
    fn propagate(&mut self) -> Option<u32> {
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

    fn propagate_lit(&mut self, p: Lit) -> Option<u32> {
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
            let fa = self.assign[first.var().0 as usize];
            let fval = if first.is_pos() { fa } else { -fa };
            if first != blocker && fval == 1 {
                ws[j] = (cid, first);
                j += 1;
                continue;
            }
            let mut found = false;
            for k in 2..c.lits.len() {
                let l = c.lits[k];
                let a = self.assign[l.var().0 as usize];
                let val = if l.is_pos() { a } else { -a };
                if val != -1 {
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

    fn lit_edges(&self, l: Lit) -> std::ops::Range<usize> {
        self.edge_start[l.index()] as usize..self.edge_start[l.index() + 1] as usize
    }

    /// Adds the edges of a newly true literal to the theory; on a cycle, adds the lemma
    /// "not all of these literals" and returns it as the conflict.
    fn theory_assign(&mut self, l: Lit, pos: usize) -> Option<u32> {
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
    fn closes_cycle(&mut self, cand: Lit) -> Option<Vec<u32>> {
        for e in self.lit_edges(cand) {
            let (u, v) = self.edges[e];
            if let Some(labels) = self.theory.reaches(v, u, self.opts.propagation_limit) {
                return Some(labels);
            }
        }
        None
    }

    fn lemma(&self, l: Lit, labels: &[u32]) -> Vec<Lit> {
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
    fn order_for_watch(&self, lits: &mut [Lit]) {
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

    fn bump_var(&mut self, v: usize) {
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
    fn analyze(&mut self, mut confl: u32) -> (Vec<Lit>, u32) {
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

    fn backtrack(&mut self, lvl: u32) {
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

    fn pick_branch(&mut self) -> Option<Lit> {
        loop {
            let v = self.heap.pop(&self.activity)?;
            if self.assign[v as usize] != UNDEF {
                continue;
            }
            let mut pos = self.phase[v as usize];
            if self.opts.order_phase {
                let agrees = |s: &Self, l: Lit| {
                    s.lit_edges(l).all(|e| {
                        let (a, b) = s.edges[e];
                        s.theory.ord[a as usize] < s.theory.ord[b as usize]
                    })
                };
                let vp = Lit::pos(Var(v));
                let (ap, an) = (agrees(self, vp), agrees(self, !vp));
                if ap != an {
                    pos = ap;
                }
            }
            return Some(Lit::new(Var(v), pos));
        }
    }

    fn reduce_db(&mut self) {
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
    fn final_core(&mut self, confl: u32) -> Vec<Var> {
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

    fn add_two_cycle_clauses(&mut self) {
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

    fn run(&mut self, budget: &Budget) -> Outcome {
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
                        let model = self.assign.iter().map(|&a| a == 1).collect();
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
