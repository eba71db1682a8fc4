//! The simulated store: an in-memory multi-version store that runs BlindW straight into a
//! history, without a database (`krait generate`, `krait demo --faulty`, benchmarks and tests).
//!
//! It is serializable (and strictly so): write transactions apply atomically at commit;
//! read-only transactions read the snapshot at their start. Optional fault injection makes some
//! reads stale or fractured, which breaks serializability on purpose.

use crate::Rng;
use krait_history::{History, HistoryBuilder, KeyId, OpKind, TxnStatus, NATIVE_FENCE_KEY};

#[derive(Clone, Debug)]
/// BlindW on the simulated store: its size, mix, timing and the faults to inject.
pub struct BlindW {
    /// Transactions in all (fences included).
    pub txns: usize,
    /// Client sessions; each transaction goes to one picked at random.
    pub sessions: usize,
    /// Keys `k0` … `k{keys-1}`.
    pub keys: u64,
    /// Reads or writes per transaction (distinct keys).
    pub ops_per_txn: usize,
    /// Fraction of read-only transactions (RM 0.9, RW 0.5, WM 0.1).
    pub read_only: f64,
    /// How many transactions a read-only transaction's snapshot may lag behind (concurrency).
    pub max_lag: usize,
    /// A fence (read-modify-write of the fence key) every this many transactions per session.
    pub fence_every: Option<usize>,
    /// Record start/commit timestamps (nanoseconds).
    pub timestamps: bool,
    /// Time between transaction commits (nanoseconds): 500 µs is 2,000 transactions a second.
    pub ns_per_txn: u64,
    /// Probability that a read sees a version older than its snapshot (a fault; often still
    /// serializable, since the reader can be placed earlier).
    pub stale_reads: f64,
    /// Probability that a read-only transaction sees one write of a recent transaction but not
    /// another of the same transaction (a fault that is never serializable: read skew).
    pub fractured_reads: f64,
    /// Seed of the one [`Rng`]: the same parameters and seed give the same history, byte for byte.
    pub seed: u64,
    /// Values written are drawn from `1..=n` (so a key is written with the same value more than
    /// once, and a read may have several candidate writers); unique values when `None`.
    pub value_range: Option<u64>,
}

impl BlindW {
    /// BlindW-RW: half the transactions read-only; 24 sessions, 10,000 keys, 8 operations each.
    pub fn rw(txns: usize) -> BlindW {
        BlindW {
            txns,
            sessions: 24,
            keys: 10_000,
            ops_per_txn: 8,
            read_only: 0.5,
            max_lag: 24,
            fence_every: None,
            timestamps: true,
            ns_per_txn: 1000,
            stale_reads: 0.0,
            fractured_reads: 0.0,
            seed: 1,
            value_range: None,
        }
    }
    /// BlindW-RM: read-mostly (90% read-only), otherwise as [`BlindW::rw`].
    pub fn rm(txns: usize) -> BlindW {
        BlindW {
            read_only: 0.9,
            ..BlindW::rw(txns)
        }
    }
    /// BlindW-WM: write-mostly (10% read-only), otherwise as [`BlindW::rw`].
    pub fn wm(txns: usize) -> BlindW {
        BlindW {
            read_only: 0.1,
            ..BlindW::rw(txns)
        }
    }
}

/// One transaction of a generated stream: keys are indices (`keys` is the fence key).
#[derive(Clone, Debug)]
pub struct GenTxn {
    /// Index of its session.
    pub session: usize,
    /// Its transaction id (its commit sequence number, from 1).
    pub ext: u64,
    /// Start timestamp (ns).
    pub start: u64,
    /// Commit timestamp (ns).
    pub commit: u64,
    /// (kind, key index, value) per operation; value 0 with `ReadInit`.
    pub ops: Vec<(OpKind, u32, u64)>,
}

