//! `krait stats`: load a history and print its counts, the quickest way to see that a history
//! loads and holds what was expected.

use crate::files::load;
use crate::output::stats_line;
use clap::Args;
use krait_history::Format;
use std::path::PathBuf;
use std::process::ExitCode;

// The arguments of `krait stats`.
/// The arguments of `krait stats`.
#[derive(Args)]
pub struct StatsArgs {
    pub(crate) path: PathBuf,
    #[arg(long)]
    pub(crate) format: Option<Format>,
    #[arg(long)]
    pub(crate) json: bool,
}

/// Prints the history's counts, as a line or (`--json`) an object.
pub fn run(a: &StatsArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(&a.path, a.format)?;
    let s = krait_history::summarize(&loaded.history);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        println!("{}", stats_line(&a.path, &s));
    }
    Ok(ExitCode::SUCCESS)
}
