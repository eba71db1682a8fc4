//! The `krait` command: load a history, check it, report. Exit codes: 0 ACCEPT, 1 REJECT,
//! 2 bad input or usage, 3 UNKNOWN (solver budget exhausted).

mod bench;
mod online;
mod runcmd;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use krait_checker::{Options, SolverKind, Verdict};
use krait_history::{Format, InputError};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "krait",
    version,
    about = "Black-box serializability checking of database histories"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check whether a history is serializable: ACCEPT (exit 0) or REJECT with a certificate (exit 1).
    Check(CheckArgs),
    /// Load a history and print its counts.
    Stats {
        path: PathBuf,
        #[arg(long)]
        format: Option<Format>,
        #[arg(long)]
        json: bool,
    },
    /// Convert between formats: OUT ending in .jsonl is native JSON Lines, otherwise a Cobra log directory.
    Convert {
        input: PathBuf,
        output: PathBuf,
        #[arg(long)]
        format: Option<Format>,
        /// Cobra output: the variant with timestamps after S and C.
        #[arg(long)]
        timestamps: bool,
    },
    /// Run a workload against a database with N recording clients; optionally check the history.
    Run(runcmd::RunArgs),
    /// Generate a history with the built-in simulated store (no database needed).
    Generate(GenerateArgs),
    /// BlindW-RW with 8 clients on embedded SQLite, recorded and checked.
    Demo {
        #[arg(long, default_value_t = 4_000)]
        txns: usize,
        /// Use the built-in simulated store and inject fractured reads (one transaction's
        /// writes seen only in part): not serializable.
        #[arg(long)]
        faulty: bool,
        /// Where to keep the history (default: a temporary file).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check a verdict against the raw history, apart from the checker: every edge of a
    /// REJECT's cycle re-derived (deductions replayed), an unsatisfiable core case by case, a
    /// single reason by a witness, an ACCEPT's serial order (`check --order`) read by read.
    /// Exit 0: confirmed; 1: refuted; 2: bad input; 3: of a kind it cannot confirm.
    VerifyCertificate {
        /// The history the verdict is about.
        history: PathBuf,
        /// The verdict: the output of `krait check HISTORY --json` (with --order for an ACCEPT).
        cert: PathBuf,
        #[arg(long)]
        format: Option<Format>,
    },
    /// Follow logs that are still being written (native JSON Lines or Cobra) and check them in
    /// rounds, garbage-collecting what no future transaction can affect.
    Watch(online::WatchArgs),
    /// Benchmarks that print tables (load speed, one-shot checking, technique ablations).
    Bench(bench::BenchArgs),
}

