//! What deleted transactions knew, kept as edges: every path between kept transactions through
//! deleted (or synthetic) nodes becomes a carried edge, through a hub where one node would fan
//! out too far, reduced transitively against what the next round rebuilds anyway.

use super::Online;
use crate::graph::{Csr, EdgeKind, Node};
use crate::pipeline::{Final, HUB, START};

impl Online {
    /// Drops carried edges that other edges of the next round already imply (a transitive
    /// reduction of what is carried). Reachability over the next round's nodes is computed
    /// exactly with bitsets, in reverse topological order; above a size cap nothing is dropped.
    pub(super) fn reduce(
        &self,
        n: usize,
        order: &[Node],
        cedges: Vec<(Node, Node)>,
        rebuilt: &[(Node, Node)],
    ) -> Vec<(Node, Node)> {
        let mut idx = vec![u32::MAX; n];
        for &(u, v) in cedges.iter().chain(rebuilt) {
            idx[u as usize] = 0;
            idx[v as usize] = 0;
        }
        let mut m = 0u32;
        for &x in order {
            if idx[x as usize] == 0 {
                idx[x as usize] = m;
                m += 1;
            }
        }
        let m = m as usize;
        if !self.opts.reduce || m > self.opts.reduce_cap {
            return cedges;
        }
        // (source, target, carried edge index or MAX), by source, targets in topological order.
        let mut all: Vec<(u32, u32, u32)> = cedges
            .iter()
            .enumerate()
            .map(|(i, &(u, v))| (idx[u as usize], idx[v as usize], i as u32))
            .collect();
        all.extend(
            rebuilt
                .iter()
                .map(|&(u, v)| (idx[u as usize], idx[v as usize], u32::MAX)),
        );
        all.sort_unstable();
        let words = m.div_ceil(64);
        let mut reach = vec![0u64; m * words];
        let mut keep = vec![true; cedges.len()];
        let mut end = all.len();
        for u in (0..m).rev() {
            let start = all[..end].partition_point(|e| (e.0 as usize) < u);
            let (lo, hi) = reach.split_at_mut((u + 1) * words);
            let row = &mut lo[u * words..];
            for &(_, v, ci) in &all[start..end] {
                let v = v as usize;
                if row[v / 64] >> (v % 64) & 1 == 1 {
                    if ci != u32::MAX {
                        keep[ci as usize] = false;
                    }
                    continue;
                }
                let vrow = &hi[(v - u - 1) * words..(v - u) * words];
                for (a, b) in row.iter_mut().zip(vrow) {
                    *a |= b;
                }
                row[v / 64] |= 1 << (v % 64);
            }
            end = start;
        }
        cedges
            .into_iter()
            .zip(keep)
            .filter_map(|(e, k)| k.then_some(e))
            .collect()
    }

    /// Contracts the graph (`csr`, in topological `order`) onto the transactions kept: the
    /// carried edges for the next round.
    pub(super) fn carry(
        &mut self,
        fin: &Final,
        txn_slab: &[u32],
        deleted: &[bool],
        csr: &Csr,
        order: &[Node],
    ) {
        let b = &fin.b;
        let n = b.num_nodes;
        let kept = |x: Node| b.txn_of(x).is_some() && !deleted[x as usize];
        const NOT_HUB: u32 = u32::MAX;
        let mut hub_of = vec![NOT_HUB; n];
        let mut hubs = 0u32;
        let mut outs: Vec<Vec<Node>> = vec![Vec::new(); n];
        let cap = self.opts.hub_cap;
        for &x in order.iter().rev() {
            if kept(x) || x == crate::graph::INIT {
                continue;
            }
            let mut set: Vec<Node> = Vec::new();
            for &(y, _) in csr.succ(x) {
                if kept(y) || hub_of[y as usize] != NOT_HUB {
                    set.push(y);
                } else {
                    set.extend_from_slice(&outs[y as usize]);
                }
            }
            set.sort_unstable();
            set.dedup();
            if set.len() > cap {
                hub_of[x as usize] = hubs;
                hubs += 1;
            }
            outs[x as usize] = set;
        }
        let name = |x: Node| -> u32 {
            if hub_of[x as usize] != NOT_HUB {
                HUB | hub_of[x as usize]
            } else {
                let id = txn_slab[b.txn_of(x).unwrap() as usize];
                debug_assert!(id & (HUB | START) == 0);
                // A path from or to a snapshot is carried as one (snapshot isolation).
                if b.is_start(x) {
                    id | START
                } else {
                    id
                }
            }
        };
        // Node-space edges of the next round: those to carry, and those rebuilt anyway.
        let mut cedges: Vec<(Node, Node)> = Vec::new();
        let mut rebuilt: Vec<(Node, Node)> = Vec::new();
        for x in 0..n as Node {
            if !(kept(x) || hub_of[x as usize] != NOT_HUB) {
                continue;
            }
            let from_hub = hub_of[x as usize] != NOT_HUB;
            for &(y, e) in csr.succ(x) {
                if kept(y) || hub_of[y as usize] != NOT_HUB {
                    let kind = b.labels[e as usize].kind;
                    // With repeated values a write→read edge may hold only by a choice that
                    // pruning settled with the help of the very edges it would let go: it is
                    // not rebuilt for sure, so nothing carried is dropped for it.
                    let again = match kind {
                        EdgeKind::Session | EdgeKind::Within => true,
                        EdgeKind::Wr => !self.repeated,
                        _ => false,
                    };
                    if !from_hub && kept(y) && again {
                        rebuilt.push((x, y));
                    } else {
                        cedges.push((x, y));
                    }
                } else {
                    for &z in &outs[y as usize] {
                        cedges.push((x, z));
                    }
                }
            }
        }
        cedges.sort_unstable();
        cedges.dedup();
        let cedges = self.reduce(n, order, cedges, &rebuilt);
        let mut edges: Vec<(u32, u32)> = cedges.iter().map(|&(u, v)| (name(u), name(v))).collect();
        edges.sort_unstable();
        edges.dedup();
        // Hubs nobody reaches carry nothing.
        loop {
            let mut indeg = vec![0u32; hubs as usize];
            for &(_, v) in &edges {
                if v & HUB != 0 {
                    indeg[(v & !HUB) as usize] += 1;
                }
            }
            let before = edges.len();
            edges.retain(|&(u, _)| u & HUB == 0 || indeg[(u & !HUB) as usize] > 0);
            if edges.len() == before {
                // Renumber the hubs still used.
                let mut used = vec![NOT_HUB; hubs as usize];
                let mut next = 0;
                for &(u, v) in &edges {
                    for x in [u, v] {
                        if x & HUB != 0 && used[(x & !HUB) as usize] == NOT_HUB {
                            used[(x & !HUB) as usize] = next;
                            next += 1;
                        }
                    }
                }
                let m = |x: u32| {
                    if x & HUB != 0 {
                        HUB | used[(x & !HUB) as usize]
                    } else {
                        x
                    }
                };
                for e in &mut edges {
                    *e = (m(e.0), m(e.1));
                }
                self.hubs = next;
                break;
            }
        }
        self.carried = edges;
    }
}
