//! `krait run`: drive a workload against a database with N recording clients through the
//! collector, report throughput and latency, and optionally check the history it wrote.

use crate::cmd::args::LevelArg;
use crate::cmd::check::{self, CheckArgs};
use crate::{exit, progress};
use clap::Args;
use krait_collector::{Isolation, Promise, RunConfig, RunReport};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The arguments of `krait run`.
#[derive(Args)]
pub struct RunArgs {
    /// `sqlite[:PATH]` (embedded), postgres://USER@HOST:PORT/DB, or mysql://USER@HOST:PORT/DB.
    #[arg(long, default_value = "sqlite")]
    pub(crate) store: String,
    /// blindw-rm, blindw-rw, blindw-wm, twitter, rubis, tpcc, write-skew, lost-update.
    #[arg(long, default_value = "blindw-rw")]
    pub(crate) workload: String,
    #[arg(long, default_value_t = 8)]
    pub(crate) clients: usize,
    #[arg(long, default_value_t = 10_000)]
    pub(crate) txns: usize,
    #[arg(long, default_value = "serializable")]
    pub(crate) isolation: Isolation,
    /// Where each session's history goes (one .jsonl per session).
    #[arg(long, default_value = "krait-history")]
    pub(crate) out: PathBuf,
    /// Do not record (the baseline for measuring the collector's overhead).
    #[arg(long)]
    pub(crate) no_record: bool,
    /// A fence transaction every N transactions per session; 0 for none.
    #[arg(long, default_value_t = 20)]
    pub(crate) fence_every: usize,
    /// fsync the log after every transaction.
    #[arg(long)]
    pub(crate) fsync: bool,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Check the recorded history when the run ends (with the check flags below), at the level
    /// the store promises for --isolation unless --level says otherwise.
    #[arg(long)]
    pub(crate) check: bool,
    #[command(flatten)]
    pub(crate) check_flags: crate::cmd::args::CheckFlags,
    /// Replace the session logs an earlier run left in --out (refused otherwise).
    #[arg(long)]
    pub(crate) force: bool,
    /// Also publish each session's records to a NATS JetStream stream (created if missing),
    /// for `krait watch nats://…` on another host; each record is acknowledged before the
    /// run goes on. The local logs in --out are written as well. E.g. --publish
    /// nats://127.0.0.1:4222/KRAIT
    #[arg(long, value_name = "nats://HOST:PORT/STREAM")]
    pub(crate) publish: Option<String>,
    /// The first client's number (sessions `c<N>`, `c<N+1>`, …): runs on several hosts into one
    /// stream take disjoint ranges (e.g. host 2 of 4-client hosts: --first-client 8), so
    /// session names and transaction ids stay unique.
    #[arg(long, default_value_t = 0)]
    pub(crate) first_client: usize,
    /// Do not load the workload's initial rows: another run (e.g. `--txns 0`) did, and this
    /// one joins it.
    #[arg(long)]
    pub(crate) no_setup: bool,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs the workload, prints throughput and latency, and (`--check`) checks the history.
pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(a.clients > 0, "--clients must be at least 1");
    let backend = krait_collector::backend(&a.store, a.isolation)?;
    let w = krait_workloads::by_name(&a.workload, a.clients)?;
    // Earlier logs in --out are the user's: refused here, as a usage error (exit 2), unless
    // --force; the collector checks again under its lock.
    if !a.no_record && !a.force {
        let old = krait_history::jsonl_dir_files(&a.out)
            .map(|f| f.len())
            .unwrap_or(0);
        anyhow::ensure!(
            old == 0,
            "{} already holds {old} session logs; use --force to replace them, or another directory",
            a.out.display()
        );
    }
    let cfg = RunConfig {
        clients: a.clients,
        txns: a.txns,
        // The baseline is the unmodified client: no log and no fences.
        fence_every: (a.fence_every > 0 && !a.no_record).then_some(a.fence_every),
        out: (!a.no_record).then(|| a.out.clone()),
        fsync: a.fsync,
        seed: a.seed,
        replace: a.force,
        first_client: a.first_client,
        setup: !a.no_setup,
        publish: match &a.publish {
            None => None,
            Some(_) if a.no_record => anyhow::bail!("--publish needs recording (not --no-record)"),
            Some(url) => Some(krait_transport::nats::Connection::open(
                &krait_transport::nats::Target::parse(url)?,
            )?),
        },
    };
    eprintln!(
        "running {} with {} clients on {}",
        w.name(),
        a.clients,
        backend.describe()
    );
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let report = std::thread::scope(|scope| {
        let (done, stop, total) = (&done, &stop, a.txns as u64);
        scope.spawn(move || progress::run_bar(done, stop, total));
        let r = krait_collector::run(backend.as_ref(), w.as_ref(), &cfg, done);
        stop.store(true, Ordering::Relaxed);
        r
    });
    let report = match report {
        Ok(r) => r,
        // The database or the log failed for good (not the input): exit 4, and the logs
        // written so far still load (a cut last line is read as what its bytes prove).
        Err(e) => {
            eprintln!("error: the run stopped: {e}");
            if !a.no_record {
                eprintln!(
                    "the history written so far is in {} (it loads; check it with krait check)",
                    a.out.display()
                );
            }
            return Ok(ExitCode::from(exit::RUN_FAILED));
        }
    };
    let mut text = report_text(&report);
    if !a.no_record {
        text += &format!(
            "history: {} ({} bytes, {:.0} bytes per 1,000 transactions)\n",
            a.out.display(),
            report.history_bytes,
            report.bytes_per_1000()
        );
    }
    // With --check --json, stdout is the verdict's JSON alone: the run's figures go to stderr.
    let json_out = a.check && a.check_flags.json;
    if json_out {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if a.no_record {
        return Ok(ExitCode::SUCCESS);
    }
    if a.check {
        if !json_out {
            println!();
        }
        let mut flags = a.check_flags;
        if flags.level.is_none() {
            match promised_level(backend.as_ref()) {
                Ok((level, why)) => {
                    let say = |s: &str| {
                        if json_out {
                            eprintln!("{s}");
                        } else {
                            println!("{s}");
                        }
                    };
                    match level {
                        Some(_) => say(&format!("{why}: checking that")),
                        None => say(&format!(
                            "{why}, which no single level names: checking every level (--level picks one)"
                        )),
                    }
                    flags.level = Some(level.unwrap_or(LevelArg::All));
                }
                Err(e) => {
                    eprintln!("error: what the store promises is unknown: {e}");
                    return Ok(ExitCode::from(exit::RUN_FAILED));
                }
            }
        }
        return check::run(&CheckArgs::of_run(a.out, flags));
    }
    Ok(ExitCode::SUCCESS)
}

/// The level to check a run's history at when none is given: what the store promises at the
/// isolation asked for (None where no single level names it: then every level is checked), and
/// why.
fn promised_level(
    b: &dyn krait_collector::Backend,
) -> Result<(Option<LevelArg>, String), krait_collector::StoreError> {
    let p = b.promise()?;
    let level = match p.level {
        Promise::Serializable => Some(LevelArg::Ser),
        Promise::SnapshotIsolation => Some(LevelArg::Si),
        Promise::ReadCommitted => Some(LevelArg::Rc),
        Promise::Other => None,
    };
    Ok((level, p.why))
}

/// Throughput, outcomes and latency percentiles of a finished run.
fn report_text(report: &RunReport) -> String {
    let mut out = format!(
        "{} transactions in {:.2} s: {:.0} txn/s; {} committed, {} aborted, {} unknown, {} reconnects\n",
        report.latencies.len(),
        report.wall.as_secs_f64(),
        report.throughput(),
        report.committed,
        report.aborted,
        report.unknown,
        report.reconnects
    );
    out += &format!(
        "latency ms: p50 {:.2}, p90 {:.2}, p99 {:.2}\n",
        ms(report.percentile(0.5)),
        ms(report.percentile(0.9)),
        ms(report.percentile(0.99))
    );
    if let Some(why) = report.abort_examples.first() {
        out += &format!("an abort: {why}\n");
    }
    out
}
