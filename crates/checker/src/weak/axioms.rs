//! The edges each weak level forces: for a read of x from t1 by t2, every other writer t3 of x
//! that t2 sees by the level's rule must precede t1. Linear in the facts for read committed and
//! read atomic (writers a transaction read are indexed by the keys they wrote, per
//! transaction); causal consistency keeps a vector clock per transaction over the session
//! chains and finds, per chain, the last writer of x in the causal past by binary search.

use super::facts::Facts;
use super::{Forced, Rule};
use crate::graph::{self, Csr, Node, INIT};
use krait_history::FxHashMap;

const NIL: u32 = u32::MAX;

/// Writers a transaction read, listed per key they wrote: a linked list per key in `cells`,
/// stamped with the reading transaction so nothing is cleared between transactions.
struct ByKey {
    stamp: Vec<u32>,
    head: Vec<u32>,
    /// (writer, the read op that read it, next cell)
    cells: Vec<(Node, u32, u32)>,
    added: Vec<u32>,
}

impl ByKey {
    fn new(f: &Facts) -> ByKey {
        ByKey {
            stamp: vec![NIL; f.num_keys],
            head: vec![NIL; f.num_keys],
            cells: Vec::new(),
            added: vec![NIL; f.num_nodes()],
        }
    }
    /// Lists `w` (read by op `via` of `t2`) under every key it wrote, once per `t2`.
    fn add(&mut self, f: &Facts, t2: Node, w: Node, via: u32) {
        if w == INIT || self.added[w as usize] == t2 {
            return;
        }
        self.added[w as usize] = t2;
        for &k in f.writes_of(w) {
            let k = k as usize;
            if self.stamp[k] != t2 {
                self.stamp[k] = t2;
                self.head[k] = NIL;
            }
            self.cells.push((w, via, self.head[k]));
            self.head[k] = self.cells.len() as u32 - 1;
        }
    }
    /// Every writer of `k` listed for `t2`, with the op that read it.
    fn each(&self, t2: Node, k: u32, mut f: impl FnMut(Node, u32)) {
        if self.stamp[k as usize] != t2 {
            return;
        }
        let mut c = self.head[k as usize];
        while c != NIL {
            let (w, via, next) = self.cells[c as usize];
            f(w, via);
            c = next;
        }
    }
}

fn dedup(mut v: Vec<Forced>) -> Vec<Forced> {
    v.sort_by_key(|e| (e.t3, e.t1, e.rule, e.op));
    v.dedup_by_key(|e| (e.t3, e.t1));
    v
}

/// Read committed: a writer of x that t2 read *earlier* precedes the writer of x it reads now.
pub(super) fn read_committed(f: &Facts) -> Vec<Forced> {
    let mut out = Vec::new();
    let mut bk = ByKey::new(f);
    for t2 in 1..f.num_nodes() as Node {
        bk.cells.clear();
        for &(x, t1, op) in f.reads_of(t2) {
            bk.each(t2, x, |t3, via| {
                if t3 != t1 {
                    out.push(Forced {
                        t3,
                        t1,
                        key: x,
                        op,
                        rule: Rule::Earlier { via },
                    });
                }
            });
            bk.add(f, t2, t1, op);
        }
    }
    dedup(out)
}

/// Read atomic: a writer of x that t2 read at all, or that precedes t2 in its session,
/// precedes the writer of x t2 reads.
pub(super) fn read_atomic(f: &Facts) -> Vec<Forced> {
    let mut out = Vec::new();
    let mut bk = ByKey::new(f);
    // Per (session, key): the session's last committed writer of the key so far.
    let mut last: FxHashMap<(u32, u32), Node> = FxHashMap::default();
    for t2 in 1..f.num_nodes() as Node {
        bk.cells.clear();
        for &(_, t1, op) in f.reads_of(t2) {
            bk.add(f, t2, t1, op);
        }
        let s = f.session[t2 as usize];
        for &(x, t1, op) in f.reads_of(t2) {
            bk.each(t2, x, |t3, via| {
                if t3 != t1 {
                    out.push(Forced {
                        t3,
                        t1,
                        key: x,
                        op,
                        rule: Rule::ReadFrom { via },
                    });
                }
            });
            if let Some(&t3) = last.get(&(s, x)) {
                if t3 != t1 {
                    out.push(Forced {
                        t3,
                        t1,
                        key: x,
                        op,
                        rule: Rule::Session,
                    });
                }
            }
        }
        if f.committed[t2 as usize] {
            for &k in f.writes_of(t2) {
                last.insert((s, k), t2);
            }
        }
    }
    dedup(out)
}

/// Causal consistency: the last writer of x, on every session chain, in t2's causal past
/// precedes the writer of x t2 reads (earlier writers on a chain follow by session order).
/// None when session order and write→read already close a cycle (the check reports it).
pub(super) fn causal(f: &Facts) -> Option<Vec<Forced>> {
    let n = f.num_nodes();
    let c = f.num_chains as usize;
    let known: Vec<(Node, Node)> = f.known.iter().map(|&(u, v, _)| (u, v)).collect();
    let csr = Csr::build(n, &known, false);
    let order = graph::topo_order(n, &csr).ok()?;
    // vc[x * c + ch]: 1 + the last position on chain ch in x's causal past (0: none).
    let mut vc = vec![0u32; n * c];
    for &x in &order {
        let (ch, pos) = f.chain_of[x as usize];
        for &(y, _) in csr.succ(x) {
            let (xs, ys) = if x < y {
                let (a, b) = vc.split_at_mut(y as usize * c);
                (&a[x as usize * c..x as usize * c + c], &mut b[..c])
            } else {
                let (a, b) = vc.split_at_mut(x as usize * c);
                (&b[..c], &mut a[y as usize * c..y as usize * c + c])
            };
            for (d, s) in ys.iter_mut().zip(xs) {
                *d = (*d).max(*s);
            }
            if x != INIT {
                let d = &mut ys[ch as usize];
                *d = (*d).max(pos + 1);
            }
        }
    }
    // Writers per key, by chain and position.
    let mut wl: Vec<(u32, u32, u32, Node)> = Vec::new();
    for w in 1..n as Node {
        let (ch, pos) = f.chain_of[w as usize];
        for &k in f.writes_of(w) {
            wl.push((k, ch, pos, w));
        }
    }
    wl.sort_unstable();
    let mut out = Vec::new();
    for t2 in 1..n as Node {
        let row = &vc[t2 as usize * c..t2 as usize * c + c];
        for &(x, t1, op) in f.reads_of(t2) {
            let lo = wl.partition_point(|w| w.0 < x);
            let hi = wl.partition_point(|w| w.0 <= x);
            let mut i = lo;
            while i < hi {
                let ch = wl[i].1;
                let end = i + wl[i..hi].partition_point(|w| w.1 == ch);
                let p = row[ch as usize];
                if p > 0 {
                    // The last writer of x on this chain at a position < p.
                    let j = i + wl[i..end].partition_point(|w| w.2 < p);
                    if j > i {
                        let t3 = wl[j - 1].3;
                        if t3 != t1 && t3 != t2 {
                            out.push(Forced {
                                t3,
                                t1,
                                key: x,
                                op,
                                rule: Rule::Causal,
                            });
                        }
                    }
                }
                i = end;
            }
        }
    }
    Some(dedup(out))
}
