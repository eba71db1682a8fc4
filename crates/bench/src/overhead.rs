//! `krait-bench overhead`: the collector's cost (the paper's C8/C9): throughput, p90 latency
//! and history bytes of the same workload run with and without recording and fences.

use clap::Args;
use krait_collector::{Isolation, RunConfig};
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;

// The arguments of `krait-bench overhead`.
#[derive(Args)]
pub struct OverheadArgs {
    /// Stores, e.g. sqlite and postgres://postgres@127.0.0.1:5432/postgres.
    #[arg(long, value_delimiter = ',', default_value = "sqlite")]
    stores: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "8,24")]
    clients: Vec<usize>,
    #[arg(long, default_value_t = 10_000)]
    txns: usize,
    #[arg(long, default_value = "twitter")]
    workload: String,
}

/// The table: per store and client count, a baseline run and a recorded one.
pub fn run(a: OverheadArgs) -> anyhow::Result<ExitCode> {
    println!(
        "{:<40} {:>7} {:<10} {:>9} {:>9} {:>9} {:>12}",
        "store", "clients", "mode", "txn/s", "p90 ms", "aborts", "bytes/1k txn"
    );
    for store in &a.stores {
        for &c in &a.clients {
            for record in [false, true] {
                one(store, c, record, &a)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One run and its line of the table.
fn one(store: &str, c: usize, record: bool, a: &OverheadArgs) -> anyhow::Result<()> {
    let backend = krait_collector::backend(store, Isolation::Serializable)?;
    let w = krait_workloads::by_name(&a.workload, c)?;
    let dir = std::env::temp_dir().join(format!("krait-overhead-{}", std::process::id()));
    let cfg = RunConfig {
        clients: c,
        txns: a.txns,
        fence_every: record.then_some(20),
        out: record.then(|| dir.clone()),
        fsync: false,
        seed: 1,
        // Its own temporary directory, reused run after run.
        replace: true,
        first_client: 0,
        setup: true,
        publish: None,
    };
    let r = krait_collector::run(backend.as_ref(), w.as_ref(), &cfg, &AtomicU64::new(0))?;
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{:<40} {:>7} {:<10} {:>9.0} {:>9.2} {:>9} {:>12}",
        store,
        c,
        if record { "recorded" } else { "baseline" },
        r.throughput(),
        r.percentile(0.9).as_secs_f64() * 1e3,
        r.aborted,
        if record {
            format!("{:.0}", r.bytes_per_1000())
        } else {
            "-".into()
        }
    );
    Ok(())
}
