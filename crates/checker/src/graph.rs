//! Graph plumbing for the checker: labelled edge lists in CSR form, topological order, strongly
//! connected components, shortest cycles and the session-chain reachability index used by
//! pruning.

use serde::Serialize;

pub type Node = u32;

/// What an edge means; kept per edge so a cycle can be explained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// Session order.
    Session,
    /// Real-time order (strict serializability); "rt" in JSON as in text.
    #[serde(rename = "rt")]
    RealTime,
    /// Write → read of the version written.
    Wr,
    /// Write → the next write of the key (version order).
    Ww,
    /// Read → the write that overwrote the version read (anti-dependency).
    Rw,
    /// Online mode: an order known through transactions already garbage-collected.
    Carried,
}

impl EdgeKind {
    pub fn short(self) -> &'static str {
        match self {
            EdgeKind::Session => "session",
            EdgeKind::RealTime => "rt",
            EdgeKind::Wr => "wr",
            EdgeKind::Ww => "ww",
            EdgeKind::Rw => "rw",
            EdgeKind::Carried => "carried",
        }
    }
}

/// An edge's label: kind, key (u32::MAX if none), and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label {
    pub kind: EdgeKind,
    pub key: u32,
    /// u32::MAX for facts of the history; else the constraint whose resolution added it.
    pub constraint: u32,
}

pub const NO_KEY: u32 = u32::MAX;
pub const NO_CONSTRAINT: u32 = u32::MAX;

impl Label {
    pub fn fact(kind: EdgeKind, key: u32) -> Label {
        Label {
            kind,
            key,
            constraint: NO_CONSTRAINT,
        }
    }
}

/// Adjacency in compressed rows: `targets[start[u]..start[u+1]]` are u's successors, with the
/// edge's index into the edge list alongside.
pub struct Csr {
    pub start: Vec<u32>,
    pub targets: Vec<(Node, u32)>,
}

