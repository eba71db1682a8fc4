//! `krait-bench online`: online verification capacity (the paper's Figure 10). Per round size,
//! the transactions per second of round time, the most transactions held, and peak memory;
//! the best round size gives the history's capacity.

use crate::common::{child, mb, name_of, paths_or};
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// The arguments of `krait-bench online`.
#[derive(Args)]
pub struct OnlineArgs {
    /// Histories (default: scaling/chengRM-100000 and scaling/twitter-100000).
    paths: Vec<PathBuf>,
    #[arg(long)]
    data: Option<PathBuf>,
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,2500,5000,10000,20000,40000"
    )]
    round_sizes: Vec<usize>,
}

/// The table: a line per history and round size, then each history's capacity.
pub fn run(a: OnlineArgs) -> anyhow::Result<ExitCode> {
    let paths = paths_or(a.paths, a.data, |d| {
        Ok(vec![
            d.join("scaling/chengRM-100000"),
            d.join("scaling/twitter-100000"),
        ])
    })?;
    println!(
        "{:<20} {:>7} {:>7} {:>9} {:>10} {:>10} {:>9} {:>9} {:>8} {:>8}",
        "history",
        "round",
        "rounds",
        "txns",
        "ms/round",
        "txn/s",
        "check ms",
        "gc ms",
        "max graph",
        "RSS MB"
    );
    for p in paths {
        let mut best: (f64, usize) = (0.0, 0);
        for &n in &a.round_sizes {
            let rate = one(&p, n)?;
            if rate > best.0 {
                best = (rate, n);
            }
        }
        println!(
            "{:<20} capacity {:.0} txn/s (round size {})",
            name_of(&p),
            best.0,
            best.1
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `krait check --round-size n` on `p` in a child process: prints its line, returns its rate.
fn one(p: &Path, n: usize) -> anyhow::Result<f64> {
    let out = child("check-one")?
        .arg(p)
        .args(["--round-size", &n.to_string(), "--json", "--rss"])
        .output()?;
    let v: Value = anyhow::Context::with_context(serde_json::from_slice(&out.stdout), || {
        format!("krait check {} --round-size {n}", p.display())
    })?;
    let rounds = v["rounds"].as_array().cloned().unwrap_or_default();
    // Full rounds only: the last one is whatever was left.
    let full: Vec<&Value> = rounds
        .iter()
        .filter(|r| r["new"].as_u64().unwrap_or(0) as usize >= n)
        .collect();
    let use_rounds: Vec<&Value> = if full.is_empty() {
        rounds.iter().collect()
    } else {
        full
    };
    let sum = |f: &str| -> f64 {
        use_rounds
            .iter()
            .map(|r| r[f].as_f64().unwrap_or(0.0))
            .sum()
    };
    let (new, ms) = (sum("new"), sum("time"));
    let rate = new / (ms / 1e3);
    let k = use_rounds.len().max(1) as f64;
    let max_live = rounds
        .iter()
        .map(|r| r["checked"].as_u64().unwrap_or(0))
        .max()
        .unwrap_or(0);
    println!(
        "{:<20} {:>7} {:>7} {:>9} {:>10.1} {:>10.0} {:>9.1} {:>9.1} {:>8} {:>8} {}",
        name_of(p),
        n,
        rounds.len(),
        v["history"]["txns"],
        ms / k,
        rate,
        sum("check_time") / k,
        sum("gc_time") / k,
        max_live,
        mb(v["peak_rss_bytes"].as_f64().unwrap_or(0.0)),
        v["verdict"].as_str().unwrap_or("?")
    );
    Ok(rate)
}
