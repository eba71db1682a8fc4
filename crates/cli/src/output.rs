//! Output shared by several subcommands: the one-line history summary that `stats` and `check`
//! both print, and a certificate drawn with Graphviz (`check --dot`, `watch --dot`).

use anyhow::Context;
use std::path::Path;

/// `PATH: N sessions, M transactions (…), …`: the history's counts in one line.
pub(crate) fn stats_line(path: &Path, s: &krait_history::Summary) -> String {
    format!("{}: {}", path.display(), krait_report::counts_text(s))
}

/// Draws a certificate: a .svg or .png rendered by Graphviz `dot`, anything else as DOT text.
pub(crate) fn write_dot(cert: &krait_checker::Certificate, path: &Path) -> anyhow::Result<()> {
    let dot = krait_report::certificate_dot(cert);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("dot");
    if ext == "svg" || ext == "png" {
        let mut child = std::process::Command::new("dot")
            .arg(format!("-T{ext}"))
            .arg("-o")
            .arg(path)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .context("rendering needs Graphviz `dot` on PATH (or write a .dot file)")?;
        use std::io::Write;
        child.stdin.take().unwrap().write_all(dot.as_bytes())?;
        let st = child.wait()?;
        anyhow::ensure!(st.success(), "dot failed rendering {}", path.display());
    } else {
        std::fs::write(path, dot).with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!("certificate drawn to {}", path.display());
    Ok(())
}