/// BlindW on the simulated store as an endless stream in commit order, in memory that does not
/// grow with its length (only recent versions of each key are kept).
pub struct BlindWStream {
    p: BlindW,
    rng: Rng,
    /// Committed versions per key: (commit sequence number, value). Value 0 is never written.
    versions: Vec<std::collections::VecDeque<(u64, u64)>>,
    last_commit: Vec<Option<u64>>,
    session_count: Vec<usize>,
    next_value: u64,
    /// Recent write transactions: their (key, value written, value before) triples.
    recent: std::collections::VecDeque<Vec<(usize, u64, Option<u64>)>>,
    seq: u64,
}

impl BlindWStream {
    /// The stream for `p` (`p.txns` is ignored: the stream is endless; take what you need).
    pub fn new(p: &BlindW) -> BlindWStream {
        BlindWStream {
            p: p.clone(),
            rng: Rng::new(p.seed),
            versions: vec![Default::default(); p.keys as usize + 1],
            last_commit: vec![None; p.sessions],
            session_count: vec![0; p.sessions],
            next_value: 1,
            recent: Default::default(),
            seq: 0,
        }
    }

    fn read_at(&self, k: usize, snap: u64) -> Option<u64> {
        let v = &self.versions[k];
        let i = v.partition_point(|&(s, _)| s <= snap);
        (i > 0).then(|| v[i - 1].1)
    }

    fn install(&mut self, k: usize, value: u64) {
        let v = &mut self.versions[k];
        v.push_back((self.seq, value));
        // Snapshots lag by at most max_lag, stale reads by 50 more.
        let horizon = self.seq.saturating_sub(self.p.max_lag as u64 + 64);
        while v.len() > 1 && v[1].0 <= horizon {
            v.pop_front();
        }
    }
}

impl Iterator for BlindWStream {
    type Item = GenTxn;
    fn next(&mut self) -> Option<GenTxn> {
        let p = &self.p;
        let (keys, fence_key) = (p.keys, p.keys as u32);
        let s = self.rng.below(p.sessions as u64) as usize;
        self.seq += 1;
        let seq = self.seq;
        let n = self.session_count[s];
        self.session_count[s] += 1;
        let unit = p.ns_per_txn.max(10);
        let now = seq * unit;
        let mut ops = Vec::with_capacity(p.ops_per_txn);
        let is_fence = p.fence_every.is_some_and(|f| n % f == f - 1);
        let mut start = now - unit / 2;
        if is_fence {
            ops.push(match self.read_at(keys as usize, seq) {
                Some(v) => (OpKind::Read, fence_key, v),
                None => (OpKind::ReadInit, fence_key, 0),
            });
            let v = self.next_value;
            ops.push((OpKind::Write, fence_key, v));
            self.install(keys as usize, v);
            self.next_value += 1;
        } else if self.rng.chance(p.read_only) {
            // The snapshot may lag, but never behind this session's previous transaction.
            let prev = self.last_commit[s].map(|c| c / unit).unwrap_or(0);
            let lag = self.rng.below(p.max_lag as u64 + 1);
            let snap = seq.saturating_sub(lag).max(prev);
            start = snap * unit + 1;
            let mut picked: Vec<u64> = Vec::with_capacity(p.ops_per_txn);
            // Fewer keys than operations: every key, once each.
            while picked.len() < p.ops_per_txn.min(keys as usize) {
                let k = self.rng.below(keys);
                if !picked.contains(&k) {
                    picked.push(k);
                }
            }
            if p.fractured_reads > 0.0
                && !self.recent.is_empty()
                && self.rng.chance(p.fractured_reads)
            {
                // See the first write of a recent transaction and miss its second.
                let w = &self.recent[self.rng.below(self.recent.len() as u64) as usize];
                let (k0, v0, _) = w[0];
                let (k1, _, before) = w[1];
                picked.retain(|&k| k as usize != k0 && k as usize != k1);
                picked.truncate(p.ops_per_txn.saturating_sub(2));
                ops.push((OpKind::Read, k0 as u32, v0));
                ops.push(match before {
                    Some(v) => (OpKind::Read, k1 as u32, v),
                    None => (OpKind::ReadInit, k1 as u32, 0),
                });
            }
            for k in picked {
                let mut at = snap;
                if p.stale_reads > 0.0 && self.rng.chance(p.stale_reads) {
                    at = snap.saturating_sub(1 + self.rng.below(50));
                }
                ops.push(match self.read_at(k as usize, at) {
                    Some(v) => (OpKind::Read, k as u32, v),
                    None => (OpKind::ReadInit, k as u32, 0),
                });
            }
        } else {
            let mut picked: Vec<u64> = Vec::with_capacity(p.ops_per_txn);
            // Fewer keys than operations: every key, once each.
            while picked.len() < p.ops_per_txn.min(keys as usize) {
                let k = self.rng.below(keys);
                if !picked.contains(&k) {
                    picked.push(k);
                }
            }
            let mut written = Vec::with_capacity(picked.len());
            for k in picked {
                let before = self.versions[k as usize].back().map(|v| v.1);
                let v = match self.p.value_range {
                    Some(n) => 1 + self.rng.below(n.max(1)),
                    None => {
                        self.next_value += 1;
                        self.next_value - 1
                    }
                };
                ops.push((OpKind::Write, k as u32, v));
                self.install(k as usize, v);
                written.push((k as usize, v, before));
            }
            if written.len() >= 2 {
                self.recent.push_back(written);
                if self.recent.len() > 32 {
                    self.recent.pop_front();
                }
            }
        }
        self.last_commit[s] = Some(now + 100);
        Some(GenTxn {
            session: s,
            ext: seq,
            start,
            commit: now + 100,
            ops,
        })
    }
}

