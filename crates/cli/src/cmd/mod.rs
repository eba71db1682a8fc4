//! One module per subcommand, each with its arguments (a clap `Args` struct) and its `run`;
//! `online` holds what `check --round-size` and `watch` share.

mod args;
pub mod check;
mod checkpoint;
pub mod convert;
pub mod demo;
pub mod generate;
mod ladder;
mod online;
pub mod proxy;
pub mod run;
pub mod stats;
pub mod verify_certificate;
pub mod watch;
