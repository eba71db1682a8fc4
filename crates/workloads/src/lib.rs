//! krait-workloads: the paper's workloads as key-value transactions, and an in-memory
//! multi-version store that runs them into histories without a database.
//!
//! Input: workload parameters and a seed. Output: transaction logic for the collector to run
//! against a database ([`kv`]), or directly a `krait_history::History` (deterministic for a
//! seed). The simulated store is serializable (and strictly so): write transactions apply
//! atomically at commit; read-only transactions read the snapshot at their start. Optional fault
//! injection makes some reads stale, which breaks serializability for tests and demos.

pub mod apps;
pub mod kv;

pub use apps::{Rubis, Tpcc, Twitter};
pub use kv::{BlindWKv, LostUpdate, Tx, TxError, Workload, WriteSkew};

use krait_history::{History, HistoryBuilder, KeyId, OpKind, TxnStatus, NATIVE_FENCE_KEY};

/// xorshift64*: small, fast, deterministic.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

#[derive(Clone, Debug)]
pub struct BlindW {
    pub txns: usize,
    pub sessions: usize,
    pub keys: u64,
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
    pub seed: u64,
}

impl BlindW {
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
        }
    }
    pub fn rm(txns: usize) -> BlindW {
        BlindW {
            read_only: 0.9,
            ..BlindW::rw(txns)
        }
    }
    pub fn wm(txns: usize) -> BlindW {
        BlindW {
            read_only: 0.1,
            ..BlindW::rw(txns)
        }
    }
}

struct PendingTxn {
    ext: u64,
    start: u64,
    commit: u64,
    ops: Vec<(OpKind, KeyId, u64)>,
}

/// Runs a BlindW workload on the simulated store.
pub fn blindw(p: &BlindW) -> History {
    let mut rng = Rng::new(p.seed);
    let mut b = HistoryBuilder::new();
    let keys: Vec<KeyId> = (0..p.keys).map(|i| b.key(&format!("k{i}"))).collect();
    let fence_key = b.key(NATIVE_FENCE_KEY);
    b.set_fence_key(fence_key);
    // Committed versions per key: (commit sequence number, value). Value 0 is never written.
    let mut versions: Vec<Vec<(u64, u64)>> = vec![Vec::new(); p.keys as usize + 1];
    let mut sessions: Vec<Vec<PendingTxn>> = (0..p.sessions).map(|_| Vec::new()).collect();
    let mut session_count = vec![0usize; p.sessions];
    let mut next_value = 1u64;
    // Recent write transactions: their (key, value written, value before) triples.
    let mut recent: std::collections::VecDeque<Vec<(usize, u64, Option<u64>)>> = Default::default();
    let mut seq = 0u64;
    let read_at = |versions: &Vec<Vec<(u64, u64)>>, k: usize, snap: u64| -> Option<u64> {
        let v = &versions[k];
        let i = v.partition_point(|&(s, _)| s <= snap);
        (i > 0).then(|| v[i - 1].1)
    };
    for _ in 0..p.txns {
        let s = rng.below(p.sessions as u64) as usize;
        seq += 1;
        let n = session_count[s];
        session_count[s] += 1;
        let ext = seq;
        let unit = p.ns_per_txn.max(10);
        let now = seq * unit;
        let mut ops = Vec::with_capacity(p.ops_per_txn);
        let is_fence = p.fence_every.is_some_and(|f| n % f == f - 1);
        let mut start = now - unit / 2;
        if is_fence {
            let v = read_at(&versions, p.keys as usize, seq);
            ops.push(match v {
                Some(v) => (OpKind::Read, fence_key, v),
                None => (OpKind::ReadInit, fence_key, 0),
            });
            ops.push((OpKind::Write, fence_key, next_value));
            versions[p.keys as usize].push((seq, next_value));
            next_value += 1;
        } else if rng.chance(p.read_only) {
            // The snapshot may lag, but never behind this session's previous transaction.
            let prev = sessions[s].last().map(|t| t.commit / unit).unwrap_or(0);
            let lag = rng.below(p.max_lag as u64 + 1);
            let snap = seq.saturating_sub(lag).max(prev);
            start = snap * unit + 1;
            let mut picked: Vec<u64> = Vec::with_capacity(p.ops_per_txn);
            while picked.len() < p.ops_per_txn {
                let k = rng.below(p.keys);
                if !picked.contains(&k) {
                    picked.push(k);
                }
            }
            if p.fractured_reads > 0.0 && !recent.is_empty() && rng.chance(p.fractured_reads) {
                // See the first write of a recent transaction and miss its second.
                let w = &recent[rng.below(recent.len() as u64) as usize];
                let (k0, v0, _) = w[0];
                let (k1, _, before) = w[1];
                picked.retain(|&k| k as usize != k0 && k as usize != k1);
                picked.truncate(p.ops_per_txn.saturating_sub(2));
                ops.push((OpKind::Read, keys[k0], v0));
                ops.push(match before {
                    Some(v) => (OpKind::Read, keys[k1], v),
                    None => (OpKind::ReadInit, keys[k1], 0),
                });
            }
            for k in picked {
                let mut at = snap;
                if p.stale_reads > 0.0 && rng.chance(p.stale_reads) {
                    at = snap.saturating_sub(1 + rng.below(50));
                }
                ops.push(match read_at(&versions, k as usize, at) {
                    Some(v) => (OpKind::Read, keys[k as usize], v),
                    None => (OpKind::ReadInit, keys[k as usize], 0),
                });
            }
        } else {
            let mut picked: Vec<u64> = Vec::with_capacity(p.ops_per_txn);
            while picked.len() < p.ops_per_txn {
                let k = rng.below(p.keys);
                if !picked.contains(&k) {
                    picked.push(k);
                }
            }
            let mut written = Vec::with_capacity(picked.len());
            for k in picked {
                let before = versions[k as usize].last().map(|v| v.1);
                ops.push((OpKind::Write, keys[k as usize], next_value));
                versions[k as usize].push((seq, next_value));
                written.push((k as usize, next_value, before));
                next_value += 1;
            }
            if written.len() >= 2 {
                recent.push_back(written);
                if recent.len() > 32 {
                    recent.pop_front();
                }
            }
        }
        sessions[s].push(PendingTxn {
            ext,
            start,
            commit: now + 100,
            ops,
        });
    }
    for (s, txns) in sessions.into_iter().enumerate() {
        b.begin_session(format!("s{s}"));
        for t in txns {
            for (kind, k, v) in t.ops {
                b.op(kind, k, v).expect("generated write values are unique");
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
    fn fences_are_recorded() {
        let h = blindw(&BlindW {
            fence_every: Some(10),
            ..BlindW::rm(1000)
        });
        let fences = (0..h.num_txns() as u32).filter(|&t| h.is_fence(t)).count();
        assert!(fences > 50, "{fences}");
    }
}
