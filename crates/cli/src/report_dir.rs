//! `--report DIR` (`check --out DIR`): the verdict as a directory a person opens and a CI job
//! archives — report.html (self-contained), verdict.json (what `--json` prints),
//! anomalies/N-CLASS.txt and .svg (drawn without Graphviz).

use anyhow::Context;
use krait_report::{anomalies, certificate_svg, certificate_text, report_html, Page};
use std::fs;
use std::path::Path;

/// Makes `dir` ready before any checking, so a directory that cannot take a report is a usage
/// error (exit 2) and not a lost verdict: it must be new, empty, or an earlier krait report
/// (whose anomaly files are then replaced). Nothing else in it is touched.
pub(crate) fn prepare(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        anyhow::ensure!(dir.is_dir(), "--report {}: not a directory", dir.display());
        let mut entries =
            fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
        let empty = entries.next().is_none();
        anyhow::ensure!(
            empty || dir.join("verdict.json").is_file(),
            "--report {}: the directory holds other files; krait writes a report only into a new or empty directory, or over its own earlier report",
            dir.display()
        );
        let old = dir.join("anomalies");
        if old.is_dir() {
            for e in fs::read_dir(&old)? {
                let p = e?.path();
                let ours = matches!(p.extension().and_then(|x| x.to_str()), Some("txt" | "svg"));
                if ours {
                    fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
                }
            }
        }
    }
    fs::create_dir_all(dir.join("anomalies")).with_context(|| format!("creating {}", dir.display()))
}

/// Writes the report. A failure here is the caller's warning, not the verdict's exit code.
pub(crate) fn write(dir: &Path, page: &Page, verdict: &serde_json::Value) -> anyhow::Result<()> {
    let put = |name: &str, text: String| {
        let p = dir.join(name);
        fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    put("report.html", report_html(page))?;
    put(
        "verdict.json",
        format!("{}\n", serde_json::to_string_pretty(verdict)?),
    )?;
    for a in anomalies(&page.rungs) {
        let text = format!(
            "breaks: {}\n{}",
            a.levels.join(", "),
            certificate_text(a.certificate)
        );
        put(&format!("anomalies/{}.txt", a.stem), text)?;
        put(
            &format!("anomalies/{}.svg", a.stem),
            certificate_svg(a.certificate, "a"),
        )?;
    }
    eprintln!("report written to {}", dir.join("report.html").display());
    Ok(())
}
