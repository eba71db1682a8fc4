//! krait-collector: record histories from real databases.
//!
//! Input: a [`store::Backend`] (SQLite, PostgreSQL, MariaDB/MySQL) and a workload from
//! krait-workloads. Output: one native JSON Lines log per client session (see
//! `docs/history-format.md`), written before each request goes out, plus throughput and latency.
//! Applications record their own transactions with [`Recorder`] (docs/recording.md).

#![warn(missing_docs)]

mod adapters;
mod connect;
mod mysql;
mod postgres;
mod proxy;
mod recorder;
mod run;
mod session;
mod sqlite;
mod store;

pub use adapters::{RecError, Rows, Table};
pub use connect::backend;
pub use krait_transport as transport;
pub use proxy::{serve as serve_proxy, ProxyConfig, ProxyReport};
pub use recorder::{RecSession, RecTxn, Recorder};
pub use run::{run, RunConfig, RunReport};
pub use store::{Backend, Isolation, Promise, Promised, Store, StoreError, UnknownIsolation};
