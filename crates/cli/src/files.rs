//! Reading and writing histories on the user's paths: load warnings go to stderr, and only the
//! formats krait can write are accepted as output names, so a typo never becomes a directory of
//! Cobra logs with a misleading name.

use anyhow::Context;
use krait_history::{Format, InputError};
use std::path::Path;

/// Loads a history, printing its warnings (a log cut short, …) to stderr.
pub(crate) fn load(
    path: &Path,
    format: Option<Format>,
) -> Result<krait_history::Loaded, InputError> {
    let loaded = if crate::stream::is_stream(path) {
        crate::stream::read_all(path)?
    } else {
        krait_history::load(path, format)?
    };
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    Ok(loaded)
}

/// Writes `h` as native JSON Lines (`OUT.jsonl`) or a Cobra log directory (OUT without an
/// extension), warning about what Cobra logs cannot hold.
pub(crate) fn save(h: &krait_history::History, out: &Path, timestamps: bool) -> anyhow::Result<()> {
    // Only native JSON Lines and Cobra directories are written: any other extension would
    // silently become a Cobra directory with a misleading name.
    if let Some(e) = out.extension().and_then(|e| e.to_str()) {
        anyhow::ensure!(
            matches!(e, "jsonl" | "json"),
            "krait writes native JSON Lines (OUT ending in .jsonl) or a Cobra log directory (OUT without an extension), not .{e}"
        );
    }
    if out.extension().is_some_and(|e| e == "jsonl" || e == "json") {
        krait_history::write_jsonl_file(h, out)
            .with_context(|| format!("writing {}", out.display()))?;
    } else {
        let (skipped, own) = krait_history::write_cobra_dir(h, out, timestamps)
            .with_context(|| format!("writing {}", out.display()))?;
        if skipped > 0 {
            eprintln!("warning: {skipped} transactions that did not commit (or whose unknown outcome nobody read) were left out (Cobra logs hold committed ones only)");
        }
        if own > 0 {
            eprintln!("warning: {own} transactions with an unknown outcome that others read are written as committed, each in a log of its own (Cobra logs have no unknown outcomes)");
        }
    }
    Ok(())
}
