//! `krait-bench stream`: an endless generated BlindW stream with fences, checked online in
//! rounds in this process, with speed and memory at checkpoints: memory that stays flat however
//! long the stream runs is what garbage collection promises.

use crate::common::mb;
use clap::Args;
use krait_checker::online::{Online, OnlineOptions, TxnRecord};
use krait_checker::Level;
use krait_cli::memory::{peak_rss_bytes, rss_bytes};
use krait_workloads::{BlindW, BlindWStream};
use std::process::ExitCode;
use std::time::Instant;

// The arguments of `krait-bench stream`.
#[derive(Args)]
pub struct StreamArgs {
    #[arg(long, default_value_t = 10_000_000)]
    txns: usize,
    #[arg(long, default_value_t = 20_000)]
    round_size: usize,
    #[arg(long, default_value = "blindw-rm")]
    workload: String,
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    #[arg(long, default_value_t = 24)]
    sessions: usize,
    #[arg(long, default_value_t = 20)]
    fence_every: usize,
    /// Print a line every this many transactions.
    #[arg(long, default_value_t = 1_000_000)]
    every: usize,
    /// Inject fractured reads with this probability per read-only transaction (a
    /// violation the stream must be stopped at).
    #[arg(long, default_value_t = 0.0)]
    fractured_reads: f64,
    /// The level the rounds check: ser, si or cc (the levels checked online).
    #[arg(long, default_value = "ser")]
    level: String,
}

/// The simulated store's parameters for the stream.
fn params(a: &StreamArgs) -> anyhow::Result<BlindW> {
    let base = match a.workload.as_str() {
        "blindw-rm" => BlindW::rm(a.txns),
        "blindw-rw" => BlindW::rw(a.txns),
        "blindw-wm" => BlindW::wm(a.txns),
        w => anyhow::bail!("unknown workload {w:?}"),
    };
    Ok(BlindW {
        keys: a.keys,
        sessions: a.sessions,
        fence_every: Some(a.fence_every),
        timestamps: false,
        fractured_reads: a.fractured_reads,
        ..base
    })
}

/// Streams, checks and prints; exit 1 when a violation stopped the stream.
pub fn run(a: StreamArgs) -> anyhow::Result<ExitCode> {
    let p = params(&a)?;
    let mut opts = OnlineOptions::default();
    opts.check.level = match a.level.as_str() {
        "ser" => Level::Serializable,
        "si" => Level::SnapshotIsolation,
        "cc" => Level::Causal,
        l => anyhow::bail!("--level {l:?}: ser, si or cc"),
    };
    let mut on = Online::new(opts);
    let mut key_ids: Vec<u32> = (0..a.keys).map(|i| on.key(&format!("k{i}"))).collect();
    key_ids.push(on.key(krait_history::NATIVE_FENCE_KEY));
    for s in 0..a.sessions {
        on.session(&format!("s{s}"))?;
    }
    println!(
        "{:>11} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "txns", "secs", "txn/s", "live", "rounds", "deleted", "RSS MB"
    );
    let t0 = Instant::now();
    let mut last = (Instant::now(), 0usize);
    for (i, t) in BlindWStream::new(&p).take(a.txns).enumerate() {
        on.push(TxnRecord {
            session: t.session as u32,
            ext: t.ext,
            status: krait_history::TxnStatus::Committed,
            start: t.start,
            commit: t.commit,
            ops: t
                .ops
                .iter()
                .map(|&(k, key, v)| (k, key_ids[key as usize], v))
                .collect(),
            lists: Vec::new(),
            app: Vec::new(),
            claims: Vec::new(),
        })?;
        if (i + 1) % a.round_size == 0 {
            on.round()?;
            if on.verdict().is_some() {
                break;
            }
        }
        if (i + 1) % a.every == 0 || i + 1 == a.txns {
            let secs = last.0.elapsed().as_secs_f64();
            println!(
                "{:>11} {:>8.1} {:>10.0} {:>9} {:>9} {:>9} {:>9}",
                i + 1,
                t0.elapsed().as_secs_f64(),
                (i + 1 - last.1) as f64 / secs,
                on.live(),
                on.rounds(),
                on.deleted_total(),
                mb(rss_bytes().unwrap_or(0) as f64)
            );
            last = (Instant::now(), i + 1);
        }
    }
    on.finish()?;
    println!(
        "verdict {}; peak RSS {} MB; {:.1} s",
        verdict_line(&on, a.round_size),
        mb(peak_rss_bytes().unwrap_or(0) as f64),
        t0.elapsed().as_secs_f64()
    );
    Ok(if on.verdict().is_some() {
        ExitCode::from(krait_cli::exit::REJECT)
    } else {
        ExitCode::SUCCESS
    })
}

/// ACCEPT, or the REJECT with the round it was found in and its certificate's summary.
fn verdict_line(on: &Online, round_size: usize) -> String {
    match on.verdict() {
        None => "ACCEPT".to_string(),
        Some(r) => match r.verdict.certificate() {
            Some(c) => format!(
                "REJECT in round {} (after {} transactions): {}",
                on.rounds(),
                on.rounds() as usize * round_size,
                c.summary
            ),
            None => "UNKNOWN".to_string(),
        },
    }
}
