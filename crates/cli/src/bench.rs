//! `krait bench`: tables of load speed and checking time over the shared Cobra histories and
//! generated ones. Each measurement runs in a child process so its peak memory is its own.

use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchCmd,
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Parse speed and memory of loading histories.
    Load {
        /// Histories to load (default: tpcc-10000 and chengRM-100000 from the shared data).
        paths: Vec<PathBuf>,
        /// The shared data folder (default: ../shared/data/cobra, found from here upwards).
        #[arg(long)]
        data: Option<PathBuf>,
        #[arg(long, default_value_t = 3)]
        repeat: usize,
    },
    /// One-shot checking time per phase, constraints, conflicts and memory.
    Check {
        /// Histories (default: one-shot-chengRW/* and one-shot-10k/*).
        paths: Vec<PathBuf>,
        #[arg(long)]
        data: Option<PathBuf>,
        /// Also run each history with each technique turned off, and the plain polygraph.
        #[arg(long)]
        ablation: bool,
        /// Give each run at most this many seconds (the table says timeout).
        #[arg(long, default_value_t = 120.0)]
        timeout: f64,
        /// Extra arguments for every `krait check` run.
        #[arg(long, allow_hyphen_values = true, num_args = 1..)]
        extra: Vec<String>,
        /// Also write the table as CSV here.
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// Generated BlindW histories of growing size, checked one-shot (files kept in DIR).
    Scale {
        #[arg(long, default_value = "target/bench-histories")]
        dir: PathBuf,
        /// Sizes in transactions.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
        sizes: Vec<usize>,
        #[arg(long, default_value = "blindw-rm")]
        workload: String,
    },
    /// The solver alone on Cobra-shaped instances (n transactions, 2.5n constraints).
    Solver {
        #[arg(long, value_delimiter = ',', default_value = "1000,5000,20000,100000")]
        sizes: Vec<u32>,
        #[arg(long, default_value_t = 2.5)]
        constraints_per_txn: f64,
    },
    /// The collector's overhead (the paper's C8/C9): throughput, p90 latency and history bytes
    /// with and without recording and fences, per store and client count.
    Overhead {
        /// Stores, e.g. sqlite and postgres://postgres@127.0.0.1:5432/postgres.
        #[arg(long, value_delimiter = ',', default_value = "sqlite")]
        stores: Vec<String>,
        #[arg(long, value_delimiter = ',', default_value = "8,24")]
        clients: Vec<usize>,
        #[arg(long, default_value_t = 10_000)]
        txns: usize,
        #[arg(long, default_value = "twitter")]
        workload: String,
    },
    /// Online verification capacity (the paper's Figure 10): per round size, transactions per
    /// second of round time, transactions held, and peak memory.
    Online {
        /// Histories (default: scaling/chengRM-100000 and scaling/twitter-100000).
        paths: Vec<PathBuf>,
        #[arg(long)]
        data: Option<PathBuf>,
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1000,2500,5000,10000,20000,40000"
        )]
        round_sizes: Vec<usize>,
    },
    /// An endless generated BlindW stream with fences, checked online in rounds: memory and
    /// speed at checkpoints (flat memory is the point).
    Stream {
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
    },
    /// (internal) load one history and print JSON with time and peak memory.
    #[command(hide = true)]
    LoadOne { path: PathBuf },
}

pub fn find_data(explicit: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(d) = explicit {
        return Some(d);
    }
    let mut dir = std::env::current_dir().ok()?;
    loop {
        let cand = dir.join("../shared/data/cobra");
        if cand.is_dir() {
            return Some(cand);
        }
        let cand = dir.join("shared/data/cobra");
        if cand.is_dir() {
            return Some(cand);
        }
        if !dir.pop() {
            return None;
        }
    }
}

fn self_exe() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("locating the krait binary")
}

fn mb(bytes: f64) -> String {
    format!("{:.0}", bytes / (1 << 20) as f64)
}

