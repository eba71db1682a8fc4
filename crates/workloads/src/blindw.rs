//! BlindW against a real database: the Cobra paper's blind-write benchmark, transactions that
//! only read or only write random keys (the simulated store's version is in `sim.rs`).

use crate::{Rng, Tx, TxError, Workload};

/// BlindW: read-only transactions of `ops` reads, write-only ones of `ops` writes, on `keys` keys.
pub struct BlindWKv {
    /// Keys `k0` … `k{keys-1}`.
    pub keys: u64,
    /// Reads or writes per transaction (distinct keys).
    pub ops: usize,
    /// Fraction of read-only transactions (RM 0.9, RW 0.5, WM 0.1).
    pub read_only: f64,
}

fn distinct_keys(rng: &mut Rng, n: usize, keys: u64) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::with_capacity(n);
    while v.len() < n.min(keys as usize) {
        let k = rng.below(keys);
        if !v.contains(&k) {
            v.push(k);
        }
    }
    v
}

impl Workload for BlindWKv {
    fn name(&self) -> String {
        let v = if self.read_only >= 0.85 {
            "rm"
        } else if self.read_only <= 0.15 {
            "wm"
        } else {
            "rw"
        };
        format!("blindw-{v}")
    }
    fn run_txn(&self, _client: usize, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let ks = distinct_keys(rng, self.ops, self.keys);
        if rng.chance(self.read_only) {
            for k in ks {
                tx.read(&format!("k{k}"))?;
            }
        } else {
            for k in ks {
                let v = rng.next_u64() % 1_000_000;
                tx.write(&format!("k{k}"), &v.to_string())?;
            }
        }
        Ok(())
    }
}
