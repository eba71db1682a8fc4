//! `krait generate`: a history from the built-in simulated store, no database needed: for
//! trying krait out, for benchmarks of any size, and (with faults injected) for REJECTs on cue.

use crate::duration::parse_duration;
use crate::files::save;
use clap::Args;
use krait_history::Format;
use krait_workloads::BlindW;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

// The arguments of `krait generate`.
/// The arguments of `krait generate`.
#[derive(Args)]
pub struct GenerateArgs {
    /// Where the history goes: a .jsonl file, or a directory with --format cobra.
    pub(crate) out: PathBuf,
    /// blindw-rm, blindw-rw or blindw-wm.
    #[arg(long, default_value = "blindw-rw")]
    pub(crate) workload: String,
    /// Transactions in all (fences included).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) txns: usize,
    /// Client sessions; each transaction goes to one at random.
    #[arg(long, default_value_t = 24)]
    pub(crate) sessions: usize,
    /// Keys k0 … k{N-1}.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) keys: u64,
    /// A fence transaction every N transactions per session (for online checking), e.g. 20.
    #[arg(long, value_name = "N")]
    pub(crate) fence_every: Option<usize>,
    /// Time between commits, e.g. 500us for 2,000 transactions a second.
    #[arg(long, default_value = "1us", value_parser = parse_duration)]
    pub(crate) txn_interval: Duration,
    /// Probability that a read sees a version older than its snapshot (a fault; often still
    /// serializable), e.g. 0.01.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) stale_reads: f64,
    /// Probability of a fractured read (never serializable).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) fractured_reads: f64,
    /// Seed: the same arguments and seed give the same history, byte for byte.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Operations per transaction (the workload's own when not given: 8 for BlindW): e.g.
    /// 160 with --read-ratio 0.98 for a read-heavy history like real OLTP ones.
    #[arg(long)]
    pub(crate) ops_per_txn: Option<usize>,
    /// Fraction of read-only transactions, 0 to 1 (the workload's own when not given: 0.9
    /// for blindw-rm, 0.5 for blindw-rw, 0.1 for blindw-wm); the others write blindly.
    #[arg(long)]
    pub(crate) read_ratio: Option<f64>,
    /// Write values drawn from 1..=N, so keys are written with the same value more than once
    /// and reads have several candidate writers (as in histories recorded without unique
    /// values); unique values when not given.
    #[arg(long, value_name = "N")]
    pub(crate) value_range: Option<u64>,
    /// The output's format: jsonl (default) or cobra (a directory of Cobra logs).
    #[arg(long)]
    pub(crate) format: Option<Format>,
}

/// Generates the history and writes it to `g.out`.
pub fn run(g: &GenerateArgs) -> anyhow::Result<ExitCode> {
    let h = generate(g)?;
    let fmt_ts = h.has_timestamps();
    match g.format {
        Some(Format::Cobra) => {
            krait_history::write_cobra_dir(&h, &g.out, fmt_ts)?;
        }
        Some(Format::Jsonl) | None => save(&h, &g.out, fmt_ts)?,
        Some(f) => {
            anyhow::bail!("krait writes native JSON Lines and Cobra logs; {f:?} is read-only")
        }
    }
    eprintln!("wrote {} transactions to {}", h.num_txns(), g.out.display());
    Ok(ExitCode::SUCCESS)
}

/// The history `g` asks for, in memory.
pub(crate) fn generate(g: &GenerateArgs) -> anyhow::Result<krait_history::History> {
    let base = match g.workload.as_str() {
        "blindw-rm" => BlindW::rm(g.txns),
        "blindw-rw" => BlindW::rw(g.txns),
        "blindw-wm" => BlindW::wm(g.txns),
        w => anyhow::bail!(
            "unknown workload {w:?}: the simulated store runs blindw-rm, blindw-rw, blindw-wm"
        ),
    };
    if let Some(r) = g.read_ratio {
        anyhow::ensure!(
            (0.0..=1.0).contains(&r),
            "--read-ratio {r} is not between 0 and 1"
        );
    }
    if let Some(n) = g.ops_per_txn {
        anyhow::ensure!(n > 0, "--ops-per-txn must be at least 1");
    }
    if let Some(n) = g.value_range {
        anyhow::ensure!(n > 0, "--value-range must be at least 1");
    }
    Ok(krait_workloads::blindw(&BlindW {
        ops_per_txn: g.ops_per_txn.unwrap_or(base.ops_per_txn),
        read_only: g.read_ratio.unwrap_or(base.read_only),
        sessions: g.sessions,
        keys: g.keys,
        fence_every: g.fence_every,
        ns_per_txn: g.txn_interval.as_nanos() as u64,
        stale_reads: g.stale_reads,
        fractured_reads: g.fractured_reads,
        seed: g.seed,
        value_range: g.value_range,
        ..base
    }))
}
