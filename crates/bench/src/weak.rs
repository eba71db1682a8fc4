//! `krait-bench weak`: the weak levels (read committed, read atomic, causal) on Cobra histories,
//! krait beside AWDIT (PLDI'25) when its binary is given (`--awdit PATH`, built from
//! lassemoldrup/AWDIT with `cargo build --release`): wall time (of the whole process, loading
//! included, for both) and peak memory of each run, one process per run, and both verdicts. AWDIT reads plain Cobra logs only (no timestamps):
//! `krait convert` writes them.

use crate::check::measure;
use crate::common::{mb, name_of, paths_or};
use clap::Args;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

// The arguments of `krait-bench weak`.
#[derive(Args)]
pub struct WeakArgs {
    /// Histories (Cobra log directories; default: one-shot-10k/* and scaling/*).
    pub paths: Vec<PathBuf>,
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// AWDIT's binary, to run beside krait.
    #[arg(long)]
    pub awdit: Option<PathBuf>,
    /// Give each krait run at most this many seconds.
    #[arg(long, default_value_t = 600.0)]
    pub timeout: f64,
}

const LEVELS: [&str; 3] = ["read-committed", "read-atomic", "causal"];

/// AWDIT on one history: (seconds, peak RSS bytes, verdict), through GNU time for the memory.
fn awdit(bin: &PathBuf, p: &std::path::Path, level: &str) -> Option<(f64, f64, String)> {
    let t = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(bin)
        .args(["check", "-f", "cobra", "-r", "first", "-i", level])
        .arg(p)
        .output()
        .ok()?;
    let secs = t.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    let kb: f64 = err.lines().last()?.trim().parse().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let verdict = if text.lines().any(|l| l.trim() == "Consistent.") {
        "consistent"
    } else if out.status.success() {
        "violation"
    } else {
        "failed"
    };
    Some((secs, kb * 1024.0, verdict.to_string()))
}

pub fn run(a: WeakArgs) -> anyhow::Result<ExitCode> {
    let paths = paths_or(a.paths, a.data, |d| {
        let mut v: Vec<PathBuf> = Vec::new();
        for sub in ["one-shot-10k", "scaling"] {
            let mut ps: Vec<PathBuf> = std::fs::read_dir(d.join(sub))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            ps.sort();
            v.extend(ps);
        }
        Ok(v)
    })?;
    println!(
        "{:<22} {:<15} {:>9} {:>8} {:>10} {:>9} {:>8} {:>11} {:>8}",
        "history",
        "level",
        "krait",
        "krait s",
        "krait MB",
        "AWDIT",
        "AWDIT s",
        "AWDIT MB",
        "speed-up"
    );
    for p in &paths {
        for level in LEVELS {
            // Wall clock around the process, as for AWDIT.
            let t = Instant::now();
            let Some(row) = measure(p, level, &["--level", level], a.timeout, &[])? else {
                continue;
            };
            let k_s = t.elapsed().as_secs_f64();
            let (aw_v, aw_s, aw_mb, up) = match a.awdit.as_ref().and_then(|b| awdit(b, p, level)) {
                Some((s, rss, v)) => (
                    v,
                    format!("{s:.2}"),
                    mb(rss),
                    format!("{:.1}x", s / k_s.max(1e-4)),
                ),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            println!(
                "{:<22} {:<15} {:>9} {:>8.2} {:>10} {:>9} {:>8} {:>11} {:>8}",
                name_of(p),
                level,
                row.verdict,
                k_s,
                mb(row.peak_rss),
                aw_v,
                aw_s,
                aw_mb,
                up
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
