//! `krait check`: load a history, check it, report the verdict (text, JSON, a drawing) and exit
//! with its code. `--round-size N` replays the history in online rounds instead.

use crate::duration::parse_duration;
use crate::exit;
use crate::files::load;
use crate::online::{self, Printer};
use crate::output::{stats_line, write_dot};
use crate::{memory, progress};
use clap::Args;
use krait_checker::{Options, SolverKind};
use krait_history::Format;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

// The arguments of `krait check`, also flattened into `krait watch`'s.
#[derive(Args, Clone)]
pub struct CheckArgs {
    pub(crate) path: PathBuf,
    #[arg(long)]
    pub(crate) format: Option<Format>,
    /// Machine-readable output (watch: JSON Lines, a line per round, then the verdict).
    #[arg(long)]
    pub(crate) json: bool,
    /// Strict serializability: respect real time (needs timestamps).
    #[arg(long)]
    pub(crate) strict: bool,
    /// Clock-drift allowance for --strict, e.g. 100ms, 2s, 500us, 0.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub(crate) clock_drift: Duration,
    /// Do not glue read-modify-writes into chains.
    #[arg(long)]
    pub(crate) no_combine: bool,
    /// One constraint per (reader, writer) instead of per pair of chains.
    #[arg(long)]
    pub(crate) no_coalesce: bool,
    /// Do not decide constraints by reachability before solving.
    #[arg(long)]
    pub(crate) no_prune: bool,
    #[arg(long, default_value_t = 64)]
    pub(crate) prune_rounds: u32,
    /// Do not seed solver decisions from the topological order.
    #[arg(long)]
    pub(crate) no_order_phase: bool,
    /// Do not propagate edges that would close cycles in the solver.
    #[arg(long)]
    pub(crate) no_theory_propagation: bool,
    #[arg(long, value_enum, default_value = "cdcl")]
    pub(crate) solver: SolverArg,
    /// Give up (UNDECIDED, exit 3) after this many seconds of solving; 0 for no limit.
    #[arg(long, default_value_t = 600.0)]
    pub(crate) timeout: f64,
    /// Per-phase timings.
    #[arg(long)]
    pub(crate) timings: bool,
    /// On ACCEPT, print a serial order of the transactions.
    #[arg(long)]
    pub(crate) order: bool,
    /// Write the certificate as Graphviz DOT (and render .svg/.png with `dot` if the name ends so).
    #[arg(long)]
    pub(crate) dot: Option<PathBuf>,
    /// Report peak memory (for benchmarks).
    #[arg(long, hide = true)]
    pub(crate) rss: bool,
    /// Check in rounds of N transactions (online mode, with garbage collection), printing a
    /// line per round.
    #[arg(long)]
    pub(crate) round_size: Option<usize>,
    /// Online mode: keep every transaction (no garbage collection).
    #[arg(long)]
    pub(crate) no_gc: bool,
    /// Online mode: carry every path through deleted transactions as its own edge (no
    /// transitive reduction).
    #[arg(long)]
    pub(crate) no_carry_reduction: bool,
    /// Online mode: keep frontier writers until they are overwritten, instead of letting the
    /// only possible latest version of a key stand in as its initial version.
    #[arg(long)]
    pub(crate) no_fold: bool,
}

// Which engine decides the constraints left after pruning.
#[derive(clap::ValueEnum, Clone, Copy)]
pub enum SolverArg {
    Cdcl,
    BruteForce,
}

impl CheckArgs {
    /// `krait check PATH --timings` with every other default (after `krait run --check`).
    pub(crate) fn defaults(path: PathBuf) -> CheckArgs {
        CheckArgs {
            path,
            format: Some(Format::Jsonl),
            json: false,
            strict: false,
            clock_drift: Duration::from_millis(100),
            no_combine: false,
            no_coalesce: false,
            no_prune: false,
            prune_rounds: 64,
            no_order_phase: false,
            no_theory_propagation: false,
            solver: SolverArg::Cdcl,
            timeout: 600.0,
            timings: true,
            order: false,
            dot: None,
            rss: false,
            round_size: None,
            no_gc: false,
            no_carry_reduction: false,
            no_fold: false,
        }
    }

