//! `krait-bench load`: parse speed and memory of loading histories, each load in a process of
//! its own so that its peak memory is the loader's alone.

use crate::common::{all_shared, child, dir_bytes, find_data, format_of, mb, name_of, read_heavy};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

// The arguments of `krait-bench load`.
#[derive(Args)]
pub struct LoadArgs {
    /// Histories to load (default: every shared Cobra history, and the read-heavy ones).
    paths: Vec<PathBuf>,
    /// The shared data folder (default: ../shared/data/cobra, found from here upwards).
    #[arg(long)]
    data: Option<PathBuf>,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Where the generated read-heavy histories are kept.
    #[arg(long, default_value = "target/bench-histories")]
    dir: PathBuf,
    /// Leave out the generated read-heavy histories (36 sessions, 160 operations per
    /// transaction, 98% reads; 8k and 80k transactions; Cobra logs and JSON Lines).
    #[arg(long)]
    no_read_heavy: bool,
    /// Wait this many seconds before each load, as a user starts one (see `check --pause`).
    #[arg(long, default_value_t = 0.0)]
    pause: f64,
}

/// The table: per history, the best of `repeat` loads.
pub fn run(a: LoadArgs) -> anyhow::Result<ExitCode> {
    let paths = if a.paths.is_empty() {
        let mut v = match find_data(a.data) {
            Some(d) => all_shared(&d)?,
            None => {
                println!("skipped: no ../shared/data/cobra here (pass histories or --data)");
                Vec::new()
            }
        };
        if !a.no_read_heavy {
            v.extend(read_heavy(&a.dir)?);
        }
        v
    } else {
        a.paths
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("(MB/s: bytes on disk over the best load's wall time, on {cores} cores)");
    println!(
        "{:<28} {:<6} {:>9} {:>10} {:>9} {:>10} {:>9} {:>9}",
        "history", "format", "txns", "MB", "best ms", "MB/s", "model MB", "RSS MB"
    );
    for p in paths {
        let v = best_of(&p, a.repeat, a.pause)?;
        let bytes = v["bytes"].as_f64().unwrap_or(0.0);
        let ms = v["ms"].as_f64().unwrap_or(0.0);
        println!(
            "{:<28} {:<6} {:>9} {:>10.1} {:>9.1} {:>10.0} {:>9} {:>9}",
            name_of(&p),
            format_of(&p),
            v["txns"].as_u64().unwrap_or(0),
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
fn best_of(p: &Path, repeat: usize, pause: f64) -> anyhow::Result<serde_json::Value> {
    let mut best: Option<serde_json::Value> = None;
    for _ in 0..repeat.max(1) {
        crate::common::pause(pause);
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
