//! Every integration test of this crate in one binary: one link instead of one per file,
//! and the files' tests run side by side instead of one binary after another.

mod claims;
mod common;
mod conformance;
mod contended;
mod cut_logs;
mod duplicates;
mod examples;
mod list_append;
mod lists;
mod online;
mod online_causal;
mod online_repeated;
mod online_si;
mod oracle;
mod read_heavy;
mod repeated_timed;
mod session_order;
mod snapshot_isolation;
mod strict;
mod weak_levels;
mod weak_repeated;
