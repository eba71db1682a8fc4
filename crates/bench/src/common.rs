//! What the benchmarks share: finding the shared Cobra histories, running a measurement in a
//! child process (this binary again), and formatting names and sizes for the tables.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The shared Cobra histories: `explicit`, or `../shared/data/cobra` (or `shared/data/cobra`)
/// found from the current directory upwards.
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

/// The histories given, or when none were, the ones `default` names in the shared data.
pub fn paths_or(
    paths: Vec<PathBuf>,
    data: Option<PathBuf>,
    default: impl FnOnce(&Path) -> anyhow::Result<Vec<PathBuf>>,
) -> anyhow::Result<Vec<PathBuf>> {
    if !paths.is_empty() {
        return Ok(paths);
    }
    let d = find_data(data).context("no ../shared/data/cobra here; pass histories or --data")?;
    default(&d)
}

/// This binary, to run a measurement in a process of its own (`check-one`, `load-one`, …).
pub fn child(subcommand: &str) -> anyhow::Result<Command> {
    let exe = std::env::current_exe().context("locating the krait-bench binary")?;
    let mut c = Command::new(exe);
    c.arg(subcommand);
    Ok(c)
}

/// Generates a history at `p` with `krait generate ARGS` (the simulated store), unless a
/// file is there from an earlier run.
pub fn generate_once(p: &Path, args: &[String]) -> anyhow::Result<()> {
    if p.exists() {
        return Ok(());
    }
    let st = child("generate")?.args(args).arg(p).status()?;
    anyhow::ensure!(st.success(), "generating {}", p.display());
    Ok(())
}

/// Read-heavy histories shaped like a FaunaDB bug history (36 sessions, 160 operations per
/// transaction, 98% reads): 8,000 transactions and 10× that, each as Cobra logs and as JSON
/// Lines, generated into `dir` unless there from an earlier run.
pub fn read_heavy(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut v = Vec::new();
    for txns in [8_000, 80_000] {
        for (format, ext) in [("cobra", ""), ("jsonl", ".jsonl")] {
            let p = dir.join(format!("readheavy-{txns}{ext}"));
            generate_once(&p, &read_heavy_args(txns, format, &[]))?;
            v.push(p);
        }
    }
    Ok(v)
}

/// The same shape with a fractured read in about one transaction in 10,000 (so REJECT, as the
/// FaunaDB history is): what a violation's certificate costs on such a graph. Cobra logs only.
pub fn read_heavy_rejects(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut v = Vec::new();
    for txns in [8_000, 80_000] {
        let p = dir.join(format!("readheavy-{txns}-fr"));
        generate_once(
            &p,
            &read_heavy_args(txns, "cobra", &["--fractured-reads", "0.0001"]),
        )?;
        v.push(p);
    }
    Ok(v)
}

fn read_heavy_args(txns: u64, format: &str, more: &[&str]) -> Vec<String> {
    let txns = txns.to_string();
    let base = [
        "--sessions",
        "36",
        "--txns",
        &txns,
        "--ops-per-txn",
        "160",
        "--read-ratio",
        "0.98",
        "--seed",
        "3",
        "--format",
        format,
    ];
    base.iter().chain(more).map(|s| s.to_string()).collect()
}

/// Every history under the shared Cobra data, by folder, workload and size.
pub fn all_shared(d: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for sub in ["one-shot-chengRW", "one-shot-10k", "scaling", "bugs"] {
        let Ok(rd) = std::fs::read_dir(d.join(sub)) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
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

/// The format of a history as the tables name it: Cobra logs (a directory), or its extension.
pub fn format_of(p: &Path) -> &'static str {
    if p.is_dir() {
        "cobra"
    } else {
        match p.extension().and_then(|e| e.to_str()) {
            Some("jsonl") => "jsonl",
            Some("edn") => "edn",
            Some("bincode") => "dbcop",
            _ => "?",
        }
    }
}

/// Bytes as whole MiB.
pub fn mb(bytes: f64) -> String {
    format!("{:.0}", bytes / (1 << 20) as f64)
}

/// The file or directory name of a history.
pub fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// The size a history's name ends with (`chengRW-10000` → 10000), to sort by.
pub fn size_of_name(p: &Path) -> u64 {
    name_of(p)
        .rsplit('-')
        .next()
        .and_then(|s| s.trim_end_matches(".jsonl").parse().ok())
        .unwrap_or(0)
}

/// Bytes on disk: a file's, or the sum of a directory's files.
pub fn dir_bytes(p: &Path) -> u64 {
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

/// Waits `secs` seconds (none for 0): memory freed by the last run is then handed back to a
/// virtual machine's host before the next one starts, as between a user's checks.
pub fn pause(secs: f64) {
    if secs > 0.0 {
        std::thread::sleep(std::time::Duration::from_secs_f64(secs));
    }
}