fn bench_online(paths: Vec<PathBuf>, data: Option<PathBuf>, sizes: &[usize]) -> anyhow::Result<()> {
    let paths = if paths.is_empty() {
        let d =
            find_data(data).context("no ../shared/data/cobra here; pass histories or --data")?;
        vec![
            d.join("scaling/chengRM-100000"),
            d.join("scaling/twitter-100000"),
        ]
    } else {
        paths
    };
    println!(
        "{:<20} {:>7} {:>7} {:>9} {:>10} {:>10} {:>9} {:>9} {:>8} {:>8}",
        "history",
        "round",
        "rounds",
        "txns",
        "ms/round",
        "txn/s",
        "check ms",
        "gc ms",
        "max graph",
        "RSS MB"
    );
    for p in paths {
        let mut best: (f64, usize) = (0.0, 0);
        for &n in sizes {
            let out = Command::new(self_exe()?)
                .arg("check")
                .arg(&p)
                .args(["--round-size", &n.to_string(), "--json", "--rss"])
                .output()?;
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)
                .with_context(|| format!("krait check {} --round-size {n}", p.display()))?;
            let rounds = v["rounds"].as_array().cloned().unwrap_or_default();
            // Full rounds only: the last one is whatever was left.
            let full: Vec<&serde_json::Value> = rounds
                .iter()
                .filter(|r| r["new"].as_u64().unwrap_or(0) as usize >= n)
                .collect();
            let use_rounds: Vec<&serde_json::Value> = if full.is_empty() {
                rounds.iter().collect()
            } else {
                full
            };
            let sum = |f: &str| -> f64 {
                use_rounds
                    .iter()
                    .map(|r| r[f].as_f64().unwrap_or(0.0))
                    .sum()
            };
            let (new, ms) = (sum("new"), sum("time"));
            let rate = new / (ms / 1e3);
            let k = use_rounds.len().max(1) as f64;
            let max_live = rounds
                .iter()
                .map(|r| r["checked"].as_u64().unwrap_or(0))
                .max()
                .unwrap_or(0);
            if rate > best.0 {
                best = (rate, n);
            }
            println!(
                "{:<20} {:>7} {:>7} {:>9} {:>10.1} {:>10.0} {:>9.1} {:>9.1} {:>8} {:>8} {}",
                name_of(&p),
                n,
                rounds.len(),
                v["history"]["txns"],
                ms / k,
                rate,
                sum("check_time") / k,
                sum("gc_time") / k,
                max_live,
                mb(v["peak_rss_bytes"].as_f64().unwrap_or(0.0)),
                v["verdict"].as_str().unwrap_or("?")
            );
        }
        println!(
            "{:<20} capacity {:.0} txn/s (round size {})",
            name_of(&p),
            best.0,
            best.1
        );
    }
    Ok(())
}