/// Runs a BlindW workload on the simulated store.
pub fn blindw(p: &BlindW) -> History {
    let mut b = HistoryBuilder::new();
    let mut keys: Vec<KeyId> = (0..p.keys).map(|i| b.key(&format!("k{i}"))).collect();
    let fence_key = b.key(NATIVE_FENCE_KEY);
    b.set_fence_key(fence_key);
    keys.push(fence_key);
    let mut sessions: Vec<Vec<GenTxn>> = (0..p.sessions).map(|_| Vec::new()).collect();
    for t in BlindWStream::new(p).take(p.txns) {
        sessions[t.session].push(t);
    }
    for (s, txns) in sessions.into_iter().enumerate() {
        b.begin_session(format!("s{s}"));
        for t in txns {
            for (kind, k, v) in t.ops {
                b.op(kind, keys[k as usize], v);
            }
            let (start, commit) = if p.timestamps {
                (t.start, t.commit)
            } else {
                (krait_history::NO_TIME, krait_history::NO_TIME)
            };
            b.finish_txn(t.ext, TxnStatus::Committed, start, commit)
                .expect("generated ids are unique");
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_sized() {
        let a = blindw(&BlindW::rw(500));
        let b = blindw(&BlindW::rw(500));
        assert_eq!(a.num_txns(), 500);
        assert_eq!(a.op_value, b.op_value);
        assert_eq!(a.op_kind.len(), 500 * 8);
    }

    #[test]
    fn fewer_keys_than_operations_touch_every_key_once() {
        let h = blindw(&BlindW {
            keys: 3,
            ..BlindW::wm(200)
        });
        assert_eq!(h.num_txns(), 200);
        assert_eq!(h.op_kind.len(), 200 * 3);
        for t in 0..h.num_txns() as u32 {
            let mut keys: Vec<u32> = h.ops(t).map(|o| h.op_key[o]).collect();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), 3);
        }
    }

    #[test]
    fn fences_are_recorded() {
        let h = blindw(&BlindW {
            fence_every: Some(10),
            ..BlindW::rm(1000)
        });
        let fences = (0..h.num_txns() as u32).filter(|&t| h.is_fence(t)).count();
        assert!(fences > 50, "{fences}");
    }
}
