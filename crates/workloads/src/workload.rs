//! What a workload is: key-value transaction logic, independent of any store. Each workload
//! says what a client's next transaction reads and writes through a [`Tx`]; the collector runs
//! it against a real database and records what happened, so the same logic serves SQLite,
//! PostgreSQL, MariaDB and the tests' in-memory stores.

use crate::Rng;

/// Why a transaction's logic stopped: the store refused (to be recorded as aborted or unknown by
/// the collector), or the workload itself gave up (a barrier partner never came).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TxError(pub String);

/// One open transaction, as a workload sees it: values are the application's own strings.
pub trait Tx {
    /// The value of `key` as this transaction sees it; `None` for a row that does not exist.
    fn read(&mut self, key: &str) -> Result<Option<String>, TxError>;
    /// Sets `key` to `value` (creating the row if need be).
    fn write(&mut self, key: &str, value: &str) -> Result<(), TxError>;
}

/// A transaction mix: what each client runs, one transaction at a time. Shared by all clients
/// of a run (hence `Sync`); per-client randomness comes through `rng`, seeded per client.
pub trait Workload: Send + Sync {
    /// The name runs and reports show, e.g. `twitter`.
    fn name(&self) -> String;
    /// Rows loaded before the run, outside any recorded transaction (the initial state).
    fn initial(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The logic of client `client`'s next transaction.
    fn run_txn(&self, client: usize, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError>;
}