    /// The checker's options these switches ask for.
    pub(crate) fn options(&self) -> Options {
        let mut o = Options {
            combine: !self.no_combine,
            coalesce: !self.no_coalesce,
            prune: !self.no_prune,
            prune_rounds: self.prune_rounds,
            strict: self.strict.then_some(self.clock_drift.as_nanos() as u64),
            solver: match self.solver {
                SolverArg::Cdcl => SolverKind::Cdcl,
                SolverArg::BruteForce => SolverKind::BruteForce,
            },
            solver_order_phase: !self.no_order_phase,
            solver_theory_propagation: !self.no_theory_propagation,
            want_order: self.order,
            ..Options::default()
        };
        if self.timeout > 0.0 {
            o.budget = o.budget.with_timeout(Duration::from_secs_f64(self.timeout));
        }
        o
    }
}

/// Checks the history at `a.path` and prints the verdict; the exit code is the verdict's.
pub fn run(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    if let Some(n) = a.round_size {
        return in_rounds(a, n);
    }
    let spinner = progress::spinner();
    let t = Instant::now();
    let loaded = match load(&a.path, a.format) {
        Ok(l) => l,
        Err(e) => {
            drop(spinner);
            return Err(e.into());
        }
    };
    let load_time = t.elapsed();
    if let Some(sp) = &spinner {
        sp.set_message("checking");
    }
    let report = match krait_checker::check(&loaded.history, &a.options()) {
        Ok(r) => r,
        Err(e) => {
            drop(spinner);
            eprintln!("error: {}: {e}", a.path.display());
            return Ok(ExitCode::from(exit::BAD_INPUT));
        }
    };
    if let Some(sp) = spinner {
        sp.finish_and_clear();
    }
    let total = t.elapsed();
    if a.json {
        print_json(a, &loaded.history, &report, load_time, total)?;
    } else {
        print_text(a, &loaded.history, &report, load_time, total);
    }
    if let (Some(dot), Some(cert)) = (&a.dot, report.verdict.certificate()) {
        // A drawing that fails is a warning: the exit code stays the verdict's.
        if let Err(e) = write_dot(cert, dot) {
            eprintln!("warning: the certificate was not drawn: {e:#}");
        }
    }
    Ok(exit::of_verdict(Some(&report.verdict)))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `--json`: the report, with the path, the history's counts, times and (`--rss`) peak memory.
fn print_json(
    a: &CheckArgs,
    h: &krait_history::History,
    report: &krait_checker::Report,
    load_time: Duration,
    total: Duration,
) -> anyhow::Result<()> {
    let mut v = krait_report::report_json(report);
    let obj = v.as_object_mut().unwrap();
    obj.insert("path".into(), a.path.display().to_string().into());
    // The history's counts; `summary` is the certificate's sentence.
    obj.insert(
        "history".into(),
        serde_json::to_value(krait_history::summarize(h))?,
    );
    obj.insert("load_ms".into(), ms(load_time).into());
    obj.insert("total_ms".into(), ms(total).into());
    if a.rss {
        obj.insert("peak_rss_bytes".into(), memory::peak_rss_bytes().into());
    }
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}

/// The history's counts, the report in words, then (asked for) timings and a serial order.
fn print_text(
    a: &CheckArgs,
    h: &krait_history::History,
    report: &krait_checker::Report,
    load_time: Duration,
    total: Duration,
) {
    let s = krait_history::summarize(h);
    println!("{}", stats_line(&a.path, &s));
    print!("{}", krait_report::report_text(report, a.timings));
    if a.timings {
        println!("load {:.1} ms, total {:.1} ms", ms(load_time), ms(total));
    }
    if let Some(order) = &report.order {
        let shown: Vec<String> = order.iter().map(|t| format!("T{t}")).collect();
        println!("serial order: {}", shown.join(" "));
    }
}

/// `--round-size N`: a finished history, replayed in online rounds of N transactions.
fn in_rounds(a: &CheckArgs, round_size: usize) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(round_size > 0, "--round-size must be at least 1");
    online::no_order(a)?;
    let t = Instant::now();
    let loaded = load(&a.path, a.format)?;
    let h = &loaded.history;
    let mut out = Printer::new(a.json, false);
    let on = match krait_checker::online::replay(h, online::options(a), round_size, |st, _| {
        out.round(st)
    }) {
        Ok(on) => on,
        Err(e) => {
            eprintln!("error: {}: {e}", a.path.display());
            return Ok(ExitCode::from(exit::BAD_INPUT));
        }
    };
    out.end(a, &on, t.elapsed(), h.num_txns() as u64)
}
