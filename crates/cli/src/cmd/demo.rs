//! `krait demo`: the README's first command. By default a real run (BlindW-RW, 8 clients on
//! embedded SQLite, recorded, then checked); `--faulty` uses the simulated store instead, since
//! a real database will not misbehave on cue.

use crate::cmd::check::{self, CheckArgs};
use crate::cmd::generate::{generate, GenerateArgs};
use crate::cmd::run::{self, RunArgs};
use crate::files::save;
use clap::Args;
use krait_collector::Isolation;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

// The arguments of `krait demo`.
/// The arguments of `krait demo`.
#[derive(Args)]
pub struct DemoArgs {
    #[arg(long, default_value_t = 4_000)]
    pub(crate) txns: usize,
    /// Use the built-in simulated store and inject fractured reads (one transaction's
    /// writes seen only in part): not serializable.
    #[arg(long)]
    pub(crate) faulty: bool,
    /// Where to keep the history (default: a temporary file).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

/// Runs the demo and checks what it recorded; the exit code is the verdict's.
pub fn run(a: DemoArgs) -> anyhow::Result<ExitCode> {
    if a.faulty {
        simulated(a.txns, a.faulty, a.out)
    } else {
        on_sqlite(a.txns, a.out)
    }
}

/// The simulated-store demo (used for --faulty: a real database will not misbehave on cue).
fn simulated(txns: usize, faulty: bool, out: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let path = out.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("krait-demo-{}.jsonl", std::process::id()))
    });
    let g = GenerateArgs {
        out: path.clone(),
        workload: "blindw-rw".into(),
        txns,
        sessions: 24,
        keys: 10_000,
        fence_every: None,
        txn_interval: Duration::from_micros(1),
        stale_reads: 0.0,
        fractured_reads: if faulty { 0.001 } else { 0.0 },
        seed: 7,
        format: None,
        ops_per_txn: None,
        read_ratio: None,
        value_range: None,
    };
    let t = Instant::now();
    let h = generate(&g)?;
    save(&h, &path, true)?;
    println!(
        "demo: BlindW-RW, {} transactions from 24 sessions on the simulated store{}, written to {} in {:.0} ms",
        h.num_txns(),
        if faulty { " with fractured reads injected" } else { "" },
        path.display(),
        t.elapsed().as_secs_f64() * 1e3
    );
    println!("checking: krait check {}\n", path.display());
    check::run(&CheckArgs::defaults(path))
}

/// The README's main command: BlindW-RW with 8 clients on embedded SQLite, then the verdict.
fn on_sqlite(txns: usize, out: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let out = out
        .unwrap_or_else(|| std::env::temp_dir().join(format!("krait-demo-{}", std::process::id())));
    let db = std::env::temp_dir().join(format!("krait-demo-{}.sqlite", std::process::id()));
    let code = run::run(RunArgs {
        store: format!("sqlite:{}", db.display()),
        workload: "blindw-rw".into(),
        clients: 8,
        txns,
        isolation: Isolation::Serializable,
        out,
        no_record: false,
        fence_every: 20,
        fsync: false,
        seed: 7,
        check: true,
        force: false,
        publish: None,
        first_client: 0,
        no_setup: false,
        check_flags: crate::cmd::args::CheckFlags {
            timings: true,
            ..Default::default()
        },
    });
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    code
}
