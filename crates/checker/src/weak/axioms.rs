//! The edges each weak level forces: for a read of x from t1 by t2, every other writer t3 of x
//! that t2 sees by the level's rule must precede t1. Linear in the facts for read committed and
//! read atomic (a transaction's reads are indexed by key, then each writer it read is walked
//! once over the keys it wrote); causal consistency keeps a vector clock per transaction over
//! the session chains and finds, per chain, the last writer of x in the causal past by binary
//! search. Readers are split over threads.

use super::facts::Facts;
use super::online::Fresh;
use super::{Forced, Rule};
use crate::graph::{self, Csr, Node, INIT};
use krait_history::FxHashMap;

const NIL: u32 = u32::MAX;

/// One transaction's reads, listed per key (a linked list per key in `cells`, stamped with the
/// reader so nothing is cleared between transactions); each writer the reader read is then
/// walked once over the keys it wrote.
struct ReadsByKey {
    stamp: Vec<u32>,
    head: Vec<u32>,
    /// (position of the read in the reader, writer read, op, next cell)
    cells: Vec<(u32, Node, u32, u32)>,
    /// Per writer, the reader that last walked it.
    walked: Vec<u32>,
}

impl ReadsByKey {
    fn new(f: &Facts) -> ReadsByKey {
        ReadsByKey {
            stamp: vec![NIL; f.num_keys],
            head: vec![NIL; f.num_keys],
            cells: Vec::new(),
            walked: vec![NIL; f.num_nodes()],
        }
    }

    /// For reader `t2`: every (t3, its first read's position and op, key, writer t1 of another
    /// read of that key, that read's op and position) where t3 wrote the key — the candidates
    /// both rules look at.
    fn each(
        &mut self,
        f: &Facts,
        t2: Node,
        mut out: impl FnMut(Node, u32, u32, u32, Node, u32, u32),
    ) {
        self.cells.clear();
        for (i, &(x, t1, op)) in f.reads_of(t2).iter().enumerate() {
            let x = x as usize;
            if self.stamp[x] != t2 {
                self.stamp[x] = t2;
                self.head[x] = NIL;
            }
            self.cells.push((i as u32, t1, op, self.head[x]));
            self.head[x] = self.cells.len() as u32 - 1;
        }
        for (j, &(_, t3, via)) in f.reads_of(t2).iter().enumerate() {
            if t3 == INIT || self.walked[t3 as usize] == t2 {
                continue;
            }
            self.walked[t3 as usize] = t2;
            for &k in f.writes_of(t3) {
                if self.stamp[k as usize] != t2 {
                    continue;
                }
                let mut c = self.head[k as usize];
                while c != NIL {
                    let (i, t1, op, next) = self.cells[c as usize];
                    if t1 != t3 {
                        out(t3, j as u32, via, k, t1, op, i);
                    }
                    c = next;
                }
            }
        }
    }
}

/// Whether session order already puts `a` before `b` (so a forced edge a → b adds nothing).
fn in_session_before(f: &Facts, a: Node, b: Node) -> bool {
    let (ca, pa) = f.chain_of[a as usize];
    let (cb, pb) = f.chain_of[b as usize];
    a != INIT && b != INIT && ca == cb && pa < pb
}

/// Below this many nodes (or reads), work stays on the calling thread.
const SMALL: usize = 1 << 12;

fn dedup(mut v: Vec<Forced>) -> Vec<Forced> {
    use rayon::slice::ParallelSliceMut;
    v.par_sort_unstable_by_key(|e| (e.t3, e.t1, e.rule, e.op));
    v.dedup_by_key(|e| (e.t3, e.t1));
    v
}

/// Runs `per_reader` over every reader, split into one contiguous range per thread (each with
/// its own scratch, allocated once), and gathers what they found.
fn over_readers(
    f: &Facts,
    per_reader: impl Fn(&mut ReadsByKey, Node, &mut Vec<Forced>) + Sync,
) -> Vec<Forced> {
    use rayon::prelude::*;
    let n = f.num_nodes() as u32;
    // A small history in one part, on the calling thread: handing work to the pool and
    // waiting for it costs more than the work (tens of microseconds a call, which trying
    // choices of writers pays thousands of times).
    let parts = if n < SMALL as u32 {
        1
    } else {
        (rayon::current_num_threads() as u32).clamp(1, n)
    };
    let per = n.div_ceil(parts);
    let found: Vec<Vec<Forced>> = (0..parts)
        .into_par_iter()
        .map(|i| {
            let mut rk = ReadsByKey::new(f);
            let mut out = Vec::new();
            for t2 in (i * per).max(1)..((i + 1) * per).min(n) {
                per_reader(&mut rk, t2, &mut out);
            }
            out
        })
        .collect();
    joined(found)
}

