//! krait-checker: is a history serializable? Cobra's pipeline, exact at every step.
//!
//! Input: a [`History`] (from krait-history) and [`Options`]. Output: a [`Report`] — the
//! [`Verdict`] (ACCEPT, or REJECT with a [`Certificate`]), optionally a serial order, and
//! statistics and per-phase timings. [`online`] checks a history that keeps growing, in rounds
//! with bounded memory.
//!
//! ```
//! use krait_checker::{check, Anomaly, Options};
//! use krait_history::{build_history, SimpleTxn};
//!
//! // Session 0: T1 writes x=1 and y=1. Session 1: T2 reads y=1 (T1's) but x as initial:
//! // it saw half of T1, which no serial order allows (G-single, read skew).
//! let h = build_history(&[
//!     SimpleTxn::new(0, 1).w("x", 1).w("y", 1),
//!     SimpleTxn::new(1, 2).r("y", 1).r0("x"),
//! ])
//! .unwrap();
//! let report = check(&h, &Options::default()).unwrap();
//! let cert = report.verdict.certificate().unwrap();
//! assert_eq!(cert.anomaly, Anomaly::GSingle);
//! ```
//!
//! The modules follow the theory: `graph` (the known graph: plumbing, construction from a
//! history, reachability, cycle search), `ser` (serializability: chains, coalesced
//! constraints, pruning, solving), `realtime` (strict serializability's real-time order),
//! `cert` (every REJECT in words), `online` (rounds, epochs, garbage collection), and
//! `pipeline`, which runs one check through them.

#![warn(missing_docs)]

mod cert;
mod findings;
mod graph;
mod guess;
pub mod online;
mod options;
mod pipeline;
mod realtime;
mod report;
mod ser;
mod stats;
mod weak;

pub use cert::{
    classify, classify_si, Anomaly, CertCase, CertConstraint, CertEdge, CertOption, CertTxn,
    Certificate, Deduction,
};
pub use graph::EdgeKind;
pub use krait_solver::Budget;
pub use options::{Defer, Level, Options, SolverKind};
pub use report::{CheckError, MatchedRead, Report, Verdict};
pub use stats::{CheckStats, Timings};

use krait_history::History;

/// Checks one history at the level the options name (serializability, or strict
/// serializability with `strict`). An error is about the input (timestamps `strict` needs),
/// never the verdict.
pub fn check(h: &History, opts: &Options) -> Result<Report, CheckError> {
    pipeline::run(h, opts, None, false).map(|(r, _)| r)
}
