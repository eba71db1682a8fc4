//! Workloads as key-value transaction logic, independent of any store: each workload says what a
//! client's next transaction reads and writes through a [`Tx`]; the collector runs it against a
//! real database and records what happened.

use crate::Rng;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Why a transaction's logic stopped: the store refused (to be recorded as aborted or unknown by
/// the collector), or the workload itself gave up (a barrier partner never came).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxError(pub String);

impl std::fmt::Display for TxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for TxError {}

/// One open transaction, as a workload sees it: values are the application's own strings.
pub trait Tx {
    fn read(&mut self, key: &str) -> Result<Option<String>, TxError>;
    fn write(&mut self, key: &str, value: &str) -> Result<(), TxError>;
}

pub trait Workload: Send + Sync {
    fn name(&self) -> String;
    /// Rows loaded before the run, outside any recorded transaction (the initial state).
    fn initial(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The logic of client `client`'s next transaction.
    fn run_txn(&self, client: usize, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError>;
}

/// BlindW: read-only transactions of `ops` reads, write-only ones of `ops` writes, on `keys` keys.
pub struct BlindWKv {
    pub keys: u64,
    pub ops: usize,
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

/// Two parties meet at a rendezvous; a party that waits too long gives up (its partner's
/// transaction failed before arriving).
pub struct PairBarrier {
    state: Mutex<(u64, usize)>,
    cv: Condvar,
}

impl Default for PairBarrier {
    fn default() -> Self {
        PairBarrier {
            state: Mutex::new((0, 0)),
            cv: Condvar::new(),
        }
    }
}

impl PairBarrier {
    pub fn wait(&self, timeout: Duration) -> Result<(), TxError> {
        let mut g = self.state.lock().unwrap();
        let gen = g.0;
        g.1 += 1;
        if g.1 == 2 {
            g.0 += 1;
            g.1 = 0;
            self.cv.notify_all();
            return Ok(());
        }
        let (mut g, res) = self
            .cv
            .wait_timeout_while(g, timeout, |s| s.0 == gen)
            .unwrap();
        if res.timed_out() && g.0 == gen {
            g.1 -= 1;
            return Err(TxError(
                "the partner transaction never reached the barrier".into(),
            ));
        }
        Ok(())
    }
}

/// Write skew made certain: clients 2i and 2i+1 both read x_i and y_i, meet at a barrier (so
/// their transactions overlap), then one writes x_i and the other y_i. Under snapshot isolation
/// both commit and the history has a cycle of two anti-dependencies; under serializability one
/// of each pair aborts.
pub struct WriteSkew {
    pub clients: usize,
    pub pairs: Vec<PairBarrier>,
}

impl WriteSkew {
    pub fn new(clients: usize) -> Self {
        WriteSkew {
            clients,
            pairs: (0..clients.div_ceil(2))
                .map(|_| PairBarrier::default())
                .collect(),
        }
    }
}

impl Workload for WriteSkew {
    fn name(&self) -> String {
        "write-skew".into()
    }
    fn initial(&self) -> Vec<(String, String)> {
        (0..self.pairs.len())
            .flat_map(|p| {
                [
                    (format!("x{p}"), "50".into()),
                    (format!("y{p}"), "50".into()),
                ]
            })
            .collect()
    }
    fn run_txn(&self, client: usize, _rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        // Each pair always shares the same two keys, so every round of a pair can skew.
        let p = client / 2;
        let (x, y) = (format!("x{p}"), format!("y{p}"));
        let vx: i64 = tx.read(&x)?.and_then(|v| v.parse().ok()).unwrap_or(0);
        let vy: i64 = tx.read(&y)?.and_then(|v| v.parse().ok()).unwrap_or(0);
        if (client ^ 1) < self.clients {
            self.pairs[p].wait(Duration::from_secs(1))?;
        }
        // The invariant x + y >= 0 holds if each withdrawal sees the other's.
        if client & 1 == 0 {
            tx.write(&x, &(vx - (vx + vy) / 2 - 1).to_string())
        } else {
            tx.write(&y, &(vy - (vx + vy) / 2 - 1).to_string())
        }
    }
}

/// Lost updates made likely: every client increments one of a few shared counters by reading it
/// and writing it back.
pub struct LostUpdate {
    pub counters: u64,
}

impl Workload for LostUpdate {
    fn name(&self) -> String {
        "lost-update".into()
    }
    fn initial(&self) -> Vec<(String, String)> {
        (0..self.counters)
            .map(|i| (format!("counter{i}"), "0".into()))
            .collect()
    }
    fn run_txn(&self, _client: usize, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let k = format!("counter{}", rng.below(self.counters));
        let v: i64 = tx.read(&k)?.and_then(|v| v.parse().ok()).unwrap_or(0);
        // Give the other clients time to read the same version.
        std::thread::sleep(Duration::from_micros(200));
        tx.write(&k, &(v + 1).to_string())
    }
}