impl Csr {
    pub fn build(n: usize, edges: &[(Node, Node)], reverse: bool) -> Csr {
        let mut start = vec![0u32; n + 1];
        for &(u, v) in edges {
            let s = if reverse { v } else { u };
            start[s as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut targets = vec![(0, 0); edges.len()];
        for (i, &(u, v)) in edges.iter().enumerate() {
            let (s, t) = if reverse { (v, u) } else { (u, v) };
            targets[fill[s as usize] as usize] = (t, i as u32);
            fill[s as usize] += 1;
        }
        Csr { start, targets }
    }
    #[inline]
    pub fn succ(&self, u: Node) -> &[(Node, u32)] {
        &self.targets[self.start[u as usize] as usize..self.start[u as usize + 1] as usize]
    }
}

/// Kahn's algorithm. Err with the nodes left over (all on or behind a cycle) if there is one.
pub fn topo_order(n: usize, csr: &Csr) -> Result<Vec<Node>, Vec<Node>> {
    let mut indeg = vec![0u32; n];
    for &(v, _) in &csr.targets {
        indeg[v as usize] += 1;
    }
    let mut order: Vec<Node> = (0..n as Node).filter(|&x| indeg[x as usize] == 0).collect();
    let mut head = 0;
    while head < order.len() {
        let x = order[head];
        head += 1;
        for &(y, _) in csr.succ(x) {
            indeg[y as usize] -= 1;
            if indeg[y as usize] == 0 {
                order.push(y);
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err((0..n as Node).filter(|&x| indeg[x as usize] > 0).collect())
    }
}

/// Tarjan's strongly connected components, iteratively. Returns the component of every node;
/// components are numbered in reverse topological order.
pub fn scc(n: usize, csr: &Csr) -> (Vec<u32>, u32) {
    const UNSEEN: u32 = u32::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut comp = vec![UNSEEN; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<Node> = Vec::new();
    let mut call: Vec<(Node, u32)> = Vec::new();
    let mut next = 0u32;
    let mut ncomp = 0u32;
    for root in 0..n as Node {
        if index[root as usize] != UNSEEN {
            continue;
        }
        call.push((root, csr.start[root as usize]));
        index[root as usize] = next;
        low[root as usize] = next;
        next += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (u, ref mut pos)) = call.last_mut() {
            let end = csr.start[u as usize + 1];
            if *pos < end {
                let (v, _) = csr.targets[*pos as usize];
                *pos += 1;
                if index[v as usize] == UNSEEN {
                    index[v as usize] = next;
                    low[v as usize] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[v as usize] = true;
                    call.push((v, csr.start[v as usize]));
                } else if on_stack[v as usize] {
                    low[u as usize] = low[u as usize].min(index[v as usize]);
                }
            } else {
                call.pop();
                if let Some(&(p, _)) = call.last() {
                    low[p as usize] = low[p as usize].min(low[u as usize]);
                }
                if low[u as usize] == index[u as usize] {
                    loop {
                        let w = stack.pop().unwrap();
                        on_stack[w as usize] = false;
                        comp[w as usize] = ncomp;
                        if w == u {
                            break;
                        }
                    }
                    ncomp += 1;
                }
            }
        }
    }
    (comp, ncomp)
}

/// What an edge costs in a cycle search.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// An anti-dependency: the first thing a short certificate avoids.
    Rw,
    /// A session-order edge: a run of them is one step ("came before in session s").
    Session,
    Other,
}

/// The best cycle through the nodes of one strongly connected component: fewest
/// anti-dependencies first, then fewest steps, a run of session edges counting as one step.
/// Dijkstra from at most `max_starts` nodes of the component, over dense arrays, stopping once
/// a cycle is known and `budget` node visits are spent, so a huge component costs a few linear
/// passes.
pub fn best_cycle(
    csr: &Csr,
    comp: &[u32],
    target_comp: u32,
    members: &[Node],
    cost: impl Fn(u32) -> Cost,
    max_starts: usize,
    budget: usize,
) -> Option<Vec<u32>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    const NONE: u32 = u32::MAX;
    let n = comp.len();
    // State = node * 2 + (arrived by a session edge).
    let mut dist: Vec<(u32, u32)> = vec![(NONE, NONE); 2 * n];
    let mut parent: Vec<(u32, u32)> = vec![(NONE, NONE); 2 * n];
    let mut touched: Vec<usize> = Vec::new();
    let mut best: Option<((u32, u32), Vec<u32>)> = None;
    let mut spent = 0usize;
    for &s in members.iter().take(max_starts) {
        if best.is_some() && spent >= budget {
            break;
        }
        for &i in &touched {
            dist[i] = (NONE, NONE);
            parent[i] = (NONE, NONE);
        }
        touched.clear();
        let mut heap = BinaryHeap::new();
        let start = s as usize * 2;
        dist[start] = (0, 0);
        touched.push(start);
        heap.push(Reverse(((0u32, 0u32), start)));
        // The cycle closed back into s: its length and the (state, edge) that closed it.
        let mut closed: Option<((u32, u32), usize, u32)> = None;
        while let Some(Reverse((d, st))) = heap.pop() {
            if d != dist[st] {
                continue;
            }
            if best.as_ref().is_some_and(|(bd, _)| d >= *bd)
                || closed.as_ref().is_some_and(|(cd, _, _)| d >= *cd)
            {
                break;
            }
            spent += 1;
            let x = (st / 2) as Node;
            let via_session = st % 2 == 1;
            for &(y, e) in csr.succ(x) {
                if comp[y as usize] != target_comp {
                    continue;
                }
                let c = cost(e);
                let step = match c {
                    Cost::Session if via_session => 0,
                    _ => 1,
                };
                let nd = (d.0 + u32::from(c == Cost::Rw), d.1 + step);
                if y == s {
                    if closed.as_ref().is_none_or(|(cd, _, _)| nd < *cd) {
                        closed = Some((nd, st, e));
                    }
                    continue;
                }
                let ns = y as usize * 2 + usize::from(c == Cost::Session);
                if nd < dist[ns] {
                    if dist[ns].0 == NONE {
                        touched.push(ns);
                    }
                    dist[ns] = nd;
                    parent[ns] = (st as u32, e);
                    heap.push(Reverse((nd, ns)));
                }
            }
        }
        if let Some((d, mut st, last)) = closed {
            if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
                let mut edges = vec![last];
                while st != start {
                    let (p, e) = parent[st];
                    edges.push(e);
                    st = p as usize;
                }
                edges.reverse();
                best = Some((d, edges));
            }
        }
    }
    best.map(|(_, e)| e)
}

/// Shortest path u ⇝ v by BFS (edge indices), if any.
pub fn shortest_path(csr: &Csr, u: Node, v: Node) -> Option<Vec<u32>> {
    shortest_path_below(csr, u, v, u32::MAX)
}

/// Shortest path u ⇝ v by BFS over the edges with index below `limit` (those known before a
/// deduction), if any.
pub fn shortest_path_below(csr: &Csr, u: Node, v: Node, limit: u32) -> Option<Vec<u32>> {
    if u == v {
        return Some(Vec::new());
    }
    let mut parent: std::collections::HashMap<Node, (Node, u32)> = std::collections::HashMap::new();
    let mut queue = std::collections::VecDeque::new();
    queue.push_back(u);
    parent.insert(u, (u, u32::MAX));
    while let Some(x) = queue.pop_front() {
        for &(y, e) in csr.succ(x) {
            if e >= limit {
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(slot) = parent.entry(y) {
                slot.insert((x, e));
                if y == v {
                    let mut path = Vec::new();
                    let mut z = v;
                    while z != u {
                        let (p, e) = parent[&z];
                        path.push(e);
                        z = p;
                    }
                    path.reverse();
                    return Some(path);
                }
                queue.push_back(y);
            }
        }
    }
    None
}

/// Reachability over a DAG covered by chains (sessions): for every node, the earliest position
/// it reaches in every chain. Then x ⇝ y (y on a chain) is one comparison. Memory is nodes ×
/// chains; nodes on no chain (gates) are answered through their predecessors.
pub struct ChainReach {
    nchains: usize,
    /// chain and position of each node; chain u32::MAX for nodes on no chain.
    chain_of: Vec<(u32, u32)>,
    minpos: Vec<u32>,
}

impl ChainReach {
    pub fn memory_needed(n: usize, nchains: usize) -> usize {
        n * nchains * 4
    }

    pub fn build(
        n: usize,
        nchains: usize,
        chain_of: Vec<(u32, u32)>,
        csr: &Csr,
        order: &[Node],
    ) -> ChainReach {
        let c = nchains;
        let mut minpos = vec![u32::MAX; n * c];
        let mut row = vec![u32::MAX; c];
        for &x in order.iter().rev() {
            let xi = x as usize;
            row.iter_mut().for_each(|r| *r = u32::MAX);
            // Successors come later in the order, so their rows are final.
            for &(y, _) in csr.succ(x) {
                let yrow = &minpos[y as usize * c..y as usize * c + c];
                for (r, &m) in row.iter_mut().zip(yrow) {
                    *r = (*r).min(m);
                }
            }
            let (ch, pos) = chain_of[xi];
            if ch != u32::MAX {
                row[ch as usize] = row[ch as usize].min(pos);
            }
            minpos[xi * c..xi * c + c].copy_from_slice(&row);
        }
        ChainReach {
            nchains: c,
            chain_of,
            minpos,
        }
    }

    /// x ⇝ y for y on a chain.
    #[inline]
    pub fn reaches_chained(&self, x: Node, y: Node) -> bool {
        let (ch, pos) = self.chain_of[y as usize];
        debug_assert_ne!(ch, u32::MAX);
        self.minpos[x as usize * self.nchains + ch as usize] <= pos
    }

    pub fn on_chain(&self, y: Node) -> bool {
        self.chain_of[y as usize].0 != u32::MAX
    }
}
