//! Garbage collection after an accepted round: what is old, superseded, in the frontier, safe
//! to delete, or foldable into a key's initial version; then deletion.

use super::{Live, Online, Writer, NONE};
use crate::graph::{self, ChainReach, Csr, Node};
use crate::pipeline::Final;
use krait_history::{FxHashMap, FxHashSet};
use krait_history::{History, KeyId, OpKind, TxnStatus};

/// One accepted round's graph, seen by garbage collection: per node whether it is old and all
/// its ancestors are, its topological position, and the writers of each key.
struct Scan<'a> {
    fin: &'a Final,
    txn_slab: &'a [u32],
    csr: Csr,
    order: Vec<Node>,
    pos: Vec<u32>,
    old: Vec<bool>,
    /// Everything with a path to the node is old.
    anc_ok: Vec<bool>,
    old_writes: FxHashSet<(KeyId, Node)>,
    /// Per key, the old writer last in topological order: nothing old can follow it, so it is
    /// in the frontier without a search.
    last_writer: FxHashMap<KeyId, Node>,
    writers_of: FxHashMap<KeyId, Vec<Node>>,
    young_writers: FxHashMap<KeyId, Vec<Node>>,
    /// Reachability to transactions (all on session chains) in O(1), when it fits.
    reach: Option<ChainReach>,
}

impl Scan<'_> {
    fn slab_of(&self, x: Node) -> Option<u32> {
        self.fin.b.txn_of(x).map(|t| self.txn_slab[t as usize])
    }
}

