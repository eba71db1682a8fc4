//! The `krait` command's subcommands, as a library: `main.rs` parses the command line and calls
//! into [`cmd`], and `krait-bench` runs the same code in its measured child processes, so a
//! benchmark measures exactly what a user runs.
//!
//! Exit codes are in [`exit`]: 0 ACCEPT, 1 REJECT, 2 bad input or usage, 3 UNKNOWN (solver
//! budget exhausted), 4 a run stopped by its database.

#![warn(missing_docs)]

pub mod alloc;
pub mod cmd;
pub mod exit;
pub mod memory;

mod duration;
mod files;
mod junit;
mod lag;
mod output;
mod progress;
mod report_dir;
mod stream;