/// The lists one after another, grown in place from the first (a large block grows without
/// a copy) and each other freed once copied: `concat` would hold every list twice at once.
fn joined<T>(lists: Vec<Vec<T>>) -> Vec<T> {
    let mut lists = lists.into_iter();
    let mut out = lists.next().unwrap_or_default();
    for l in lists {
        out.extend(l);
    }
    out
}

/// Read committed: a writer of x that t2 read *earlier* precedes the writer of x it reads now.
pub(super) fn read_committed(f: &Facts) -> Vec<Forced> {
    dedup(over_readers(f, |rk, t2, out| {
        rk.each(f, t2, |t3, j, via, key, t1, op, i| {
            // Read earlier: at a position before this read of the key.
            if j < i && !in_session_before(f, t3, t1) {
                out.push(Forced {
                    t3,
                    t1,
                    key,
                    op,
                    rule: Rule::Earlier { via },
                });
            }
        })
    }))
}

/// Read atomic: a writer of x that t2 read at all, or that precedes t2 in its session,
/// precedes the writer of x t2 reads.
pub(super) fn read_atomic(f: &Facts) -> Vec<Forced> {
    let mut out = over_readers(f, |rk, t2, out| {
        rk.each(f, t2, |t3, _, via, key, t1, op, _| {
            if !in_session_before(f, t3, t1) {
                out.push(Forced {
                    t3,
                    t1,
                    key,
                    op,
                    rule: Rule::ReadFrom { via },
                });
            }
        })
    });
    // Per (session, key): the session's last committed writer of the key so far, in a dense
    // table when it is small enough.
    let sessions = f
        .session
        .iter()
        .filter(|&&s| s != NIL)
        .max()
        .map_or(0, |&s| s + 1) as usize;
    let dense = sessions * f.num_keys <= 1 << 25;
    let mut table = vec![INIT; if dense { sessions * f.num_keys } else { 0 }];
    let mut map: FxHashMap<(u32, u32), Node> = FxHashMap::default();
    for t2 in 1..f.num_nodes() as Node {
        let s = f.session[t2 as usize];
        for &(x, t1, op) in f.reads_of(t2) {
            let last = if dense {
                Some(table[s as usize * f.num_keys + x as usize]).filter(|&t| t != INIT)
            } else {
                map.get(&(s, x)).copied()
            };
            if let Some(t3) = last {
                if t3 != t1 && !in_session_before(f, t3, t1) {
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
                if dense {
                    table[s as usize * f.num_keys + k as usize] = t2;
                } else {
                    map.insert((s, k), t2);
                }
            }
        }
    }
    dedup(out)
}

/// Causal consistency: the last writer of x, on every session chain, in t2's causal past
/// precedes the writer of x t2 reads (earlier writers on a chain follow by session order);
/// one already in t1's causal past, or behind an edge already forced into t1 on its chain,
/// adds nothing and is skipped, so the edges stay within n × chains.
/// None when session order and write→read already close a cycle (the check reports it).
///
/// With `fresh` (an online round), only the reads of its new transactions are looked at, and
/// each of them has in its causal past the first `floor[ch]` positions of every chain as well:
/// transactions the epochs prove precede everything still to come, whose paths to it may run
/// through transactions earlier rounds deleted.
pub(super) fn causal(f: &Facts, fresh: Option<&Fresh>) -> Option<Vec<Forced>> {
    let n = f.num_nodes();
    let c = f.num_chains as usize;
    let csr = Csr::build_from(n, || f.known.iter().map(|&(u, v, _)| (u, v)));
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
    drop((csr, order));
    // What precedes each t1 is known from the round's own edges only: a floor position's path
    // to a new transaction may run through deleted ones.
    let known_before = fresh.map(|fr| {
        let before = vc.clone();
        for x in 0..n {
            if fr.node[x] {
                for (d, &p) in vc[x * c..x * c + c].iter_mut().zip(&fr.floor) {
                    *d = (*d).max(p);
                }
            }
        }
        before
    });
    // Writers per key, by chain and position; per key its chain groups (chain, start, end).
    let mut wl: Vec<(u32, u32, u32, Node)> = Vec::new();
    for w in 1..n as Node {
        let (ch, pos) = f.chain_of[w as usize];
        for &k in f.writes_of(w) {
            wl.push((k, ch, pos, w));
        }
    }
    {
        use rayon::slice::ParallelSliceMut;
        wl.par_sort_unstable();
    }
    let mut groups: Vec<(u32, u32, u32)> = Vec::new();
    let mut key_groups = vec![0u32; f.num_keys + 1];
    let mut i = 0;
    for k in 0..f.num_keys {
        key_groups[k] = groups.len() as u32;
        while i < wl.len() && wl[i].0 as usize == k {
            let ch = wl[i].1;
            let start = i;
            while i < wl.len() && wl[i].0 as usize == k && wl[i].1 == ch {
                i += 1;
            }
            groups.push((ch, start as u32, i as u32));
        }
    }
    key_groups[f.num_keys] = groups.len() as u32;
    // From here on only each writer's position and node are looked at.
    let wl: Vec<(u32, Node)> = wl.into_iter().map(|w| (w.2, w.3)).collect();
    // Per t1 and chain: 1 + the last position on the chain already known to precede t1 (its
    // causal past, then the edges forced into it so far); a writer at or before it adds
    // nothing (session order puts it before that one), so each forced edge is new.
    // Reads taken key by key (a counting sort), so each key's writers stay in cache while
    // its readers are looked at: (reader, index into `f.reads`).
    let looked_at = |t2: Node| fresh.is_none_or(|fr| fr.node[t2 as usize]);
    let mut start = vec![0u32; f.num_keys + 1];
    let mut looked = 0usize;
    for t2 in (1..n as Node).filter(|&t2| looked_at(t2)) {
        for r in f.reads_of(t2) {
            start[r.0 as usize + 1] += 1;
            looked += 1;
        }
    }
    for k in 0..f.num_keys {
        start[k + 1] += start[k];
    }
    // (reader, writer read, index into `f.reads`): the loop below reads the read itself only
    // for an edge it forces, and its key from where it lies.
    let mut by_key = vec![(0u32, 0u32, 0u32); looked];
    for t2 in (1..n as Node).filter(|&t2| looked_at(t2)) {
        for i in f.read_start[t2 as usize]..f.read_start[t2 as usize + 1] {
            let (k, t1, _) = f.reads[i as usize];
            by_key[start[k as usize] as usize] = (t2, t1, i);
            start[k as usize] += 1;
        }
    }
    // Now `start[k]` is where key k's reads end.
    let key_end = start;
    // One contiguous run of reads per thread; each keeps its own copy of what is known to
    // precede each t1 (so a few edges may be found twice, and deduplicated).
    use rayon::prelude::*;
    let parts = if by_key.len() < SMALL {
        1
    } else {
        rayon::current_num_threads().clamp(1, by_key.len())
    };
    let per = by_key.len().div_ceil(parts).max(1);
    let found: Vec<Vec<Forced>> = by_key
        .par_chunks(per)
        .enumerate()
        .map(|(ci, chunk)| {
            // Per t1 and chain: 1 + the last position on the chain already known to precede
            // t1 (its causal past, then the edges forced into it so far); a writer at or
            // before it adds nothing (session order puts it before that one).
            let mut upto = known_before.as_ref().unwrap_or(&vc).clone();
            let mut out = Vec::new();
            let mut x = 0usize;
            for (pos, &(t2, t1, i)) in (ci * per..).zip(chunk) {
                while key_end[x] as usize <= pos {
                    x += 1;
                }
                let row = &vc[t2 as usize * c..t2 as usize * c + c];
                let gs = &groups[key_groups[x] as usize..key_groups[x + 1] as usize];
                for &(ch, start, end) in gs {
                    let p = row[ch as usize];
                    let known = &mut upto[t1 as usize * c + ch as usize];
                    // Nothing on this chain t2 sees beyond what already precedes t1.
                    if p == 0 || (t1 != INIT && p <= *known) {
                        continue;
                    }
                    let run = &wl[start as usize..end as usize];
                    // The last writer of x on this chain at a position < p.
                    let j = run.partition_point(|w| w.0 < p);
                    if j == 0 {
                        continue;
                    }
                    let (p3, t3) = run[j - 1];
                    if t3 == t1 || t3 == t2 || (t1 != INIT && p3 < *known) {
                        continue;
                    }
                    if t1 != INIT {
                        *known = p3 + 1;
                    }
                    out.push(Forced {
                        t3,
                        t1,
                        key: x as u32,
                        op: f.reads[i as usize].2,
                        rule: Rule::Causal,
                    });
                }
            }
            out
        })
        .collect();
    Some(dedup(joined(found)))
}
