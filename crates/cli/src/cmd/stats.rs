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
    /// The history: a file, or a directory of Cobra logs or JSON Lines session files.
    pub(crate) path: PathBuf,
    /// The input's format: jsonl, cobra, edn, polysi or dbcop (default: recognized from the
    /// file), e.g. --format edn.
    #[arg(long)]
    pub(crate) format: Option<Format>,
    /// The counts as JSON (the `history` object of docs/json.md).
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