#[derive(Args, Clone)]
pub struct CheckArgs {
    pub path: PathBuf,
    #[arg(long)]
    pub format: Option<Format>,
    /// Machine-readable output (watch: JSON Lines, a line per round, then the verdict).
    #[arg(long)]
    pub json: bool,
    /// Strict serializability: respect real time (needs timestamps).
    #[arg(long)]
    pub strict: bool,
    /// Clock-drift allowance for --strict, e.g. 100ms, 2s, 500us, 0.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub clock_drift: Duration,
    /// Do not glue read-modify-writes into chains.
    #[arg(long)]
    pub no_combine: bool,
    /// One constraint per (reader, writer) instead of per pair of chains.
    #[arg(long)]
    pub no_coalesce: bool,
    /// Do not decide constraints by reachability before solving.
    #[arg(long)]
    pub no_prune: bool,
    #[arg(long, default_value_t = 64)]
    pub prune_rounds: u32,
    /// Do not seed solver decisions from the topological order.
    #[arg(long)]
    pub no_order_phase: bool,
    /// Do not propagate edges that would close cycles in the solver.
    #[arg(long)]
    pub no_theory_propagation: bool,
    #[arg(long, value_enum, default_value = "cdcl")]
    pub solver: SolverArg,
    /// Give up (UNDECIDED, exit 3) after this many seconds of solving; 0 for no limit.
    #[arg(long, default_value_t = 600.0)]
    pub timeout: f64,
    /// Per-phase timings.
    #[arg(long)]
    pub timings: bool,
    /// On ACCEPT, print a serial order of the transactions.
    #[arg(long)]
    pub order: bool,
    /// Write the certificate as Graphviz DOT (and render .svg/.png with `dot` if the name ends so).
    #[arg(long)]
    pub dot: Option<PathBuf>,
    /// Report peak memory (for benchmarks).
    #[arg(long, hide = true)]
    pub rss: bool,
    /// Check in rounds of N transactions (online mode, with garbage collection), printing a
    /// line per round.
    #[arg(long)]
    pub round_size: Option<usize>,
    /// Online mode: keep every transaction (no garbage collection).
    #[arg(long)]
    pub no_gc: bool,
    /// Online mode: carry every path through deleted transactions as its own edge (no
    /// transitive reduction).
    #[arg(long)]
    pub no_carry_reduction: bool,
    /// Online mode: keep frontier writers until they are overwritten, instead of letting the
    /// only possible latest version of a key stand in as its initial version.
    #[arg(long)]
    pub no_fold: bool,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum SolverArg {
    Cdcl,
    BruteForce,
}

#[derive(Args)]
struct GenerateArgs {
    out: PathBuf,
    /// blindw-rm, blindw-rw or blindw-wm.
    #[arg(long, default_value = "blindw-rw")]
    workload: String,
    #[arg(long, default_value_t = 10_000)]
    txns: usize,
    #[arg(long, default_value_t = 24)]
    sessions: usize,
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    #[arg(long)]
    fence_every: Option<usize>,
    /// Time between commits, e.g. 500us for 2,000 transactions a second.
    #[arg(long, default_value = "1us", value_parser = parse_duration)]
    txn_interval: Duration,
    #[arg(long, default_value_t = 0.0)]
    stale_reads: f64,
    /// Probability of a fractured read (never serializable).
    #[arg(long, default_value_t = 0.0)]
    fractured_reads: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    format: Option<Format>,
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|i| s.split_at(i))
        .unwrap_or((s, "ms"));
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?}: expected e.g. 100ms"))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return Err(format!("bad duration unit {unit:?}: use ns, us, ms or s")),
    };
    if v < 0.0 || !v.is_finite() {
        return Err(format!("bad duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

fn main() -> ExitCode {
    // Output piped into `head` and the like: stop quietly when the reader goes away, as Unix
    // tools do, instead of panicking on a failed print.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.cmd {
        Cmd::Check(a) => check_cmd(&a),
        Cmd::Stats { path, format, json } => {
            let loaded = load(&path, format)?;
            let s = krait_history::summarize(&loaded.history);
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                println!("{}", stats_text(&path, &s));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Convert {
            input,
            output,
            format,
            timestamps,
        } => {
            let loaded = load(&input, format)?;
            save(&loaded.history, &output, timestamps)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::VerifyCertificate {
            history,
            cert,
            format,
        } => {
            let loaded = load(&history, format)?;
            let text = std::fs::read_to_string(&cert)
                .with_context(|| format!("reading {}", cert.display()))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not a krait check --json verdict", cert.display()))?;
            match krait_verify::verify(&loaded.history, &v) {
                Ok(what) => {
                    println!("confirmed: {what}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(p @ krait_verify::Problem::Invalid(_)) => {
                    println!("{p}");
                    Ok(ExitCode::from(1))
                }
                Err(p) => {
                    println!("{p}");
                    Ok(ExitCode::from(3))
                }
            }
        }
        Cmd::Generate(g) => {
            let h = generate(&g)?;
            let fmt_ts = h.has_timestamps();
            match g.format {
                Some(Format::Cobra) => {
                    krait_history::write_cobra_dir(&h, &g.out, fmt_ts)?;
                }
                Some(Format::Jsonl) | None => save(&h, &g.out, fmt_ts)?,
                Some(f) => anyhow::bail!(
                    "krait writes native JSON Lines and Cobra logs; {f:?} is read-only"
                ),
            }
            eprintln!("wrote {} transactions to {}", h.num_txns(), g.out.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Demo { txns, faulty, out } => {
            if faulty {
                demo(txns, faulty, out)
            } else {
                runcmd::demo(txns, out)
            }
        }
        Cmd::Run(r) => runcmd::run(r),
        Cmd::Watch(w) => online::watch(&w),
        Cmd::Bench(b) => bench::run(b),
    }
}

fn generate(g: &GenerateArgs) -> anyhow::Result<krait_history::History> {
    use krait_workloads::BlindW;
    let base = match g.workload.as_str() {
        "blindw-rm" => BlindW::rm(g.txns),
        "blindw-rw" => BlindW::rw(g.txns),
        "blindw-wm" => BlindW::wm(g.txns),
        w => anyhow::bail!(
            "unknown workload {w:?}: the simulated store runs blindw-rm, blindw-rw, blindw-wm"
        ),
    };
    Ok(krait_workloads::blindw(&BlindW {
        sessions: g.sessions,
        keys: g.keys,
        fence_every: g.fence_every,
        ns_per_txn: g.txn_interval.as_nanos() as u64,
        stale_reads: g.stale_reads,
        fractured_reads: g.fractured_reads,
        seed: g.seed,
        ..base
    }))
}

/// The simulated-store demo (used for --faulty: a real database will not misbehave on cue).
fn demo(txns: usize, faulty: bool, out: Option<PathBuf>) -> anyhow::Result<ExitCode> {
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
    let args = runcmd::check_args(path);
    check_cmd(&args)
}

fn stats_text(path: &Path, s: &krait_history::Summary) -> String {
    format!(
        "{}: {} sessions, {} transactions ({} committed, {} aborted, {} unknown), {} reads ({} of the initial state), {} writes, {} keys, {} fences{}",
        path.display(),
        s.sessions,
        s.txns,
        s.committed,
        s.aborted,
        s.unknown,
        s.reads,
        s.initial_reads,
        s.writes,
        s.keys,
        s.fences,
        if s.timestamps { ", with timestamps" } else { "" }
    )
}

pub fn load(path: &Path, format: Option<Format>) -> Result<krait_history::Loaded, InputError> {
    let loaded = krait_history::load(path, format)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    Ok(loaded)
}

fn save(h: &krait_history::History, out: &Path, timestamps: bool) -> anyhow::Result<()> {
    // Only native JSON Lines and Cobra directories are written: any other extension would
    // silently become a Cobra directory with a misleading name.
    if let Some(e) = out.extension().and_then(|e| e.to_str()) {
        anyhow::ensure!(
            matches!(e, "jsonl" | "json"),
            "krait writes native JSON Lines (OUT ending in .jsonl) or a Cobra log directory (OUT without an extension), not .{e}"
        );
    }
    if out.extension().is_some_and(|e| e == "jsonl" || e == "json") {
        krait_history::write_jsonl_file(h, out)
            .with_context(|| format!("writing {}", out.display()))?;
    } else {
        let (skipped, own) = krait_history::write_cobra_dir(h, out, timestamps)
            .with_context(|| format!("writing {}", out.display()))?;
        if skipped > 0 {
            eprintln!("warning: {skipped} transactions that did not commit (or whose unknown outcome nobody read) were left out (Cobra logs hold committed ones only)");
        }
        if own > 0 {
            eprintln!("warning: {own} transactions with an unknown outcome that others read are written as committed, each in a log of its own (Cobra logs have no unknown outcomes)");
        }
    }
    Ok(())
}

pub fn options_of(a: &CheckArgs) -> Options {
    let mut o = Options {
        combine: !a.no_combine,
        coalesce: !a.no_coalesce,
        prune: !a.no_prune,
        prune_rounds: a.prune_rounds,
        strict: a.strict.then_some(a.clock_drift.as_nanos() as u64),
        solver: match a.solver {
            SolverArg::Cdcl => SolverKind::Cdcl,
            SolverArg::BruteForce => SolverKind::BruteForce,
        },
        solver_order_phase: !a.no_order_phase,
        solver_theory_propagation: !a.no_theory_propagation,
        want_order: a.order,
        ..Options::default()
    };
    if a.timeout > 0.0 {
        o.budget = o.budget.with_timeout(Duration::from_secs_f64(a.timeout));
    }
    o
}

pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_bytes("VmHWM:")
}

pub fn rss_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

/// A memory figure (kB) from /proc/self/status, in bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

pub fn check_cmd(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    if let Some(n) = a.round_size {
        return online::check_rounds(a, n);
    }
    let spinner = progress_spinner();
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
    let opts = options_of(a);
    let report = match krait_checker::check(&loaded.history, &opts) {
        Ok(r) => r,
        Err(e) => {
            drop(spinner);
            eprintln!("error: {}: {e}", a.path.display());
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(sp) = spinner {
        sp.finish_and_clear();
    }
    let total = t.elapsed();
    if a.json {
        let mut v = krait_report::report_json(&report);
        let obj = v.as_object_mut().unwrap();
        obj.insert("path".into(), a.path.display().to_string().into());
        // The history's counts; `summary` is the certificate's sentence.
        obj.insert(
            "history".into(),
            serde_json::to_value(krait_history::summarize(&loaded.history))?,
        );
        obj.insert("load_ms".into(), (load_time.as_secs_f64() * 1e3).into());
        obj.insert("total_ms".into(), (total.as_secs_f64() * 1e3).into());
        if a.rss {
            obj.insert("peak_rss_bytes".into(), peak_rss_bytes().into());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        let s = krait_history::summarize(&loaded.history);
        println!("{}", stats_text(&a.path, &s));
        print!("{}", krait_report::report_text(&report, a.timings));
        if a.timings {
            println!(
                "load {:.1} ms, total {:.1} ms",
                load_time.as_secs_f64() * 1e3,
                total.as_secs_f64() * 1e3
            );
        }
        if let Some(order) = &report.order {
            let shown: Vec<String> = order.iter().map(|t| format!("T{t}")).collect();
            println!("serial order: {}", shown.join(" "));
        }
    }
    if let (Some(dot), Some(cert)) = (&a.dot, report.verdict.certificate()) {
        // A drawing that fails is a warning: the exit code stays the verdict's.
        if let Err(e) = write_dot(cert, dot) {
            eprintln!("warning: the certificate was not drawn: {e:#}");
        }
    }
    Ok(match report.verdict {
        Verdict::Accept => ExitCode::SUCCESS,
        Verdict::Reject(_) => ExitCode::from(1),
        Verdict::Unknown { .. } => ExitCode::from(3),
    })
}

pub fn write_dot(cert: &krait_checker::Certificate, path: &Path) -> anyhow::Result<()> {
    let dot = krait_report::certificate_dot(cert);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("dot");
    if ext == "svg" || ext == "png" {
        let mut child = std::process::Command::new("dot")
            .arg(format!("-T{ext}"))
            .arg("-o")
            .arg(path)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .context("rendering needs Graphviz `dot` on PATH (or write a .dot file)")?;
        use std::io::Write;
        child.stdin.take().unwrap().write_all(dot.as_bytes())?;
        let st = child.wait()?;
        anyhow::ensure!(st.success(), "dot failed rendering {}", path.display());
    } else {
        std::fs::write(path, dot).with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!("certificate drawn to {}", path.display());
    Ok(())
}

/// A spinner on stderr that appears only on a terminal, and only once a second has passed.
fn progress_spinner() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
    pb.set_style(indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})").unwrap());
    pb.set_message("loading");
    let show = pb.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        if !show.is_finished() {
            show.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            show.enable_steady_tick(Duration::from_millis(120));
        }
    });
    Some(pb)
}
