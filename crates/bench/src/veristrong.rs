//! `krait-bench veristrong`: every history of VeriStrong's benchmark that its README lists at a
//! level krait checks, with krait's verdict, time and peak memory beside VeriStrong's verdict and
//! time (measured by whoever prepared the folder, on this machine kind), and the speed-up.
//! Many of these histories write a value more than once: this is the duplicate-values path.

use crate::check::measure;
use crate::common::{find_data, mb};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

// The arguments of `krait-bench veristrong`.
#[derive(Args)]
pub struct VeristrongArgs {
    /// The folder holding VeriStrong's histories and README (default: ../shared/data/veristrong).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Only histories whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Give each run at most this many seconds.
    #[arg(long, default_value_t = 300.0)]
    pub timeout: f64,
}

/// One README row: history, level, VeriStrong's verdict and seconds.
fn readme_rows(dir: &std::path::Path) -> anyhow::Result<Vec<(String, String, String, f64)>> {
    let text = std::fs::read_to_string(dir.join("README.md"))
        .with_context(|| format!("reading {}", dir.join("README.md").display()))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 6 || !(cells[1].starts_with("ser/") || cells[1].starts_with("si/")) {
            continue;
        }
        let secs = cells[4].parse().unwrap_or(f64::NAN);
        out.push((cells[1].into(), cells[2].into(), cells[3].into(), secs));
    }
    Ok(out)
}

/// The table; a row per history at a level krait checks (serializability, snapshot isolation).
pub fn run(a: VeristrongArgs) -> anyhow::Result<ExitCode> {
    let dir = match a.data {
        Some(d) => d,
        None => match find_data(None) {
            Some(cobra) => cobra.with_file_name("veristrong"),
            None => {
                println!("skipped: no ../shared/data/veristrong here (pass --data)");
                return Ok(ExitCode::SUCCESS);
            }
        },
    };
    println!(
        "{:<56} {:>6} {:>9} {:>7} {:>9} {:>8} {:>8} {:>8}",
        "history", "level", "VS", "VS s", "krait", "krait ms", "RSS MB", "speed-up"
    );
    let (mut same, mut differ, mut skipped) = (0, 0, 0);
    for (h, level, vs, vs_secs) in readme_rows(&dir)? {
        if a.only.as_ref().is_some_and(|o| !h.contains(o.as_str())) {
            continue;
        }
        if level != "ser" && level != "si" {
            skipped += 1;
            continue;
        }
        let Some(row) = measure(&dir.join(&h), "full", &["--level", &level], a.timeout, &[])?
        else {
            differ += 1;
            continue;
        };
        let verdict = row.verdict.to_lowercase();
        if verdict == vs {
            same += 1;
        } else {
            differ += 1;
        }
        println!(
            "{:<56} {:>6} {:>9} {:>7.1} {:>9} {:>8.1} {:>8} {:>7.0}x",
            h,
            level,
            vs,
            vs_secs,
            verdict,
            row.total_ms,
            mb(row.peak_rss),
            vs_secs * 1e3 / row.total_ms.max(0.001)
        );
    }
    println!(
        "{same} verdicts as VeriStrong's, {differ} not; {skipped} histories at levels krait does not check"
    );
    Ok(ExitCode::SUCCESS)
}
