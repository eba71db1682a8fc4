//! Searches over a graph for certificates: the most readable cycle in a strongly connected
//! component, and shortest paths (for "this option closes a cycle" and deductions).

use super::{Csr, Node};

/// What an edge costs in a cycle search.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// An anti-dependency: the first thing a short certificate avoids.
    Rw,
    /// A session-order edge: a run of them is one step ("came before in session s").
    Session,
    Other,
}

/// The best cycle through the nodes of one strongly connected component: fewest edges to avoid
/// first (`cost(e).1`: the collector's own fence key, whose anomalies say little about the
/// workload), then fewest anti-dependencies, then fewest steps, a run of session edges counting
/// as one step.
/// Dijkstra from at most `max_starts` nodes of the component, over dense arrays, stopping once
/// a cycle is known and `budget` edges have been looked at, so a huge component costs a few
/// linear passes whatever its nodes' degree (counted in nodes visited, a read-heavy graph's
/// forty edges a node made the same budget ten times the work).
pub fn best_cycle(
    csr: &Csr,
    comp: &[u32],
    target_comp: u32,
    members: &[Node],
    cost: impl Fn(u32) -> (Cost, bool),
    max_starts: usize,
    budget: usize,
) -> Option<Vec<u32>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    const NONE: u32 = u32::MAX;
    let n = comp.len();
    // The component's own edges, gathered once: every start's search goes over them, and on a
    // read-heavy graph most of a node's edges leave its component. The budget still counts
    // each node's edges as a whole, so which cycle is found does not change.
    // Each with its cost, looked up once rather than at every start's relaxation of it.
    let mut inside_start = vec![0u32; n + 1];
    let mut inside: Vec<(Node, u32, (Cost, bool))> = Vec::new();
    for x in 0..n {
        if comp[x] == target_comp {
            inside.extend(
                csr.succ(x as Node)
                    .iter()
                    .filter(|&&(y, _)| comp[y as usize] == target_comp)
                    .map(|&(y, e)| (y, e, cost(e))),
            );
        }
        inside_start[x + 1] = inside.len() as u32;
    }
    let inside_succ =
        |x: Node| &inside[inside_start[x as usize] as usize..inside_start[x as usize + 1] as usize];
    // State = node * 2 + (arrived by a session edge); distance = (avoided, rw, steps).
    let mut dist: Vec<(u32, u32, u32)> = vec![(NONE, NONE, NONE); 2 * n];
    let mut parent: Vec<(u32, u32)> = vec![(NONE, NONE); 2 * n];
    let mut touched: Vec<usize> = Vec::new();
    let mut best: Option<((u32, u32, u32), Vec<u32>)> = None;
    let mut spent = 0usize;
    for &s in members.iter().take(max_starts) {
        if best.is_some() && spent >= budget {
            break;
        }
        for &i in &touched {
            dist[i] = (NONE, NONE, NONE);
            parent[i] = (NONE, NONE);
        }
        touched.clear();
        let mut heap = BinaryHeap::new();
        let start = s as usize * 2;
        dist[start] = (0, 0, 0);
        touched.push(start);
        heap.push(Reverse(((0u32, 0u32, 0u32), start)));
        // The cycle closed back into s: its length and the (state, edge) that closed it.
        let mut closed: Option<((u32, u32, u32), usize, u32)> = None;
        while let Some(Reverse((d, st))) = heap.pop() {
            if d != dist[st] {
                continue;
            }
            if best.as_ref().is_some_and(|(bd, _)| d >= *bd)
                || closed.as_ref().is_some_and(|(cd, _, _)| d >= *cd)
            {
                break;
            }
            let x = (st / 2) as Node;
            spent += csr.succ(x).len().max(1);
            let via_session = st % 2 == 1;
            for &(y, e, (c, avoid)) in inside_succ(x) {
                let step = match c {
                    Cost::Session if via_session => 0,
                    _ => 1,
                };
                let nd = (
                    d.0 + u32::from(avoid),
                    d.1 + u32::from(c == Cost::Rw),
                    d.2 + step,
                );
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
