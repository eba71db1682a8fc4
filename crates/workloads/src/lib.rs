//! krait-workloads: the paper's workloads as key-value transactions, and an in-memory
//! multi-version store that runs them into histories without a database.
//!
//! Input: workload parameters and a seed. Output: transaction logic for the collector to run
//! against a database ([`Workload`], one file per workload), or directly a
//! `krait_history::History` from the simulated store ([`blindw`], deterministic for a seed).
//! Every random choice comes from one seeded [`Rng`], so a seed reproduces a run.

#![warn(missing_docs)]

mod blindw;
mod lost_update;
mod named;
mod rng;
mod rows;
mod rubis;
mod sim;
mod tpcc;
mod twitter;
mod workload;
mod write_skew;

#[cfg(test)]
mod apps_tests;
#[cfg(test)]
mod testkit;

pub use blindw::BlindWKv;
pub use lost_update::LostUpdate;
pub use named::{by_name, UnknownWorkload, NAMES};
pub use rng::Rng;
pub use rows::Zipf;
pub use rubis::Rubis;
pub use sim::{blindw, BlindW, BlindWStream, GenTxn};
pub use tpcc::Tpcc;
pub use twitter::Twitter;
pub use workload::{Tx, TxError, Workload};
pub use write_skew::WriteSkew;
