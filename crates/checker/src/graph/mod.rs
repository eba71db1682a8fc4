//! Graph plumbing for the checker: labelled edge lists in CSR form, topological order and
//! strongly connected components; the known graph the checker builds from a history
//! (`known`, from the transactions that take part: `participants`), cycle and path search
//! (`paths`) and the reachability index pruning asks (`reach`).

mod choices;
mod csr;
mod known;
mod labels;
mod lists;
mod participants;
mod paths;
mod reach;
mod read_facts;
mod split;
#[cfg(test)]
mod test_rng;
mod thin;
mod txn_facts;
mod versions;

pub(crate) use choices::{cand_state, pair_state, Choice, CondEdge, Known, RuledOut, NO_PAIR};
pub use csr::{Csr, NodeRows, Rows, Target};
pub(crate) use known::{build, walk_sessions, Built, ChainRec, Constraint, INIT};
pub use labels::Labels;
pub(crate) use participants::{participants, Overwritten, Participants};
pub(crate) use paths::{best_cycle, shortest_path, shortest_path_below, Cost};
pub(crate) use reach::{gate_preds, Budgeted, ChainReach, Reach, ReachCtx};
pub(crate) use read_facts::{sort_facts, Layout, ReadFact, ReadOut};
pub(crate) use thin::{add_into, Spare, NO_COMP};

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
    /// Snapshot isolation: a transaction's snapshot precedes its commit (inside one
    /// transaction; certificates show it as the transaction itself).
    Within,
}

