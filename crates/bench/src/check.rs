//! `krait-bench check`: one-shot checking time per phase, constraints, conflicts and peak
//! memory per history, and with `--ablation` each technique turned off in turn (and all of
//! them: the paper's plain polygraph), to show what each one buys.

use crate::common::{child, find_data, mb, name_of, read_heavy, read_heavy_rejects, size_of_name};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

// The arguments of `krait-bench check`.
#[derive(Args)]
pub struct CheckArgs {
    /// Histories (default: one-shot-chengRW/* and one-shot-10k/*).
    pub paths: Vec<PathBuf>,
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Also run each history with each technique turned off, and the plain polygraph.
    #[arg(long)]
    pub ablation: bool,
    /// Give each run at most this many seconds (the table says timeout).
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Extra arguments for every `krait check` run.
    #[arg(long, allow_hyphen_values = true, num_args = 1..)]
    pub extra: Vec<String>,
    /// Also write the table as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Also check generated read-heavy histories (36 sessions, 160 operations per transaction,
    /// 98% reads; 8k and 80k transactions; Cobra logs and JSON Lines; and, REJECT, the same with
    /// fractured reads), kept in `--dir`.
    #[arg(long)]
    pub read_heavy: bool,
    /// Where the generated read-heavy histories are kept.
    #[arg(long, default_value = "target/bench-histories")]
    pub dir: PathBuf,
    /// Wait this many seconds before each run, as a user starts a check: on a virtual machine
    /// whose host takes back free memory, a run right after another reuses memory the last one
    /// freed and looks faster than a run on its own (see docs/architecture.md).
    #[arg(long, default_value_t = 0.0)]
    pub pause: f64,
}

/// One measured run: what the table and the CSV show.
pub(crate) struct Row {
    pub history: String,
    pub variant: String,
    pub verdict: String,
    pub txns: u64,
    pub load_ms: f64,
    pub graph_ms: f64,
    pub prune_ms: f64,
    pub solve_ms: f64,
    pub total_ms: f64,
    pub constraints: u64,
    pub after_prune: u64,
    pub conflicts: u64,
    pub peak_rss: f64,
}

/// The table (and `--csv`): every history under every variant.
pub fn run(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let mut paths = a.paths;
    if paths.is_empty() {
        match find_data(a.data) {
            Some(d) => paths = default_paths(&d)?,
            None => println!("skipped: no ../shared/data/cobra here (pass histories or --data)"),
        }
    }
    if a.read_heavy {
        paths.extend(read_heavy(&a.dir)?);
        paths.extend(read_heavy_rejects(&a.dir)?);
    }
    let variants = variants(a.ablation);
    let header = format!(
        "{:<22} {:<15} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>7} {:>8}",
        "history",
        "variant",
        "verdict",
        "txns",
        "load ms",
        "graph",
        "prune",
        "solve",
        "total ms",
        "constr",
        "after",
        "confl",
        "RSS MB"
    );
    println!("{header}");
    let mut rows = vec!["history,variant,verdict,txns,load_ms,graph_ms,prune_ms,solve_ms,total_ms,constraints,after_prune,conflicts,peak_rss_mb".to_string()];
    for p in &paths {
        for (vname, vargs) in &variants {
            crate::common::pause(a.pause);
            let Some(row) = measure(p, vname, vargs, a.timeout, &a.extra)? else {
                continue;
            };
            println!(
                "{:<22} {:<15} {:>7} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>8} {:>8} {:>7} {:>8}",
                row.history, row.variant, row.verdict, row.txns, row.load_ms, row.graph_ms, row.prune_ms, row.solve_ms, row.total_ms, row.constraints, row.after_prune, row.conflicts, mb(row.peak_rss)
            );
            rows.push(format!(
                "{},{},{},{},{:.2},{:.2},{:.2},{:.2},{:.2},{},{},{},{}",
                row.history,
                row.variant,
                row.verdict,
                row.txns,
                row.load_ms,
                row.graph_ms,
                row.prune_ms,
                row.solve_ms,
                row.total_ms,
                row.constraints,
                row.after_prune,
                row.conflicts,
                mb(row.peak_rss)
            ));
        }
    }
    if let Some(c) = a.csv {
        std::fs::write(&c, rows.join("\n") + "\n")?;
        eprintln!("wrote {}", c.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The shared data's one-shot histories, by workload and then size.
fn default_paths(d: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for sub in ["one-shot-chengRW", "one-shot-10k"] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(d.join(sub))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort_by_key(|p| {
            (
                name_of(p).split('-').next().unwrap_or("").to_string(),
                size_of_name(p),
            )
        });
        v.extend(entries);
    }
    Ok(v)
}

/// The switches of each variant: all techniques on, or (ablation) one off at a time.
fn variants(ablation: bool) -> Vec<(&'static str, Vec<&'static str>)> {
    if ablation {
        vec![
            ("full", vec![]),
            ("no-combine", vec!["--no-combine"]),
            ("no-coalesce", vec!["--no-coalesce"]),
            ("no-prune", vec!["--no-prune"]),
            ("no-order-phase", vec!["--no-order-phase"]),
            (
                "polygraph",
                vec!["--no-combine", "--no-coalesce", "--no-prune"],
            ),
        ]
    } else {
        vec![("full", vec![])]
    }
}

/// `krait check --json --rss` on `p` in a child process; `None` (after a line saying why) when
/// it printed no verdict.
pub(crate) fn measure(
    p: &Path,
    vname: &str,
    vargs: &[&str],
    timeout: f64,
    extra: &[String],
) -> anyhow::Result<Option<Row>> {
    let mut cmd = child("check-one")?;
    cmd.args(["--json", "--rss", "--timeout"])
        .arg(timeout.to_string())
        .args(vargs)
        .args(extra)
        .arg(p);
    let t = Instant::now();
    let out = cmd.output()?;
    let wall = t.elapsed().as_secs_f64() * 1e3;
    let v: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(_) => {
            println!(
                "{:<22} {:<15} failed: {}",
                name_of(p),
                vname,
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return Ok(None);
        }
    };
    let d = |k: &str| v["timings"][k].as_f64().unwrap_or(0.0);
    Ok(Some(Row {
        history: name_of(p),
        variant: vname.to_string(),
        verdict: v["verdict"].as_str().unwrap_or("?").to_string(),
        txns: v["history"]["txns"].as_u64().unwrap_or(0),
        load_ms: v["load_ms"].as_f64().unwrap_or(0.0),
        graph_ms: d("resolve") + d("graph"),
        prune_ms: d("prune"),
        solve_ms: d("solve"),
        total_ms: v["total_ms"].as_f64().unwrap_or(wall),
        constraints: v["stats"]["constraints"].as_u64().unwrap_or(0),
        after_prune: v["stats"]["constraints_after_prune"].as_u64().unwrap_or(0),
        conflicts: v["stats"]["conflicts"].as_u64().unwrap_or(0),
        peak_rss: v["peak_rss_bytes"].as_f64().unwrap_or(0.0),
    }))
}
