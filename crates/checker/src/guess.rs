//! First guesses, from the clients' timestamps, of which write a read of a repeated value saw.
//! A guess only orders a search (the solver's first phase), never its verdict, so any guess is
//! exact; a good one lets a correct database's history be accepted at the first try.
//!
//! A database that keeps its promise serves each transaction's reads from one state, current at
//! some moment between the transaction's start and its commit (its snapshot, or its
//! serialization point), and not before its session's previous commit. So the guess is the
//! moment in that window where the most of the transaction's reads see, in commit-time order,
//! a version with the value they read; each read's guess is the version current then. "The
//! last write to commit before the reader started" is right for snapshots taken at the start,
//! but not for transactions serialized later, which is how a serializable store commits
//! read-only transactions.

use crate::graph::Choice;
use krait_history::{History, OpId, OpKind, Resolution, TxnId, TxnStatus, FROM_INIT, NO_TIME};

/// Versions per scanned read at most: a read whose window holds more is left to the fallback.
const MAX_SCAN: usize = 512;

/// Every key's committed versions in commit-time order, for guessing.
pub(crate) struct Snapshots<'a> {
    h: &'a History,
    /// Per key `k`: `versions[start[k]..start[k + 1]]`, (commit time, the write op that
    /// installed the version). One array, not one per key: a proxy's history has a key per
    /// column of every row, millions of them, each a separate allocation otherwise.
    start: Vec<u32>,
    versions: Vec<(u64, OpId)>,
}

impl<'a> Snapshots<'a> {
    /// None when `h` has no timestamps to guess from.
    pub(crate) fn new(h: &'a History) -> Option<Self> {
        if !h.has_timestamps() {
            return None;
        }
        // One pass over all ops, not a scan of the rest of the transaction per write: that was
        // quadratic in a transaction's size, and a proxy's initial state is one transaction of
        // a million writes.
        let overwritten = &crate::graph::Overwritten::of(h);
        // A transaction installs its last write of each key.
        let installed = |t: usize| {
            let c = h.txn_commit[t];
            let ok = h.txn_status[t] == TxnStatus::Committed && c != NO_TIME;
            h.ops(t as TxnId)
                .filter(move |&o| {
                    ok && h.op_kind[o] == OpKind::Write && !overwritten.contains(o as u32)
                })
                .map(move |o| (c, o))
        };
        let mut start = vec![0u32; h.keys.len() + 1];
        for t in 0..h.num_txns() {
            for (_, o) in installed(t) {
                start[h.op_key[o] as usize + 1] += 1;
            }
        }
        for k in 0..h.keys.len() {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut versions = vec![(0, 0); start[h.keys.len()] as usize];
        for t in 0..h.num_txns() {
            for (c, o) in installed(t) {
                let k = h.op_key[o] as usize;
                versions[fill[k] as usize] = (c, o as OpId);
                fill[k] += 1;
            }
        }
        for k in 0..h.keys.len() {
            versions[start[k] as usize..start[k + 1] as usize].sort_unstable();
        }
        Some(Snapshots { h, start, versions })
    }

    /// Key `k`'s versions in commit-time order.
    fn of(&self, k: u32) -> &[(u64, OpId)] {
        &self.versions[self.start[k as usize] as usize..self.start[k as usize + 1] as usize]
    }

    /// For the reads `reads` of transaction `t` (each with its candidate writes, `FROM_INIT`
    /// for the initial state), the index of each one's guessed candidate: the version current
    /// at the moment of `t`'s window where the most of them match. None for a read that no
    /// version in the window matches (a stale read, or an unknown outcome's write).
    pub(crate) fn guess(&self, t: TxnId, reads: &[(OpId, &[OpId])]) -> Vec<Option<usize>> {
        let h = self.h;
        let (mut s, c) = (h.txn_start[t as usize], h.txn_commit[t as usize]);
        // Not before what the session did earlier: its own writes are visible to it.
        if t > 0 && h.session_of(t - 1) == h.session_of(t) {
            let prev = h.txn_commit[t as usize - 1];
            if prev != NO_TIME && prev > s {
                s = prev;
            }
        }
        let mut out = vec![None; reads.len()];
        if s == NO_TIME || c == NO_TIME || s > c {
            return out;
        }
        // Where each read matches: half-open intervals of time, as +1/-1 events.
        let mut events: Vec<(u64, i32)> = Vec::new();
        for (o, cands) in reads {
            let vs = self.of(h.op_key[*o as usize]);
            let first = vs.partition_point(|v| v.0 <= s);
            let last = vs.partition_point(|v| v.0 <= c);
            if last - first > MAX_SCAN {
                continue;
            }
            // Version i-1 is current from vs[i-1].0 (or the beginning) until vs[i].0.
            for i in first..=last {
                let w = if i == 0 { FROM_INIT } else { vs[i - 1].1 };
                if !cands.contains(&w) {
                    continue;
                }
                let from = if i == 0 { s } else { vs[i - 1].0.max(s) };
                let to = vs.get(i).map_or(c + 1, |v| v.0.min(c + 1));
                if from < to {
                    events.push((from, 1));
                    events.push((to, -1));
                }
            }
        }
        if events.is_empty() {
            return out;
        }
        // Ends sort before starts at the same time: intervals are half-open.
        events.sort_unstable();
        let (mut now, mut best, mut at) = (0i32, 0i32, s);
        for &(x, d) in &events {
            now += d;
            if now > best {
                (best, at) = (now, x);
            }
        }
        for (i, (o, cands)) in reads.iter().enumerate() {
            let vs = self.of(h.op_key[*o as usize]);
            let n = vs.partition_point(|v| v.0 <= at);
            let w = if n == 0 { FROM_INIT } else { vs[n - 1].1 };
            out[i] = cands.iter().position(|&x| x == w);
        }
        out
    }
}

/// Sets each choice's `guess`, where `h` has timestamps to guess from.
pub(crate) fn guess_choices(h: &History, r: &Resolution, choices: &mut [Choice]) {
    let Some(snaps) = Snapshots::new(h) else {
        return;
    };
    let txns: Vec<TxnId> = choices
        .iter()
        .map(|c| r.op_txn[c.ops[0] as usize])
        .collect();
    let mut order: Vec<usize> = (0..choices.len()).collect();
    order.sort_by_key(|&i| txns[i]);
    for group in order.chunk_by(|&a, &b| txns[a] == txns[b]) {
        let reads: Vec<(OpId, &[OpId])> = group
            .iter()
            .map(|&i| (choices[i].ops[0], &choices[i].cand_ops[..]))
            .collect();
        let g = snaps.guess(txns[group[0]], &reads);
        for (&i, g) in group.iter().zip(g) {
            choices[i].guess = g.map_or(u32::MAX, |x| x as u32);
        }
    }
}
