//! One module per subcommand, each with its arguments (a clap `Args` struct) and its `run`.

pub mod check;
pub mod convert;
pub mod demo;
pub mod generate;
pub mod run;
pub mod stats;
pub mod verify_certificate;
pub mod watch;
