//! Every integration test of this crate in one binary: one link instead of one per file,
//! and the files' tests run side by side instead of one binary after another.

mod app_values;
mod common;
mod dbcop;
mod deletes;
mod elle;
mod formats;
mod model;
mod readers;
mod stream;
