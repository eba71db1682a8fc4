//! Write skew made certain: a workload that is serializable only if the database prevents
//! write skew, so running it under snapshot isolation shows a REJECT on purpose.

use crate::{Rng, Tx, TxError, Workload};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Two parties meet at a rendezvous; a party that waits too long gives up (its partner's
/// transaction failed before arriving).
pub(crate) struct PairBarrier {
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
    /// Waits for the other party, at most `timeout`; an error if it never came.
    pub(crate) fn wait(&self, timeout: Duration) -> Result<(), TxError> {
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
    /// Clients of the run (an odd last client has no partner and never waits).
    clients: usize,
    /// One barrier per pair of clients.
    pairs: Vec<PairBarrier>,
}

impl WriteSkew {
    /// The workload for `clients` clients.
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