/// Keys written by a transaction, each once.
fn written_keys(l: &Live) -> Vec<KeyId> {
    let mut keys: Vec<KeyId> =
        l.t.ops
            .iter()
            .filter(|o| o.0 == OpKind::Write)
            .map(|o| o.1)
            .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

impl Online {
    pub(super) fn live_ref(&self, id: u32) -> &Live {
        self.slab[id as usize].as_ref().unwrap()
    }

    /// Garbage collection after an accepted round; returns how many transactions it deleted.
    /// `rep`, where values may repeat: the round's history, the record op of each of its ops,
    /// and the round's own `agree`, which says whose reads it left out (see `choosable`).
    pub(super) fn collect(
        &mut self,
        fin: &Final,
        txn_slab: &[u32],
        agree: u32,
        rep: Option<(&History, &[u32], u32)>,
    ) -> usize {
        let s = self.scan(fin, txn_slab, agree);
        let n = fin.b.num_nodes;
        let (superseded, frontier_keys) = self.superseded(&s);
        // Cycles that undecided constraints could still close.
        let gcsr = crate::ser::with_both_sides(&fin.b, &fin.remaining);
        let (comp, ncomp) = graph::scc(n, &gcsr);
        let mut size = vec![0u32; ncomp as usize];
        let mut all_sup = vec![true; ncomp as usize];
        for x in 0..n {
            size[comp[x] as usize] += 1;
            if fin.b.txn_of(x as Node).is_some() && !superseded[x] {
                all_sup[comp[x] as usize] = false;
            }
        }
        let mut deleted: Vec<bool> = (0..n)
            .map(|x| {
                let c = comp[x] as usize;
                superseded[x] && (size[c] == 1 || all_sup[c])
            })
            .collect();
        let b = &fin.b;
        // Causal consistency: the ends of edges unknown outcomes would force stay.
        let pins = self.causal_pins();
        let pinned = |x: Node| {
            b.txn_of(x)
                .is_some_and(|t| pins.contains(&txn_slab[t as usize]))
        };
        if !pins.is_empty() {
            for (x, d) in deleted.iter_mut().enumerate() {
                *d &= !pinned(x as Node);
            }
        }
        // A transaction goes whole: under snapshot isolation, snapshot and commit both.
        if b.split {
            for x in 1..b.first_start {
                let s = b.start(x) as usize;
                let both = deleted[x as usize] && deleted[s];
                deleted[x as usize] = both;
                deleted[s] = both;
            }
        }
        // After the rule above: whether a reader goes is its whole transaction's fate (a
        // snapshot node alone may look deletable while its commit stays).
        // With repeated values, reads of young transactions are not checked yet: what they
        // read must stay, aborted or not, and they are no ghosts.
        let young =
            rep.map(|(_, _, round_agree)| (self.young_reads(txn_slab, round_agree), round_agree));
        if let Some((young_reads, _)) = &young {
            let pin = self.pinned(fin, txn_slab, young_reads, &deleted);
            for (d, p) in deleted.iter_mut().zip(pin) {
                *d &= !p;
            }
        }
        let alone = |x: Node| {
            size[comp[x as usize] as usize] == 1 && size[comp[b.start(x) as usize] as usize] == 1
        };
        // A folded initial version would stand for a value a later write may repeat.
        let folds = match rep {
            None if pins.is_empty() => self.folds(&s, &frontier_keys, &mut deleted, alone),
            None => {
                let unpinned: Vec<_> = frontier_keys
                    .iter()
                    .filter(|(x, _)| !pinned(*x))
                    .cloned()
                    .collect();
                self.folds(&s, &unpinned, &mut deleted, alone)
            }
            Some(_) => Vec::new(),
        };
        self.carry(fin, txn_slab, &deleted, &s.csr, &s.order);
        let ghosts = match rep {
            Some((h, op_src, _)) => self.resolved_ghosts(fin, txn_slab, h, op_src, &deleted),
            None => Vec::new(),
        };
        self.delete(
            &s,
            &superseded,
            &deleted,
            &folds,
            agree,
            &ghosts,
            young.as_ref(),
        )
    }

    /// Which nodes are old (epoch ≤ agree − 2) with only old ancestors, in topological order,
    /// and who wrote each key.
    fn scan<'a>(&self, fin: &'a Final, txn_slab: &'a [u32], agree: u32) -> Scan<'a> {
        let b = &fin.b;
        let n = b.num_nodes;
        let csr = Csr::build(n, &b.edges, false);
        let order = graph::topo_order(n, &csr).expect("an accepted round's known graph is acyclic");
        let mut s = Scan {
            fin,
            txn_slab,
            csr,
            order,
            pos: vec![0u32; n],
            old: vec![false; n],
            anc_ok: Vec::new(),
            old_writes: Default::default(),
            last_writer: Default::default(),
            writers_of: Default::default(),
            young_writers: Default::default(),
            reach: None,
        };
        for x in 0..n as Node {
            if let Some(id) = s.slab_of(x) {
                let e = self.live_ref(id).epoch;
                s.old[x as usize] = e != NONE && e <= agree - 2;
            }
        }
        s.anc_ok = (0..n as Node)
            .map(|x| b.txn_of(x).is_none() || s.old[x as usize])
            .collect();
        for &u in &s.order {
            if !s.anc_ok[u as usize] {
                for &(v, _) in s.csr.succ(u) {
                    s.anc_ok[v as usize] = false;
                }
            }
        }
        for (i, &x) in s.order.iter().enumerate() {
            s.pos[x as usize] = i as u32;
        }
        for x in 0..n as Node {
            let Some(id) = s.slab_of(x) else { continue };
            // A transaction writes at its commit (its snapshot node is no writer).
            if b.is_start(x) {
                continue;
            }
            let l = self.live_ref(id);
            for o in l.t.ops.iter().filter(|o| o.0 == OpKind::Write) {
                if !s.old[x as usize] {
                    s.young_writers.entry(o.1).or_default().push(x);
                    continue;
                }
                if s.old_writes.insert((o.1, x)) {
                    s.writers_of.entry(o.1).or_default().push(x);
                }
                let e = s.last_writer.entry(o.1).or_insert(x);
                if s.pos[x as usize] > s.pos[*e as usize] {
                    *e = x;
                }
            }
        }
        s.reach = (ChainReach::memory_needed(n, b.num_chains) <= self.opts.check.reach_memory_cap)
            .then(|| ChainReach::build(n, b.num_chains, b.chain_of.clone(), &s.csr, &s.order));
        s
    }

    /// Old transactions with only old ancestors that are superseded (for every key they wrote,
    /// the graph leads to a later old writer of it), and the frontier: the others, with the
    /// keys no later old writer covers.
    fn superseded(&self, s: &Scan) -> (Vec<bool>, Vec<(Node, Vec<KeyId>)>) {
        let n = s.fin.b.num_nodes;
        let mut superseded = vec![false; n];
        let mut frontier_keys: Vec<(Node, Vec<KeyId>)> = Vec::new();
        let mut search = Search {
            seen: vec![0u32; n],
            stamp: 0,
            stack: Vec::new(),
        };
        let b = &s.fin.b;
        for x in 0..n as Node {
            // Decided at the commit node, whose ancestors include its snapshot's.
            if b.is_start(x) || !(s.old[x as usize] && s.anc_ok[x as usize]) {
                continue;
            }
            let keys = written_keys(self.live_ref(s.slab_of(x).unwrap()));
            // The last old writer of a key is in its frontier without a search.
            let mut uncovered: Vec<KeyId> = keys
                .iter()
                .copied()
                .filter(|k| s.last_writer.get(k) == Some(&x))
                .collect();
            if !uncovered.is_empty() && !self.opts.fold {
                continue;
            }
            for &k in keys.iter().filter(|k| s.last_writer.get(k) != Some(&x)) {
                if !self.covered(s, &mut search, x, k) {
                    uncovered.push(k);
                }
            }
            superseded[x as usize] = uncovered.is_empty();
            superseded[b.start(x) as usize] = uncovered.is_empty();
            if !uncovered.is_empty() {
                frontier_keys.push((x, uncovered));
            }
        }
        (superseded, frontier_keys)
    }

    /// Whether old writer `x` of key `k` reaches an old writer of `k` placed after it.
    fn covered(&self, s: &Scan, search: &mut Search, x: Node, k: KeyId) -> bool {
        if let Some(cr) = &s.reach {
            return s.writers_of[&k].iter().any(|&y| {
                y != x && s.pos[y as usize] > s.pos[x as usize] && cr.reaches_chained(x, y)
            });
        }
        // Without the index: a bounded search along the key's own edges (chains, version
        // order, anti-dependencies); giving up keeps the writer, which is safe.
        let labels = &s.fin.b.labels;
        let last = s.pos[s.last_writer[&k] as usize];
        search.stamp += 1;
        search.stack.clear();
        search.stack.push(x);
        search.seen[x as usize] = search.stamp;
        let mut visited = 0;
        while let Some(u) = search.stack.pop() {
            for &(v, e) in s.csr.succ(u) {
                let l = labels[e as usize];
                if (l.key != k && l.kind != crate::graph::EdgeKind::Within)
                    || search.seen[v as usize] == search.stamp
                    || s.pos[v as usize] > last
                {
                    continue;
                }
                search.seen[v as usize] = search.stamp;
                if s.old_writes.contains(&(k, v)) {
                    return true;
                }
                visited += 1;
                if visited > self.opts.frontier_limit {
                    return false;
                }
                search.stack.push(v);
            }
        }
        false
    }

    /// A frontier writer that is the only possible latest version of its frontier keys (every
    /// other old writer of the key reaches it and goes now, every younger writer follows it) is
    /// the key's initial version for everything to come: keep the value, delete the
    /// transaction. Returns (key, value, writer's external id) per fold.
    fn folds(
        &self,
        s: &Scan,
        frontier_keys: &[(Node, Vec<KeyId>)],
        deleted: &mut [bool],
        alone: impl Fn(Node) -> bool,
    ) -> Vec<(KeyId, u64, u64)> {
        let mut folds = Vec::new();
        let (true, Some(cr)) = (self.opts.fold, &s.reach) else {
            return folds;
        };
        let b = &s.fin.b;
        let unknown_writes: FxHashSet<KeyId> = s
            .txn_slab
            .iter()
            .enumerate()
            .filter(|&(t, _)| b.txn_node[t] == NONE)
            .flat_map(|(_, &id)| {
                let l = self.live_ref(id);
                let unknown = l.t.status == TxnStatus::Unknown;
                l.t.ops
                    .iter()
                    .filter(move |o| unknown && o.0 == OpKind::Write)
                    .map(|o| o.1)
            })
            .collect();
        for &(x, ref keys) in frontier_keys {
            if !alone(x) {
                continue;
            }
            let ok = keys.iter().all(|k| {
                Some(*k) != self.fence_key
                    && !unknown_writes.contains(k)
                    && s.writers_of[k]
                        .iter()
                        .all(|&y| y == x || (deleted[y as usize] && cr.reaches_chained(y, x)))
                    && s.young_writers
                        .get(k)
                        .is_none_or(|ys| ys.iter().all(|&y| cr.reaches_chained(x, y)))
            });
            if !ok {
                continue;
            }
            deleted[x as usize] = true;
            deleted[b.start(x) as usize] = true;
            let l = self.live_ref(s.slab_of(x).unwrap());
            for &k in keys {
                let v =
                    l.t.ops
                        .iter()
                        .rev()
                        .find(|o| o.0 == OpKind::Write && o.1 == k);
                folds.push((k, v.unwrap().2, l.t.ext));
            }
        }
        folds
    }

    /// Deletes what was found deletable (and old aborted transactions), remembers deleted writes
    /// for stale-read certificates, installs the folded initial versions, and marks reads of
    /// deleted writes as ghosts. Returns how many transactions went.
    fn delete(
        &mut self,
        s: &Scan,
        superseded: &[bool],
        deleted: &[bool],
        folds: &[(KeyId, u64, u64)],
        agree: u32,
        ghosts: &[(u32, u32)],
        young: Option<&(FxHashSet<(KeyId, u64)>, u32)>,
    ) -> usize {
        let young_read = |kv: &(KeyId, u64)| young.is_some_and(|(reads, _)| reads.contains(kv));
        let b = &s.fin.b;
        self.last_superseded.clear();
        self.last_deleted.clear();
        let mut gone: Vec<u32> = Vec::new();
        for x in 0..b.num_nodes {
            if b.is_start(x as Node) {
                continue;
            }
            if superseded[x] || deleted[x] {
                let id = s.slab_of(x as Node).unwrap();
                let ext = self.live_ref(id).t.ext;
                if superseded[x] {
                    self.last_superseded.push(ext);
                }
                if deleted[x] {
                    self.last_deleted.push(ext);
                    gone.push(id);
                }
            }
        }
        // Old aborted transactions: nobody may read them, and they are in no graph.
        for (t, &id) in s.txn_slab.iter().enumerate() {
            let l = self.live_ref(id);
            let old = l.epoch != NONE
                && l.epoch <= agree - 2
                && !l.t.ops.iter().any(|o| young_read(&(o.1, o.2)));
            if b.txn_node[t] == NONE && l.t.status == TxnStatus::Aborted && old {
                gone.push(id);
            }
        }
        let folded: FxHashSet<(KeyId, u64)> = folds.iter().map(|&(k, v, _)| (k, v)).collect();
        for &id in &gone {
            let l = self.slab[id as usize].take().unwrap();
            if l.fence && l.epoch != NONE && l.t.status == TxnStatus::Committed {
                let s = &mut self.sessions[l.t.session as usize];
                s.gone_fence = if s.gone_fence == NONE {
                    l.epoch
                } else {
                    s.gone_fence.max(l.epoch)
                };
            }
            for &(kind, k, v) in &l.t.ops {
                if kind != OpKind::Write {
                    continue;
                }
                // Reads of aborted writes are G1a, not stale: they just find no writer.
                if self.writes.remove((k, v), Writer::Live(id))
                    && l.t.status != TxnStatus::Aborted
                    && !folded.contains(&(k, v))
                {
                    self.remember_deleted(k, v, l.t.ext);
                }
                if Some(k) == self.fence_key {
                    self.fence_epoch.remove(&v);
                }
            }
            self.free.push(id);
            self.live_count -= 1;
        }
        for &(k, v, ext) in folds {
            if let Some((old, old_ext)) = self.init_value.insert(k, (v, ext)) {
                self.remember_deleted(k, old, old_ext);
            }
        }
        for &(id, op) in ghosts {
            if let Some(l) = self.slab[id as usize].as_mut() {
                if let Err(at) = l.ghost.binary_search(&op) {
                    l.ghost.insert(at, op);
                }
            }
        }
        if !gone.is_empty() {
            self.forget_deleted(young.map(|y| y.1));
        }
        gone.len()
    }

    /// Drops deleted transactions from the sessions, and marks reads of deleted writes as
    /// ghosts: what they implied is now carried.
    fn forget_deleted(&mut self, young_agree: Option<u32>) {
        for s in &mut self.sessions {
            let slab = &self.slab;
            s.live.retain(|&id| slab[id as usize].is_some());
            s.unassigned.retain(|&id| slab[id as usize].is_some());
        }
        for i in 0..self.slab.len() {
            let Some(l) = self.slab[i].as_ref() else {
                continue;
            };
            if young_agree.is_some_and(|a| self.young(l.epoch, a)) {
                continue;
            }
            let mut add = Vec::new();
            for (j, &(kind, k, v)) in l.t.ops.iter().enumerate() {
                // A read of the initial value may have read the initial state, which stays.
                if kind == OpKind::Read
                    && !self.writes.contains_key(&(k, v))
                    && !(self.repeated && self.initial == Some(v))
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
}

/// Scratch space for bounded frontier searches, reused across writers.
struct Search {
    seen: Vec<u32>,
    stamp: u32,
    stack: Vec<Node>,
}
