//! `krait check`: load a history, check it, report the verdict (text, JSON, a drawing) and exit
//! with its code. `--round-size N` replays the history in online rounds instead.

use super::online::{self, Printer};
use crate::exit;
use crate::files::load;
use crate::output::{stats_line, write_dot};
use crate::{memory, progress, report_dir};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub use super::args::{CheckArgs, SolverArg};

/// `krait check`'s arguments: the ones `watch` and `run --check` share, and `--out`.
#[derive(clap::Args, Clone)]
pub struct CheckCmd {
    #[command(flatten)]
    args: CheckArgs,
    /// The same as --report DIR (Elle's name for it): report.html, verdict.json and
    /// anomalies/ in DIR, e.g. --out krait-report.
    #[arg(long, value_name = "DIR", conflicts_with = "report")]
    out: Option<PathBuf>,
}

impl CheckCmd {
    /// Whether the output is JSON (then an error is a JSON object too).
    pub fn wants_json(&self) -> bool {
        self.args.wants_json()
    }
    /// The shared arguments, `--out` folded into `--report`.
    pub fn into_args(self) -> CheckArgs {
        let mut a = self.args;
        if self.out.is_some() {
            a.flags.report = self.out;
        }
        a
    }
}

/// Checks the history at `a.path` and prints the verdict; the exit code is the verdict's.
pub fn run(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    if let Some(n) = a.round_size {
        return in_rounds(a, n);
    }
    if let Some(dir) = &a.report {
        report_dir::prepare(dir)?;
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
    if a.flags.level == Some(super::args::LevelArg::All) {
        drop(spinner);
        return super::ladder::run(a, &loaded.history, load_time);
    }
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
    if let Some(file) = &a.junit {
        crate::junit::write(file, &a.path, a.level_name(), Some(&report), total)?;
    }
    // Made only where it is printed or written.
    let json = if a.json || a.report.is_some() {
        verdict_json(a, &loaded, &report, load_time, total)?
    } else {
        serde_json::Value::Null
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print_text(a, &loaded.history, &report, load_time, total);
    }
    if let (Some(dot), Some(cert)) = (&a.dot, report.verdict.certificate()) {
        // A drawing that fails is a warning: the exit code stays the verdict's.
        if let Err(e) = write_dot(cert, dot) {
            eprintln!("warning: the certificate was not drawn: {e:#}");
        }
    }
    if let Some(dir) = &a.report {
        let rung = krait_report::Rung::checked(&report, ms(total - load_time));
        let page = krait_report::Page {
            path: a.path.display().to_string(),
            history: &loaded.history,
            headline: krait_report::headline(&report),
            rungs: vec![rung],
            load_ms: ms(load_time),
        };
        if let Err(e) = report_dir::write(dir, &page, &json) {
            eprintln!("warning: the report was not written: {e:#}");
        }
    }
    Ok(exit::of_verdict(Some(&report.verdict)))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `--json` (and the report's verdict.json): the report, with the path, the history's counts,
/// times and (`--rss`) peak memory.
fn verdict_json(
    a: &CheckArgs,
    loaded: &krait_history::Loaded,
    report: &krait_checker::Report,
    load_time: Duration,
    total: Duration,
) -> anyhow::Result<serde_json::Value> {
    let h = &loaded.history;
    let mut v = krait_report::report_json(report);
    let obj = v.as_object_mut().unwrap();
    // What loading warned of belongs with the verdict: it may say what the verdict covers.
    if !loaded.warnings.is_empty() {
        let w: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
        obj.insert("warnings".into(), w.into());
    }
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
    Ok(v)
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
    if let Some(order) = krait_report::order_text(report) {
        println!("{order}");
    }
}

/// `--round-size N`: a finished history, replayed in online rounds of N transactions.
fn in_rounds(a: &CheckArgs, round_size: usize) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(round_size > 0, "--round-size must be at least 1");
    online::refuse_one_shot_flags(a)?;
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
