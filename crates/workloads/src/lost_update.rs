//! Lost updates made likely: a workload that is serializable only if the database prevents lost
//! updates (read-committed PostgreSQL does not).

use crate::{Rng, Tx, TxError, Workload};
use std::time::Duration;

/// Lost updates made likely: every client increments one of a few shared counters by reading it
/// and writing it back.
pub struct LostUpdate {
    /// How many counters (`counter0` …) the clients share: fewer is more contention.
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
