//! `krait verify-certificate`: confirm a verdict against the raw history with krait-verify, a
//! second checker written apart from the first, so a bug in the checker cannot vouch for itself.
//! Native JSON Lines are read by krait-verify's own reader for the same reason; other formats
//! by the reader the checker shares.

use crate::exit;
use crate::files::load;
use anyhow::Context;
use clap::Args;
use krait_history::{Format, History, InputError};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// The arguments of `krait verify-certificate`.
/// The arguments of `krait verify-certificate`.
#[derive(Args)]
pub struct VerifyCertificateArgs {
    /// The history the verdict is about.
    pub(crate) history: PathBuf,
    /// The verdict: the output of `krait check HISTORY --json` (with --order for an ACCEPT).
    pub(crate) cert: PathBuf,
    /// The input's format: jsonl, cobra, edn, polysi or dbcop (default: recognized from the
    /// file), e.g. --format edn.
    #[arg(long)]
    pub(crate) format: Option<Format>,
}

/// Exit 0: confirmed; 1: refuted; 2: bad input; 3: a verdict of a kind it cannot confirm.
pub fn run(a: &VerifyCertificateArgs) -> anyhow::Result<ExitCode> {
    let history = load_history(&a.history, a.format)?;
    let text = std::fs::read_to_string(&a.cert)
        .with_context(|| format!("reading {}", a.cert.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a krait check --json verdict", a.cert.display()))?;
    match krait_verify::verify(&history, &v) {
        Ok(what) => {
            println!("confirmed: {what}");
            Ok(ExitCode::SUCCESS)
        }
        Err(p @ krait_verify::Problem::Invalid(_)) => {
            println!("{p}");
            Ok(ExitCode::from(exit::REJECT))
        }
        Err(p) => {
            println!("{p}");
            Ok(ExitCode::from(exit::UNKNOWN))
        }
    }
}

/// The history the verdict is about: native JSON Lines through krait-verify's own reader (a
/// bug in the shared one would otherwise be confirmed by both), anything else through the
/// shared reader.
fn load_history(path: &Path, format: Option<Format>) -> Result<History, InputError> {
    let native = !crate::stream::is_stream(path)
        && match format {
            Some(f) => f == Format::Jsonl,
            None => krait_history::detect(path)? == Format::Jsonl,
        };
    if !native {
        return Ok(load(path, format)?.history);
    }
    let unrecorded = path.join(krait_history::UNRECORDED_FILE);
    if path.is_dir() && unrecorded.is_file() {
        // The shared reader's warning names the statements; this reader only notes them.
        eprintln!(
            "warning: {}: some statements were not recorded (`krait check` names them); a verdict covers what was recorded",
            unrecorded.display()
        );
    }
    krait_verify::jsonl::read_path(path)
}