fn bench_stream(
    txns: usize,
    round_size: usize,
    workload: &str,
    keys: u64,
    sessions: usize,
    fence_every: usize,
    every: usize,
    fractured_reads: f64,
) -> anyhow::Result<ExitCode> {
    use krait_checker::online::{Online, OnlineOptions, TxnIn};
    use krait_workloads::{BlindW, BlindWStream};
    let base = match workload {
        "blindw-rm" => BlindW::rm(txns),
        "blindw-rw" => BlindW::rw(txns),
        "blindw-wm" => BlindW::wm(txns),
        w => anyhow::bail!("unknown workload {w:?}"),
    };
    let p = BlindW {
        keys,
        sessions,
        fence_every: Some(fence_every),
        timestamps: false,
        fractured_reads,
        ..base
    };
    let mut on = Online::new(OnlineOptions::default());
    let mut key_ids: Vec<u32> = (0..keys).map(|i| on.key(&format!("k{i}"))).collect();
    key_ids.push(on.key(krait_history::NATIVE_FENCE_KEY));
    for s in 0..sessions {
        on.session(&format!("s{s}"))?;
    }
    println!(
        "{:>11} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "txns", "secs", "txn/s", "live", "rounds", "deleted", "RSS MB"
    );
    let t0 = Instant::now();
    let mut last = (Instant::now(), 0usize);
    for (i, t) in BlindWStream::new(&p).take(txns).enumerate() {
        on.push(TxnIn {
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
            claims: Vec::new(),
        })?;
        if (i + 1) % round_size == 0 {
            on.round()?;
            if on.verdict().is_some() {
                break;
            }
        }
        if (i + 1) % every == 0 || i + 1 == txns {
            let secs = last.0.elapsed().as_secs_f64();
            println!(
                "{:>11} {:>8.1} {:>10.0} {:>9} {:>9} {:>9} {:>9}",
                i + 1,
                t0.elapsed().as_secs_f64(),
                (i + 1 - last.1) as f64 / secs,
                on.live(),
                on.rounds(),
                on.deleted_total(),
                mb(crate::rss_bytes().unwrap_or(0) as f64)
            );
            last = (Instant::now(), i + 1);
        }
    }
    on.finish()?;
    let verdict = match on.verdict() {
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
    };
    println!(
        "verdict {verdict}; peak RSS {} MB; {:.1} s",
        mb(crate::peak_rss_bytes().unwrap_or(0) as f64),
        t0.elapsed().as_secs_f64()
    );
    Ok(if on.verdict().is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    match a.what {
        BenchCmd::Online {
            paths,
            data,
            round_sizes,
        } => {
            bench_online(paths, data, &round_sizes)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Stream {
            txns,
            round_size,
            workload,
            keys,
            sessions,
            fence_every,
            every,
            fractured_reads,
        } => bench_stream(
            txns,
            round_size,
            &workload,
            keys,
            sessions,
            fence_every,
            every,
            fractured_reads,
        ),
        BenchCmd::Solver {
            sizes,
            constraints_per_txn,
        } => {
            use krait_solver::{Budget, Cdcl, CdclOptions, Engine, Outcome};
            println!(
                "{:>8} {:>9} {:<28} {:>7} {:>10} {:>10} {:>12} {:>9}",
                "n", "constr", "engine", "result", "ms", "conflicts", "propagations", "reorders"
            );
            for n in sizes {
                let k = (n as f64 * constraints_per_txn) as u32;
                let p = krait_solver::cobra_shaped(n, k, 24, 64, 42);
                let configs = [
                    ("cdcl (all heuristics)", CdclOptions::default()),
                    (
                        "cdcl no order-phase",
                        CdclOptions {
                            order_phase: false,
                            ..Default::default()
                        },
                    ),
                    (
                        "cdcl no theory-propagation",
                        CdclOptions {
                            theory_propagation: false,
                            ..Default::default()
                        },
                    ),
                    (
                        "cdcl with two-cycle clauses",
                        CdclOptions {
                            two_cycle_clauses: true,
                            ..Default::default()
                        },
                    ),
                    (
                        "cdcl plain",
                        CdclOptions {
                            order_phase: false,
                            theory_propagation: false,
                            two_cycle_clauses: false,
                            ..Default::default()
                        },
                    ),
                ];
                for (name, o) in configs {
                    let mut s = Cdcl::new(o);
                    let t = Instant::now();
                    let out = s.solve(
                        &p,
                        &Budget::unlimited().with_timeout(std::time::Duration::from_secs(60)),
                    );
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    let st = s.stats();
                    let res = match out {
                        Outcome::Sat { .. } => "SAT",
                        Outcome::Unsat { .. } => "UNSAT",
                        Outcome::Unknown(_) => "timeout",
                    };
                    println!(
                        "{:>8} {:>9} {:<28} {:>7} {:>10.1} {:>10} {:>12} {:>9}",
                        n, k, name, res, ms, st.conflicts, st.propagations, st.reorders
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Overhead {
            stores,
            clients,
            txns,
            workload,
        } => {
            println!(
                "{:<40} {:>7} {:<10} {:>9} {:>9} {:>9} {:>12}",
                "store", "clients", "mode", "txn/s", "p90 ms", "aborts", "bytes/1k txn"
            );
            for store in &stores {
                for &c in &clients {
                    for record in [false, true] {
                        let backend = krait_collector::backend(
                            store,
                            krait_collector::Isolation::Serializable,
                        )?;
                        let w = crate::runcmd::workload(&workload, c)?;
                        let dir = std::env::temp_dir()
                            .join(format!("krait-overhead-{}", std::process::id()));
                        let cfg = krait_collector::RunConfig {
                            clients: c,
                            txns,
                            fence_every: record.then_some(20),
                            out: record.then(|| dir.clone()),
                            fsync: false,
                            seed: 1,
                            // Its own temporary directory, reused run after run.
                            replace: true,
                        };
                        let r = krait_collector::run(
                            backend.as_ref(),
                            w.as_ref(),
                            &cfg,
                            &std::sync::atomic::AtomicU64::new(0),
                        )?;
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
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::LoadOne { path } => {
            let t = Instant::now();
            let l = krait_history::load(&path, None)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let bytes = dir_bytes(&path);
            let v = serde_json::json!({
                "txns": l.history.num_txns(),
                "ops": l.history.num_ops(),
                "bytes": bytes,
                "ms": ms,
                "peak_rss_bytes": crate::peak_rss_bytes(),
                "model_bytes": l.history.heap_bytes(),
            });
            println!("{v}");
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Load {
            paths,
            data,
            repeat,
        } => {
            let paths = if paths.is_empty() {
                let d = find_data(data)
                    .context("no ../shared/data/cobra here; pass histories or --data")?;
                vec![
                    d.join("one-shot-10k/tpcc-10000"),
                    d.join("scaling/chengRM-100000"),
                ]
            } else {
                paths
            };
            println!(
                "{:<28} {:>9} {:>10} {:>9} {:>10} {:>9} {:>9}",
                "history", "txns", "MB", "best ms", "MB/s", "model MB", "RSS MB"
            );
            for p in paths {
                let mut best: Option<serde_json::Value> = None;
                for _ in 0..repeat.max(1) {
                    let out = Command::new(self_exe()?)
                        .args(["bench", "load-one"])
                        .arg(&p)
                        .output()?;
                    anyhow::ensure!(
                        out.status.success(),
                        "loading {} failed: {}",
                        p.display(),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
                    if best
                        .as_ref()
                        .is_none_or(|b| v["ms"].as_f64() < b["ms"].as_f64())
                    {
                        best = Some(v);
                    }
                }
                let v = best.unwrap();
                let bytes = v["bytes"].as_f64().unwrap_or(0.0);
                let ms = v["ms"].as_f64().unwrap_or(0.0);
                println!(
                    "{:<28} {:>9} {:>10.1} {:>9.1} {:>10.0} {:>9} {:>9}",
                    name_of(&p),
                    v["txns"],
                    bytes / 1e6,
                    ms,
                    bytes / 1e6 / (ms / 1e3),
                    mb(v["model_bytes"].as_f64().unwrap_or(0.0)),
                    mb(v["peak_rss_bytes"].as_f64().unwrap_or(0.0))
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Check {
            paths,
            data,
            ablation,
            timeout,
            extra,
            csv,
        } => {
            let paths = if paths.is_empty() {
                let d = find_data(data)
                    .context("no ../shared/data/cobra here; pass histories or --data")?;
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
                v
            } else {
                paths
            };
            let variants: Vec<(&str, Vec<&str>)> = if ablation {
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
            };
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
                    let mut cmd = Command::new(self_exe()?);
                    cmd.args(["check", "--json", "--rss", "--timeout"])
                        .arg(timeout.to_string())
                        .args(vargs)
                        .args(&extra)
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
                            continue;
                        }
                    };
                    let d = |k: &str| {
                        v["timings"][k]["secs"].as_f64().unwrap_or(0.0) * 1e3
                            + v["timings"][k]["nanos"].as_f64().unwrap_or(0.0) / 1e6
                    };
                    let total = v["total_ms"].as_f64().unwrap_or(wall);
                    let row = (
                        name_of(p),
                        vname.to_string(),
                        v["verdict"].as_str().unwrap_or("?").to_string(),
                        v["history"]["txns"].as_u64().unwrap_or(0),
                        v["load_ms"].as_f64().unwrap_or(0.0),
                        d("resolve") + d("graph"),
                        d("prune"),
                        d("solve"),
                        total,
                        v["stats"]["constraints"].as_u64().unwrap_or(0),
                        v["stats"]["constraints_after_prune"].as_u64().unwrap_or(0),
                        v["stats"]["conflicts"].as_u64().unwrap_or(0),
                        v["peak_rss_bytes"].as_f64().unwrap_or(0.0),
                    );
                    println!(
                        "{:<22} {:<15} {:>7} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>8} {:>8} {:>7} {:>8}",
                        row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11, mb(row.12)
                    );
                    rows.push(format!(
                        "{},{},{},{},{:.2},{:.2},{:.2},{:.2},{:.2},{},{},{},{}",
                        row.0,
                        row.1,
                        row.2,
                        row.3,
                        row.4,
                        row.5,
                        row.6,
                        row.7,
                        row.8,
                        row.9,
                        row.10,
                        row.11,
                        mb(row.12)
                    ));
                }
            }
            if let Some(c) = csv {
                std::fs::write(&c, rows.join("\n") + "\n")?;
                eprintln!("wrote {}", c.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Scale {
            dir,
            sizes,
            workload,
        } => {
            std::fs::create_dir_all(&dir)?;
            let mut paths = Vec::new();
            for n in sizes {
                let p = dir.join(format!("{workload}-{n}.jsonl"));
                if !p.exists() {
                    let st = Command::new(self_exe()?)
                        .args([
                            "generate",
                            "--workload",
                            &workload,
                            "--txns",
                            &n.to_string(),
                        ])
                        .arg(&p)
                        .status()?;
                    anyhow::ensure!(st.success(), "generating {}", p.display());
                }
                paths.push(p);
            }
            run(BenchArgs {
                what: BenchCmd::Check {
                    paths,
                    data: None,
                    ablation: false,
                    timeout: 600.0,
                    extra: vec![],
                    csv: None,
                },
            })
        }
    }
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default()
}

fn size_of_name(p: &Path) -> u64 {
    name_of(p)
        .rsplit('-')
        .next()
        .and_then(|s| s.trim_end_matches(".jsonl").parse().ok())
        .unwrap_or(0)
}

fn dir_bytes(p: &Path) -> u64 {
    if p.is_dir() {
        std::fs::read_dir(p)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    } else {
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    }
}
