//! `krait convert`: between Cobra log directories and native JSON Lines, so a history recorded
//! by one tool can be checked or replayed by another.

use crate::files::{load, save};
use clap::Args;
use krait_history::Format;
use std::path::PathBuf;
use std::process::ExitCode;

// The arguments of `krait convert`.
/// The arguments of `krait convert`.
#[derive(Args)]
pub struct ConvertArgs {
    /// The history to read, in any format krait reads.
    pub(crate) input: PathBuf,
    /// Where to write it: a name ending in .jsonl for JSON Lines, a directory for Cobra logs,
    /// or nats://HOST:PORT/STREAM to publish it to a JetStream stream (`krait convert
    /// nats://… out.jsonl` reads one back).
    pub(crate) output: PathBuf,
    /// The input's format: jsonl, cobra, edn, polysi or dbcop (default: recognized from the
    /// file), e.g. --format edn.
    #[arg(long)]
    pub(crate) format: Option<Format>,
    /// Cobra output: the variant with timestamps after S and C.
    #[arg(long)]
    pub(crate) timestamps: bool,
    /// Output nats://…: sessions published at once (a session's records stay in order).
    #[arg(long, default_value_t = 8)]
    pub(crate) publishers: usize,
}

/// Loads `input` and writes it to `output` (the format follows the output's name).
pub fn run(a: &ConvertArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(&a.input, a.format)?;
    if crate::stream::is_stream(&a.output) {
        let t = std::time::Instant::now();
        let n = crate::stream::publish(&loaded.history, &a.output.to_string_lossy(), a.publishers)?;
        eprintln!(
            "published {n} transactions to {} in {:.2} s",
            a.output.display(),
            t.elapsed().as_secs_f64()
        );
        return Ok(ExitCode::SUCCESS);
    }
    save(&loaded.history, &a.output, a.timestamps)?;
    Ok(ExitCode::SUCCESS)
}
