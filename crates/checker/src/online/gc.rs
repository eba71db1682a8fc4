//! Garbage collection after an accepted round: what is old, superseded, in the frontier, safe
//! to delete, or foldable into a key's initial version; then deletion.

use super::{Online, NONE};
use crate::graph::{self, Csr, Node};
use crate::pipeline::Final;
use krait_history::fxhash::FxHashMap;
use krait_history::{KeyId, OpKind, TxnStatus};

impl Online {
    /// Garbage collection after an accepted round; returns how many transactions it deleted.
    pub(super) fn collect(&mut self, fin: &Final, txn_slab: &[u32], agree: u32) -> usize {
        let b = &fin.b;
        let n = b.num_nodes;
        let old_epoch = |e: u32| e != NONE && e <= agree - 2;
        let slab_of = |x: Node| -> Option<u32> { b.txn_of(x).map(|t| txn_slab[t as usize]) };
        let csr = Csr::build(n, &b.edges, false);
        let order = graph::topo_order(n, &csr).expect("an accepted round's known graph is acyclic");
        let mut old = vec![false; n];
        for x in 0..n as Node {
            if let Some(id) = slab_of(x) {
                old[x as usize] = old_epoch(self.slab[id as usize].as_ref().unwrap().epoch);
            }
        }
        // Everything with a path to the node is old.
        let mut anc_ok: Vec<bool> = (0..n as Node)
            .map(|x| b.txn_of(x).is_none() || old[x as usize])
            .collect();

        for &u in &order {
            if !anc_ok[u as usize] {
                for &(v, _) in csr.succ(u) {
                    anc_ok[v as usize] = false;
                }
            }
        }
        let mut pos = vec![0u32; n];
        for (i, &x) in order.iter().enumerate() {
            pos[x as usize] = i as u32;
        }
        // Old writes, and per key the old writer last in topological order: nothing old can
        // follow it, so it is in the frontier without a search.
        let mut old_writes: krait_history::fxhash::FxHashSet<(KeyId, Node)> = Default::default();
        let mut last_writer: FxHashMap<KeyId, Node> = FxHashMap::default();
        let mut writers_of: FxHashMap<KeyId, Vec<Node>> = FxHashMap::default();
        let mut young_writers: FxHashMap<KeyId, Vec<Node>> = FxHashMap::default();
        for x in 0..n as Node {
            if !old[x as usize] {
                if let Some(id) = slab_of(x) {
                    let l = self.slab[id as usize].as_ref().unwrap();
                    for o in l.t.ops.iter().filter(|o| o.0 == OpKind::Write) {
                        young_writers.entry(o.1).or_default().push(x);
                    }
                }
                continue;
            }
            let l = self.slab[slab_of(x).unwrap() as usize].as_ref().unwrap();
            for o in l.t.ops.iter().filter(|o| o.0 == OpKind::Write) {
                if old_writes.insert((o.1, x)) {
                    writers_of.entry(o.1).or_default().push(x);
                }
                let e = last_writer.entry(o.1).or_insert(x);
                if pos[x as usize] > pos[*e as usize] {
                    *e = x;
                }
            }
        }
        // Reachability to transactions (all on session chains) in O(1), when it fits.
        let reach = (graph::ChainReach::memory_needed(n, b.num_chains)
            <= self.opts.check.reach_memory_cap)
            .then(|| graph::ChainReach::build(n, b.num_chains, b.chain_of.clone(), &csr, &order));
        let mut superseded = vec![false; n];
        let mut frontier_keys: Vec<(Node, Vec<KeyId>)> = Vec::new();
        let mut seen = vec![0u32; n];
        let mut stamp = 0u32;
        let mut stack: Vec<Node> = Vec::new();
        for x in 0..n as Node {
            if !(old[x as usize] && anc_ok[x as usize]) {
                continue;
            }
            let id = slab_of(x).unwrap();
            let l = self.slab[id as usize].as_ref().unwrap();
            let mut keys: Vec<KeyId> =
                l.t.ops
                    .iter()
                    .filter(|o| o.0 == OpKind::Write)
                    .map(|o| o.1)
                    .collect();
            keys.sort_unstable();
            keys.dedup();
            // The last old writer of a key is in its frontier without a search.
            let mut uncovered: Vec<KeyId> = keys
                .iter()
                .copied()
                .filter(|k| last_writer.get(k) == Some(&x))
                .collect();
            if !uncovered.is_empty() && !self.opts.fold {
                continue;
            }
            for &k in keys.iter().filter(|k| last_writer.get(k) != Some(&x)) {
                let covered = match &reach {
                    // Exactly: does x reach an old writer of the key placed after it?
                    Some(cr) => writers_of[&k].iter().any(|&y| {
                        y != x && pos[y as usize] > pos[x as usize] && cr.reaches_chained(x, y)
                    }),
                    // Without the index: a bounded search along the key's own edges (chains,
                    // version order, anti-dependencies); giving up keeps the writer, which is
                    // safe.
                    None => {
                        stamp += 1;
                        stack.clear();
                        stack.push(x);
                        seen[x as usize] = stamp;
                        let mut visited = 0;
                        let mut found = false;
                        'dfs: while let Some(u) = stack.pop() {
                            for &(v, e) in csr.succ(u) {
                                if b.labels[e as usize].key != k
                                    || seen[v as usize] == stamp
                                    || pos[v as usize] > pos[last_writer[&k] as usize]
                                {
                                    continue;
                                }
                                seen[v as usize] = stamp;
                                if old_writes.contains(&(k, v)) {
                                    found = true;
                                    break 'dfs;
                                }
                                visited += 1;
                                if visited > self.opts.frontier_limit {
                                    break 'dfs;
                                }
                                stack.push(v);
                            }
                        }
                        found
                    }
                };
                if !covered {
                    uncovered.push(k);
                }
            }
            superseded[x as usize] = uncovered.is_empty();
            if !uncovered.is_empty() {
                frontier_keys.push((x, uncovered));
            }
        }

