//! Every integration test of this crate in one binary: one link instead of one per file,
//! and the files' tests run side by side instead of one binary after another.

mod app_values;
mod ci_output;
mod cli;
mod common;
mod corpus;
mod generate;
mod html_report;
mod json_doc;
mod levels;
mod nats;
mod nats_watch;
mod online_repeated;
mod shared_data;
mod suites;
mod veristrong;
mod watch_wait;
