//! krait-collector: record histories from real databases.
//!
//! Input: a [`store::Backend`] (SQLite, PostgreSQL, MariaDB/MySQL) and a workload from
//! krait-workloads. Output: one native JSON Lines log per client session (see
//! `docs/history-format.md`), written before each request goes out, plus throughput and latency.

pub mod my;
pub mod pg;
pub mod run;
pub mod session;
pub mod sqlite;
pub mod store;

pub use run::{run, RunConfig, RunReport};
pub use session::{decode, encode, Session, TxnOutcome};
pub use store::{backend, Backend, Isolation, Store, StoreError};
