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
    let (inside, size) = Inside::of(csr, comp, target_comp, cost);
    // A distance's three counts are each at most a path's length, under two states a node of
    // the component: packed into one word where they fit (the heap's comparisons were most of
    // a read-heavy certificate's search), into two where they may not.
    if 2 * size + 2 < 1 << 21 {
        search::<u64>(csr, &inside, members, max_starts, budget)
    } else {
        search::<u128>(csr, &inside, members, max_starts, budget)
    }
}

/// A component's edges in rows over all nodes, each with its target, index and cost.
struct Inside {
    start: Vec<u32>,
    edges: Vec<(Node, u32, (Cost, bool))>,
}

impl Inside {
    /// The edges of component `target_comp`, and how many nodes it has.
    ///
    /// Gathered once: every start's search goes over them, and on a read-heavy graph most of a
    /// node's edges leave its component. The budget still counts each node's edges as a whole,
    /// so which cycle is found does not change. Each edge's cost is looked up here once, not
    /// at every start's relaxation of it.
    fn of(
        csr: &Csr,
        comp: &[u32],
        target_comp: u32,
        cost: impl Fn(u32) -> (Cost, bool),
    ) -> (Inside, u64) {
        let n = comp.len();
        let mut inside = Inside {
            start: vec![0u32; n + 1],
            edges: Vec::new(),
        };
        let mut size = 0u64;
        for x in 0..n {
            if comp[x] == target_comp {
                size += 1;
                inside.edges.extend(
                    csr.succ(x as Node)
                        .iter()
                        .filter(|&&(y, _)| comp[y as usize] == target_comp)
                        .map(|&(y, e)| (y, e, cost(e))),
                );
            }
            inside.start[x + 1] = inside.edges.len() as u32;
        }
        (inside, size)
    }
}

/// A cycle's or path's cost (avoided edges, anti-dependencies, steps) packed into one integer,
/// compared as the three counts are, in that order: each count has `FIELD` bits of its own.
trait Packed: Copy + Ord {
    const FIELD: u32;
    const ZERO: Self;
    const FAR: Self;
    fn plus(self, avoid: bool, rw: bool, step: bool) -> Self;
}

/// One word (counts of 21 bits) or two (42 bits).
macro_rules! packed {
    ($t:ty, $field:expr) => {
        impl Packed for $t {
            const FIELD: u32 = $field;
            const ZERO: $t = 0;
            const FAR: $t = <$t>::MAX;
            #[inline]
            fn plus(self, avoid: bool, rw: bool, step: bool) -> $t {
                self + (<$t>::from(avoid) << (2 * Self::FIELD))
                    + (<$t>::from(rw) << Self::FIELD)
                    + <$t>::from(step)
            }
        }
    };
}

packed!(u64, 21);
packed!(u128, 42);

/// [`best_cycle`] over the component's edges, with costs packed in `D`, whose counts fit every
/// path of the component.
fn search<D: Packed>(
    csr: &Csr,
    inside: &Inside,
    members: &[Node],
    max_starts: usize,
    budget: usize,
) -> Option<Vec<u32>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    const NONE: u32 = u32::MAX;
    let n = inside.start.len() - 1;
    let inside_succ = |x: Node| {
        &inside.edges[inside.start[x as usize] as usize..inside.start[x as usize + 1] as usize]
    };
    // State = node * 2 + (arrived by a session edge); distance = (avoided, rw, steps).
    let mut dist: Vec<D> = vec![D::FAR; 2 * n];
    let mut parent: Vec<(u32, u32)> = vec![(NONE, NONE); 2 * n];
    let mut touched: Vec<usize> = Vec::new();
    let mut best: Option<(D, Vec<u32>)> = None;
    let mut spent = 0usize;
    for &s in members.iter().take(max_starts) {
        if best.is_some() && spent >= budget {
            break;
        }
        for &i in &touched {
            dist[i] = D::FAR;
            parent[i] = (NONE, NONE);
        }
        touched.clear();
        let mut heap = BinaryHeap::new();
        let start = s as usize * 2;
        dist[start] = D::ZERO;
        touched.push(start);
        heap.push(Reverse((D::ZERO, start as u32)));
        // The cycle closed back into s: its length and the (state, edge) that closed it.
        let mut closed: Option<(D, usize, u32)> = None;
        while let Some(Reverse((d, st))) = heap.pop() {
            let st = st as usize;
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
                let step = !(c == Cost::Session && via_session);
                let nd = d.plus(avoid, c == Cost::Rw, step);
                if y == s {
                    if closed.as_ref().is_none_or(|(cd, _, _)| nd < *cd) {
                        closed = Some((nd, st, e));
                    }
                    continue;
                }
                let ns = y as usize * 2 + usize::from(c == Cost::Session);
                if nd < dist[ns] {
                    if dist[ns] == D::FAR {
                        touched.push(ns);
                    }
                    dist[ns] = nd;
                    parent[ns] = (st as u32, e);
                    heap.push(Reverse((nd, ns as u32)));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Costs packed in one word find the very cycle (edge for edge) that costs packed in two
    /// find, on random graphs of every kind of edge, fence-key edges included.
    #[test]
    fn one_word_and_two_word_costs_find_the_same_cycle() {
        let mut rng = super::super::test_rng::Rng(0x5be0_cd19_137e_2179);
        let mut found = 0;
        for round in 0..300 {
            let n = 2 + rng.below(40) as usize;
            let m = rng.below(6 * n as u64) as usize;
            let edges: Vec<(Node, Node)> = (0..m)
                .map(|_| (rng.below(n as u64) as Node, rng.below(n as u64) as Node))
                .collect();
            let kinds: Vec<(Cost, bool)> = (0..m)
                .map(|_| {
                    let c = match rng.below(3) {
                        0 => Cost::Rw,
                        1 => Cost::Session,
                        _ => Cost::Other,
                    };
                    (c, rng.below(8) == 0)
                })
                .collect();
            let csr = Csr::build(n, &edges, false);
            let (comp, ncomp) = super::super::scc(n, &csr);
            let members: Vec<Vec<Node>> = (0..ncomp)
                .map(|c| (0..n as Node).filter(|&x| comp[x as usize] == c).collect())
                .collect();
            for (c, nodes) in members.iter().enumerate().filter(|(_, m)| m.len() > 1) {
                let cost = |e: u32| kinds[e as usize];
                let starts = 1 + rng.below(8) as usize;
                let budget = rng.below(400) as usize;
                let (inside, _) = Inside::of(&csr, &comp, c as u32, cost);
                let one = search::<u64>(&csr, &inside, nodes, starts, budget);
                let two = search::<u128>(&csr, &inside, nodes, starts, budget);
                assert_eq!(one, two, "round {round}, component {c}");
                found += usize::from(one.is_some());
            }
        }
        assert!(found > 100, "{found} cycles");
    }
}
