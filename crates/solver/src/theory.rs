//! The acyclicity theory: the graph of known edges plus the edges of true literals, kept with a
//! topological order maintained incrementally (Pearce–Kelly). Adding an edge that would close a
//! cycle yields the cycle's literals instead; edges are removed in LIFO order on backtrack, which
//! never invalidates the order.

use crate::Node;

/// Label of an edge that is always present.
pub(crate) const KNOWN: u32 = u32::MAX;

pub(crate) struct Acyclic {
    n: usize,
    /// (target, label) per node; label is a literal index or KNOWN.
    out: Vec<Vec<(Node, u32)>>,
    inn: Vec<Vec<(Node, u32)>>,
    pub ord: Vec<u32>,
    /// Edges added, in order, for undo: the source node (its last out-edge is the one).
    added: Vec<Node>,
    // scratch
    mark: Vec<u32>,
    stamp: u32,
    parent: Vec<(Node, u32)>,
    queue: Vec<Node>,
    delta_f: Vec<Node>,
    delta_b: Vec<Node>,
    pool: Vec<u32>,
    pub reorders: u64,
}

pub(crate) enum AddResult {
    /// Added; `true` when the topological order had to change.
    Ok(bool),
    /// The labels (literal indices) on the path v ⇝ u that, with the new edge u→v, closes a
    /// cycle. Known edges are left out.
    Cycle(Vec<u32>),
}

impl Acyclic {
    /// Builds the graph of known edges; None if they already contain a cycle.
    pub fn new(n: usize, known: &[(Node, Node)]) -> Option<Acyclic> {
        let order = crate::topo_order(n as u32, known.iter().copied())?;
        let mut ord = vec![0u32; n];
        for (i, &x) in order.iter().enumerate() {
            ord[x as usize] = i as u32;
        }
        let mut out = vec![Vec::new(); n];
        let mut inn = vec![Vec::new(); n];
        for &(u, v) in known {
            out[u as usize].push((v, KNOWN));
            inn[v as usize].push((u, KNOWN));
        }
        Some(Acyclic {
            n,
            out,
            inn,
            ord,
            added: Vec::new(),
            mark: vec![0; n],
            stamp: 0,
            parent: vec![(0, 0); n],
            queue: Vec::new(),
            delta_f: Vec::new(),
            delta_b: Vec::new(),
            pool: Vec::new(),
            reorders: 0,
        })
    }

    pub fn num_added(&self) -> usize {
        self.added.len()
    }

    fn next_stamp(&mut self) -> u32 {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.stamp = 1;
        }
        self.stamp
    }

    /// Adds u→v labelled `label`, or reports the cycle it would close (and adds nothing).
    pub fn add_edge(&mut self, u: Node, v: Node, label: u32) -> AddResult {
        if u == v {
            return AddResult::Cycle(Vec::new());
        }
        let (ou, ov) = (self.ord[u as usize], self.ord[v as usize]);
        let reordered = ou > ov;
        if reordered {
            // Forward search from v among nodes not after u; BFS so the cycle found is short.
            let s = self.next_stamp();
            self.delta_f.clear();
            self.queue.clear();
            self.queue.push(v);
            self.mark[v as usize] = s;
            let mut head = 0;
            while head < self.queue.len() {
                let x = self.queue[head];
                head += 1;
                self.delta_f.push(x);
                for &(y, lab) in &self.out[x as usize] {
                    if y == u {
                        self.parent[y as usize] = (x, lab);
                        return AddResult::Cycle(self.path_labels(v, u));
                    }
                    let oy = self.ord[y as usize];
                    if oy < ou && self.mark[y as usize] != s {
                        self.mark[y as usize] = s;
                        self.parent[y as usize] = (x, lab);
                        self.queue.push(y);
                    }
                }
            }
            // Backward search from u among nodes not before v.
            self.delta_b.clear();
            self.queue.clear();
            self.queue.push(u);
            self.mark[u as usize] = s;
            let mut head = 0;
            while head < self.queue.len() {
                let x = self.queue[head];
                head += 1;
                self.delta_b.push(x);
                for &(y, _) in &self.inn[x as usize] {
                    if self.ord[y as usize] > ov && self.mark[y as usize] != s {
                        self.mark[y as usize] = s;
                        self.queue.push(y);
                    }
                }
            }
            self.reorder();
        }
        self.out[u as usize].push((v, label));
        self.inn[v as usize].push((u, label));
        self.added.push(u);
        AddResult::Ok(reordered)
    }

    fn path_labels(&self, from: Node, to: Node) -> Vec<u32> {
        let mut labels = Vec::new();
        let mut x = to;
        while x != from {
            let (p, lab) = self.parent[x as usize];
            if lab != KNOWN {
                labels.push(lab);
            }
            x = p;
        }
        labels
    }

    /// Pearce–Kelly: the nodes that must come before (delta_b) take the smallest of the freed
    /// positions, in their old relative order, then the nodes after (delta_f).
    fn reorder(&mut self) {
        self.reorders += 1;
        let ord = &self.ord;
        self.delta_b.sort_unstable_by_key(|&x| ord[x as usize]);
        self.delta_f.sort_unstable_by_key(|&x| ord[x as usize]);
        self.pool.clear();
        self.pool.extend(
            self.delta_b
                .iter()
                .chain(self.delta_f.iter())
                .map(|&x| ord[x as usize]),
        );
        self.pool.sort_unstable();
        for (i, &x) in self.delta_b.iter().chain(self.delta_f.iter()).enumerate() {
            self.ord[x as usize] = self.pool[i];
        }
    }

    /// Removes the most recently added edges until `keep` remain.
    pub fn undo_to(&mut self, keep: usize) {
        while self.added.len() > keep {
            let u = self.added.pop().unwrap();
            let (v, _) = self.out[u as usize].pop().unwrap();
            let back = self.inn[v as usize].pop();
            debug_assert_eq!(back.map(|b| b.0), Some(u));
        }
    }

    /// Whether v ⇝ u exists (so that u→v would close a cycle), scanning no more than `limit`
    /// edges; returns the labels of such a path. A false answer may come from the limit.
    pub fn reaches(&mut self, v: Node, u: Node, limit: usize) -> Option<Vec<u32>> {
        if u == v {
            return Some(Vec::new());
        }
        let ou = self.ord[u as usize];
        if self.ord[v as usize] > ou {
            return None;
        }
        let s = self.next_stamp();
        self.queue.clear();
        self.queue.push(v);
        self.mark[v as usize] = s;
        let mut head = 0;
        let mut budget = limit;
        while head < self.queue.len() {
            let x = self.queue[head];
            head += 1;
            for &(y, lab) in &self.out[x as usize] {
                if y == u {
                    self.parent[y as usize] = (x, lab);
                    return Some(self.path_labels(v, u));
                }
                if budget == 0 {
                    return None;
                }
                budget -= 1;
                if self.ord[y as usize] < ou && self.mark[y as usize] != s {
                    self.mark[y as usize] = s;
                    self.parent[y as usize] = (x, lab);
                    self.queue.push(y);
                }
            }
        }
        None
    }

    pub fn order(&self) -> Vec<Node> {
        let mut nodes: Vec<Node> = (0..self.n as Node).collect();
        nodes.sort_unstable_by_key(|&x| self.ord[x as usize]);
        nodes
    }
}