impl EdgeKind {
    /// The edge kind as drawn on a certificate's edge label (wr, ww, rw, so, rt…).
    pub fn short(self) -> &'static str {
        match self {
            EdgeKind::Session => "session",
            EdgeKind::RealTime => "rt",
            EdgeKind::Wr => "wr",
            EdgeKind::Ww => "ww",
            EdgeKind::Rw => "rw",
            EdgeKind::Carried => "carried",
            EdgeKind::Within => "within",
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

/// Kahn's algorithm. Err with the nodes left over (all on or behind a cycle) if there is one.
pub fn topo_order<T: Target>(n: usize, csr: &Rows<T>) -> Result<Vec<Node>, Vec<Node>> {
    topo_order_with(n, csr, None)
}

/// Each node's in-degree over the edges of all `lists`.
fn in_degrees<T: Target>(n: usize, lists: &[&Rows<T>]) -> Vec<u32> {
    let mut indeg = vec![0u32; n];
    for c in lists {
        for &t in &c.targets {
            indeg[t.node() as usize] += 1;
        }
    }
    indeg
}

/// The nodes Kahn's algorithm could not order (all on or behind a cycle).
fn left_over(indeg: &[u32]) -> Vec<Node> {
    (0..indeg.len() as Node)
        .filter(|&x| indeg[x as usize] > 0)
        .collect()
}

/// [`topo_order`] of the edges of `csr` and of `more` together (both over `n` nodes).
///
/// Each list of rows is walked in a loop of its own and the order written into room made
/// once: chaining the two lists' iterators and growing the order cost four times the
/// instructions per edge, and pruning runs this on one thread over every known edge.
pub fn topo_order_with<T: Target>(
    n: usize,
    csr: &Rows<T>,
    more: Option<&Rows<T>>,
) -> Result<Vec<Node>, Vec<Node>> {
    let lists: &[&Rows<T>] = match more {
        Some(m) => &[csr, m],
        None => &[csr],
    };
    let mut indeg = in_degrees(n, lists);
    let mut order: Vec<Node> = vec![0; n];
    let mut tail = 0;
    for x in 0..n {
        if indeg[x] == 0 {
            order[tail] = x as Node;
            tail += 1;
        }
    }
    let mut head = 0;
    while head < tail {
        let x = order[head] as usize;
        head += 1;
        for c in lists {
            let row = &c.targets[c.start[x] as usize..c.start[x + 1] as usize];
            for &t in row {
                let y = t.node();
                let d = &mut indeg[y as usize];
                *d -= 1;
                if *d == 0 {
                    // At most n nodes ever reach in-degree 0, each once.
                    order[tail] = y;
                    tail += 1;
                }
            }
        }
    }
    if tail == n {
        Ok(order)
    } else {
        Err(left_over(&indeg))
    }
}

/// [`topo_order_with`] with ties broken by time: of the nodes ready, first those `time` gives
/// none (0, or past its end: gates), then the earliest. Pruning orders the known graph so
/// that, on a history whose start order is a serial order, the edges it decides go forward in
/// the order (a gate comes right after the last reader it follows, a transaction by its
/// start), which then still holds and needs no second sort.
pub fn topo_order_timed<T: Target>(
    n: usize,
    csr: &Rows<T>,
    more: Option<&Rows<T>>,
    time: &[u64],
) -> Result<Vec<Node>, Vec<Node>> {
    use std::cmp::Reverse;
    let lists: &[&Rows<T>] = match more {
        Some(m) => &[csr, m],
        None => &[csr],
    };
    let mut indeg = in_degrees(n, lists);
    let mut order: Vec<Node> = Vec::with_capacity(n);
    // Ready nodes without a time, and those with one, earliest first.
    let mut now: Vec<Node> = Vec::new();
    let mut timed = std::collections::BinaryHeap::new();
    let ready =
        |x: Node, now: &mut Vec<Node>, timed: &mut std::collections::BinaryHeap<_>| match time
            .get(x as usize)
        {
            Some(&t) if t != 0 => timed.push(Reverse((t, x))),
            _ => now.push(x),
        };
    for x in 0..n as Node {
        if indeg[x as usize] == 0 {
            ready(x, &mut now, &mut timed);
        }
    }
    loop {
        let x = match now.pop() {
            Some(x) => x,
            None => match timed.pop() {
                Some(Reverse((_, x))) => x,
                None => break,
            },
        };
        order.push(x);
        for c in lists {
            for &t in c.succ(x) {
                let y = t.node();
                let d = &mut indeg[y as usize];
                *d -= 1;
                if *d == 0 {
                    ready(y, &mut now, &mut timed);
                }
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err(left_over(&indeg))
    }
}

/// Tarjan's strongly connected components, iteratively. Returns the component of every node;
/// components are numbered in reverse topological order.
pub fn scc<T: Target>(n: usize, csr: &Rows<T>) -> (Vec<u32>, u32) {
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
                let v = csr.targets[*pos as usize].node();
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

/// What the transactions state, key by key: external reads (key, writer node, reader node),
/// installed writes (key, writer node) and read-modify-write steps (key, predecessor, node);
/// reads whose writer is one of several (`amb`), and ambiguous reads that only one candidate
/// could explain (`resolved`: read op, write op or `FROM_INIT`).
#[derive(Default)]
pub(crate) struct Facts {
    /// Sorted by key, writer and reader, without duplicates, once built; unless they are
    /// still in `read_blocks` (see [`Facts::sort_reads`]).
    pub reads: Vec<ReadFact>,
    /// Reads as the transactions' ranges stated them, in node order (joined by the sort).
    pub read_parts: Vec<Vec<ReadFact>>,
    /// Or, on a large history, the reads already in their key blocks (see `read_facts`),
    /// each block sorted later, as its keys are chained.
    pub read_blocks: Option<Layout>,
    pub writes: Vec<(u32, Node)>,
    pub rmws: Vec<(u32, Node, Node)>,
    pub amb: Vec<Choice>,
    pub resolved: Vec<(u32, u32)>,
}

impl Facts {
    /// Sorts the reads still laid out by block into `reads`, for the rare paths that want
    /// them all at once (a key forgotten, keys with ambiguous reads).
    pub(crate) fn sort_reads(&mut self) {
        if let Some(layout) = self.read_blocks.take() {
            debug_assert!(self.reads.is_empty());
            self.reads = layout.sorted();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On random DAGs (edges forward in a random permutation), with random times and some
    /// nodes without one, the timed order is a topological order of every node, as the plain
    /// one is; of two ready nodes, the untimed or earlier one comes first. A cycle is found.
    #[test]
    fn timed_orders_are_topological_orders() {
        let mut rng = test_rng::Rng(0x6a09_e667_f3bc_c908u64);
        let mut next = move |n: u64| rng.below(n);
        for (n, m) in [(1usize, 0usize), (6, 8), (50, 200), (400, 3000)] {
            let mut perm: Vec<Node> = (0..n as Node).collect();
            for i in (1..n).rev() {
                perm.swap(i, next(i as u64 + 1) as usize);
            }
            let edges: Vec<(Node, Node)> = (0..m)
                .filter_map(|_| {
                    let (a, b) = (next(n as u64) as usize, next(n as u64) as usize);
                    (a < b).then(|| (perm[a], perm[b]))
                })
                .collect();
            let csr = Csr::build(n, &edges, false);
            // Times for all but the last tenth of the nodes; 0 (none) now and then.
            let time: Vec<u64> = (0..n - n / 10).map(|_| next(4) * next(1000)).collect();
            let order = topo_order_timed(n, &csr, None, &time).expect("a DAG");
            let mut pos = vec![usize::MAX; n];
            for (i, &x) in order.iter().enumerate() {
                assert_eq!(pos[x as usize], usize::MAX, "node {x} twice");
                pos[x as usize] = i;
            }
            for &(u, v) in &edges {
                assert!(
                    pos[u as usize] < pos[v as usize],
                    "edge {u} -> {v} backward"
                );
            }
            assert_eq!(topo_order(n, &csr).map(|o| o.len()), Ok(n));
        }
        // No edges: untimed nodes first, then by time.
        let csr = Csr::build(4, &[], false);
        assert_eq!(
            topo_order_timed(4, &csr, None, &[30, 0, 10]),
            Ok(vec![3, 1, 2, 0])
        );
        let cycle = Csr::build(3, &[(0, 1), (1, 2), (2, 1)], false);
        assert!(topo_order_timed(3, &cycle, None, &[1, 2, 3]).is_err());
    }
}