        // Cycles that undecided constraints could still close.
        let gcsr = crate::ser::with_both_sides(b, &fin.remaining);
        let (comp, ncomp) = graph::scc(n, &gcsr);
        let mut size = vec![0u32; ncomp as usize];
        let mut all_sup = vec![true; ncomp as usize];
        for x in 0..n {
            size[comp[x] as usize] += 1;
            if b.txn_of(x as Node).is_some() && !superseded[x] {
                all_sup[comp[x] as usize] = false;
            }
        }
        let mut deleted = vec![false; n];
        let mut count = 0;
        for x in 0..n {
            let c = comp[x] as usize;
            if superseded[x] && (size[c] == 1 || all_sup[c]) {
                deleted[x] = true;
            }
        }
        // A frontier writer that is the only possible latest version of its frontier keys
        // (every other old writer of the key reaches it and goes now, every younger writer
        // follows it) is the key's initial version for everything to come: keep the value,
        // delete the transaction.
        let mut folds: Vec<(KeyId, u64, u64)> = Vec::new();
        if let (true, Some(cr)) = (self.opts.fold, &reach) {
            let unknown_writes: krait_history::fxhash::FxHashSet<KeyId> = txn_slab
                .iter()
                .enumerate()
                .filter(|&(t, _)| b.txn_node[t] == NONE)
                .flat_map(|(_, &id)| {
                    let l = self.slab[id as usize].as_ref().unwrap();
                    let unknown = l.t.status == TxnStatus::Unknown;
                    l.t.ops
                        .iter()
                        .filter(move |o| unknown && o.0 == OpKind::Write)
                        .map(|o| o.1)
                })
                .collect();
            for (x, keys) in &frontier_keys {
                let x = *x;
                if size[comp[x as usize] as usize] != 1 {
                    continue;
                }
                let ok = keys.iter().all(|k| {
                    Some(*k) != self.fence_key
                        && !unknown_writes.contains(k)
                        && writers_of[k]
                            .iter()
                            .all(|&y| y == x || (deleted[y as usize] && cr.reaches_chained(y, x)))
                        && young_writers
                            .get(k)
                            .is_none_or(|ys| ys.iter().all(|&y| cr.reaches_chained(x, y)))
                });
                if !ok {
                    continue;
                }
                deleted[x as usize] = true;
                let l = self.slab[slab_of(x).unwrap() as usize].as_ref().unwrap();
                for &k in keys {
                    let v =
                        l.t.ops
                            .iter()
                            .rev()
                            .find(|o| o.0 == OpKind::Write && o.1 == k);
                    folds.push((k, v.unwrap().2, l.t.ext));
                }
            }
        }
        self.carry(fin, txn_slab, &deleted, &csr, &order);
        self.last_superseded.clear();
        self.last_deleted.clear();
        for x in 0..n {
            if superseded[x] || deleted[x] {
                let id = slab_of(x as Node).unwrap();
                let ext = self.slab[id as usize].as_ref().unwrap().t.ext;
                if superseded[x] {
                    self.last_superseded.push(ext);
                }
                if deleted[x] {
                    self.last_deleted.push(ext);
                }
            }
        }
        let folded: krait_history::fxhash::FxHashSet<(KeyId, u64)> =
            folds.iter().map(|&(k, v, _)| (k, v)).collect();
        let mut gone: Vec<u32> = Vec::new();
        for x in 0..n {
            if deleted[x] {
                gone.push(slab_of(x as Node).unwrap());
            }
        }
        // Old aborted transactions: nobody may read them, and they are in no graph.
        for (t, &id) in txn_slab.iter().enumerate() {
            let l = self.slab[id as usize].as_ref().unwrap();
            if b.txn_node[t] == NONE && l.t.status == TxnStatus::Aborted && old_epoch(l.epoch) {
                gone.push(id);
            }
        }
        for &id in &gone {
            let l = self.slab[id as usize].take().unwrap();
            for &(kind, k, v) in &l.t.ops {
                if kind == OpKind::Write {
                    // Reads of aborted writes are G1a, not stale: they just find no writer.
                    if self.writes.remove(&(k, v)).is_some()
                        && l.t.status != TxnStatus::Aborted
                        && !folded.contains(&(k, v))
                    {
                        self.remember_deleted(k, v, l.t.ext);
                    }
                    if Some(k) == self.fence_key {
                        self.fence_epoch.remove(&v);
                    }
                }
            }
            self.free.push(id);
            self.live_count -= 1;
            count += 1;
        }
        for &(k, v, ext) in &folds {
            if let Some((old, old_ext)) = self.init_value.insert(k, (v, ext)) {
                self.remember_deleted(k, old, old_ext);
            }
        }
        if count > 0 {
            for s in &mut self.sessions {
                let slab = &self.slab;
                s.live.retain(|&id| slab[id as usize].is_some());
                s.unassigned.retain(|&id| slab[id as usize].is_some());
            }
            // Reads of deleted writes: what they implied is now carried.
            for i in 0..self.slab.len() {
                let Some(l) = self.slab[i].as_ref() else {
                    continue;
                };
                let mut add = Vec::new();
                for (j, &(kind, k, v)) in l.t.ops.iter().enumerate() {
                    if kind == OpKind::Read
                        && !self.writes.contains_key(&(k, v))
                        && l.ghost.binary_search(&(j as u32)).is_err()
                    {
                        add.push(j as u32);
                    }
                }
                if !add.is_empty() {
                    let l = self.slab[i].as_mut().unwrap();
                    l.ghost.extend(add);
                    l.ghost.sort_unstable();
                }
            }
        }
        count
    }
}
