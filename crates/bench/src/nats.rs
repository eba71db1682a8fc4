//! `krait-bench nats`: histories through NATS JetStream. Per history: publishing it (every
//! record acknowledged, N publishers), then the online verifier (`watch`) reading the stream
//! beside the same verifier reading the files, as verified transactions per second; then a live
//! run (collectors publishing while `watch` verifies) for the lag from commit to verified.

use crate::common::{child, name_of, paths_or};
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

// The arguments of `krait-bench nats`.
#[derive(Args)]
pub struct NatsArgs {
    /// Histories (default: scaling/chengRM-100000 and scaling/twitter-100000).
    paths: Vec<PathBuf>,
    #[arg(long)]
    data: Option<PathBuf>,
    /// The NATS server (JetStream enabled).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    server: String,
    /// Sessions published at once.
    #[arg(long, default_value_t = 24)]
    publishers: usize,
    /// The live run: clients of `krait run --workload twitter` on SQLite, and its transactions.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    #[arg(long, default_value_t = 20_000)]
    live_txns: usize,
}

/// `--idle-exit` of the measured watches, taken off their wall time.
const IDLE: Duration = Duration::from_secs(1);

fn stream_url(a: &NatsArgs, tag: &str) -> String {
    format!(
        "{}/KRAIT_BENCH_{tag}_{}",
        a.server.trim_end_matches('/'),
        std::process::id()
    )
}

fn delete(url: &str) {
    use krait_transport::nats::{Connection, Target};
    if let Ok(c) = Connection::open(&Target::parse(url).unwrap()) {
        let _ = c.delete_stream();
    }
}

/// Runs `krait-bench SUB ARGS…`; its wall time and its last stdout line as JSON.
fn timed(sub: &str, args: &[&str]) -> anyhow::Result<(Duration, Value)> {
    let t = Instant::now();
    let out = child(sub)?.args(args).stderr(Stdio::inherit()).output()?;
    let wall = t.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    anyhow::ensure!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{sub} {args:?} failed: {text}"
    );
    Ok((wall, last))
}

fn rate(txns: u64, d: Duration) -> f64 {
    txns as f64 / d.as_secs_f64().max(1e-9)
}

/// The table, then the live run's lag.
pub fn run(a: NatsArgs) -> anyhow::Result<ExitCode> {
    let paths = paths_or(a.paths.clone(), a.data.clone(), |d| {
        Ok(vec![
            d.join("scaling/chengRM-100000"),
            d.join("scaling/twitter-100000"),
        ])
    })?;
    println!(
        "{:<20} {:>8} {:>10} {:>12} {:>12} {:>12} {:>8}",
        "history", "txns", "publish s", "publish/s", "stream ver/s", "files ver/s", "ratio"
    );
    for p in &paths {
        one(&a, p)?;
    }
    live(&a)?;
    Ok(ExitCode::SUCCESS)
}

fn one(a: &NatsArgs, p: &Path) -> anyhow::Result<()> {
    let url = stream_url(a, "replay");
    delete(&url);
    let path = p.to_str().unwrap_or_default();
    let publishers = a.publishers.to_string();
    let t = Instant::now();
    timed("convert-one", &[path, &url, "--publishers", &publishers])?;
    let publish = t.elapsed();
    let idle = format!("{}s", IDLE.as_secs());
    let watch = ["--idle-exit", idle.as_str(), "--json"];
    let (ws, vs) = timed("watch-one", &[&[url.as_str()][..], &watch].concat())?;
    let (wf, vf) = timed("watch-one", &[&[path][..], &watch].concat())?;
    delete(&url);
    let txns = vs["history"]["txns"].as_u64().unwrap_or(0);
    anyhow::ensure!(
        vf["history"]["txns"].as_u64() == Some(txns),
        "the stream and the files disagree: {vs} / {vf}"
    );
    let (rs, rf) = (rate(txns, ws - IDLE), rate(txns, wf - IDLE));
    println!(
        "{:<20} {:>8} {:>10.2} {:>12.0} {:>12.0} {:>12.0} {:>8.2}",
        name_of(p),
        txns,
        publish.as_secs_f64(),
        rate(txns, publish),
        rs,
        rf,
        rs / rf
    );
    Ok(())
}

/// Collectors publishing while a verifier follows the stream: the lag from each commit to
/// the end of the round that verified it.
fn live(a: &NatsArgs) -> anyhow::Result<()> {
    let url = stream_url(a, "live");
    delete(&url);
    let dir = std::env::temp_dir().join(format!("krait-bench-nats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let clients = a.clients.to_string();
    let watch = child("watch-one")?
        .args([url.as_str(), "--idle-exit", "2s", "--json"])
        .args(["--sessions", &clients])
        .stdout(Stdio::piped())
        .spawn()?;
    let store = format!("sqlite:{}", dir.join("db.sqlite").display());
    let out = dir.join("h");
    let txns = a.live_txns.to_string();
    let t = Instant::now();
    let run = child("run-one")?
        .args([
            "--store",
            &store,
            "--workload",
            "twitter",
            "--publish",
            &url,
        ])
        .args(["--clients", &clients, "--txns", &txns, "--out"])
        .arg(&out)
        .stderr(Stdio::null())
        .status()?;
    let run_wall = t.elapsed();
    anyhow::ensure!(run.success(), "the live run failed");
    let w = watch.wait_with_output()?;
    let text = String::from_utf8_lossy(&w.stdout);
    let v: Value = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    delete(&url);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "\nlive: krait run --workload twitter --clients {} --txns {} on SQLite --publish, krait watch --sessions {}",
        a.clients, a.live_txns, a.clients
    );
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "txns", "run s", "txn/s", "lag p50", "lag p99", "lag max"
    );
    let n = v["history"]["txns"].as_u64().unwrap_or(0);
    let lag = |f: &str| v["lag_ms"][f].as_f64().unwrap_or(f64::NAN);
    println!(
        "{:>10} {:>10.2} {:>10.0} {:>8.0}ms {:>8.0}ms {:>8.0}ms",
        n,
        run_wall.as_secs_f64(),
        rate(n, run_wall),
        lag("p50"),
        lag("p99"),
        lag("max")
    );
    Ok(())
}
