//! `krait-bench load`: parse speed and memory of loading histories, each load in a process of
//! its own so that its peak memory is the loader's alone.

use crate::common::{child, dir_bytes, mb, name_of, paths_or};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

// The arguments of `krait-bench load`.
#[derive(Args)]
pub struct LoadArgs {
    /// Histories to load (default: tpcc-10000 and chengRM-100000 from the shared data).
    paths: Vec<PathBuf>,
    /// The shared data folder (default: ../shared/data/cobra, found from here upwards).
    #[arg(long)]
    data: Option<PathBuf>,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

/// The table: per history, the best of `repeat` loads.
pub fn run(a: LoadArgs) -> anyhow::Result<ExitCode> {
    let paths = paths_or(a.paths, a.data, |d| {
        Ok(vec![
            d.join("one-shot-10k/tpcc-10000"),
            d.join("scaling/chengRM-100000"),
        ])
    })?;
    println!(
        "{:<28} {:>9} {:>10} {:>9} {:>10} {:>9} {:>9}",
        "history", "txns", "MB", "best ms", "MB/s", "model MB", "RSS MB"
    );
    for p in paths {
        let v = best_of(&p, a.repeat)?;
        let bytes = v["bytes"].as_f64().unwrap_or(0.0);
        let ms = v["ms"].as_f64().unwrap_or(0.0);
        println!(
            "{:<28} {:>9} {:>10.1} {:>9.1} {:>10.0} {:>9} {:>9}",
            name_of(&p),
            v["txns"],
            bytes / 1e6,
            ms,
            bytes / 1e6 / (ms / 1e3),
            mb(v["model_bytes"].as_f64().unwrap_or(0.0)),
            mb(v["peak_rss_bytes"].as_f64().unwrap_or(0.0))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The fastest of `repeat` loads of `p`, each in a child process (`load-one`).
fn best_of(p: &Path, repeat: usize) -> anyhow::Result<serde_json::Value> {
    let mut best: Option<serde_json::Value> = None;
    for _ in 0..repeat.max(1) {
        let out = child("load-one")?.arg(p).output()?;
        anyhow::ensure!(
            out.status.success(),
            "loading {} failed: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        if best
            .as_ref()
            .is_none_or(|b| v["ms"].as_f64() < b["ms"].as_f64())
        {
            best = Some(v);
        }
    }
    Ok(best.unwrap())
}

/// The child's side (`load-one PATH`): load once, print time, sizes and peak memory as JSON.
pub fn one(path: &Path) -> anyhow::Result<ExitCode> {
    let t = Instant::now();
    let l = krait_history::load(path, None)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let bytes = dir_bytes(path);
    let v = serde_json::json!({
        "txns": l.history.num_txns(),
        "ops": l.history.num_ops(),
        "bytes": bytes,
        "ms": ms,
        "peak_rss_bytes": krait_cli::memory::peak_rss_bytes(),
        "model_bytes": l.history.heap_bytes(),
    });
    println!("{v}");
    Ok(ExitCode::SUCCESS)
}
