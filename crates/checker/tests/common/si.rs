//! Snapshot isolation from its definition, by brute force: is there an interleaving of the
//! transactions' starts and commits in which each transaction reads the state at its start
//! (with its own writes over it), no two transactions that overlap write one key, and session
//! (and, when strict, real-time) order puts a transaction's predecessors inside its snapshot?

use super::step;
use krait_history::{History, OpKind, TxnId, TxnStatus, NO_TIME};
use std::collections::HashSet;

/// Where a transaction stands in the interleaving being built.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum At {
    NotStarted,
    /// Started; the commits counted at its start.
    Running,
    Committed,
    /// Never takes part (an unknown outcome taken as aborted, or one that lost a write race).
    Out,
}

struct Search<'a> {
    h: &'a History,
    sessions: Vec<u32>,
    strict: Option<u64>,
    dead: HashSet<(Vec<At>, Vec<Option<u64>>, Vec<Vec<bool>>)>,
}

/// Whether `h` satisfies snapshot isolation (strict: with real time, this clock drift). Depth
/// first over events (a start or a commit), remembering dead ends.
pub fn snapshot_isolated(h: &History, strict: Option<u64>) -> bool {
    let n = h.num_txns();
    assert!(n <= 12);
    let mut s = Search {
        h,
        sessions: h.txn_sessions(),
        strict,
        dead: HashSet::new(),
    };
    let mut at: Vec<At> = (0..n)
        .map(|t| match h.txn_status[t] {
            TxnStatus::Aborted => At::Out,
            _ => At::NotStarted,
        })
        .collect();
    let mut db = vec![None; h.num_keys()];
    // Per running transaction, per key: whether a commit of that key landed since its start.
    let mut dirty = vec![vec![false; h.num_keys()]; n];
    s.go(&mut at, &mut db, &mut dirty)
}

impl Search<'_> {
    /// Whether `t` may take its snapshot now: the committed transactions before it in its
    /// session (and, when strict, every committed one that ended before it began) are in.
    fn ready(&self, at: &[At], t: usize) -> bool {
        let h = self.h;
        let first = h.session_txns[self.sessions[t] as usize] as usize;
        let session_ok =
            (first..t).all(|u| h.txn_status[u] != TxnStatus::Committed || at[u] == At::Committed);
        let rt_ok = self.strict.is_none_or(|d| {
            (0..h.num_txns()).all(|u| {
                u == t
                    || at[u] == At::Committed
                    || h.txn_status[u] != TxnStatus::Committed
                    || h.txn_commit[u] == NO_TIME
                    || h.txn_commit[u].saturating_add(d) >= h.txn_start[t]
            })
        });
        session_ok && rt_ok
    }

    /// Whether every read of `t` returns what its snapshot `db` (with its own writes) holds.
    fn reads_ok(&self, t: usize, db: &[Option<u64>]) -> bool {
        let mut view = db.to_vec();
        self.h.ops(t as TxnId).all(|o| {
            let k = self.h.op_key[o] as usize;
            step(self.h, o, &mut view[k])
        })
    }

    fn go(&mut self, at: &mut Vec<At>, db: &mut Vec<Option<u64>>, dirty: &mut [Vec<bool>]) -> bool {
        let h = self.h;
        let n = h.num_txns();
        if (0..n).all(|t| h.txn_status[t] != TxnStatus::Committed || at[t] == At::Committed) {
            return true;
        }
        let memo = (at.clone(), db.clone(), dirty.to_vec());
        if self.dead.contains(&memo) {
            return false;
        }
        for t in 0..n {
            match at[t] {
                At::NotStarted => {
                    if h.txn_status[t] == TxnStatus::Unknown {
                        at[t] = At::Out;
                        if self.go(at, db, dirty) {
                            return true;
                        }
                        at[t] = At::NotStarted;
                    }
                    if !self.ready(at, t) || !self.reads_ok(t, db) {
                        continue;
                    }
                    at[t] = At::Running;
                    dirty[t].iter_mut().for_each(|d| *d = false);
                    if self.go(at, db, dirty) {
                        return true;
                    }
                    at[t] = At::NotStarted;
                }
                At::Running => {
                    let writes: Vec<(usize, u64)> = h
                        .ops(t as TxnId)
                        .filter(|&o| h.op_kind[o] == OpKind::Write)
                        .map(|o| (h.op_key[o] as usize, h.op_value[o]))
                        .collect();
                    // First committer wins: a key committed since its start is lost to it.
                    if writes.iter().any(|&(k, _)| dirty[t][k]) {
                        continue;
                    }
                    let saved_db = db.clone();
                    let saved_dirty = dirty.to_vec();
                    for &(k, v) in &writes {
                        db[k] = Some(v);
                        for (u, d) in dirty.iter_mut().enumerate() {
                            if at[u] == At::Running && u != t {
                                d[k] = true;
                            }
                        }
                    }
                    at[t] = At::Committed;
                    if self.go(at, db, dirty) {
                        return true;
                    }
                    at[t] = At::Running;
                    *db = saved_db;
                    dirty.clone_from_slice(&saved_dirty);
                }
                At::Committed | At::Out => {}
            }
        }
        self.dead.insert(memo);
        false
    }
}

