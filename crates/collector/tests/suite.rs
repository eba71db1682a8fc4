//! Every integration test of this crate in one binary: one link instead of one per file,
//! and the files' tests run side by side instead of one binary after another.

mod adapters;
mod common;
mod e2e;
mod faults;
mod proxy;
mod proxy_rows;
mod proxy_tls;
mod proxy_undone;
mod recorder;
mod restart;