/// Replays an ACCEPT's commit order with its snapshots (`snaps[i]`: how many transactions
/// before position i the snapshot holds): reads return the snapshot's latest version or the
/// transaction's own write, overlapping writers of a key are refused, every committed
/// transaction is placed, and session order puts committed predecessors inside the snapshot.
pub fn si_order_is_valid(h: &History, order: &[u64], snaps: &[u32]) -> bool {
    if order.len() != snaps.len() {
        return false;
    }
    let pos: std::collections::HashMap<TxnId, usize> = order
        .iter()
        .enumerate()
        .map(|(i, e)| (h.txn_index[e], i))
        .collect();
    // Per key: (position, value) of each committed write, in commit order.
    let mut versions: Vec<Vec<(usize, u64)>> = vec![Vec::new(); h.num_keys()];
    for (i, &ext) in order.iter().enumerate() {
        let t = h.txn_index[&ext];
        let snap = snaps[i] as usize;
        if snap > i || h.txn_status[t as usize] == TxnStatus::Aborted {
            return false;
        }
        let mut view: Vec<Option<u64>> = versions
            .iter()
            .map(|vs| vs.iter().take_while(|v| v.0 < snap).last().map(|v| v.1))
            .collect();
        for o in h.ops(t) {
            let k = h.op_key[o] as usize;
            if !step(h, o, &mut view[k]) {
                return false;
            }
        }
        let mut written: Vec<usize> = h
            .ops(t)
            .filter(|&o| h.op_kind[o] == OpKind::Write)
            .map(|o| h.op_key[o] as usize)
            .collect();
        written.sort_unstable();
        written.dedup();
        for k in written {
            if versions[k].last().is_some_and(|v| v.0 >= snap) {
                return false;
            }
            versions[k].push((i, view[k].expect("written")));
        }
    }
    let sessions = h.txn_sessions();
    (0..h.num_txns()).all(|t| {
        if h.txn_status[t] == TxnStatus::Committed && !pos.contains_key(&(t as TxnId)) {
            return false;
        }
        let Some(&p) = pos.get(&(t as TxnId)) else {
            return true;
        };
        let first = h.session_txns[sessions[t] as usize] as usize;
        (first..t).all(|u| {
            h.txn_status[u] != TxnStatus::Committed
                || pos
                    .get(&(u as TxnId))
                    .is_some_and(|&q| q < snaps[p] as usize)
        })
    })
}

/// A small random history from an execution under snapshot isolation: up to three
/// transactions overlap, each reads its snapshot (or its own writes), a writer that lost the
/// first-committer race aborts; then faults: some reads return an older version, and some
/// losers commit anyway (a lost update). Values unique, or drawn from `1..=range` when given.
pub fn random_si_history(
    r: &mut super::Rng,
    max_txns: u64,
    keys: u64,
    range: Option<u64>,
) -> History {
    si_execution(r, max_txns, keys, range, None)
}

/// The same with the collector's fences: every `fence_every`-th transaction of a session is a
/// fence (read the fence key's latest version, write the next), run on its own.
pub fn random_si_fenced(r: &mut super::Rng, max_txns: u64, keys: u64, fence_every: u64) -> History {
    si_execution(r, max_txns, keys, None, Some(fence_every))
}

fn si_execution(
    r: &mut super::Rng,
    max_txns: u64,
    keys: u64,
    range: Option<u64>,
    fence_every: Option<u64>,
) -> History {
    let n = 2 + r.below(max_txns - 1);
    let mut per_session: Vec<u64> = Vec::new();
    let mut fence_val: Option<u64> = None;
    let nsessions = 2 + r.below(3) as usize;
    let key = |k: u64| format!("k{k}");
    // Committed versions per key: (commit number, value).
    let mut versions: Vec<Vec<(u64, u64)>> = vec![Vec::new(); keys as usize];
    let mut commits = 0u64;
    let mut next = 1u64;
    let mut clock = 0u64;
    // Running: (txn, session, start clock, snapshot commit number, own writes).
    struct Run {
        t: krait_history::SimpleTxn,
        session: usize,
        start: u64,
        snap: u64,
        writes: Vec<(u64, u64)>,
    }
    let mut running: Vec<Run> = Vec::new();
    let mut busy = vec![false; nsessions];
    let mut started = 0u64;
    let mut out = Vec::new();
    while started < n || !running.is_empty() {
        let can_start = started < n && running.len() < 3 && busy.iter().any(|b| !b);
        if can_start && (running.is_empty() || r.chance(65)) {
            let free: Vec<usize> = (0..nsessions).filter(|&s| !busy[s]).collect();
            let session = free[r.index(free.len())];
            per_session.resize(nsessions, 0);
            per_session[session] += 1;
            if fence_every.is_some_and(|f| per_session[session].is_multiple_of(f)) {
                clock += 1;
                let v = 1_000_000 + started;
                let f = super::fenced::fence(session, 100 + started, fence_val, v);
                fence_val = Some(v);
                started += 1;
                commits += 1;
                out.push(f.times(clock, clock));
                continue;
            }
            busy[session] = true;
            clock += 1;
            let mut t = krait_history::SimpleTxn::new(session, 100 + started);
            started += 1;
            let mut own: Vec<Option<u64>> = vec![None; keys as usize];
            let mut writes = Vec::new();
            for _ in 0..1 + r.below(4) {
                let k = r.below(keys) as usize;
                if r.chance(55) {
                    let visible: Vec<u64> = versions[k]
                        .iter()
                        .filter(|v| v.0 <= commits)
                        .map(|v| v.1)
                        .collect();
                    let v = match own[k] {
                        Some(v) => Some(v),
                        None if r.chance(5) && !visible.is_empty() => {
                            let i = r.below(visible.len() as u64 + 1) as usize;
                            visible.get(i).copied()
                        }
                        None => visible.last().copied(),
                    };
                    t = match v {
                        Some(v) => t.r(&key(k as u64), v),
                        None => t.r0(&key(k as u64)),
                    };
                } else {
                    let v = match range {
                        Some(m) => 1 + r.below(m),
                        None => {
                            next += 1;
                            next - 1
                        }
                    };
                    own[k] = Some(v);
                    t = t.w(&key(k as u64), v);
                    writes.retain(|w: &(u64, u64)| w.0 != k as u64);
                    writes.push((k as u64, v));
                }
            }
            running.push(Run {
                t,
                session,
                start: clock,
                snap: commits,
                writes,
            });
        } else {
            let i = r.index(running.len());
            let run = running.swap_remove(i);
            busy[run.session] = false;
            clock += 1;
            let lost = run
                .writes
                .iter()
                .any(|&(k, _)| versions[k as usize].last().is_some_and(|v| v.0 > run.snap));
            let status = if lost && !r.chance(10) {
                TxnStatus::Aborted
            } else {
                match r.below(25) {
                    0 => TxnStatus::Aborted,
                    1 => TxnStatus::Unknown,
                    _ => TxnStatus::Committed,
                }
            };
            if status != TxnStatus::Aborted {
                commits += 1;
                for &(k, v) in &run.writes {
                    versions[k as usize].push((commits, v));
                }
            }
            out.push(run.t.status(status).times(run.start, clock));
        }
    }
    // Sessions log their transactions in start order.
    out.sort_by_key(|t| t.id);
    krait_history::build_history(&out).expect("ids are unique")
}
