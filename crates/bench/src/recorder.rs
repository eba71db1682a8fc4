//! `krait-bench recorder`: what the recorder library costs an application in its own process —
//! the bank of `crates/collector/examples/bank.rs` (tellers moving money between two accounts on
//! SQLite: read both balances, write both) run with and without recording, runs alternating,
//! without the example's pause inside each transfer (which would hide any cost).

use clap::Args;
use krait_collector::{RecSession, Recorder};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

// The arguments of `krait-bench recorder`.
#[derive(Args)]
pub struct RecorderArgs {
    /// Tellers (threads, each with its own connection and session).
    #[arg(long, default_value_t = 4)]
    tellers: usize,
    /// Transfers per teller and run.
    #[arg(long, default_value_t = 2000)]
    transfers: usize,
    /// Runs of each mode, alternating.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Also fsync every record (the recorder's crash-safe setting for power loss).
    #[arg(long)]
    fsync: bool,
}

/// The table: transfers per second per run of each mode, and the loss of the recorded runs'
/// median against the plain ones'.
pub fn run(a: RecorderArgs) -> anyhow::Result<ExitCode> {
    let dir = std::env::temp_dir().join(format!("krait-bench-recorder-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!(
        "{:<6} {:<10} {:>10} {:>12} {:>10}",
        "run", "mode", "transfers", "transfers/s", "aborted"
    );
    let (mut plain, mut recorded) = (Vec::new(), Vec::new());
    for round in 0..a.rounds {
        for record in [false, true] {
            let (n, aborted, secs) = bank(&dir, &a, record)?;
            let rate = n as f64 / secs;
            println!(
                "{:<6} {:<10} {:>10} {:>12.0} {:>10}",
                round + 1,
                if record { "recorded" } else { "plain" },
                n,
                rate,
                aborted
            );
            if record {
                recorded.push(rate)
            } else {
                plain.push(rate)
            }
        }
    }
    // Medians: one run disturbed by other work on the machine moves a best-of far more.
    let (p, r) = (median(&mut plain), median(&mut recorded));
    println!(
        "median of each: plain {p:.0}/s, recorded {r:.0}/s: {:.1}% fewer transfers per second recorded",
        (1.0 - r / p) * 100.0
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ExitCode::SUCCESS)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// One run of the bank: (transfers attempted, aborted, seconds).
fn bank(dir: &Path, a: &RecorderArgs, record: bool) -> anyhow::Result<(usize, usize, f64)> {
    let file = dir.join("bank.db");
    let _ = std::fs::remove_file(&file);
    let hist = dir.join("history");
    let _ = std::fs::remove_dir_all(&hist);
    let rec = if record {
        Some(Recorder::create(&hist)?.fsync(a.fsync))
    } else {
        None
    };
    let setup = open(&file)?;
    setup.execute_batch(
        "PRAGMA journal_mode = WAL; CREATE TABLE accounts (k TEXT PRIMARY KEY, v TEXT)",
    )?;
    let mut s = rec.as_ref().map(|r| r.session("setup")).transpose()?;
    let mut t = s.as_mut().map(|s| s.begin()).transpose()?;
    for k in ["a", "b"] {
        let v = match t.as_mut() {
            Some(t) => t.tag(k, "1000000")?,
            None => "1000000".to_string(),
        };
        setup.execute("INSERT INTO accounts VALUES (?1, ?2)", [k, v.as_str()])?;
    }
    if let Some(t) = t {
        t.committed()?;
    }
    let start = Instant::now();
    let aborted: usize = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..a.tellers)
            .map(|i| {
                let (rec, file) = (&rec, &file);
                sc.spawn(move || -> anyhow::Result<usize> {
                    let db = open(file)?;
                    let mut s = rec
                        .as_ref()
                        .map(|r| r.session(&format!("teller-{i}")))
                        .transpose()?;
                    let mut aborted = 0;
                    for n in 0..a.transfers {
                        let (from, to) = if (i + n) % 2 == 0 {
                            ("a", "b")
                        } else {
                            ("b", "a")
                        };
                        if !transfer(&db, s.as_mut(), from, to)? {
                            aborted += 1;
                        }
                    }
                    Ok(aborted)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a teller panicked"))
            .sum::<anyhow::Result<usize>>()
    })?;
    Ok((
        a.tellers * a.transfers,
        aborted,
        start.elapsed().as_secs_f64(),
    ))
}

fn open(file: &Path) -> anyhow::Result<rusqlite::Connection> {
    let c = rusqlite::Connection::open(file)?;
    c.busy_timeout(std::time::Duration::from_secs(30))?;
    Ok(c)
}

/// One transfer of 1, as the example makes it (recorded when `s` is given); false if aborted.
fn transfer(
    db: &rusqlite::Connection,
    s: Option<&mut RecSession>,
    from: &str,
    to: &str,
) -> anyhow::Result<bool> {
    let get = |k: &str| -> rusqlite::Result<String> {
        db.query_row("SELECT v FROM accounts WHERE k = ?1", [k], |r| r.get(0))
    };
    let put = |k: &str, v: &str| db.execute("UPDATE accounts SET v = ?1 WHERE k = ?2", [v, k]);
    let mut t = s.map(|s| s.begin()).transpose()?;
    db.execute_batch("BEGIN IMMEDIATE")?;
    if let Some(t) = t.as_mut() {
        // As the example does: inside BEGIN … COMMIT the writes wait for committing().
        t.defer_writes();
    }
    let mut read = |k: &str| -> anyhow::Result<i64> {
        let stored = get(k)?;
        let v = match t.as_mut() {
            Some(t) => t.read_tagged(k, Some(&stored))?.unwrap_or_default(),
            None => stored.as_str(),
        };
        Ok(v.parse()?)
    };
    let (a, b) = (read(from)?, read(to)?);
    if a < 1 {
        db.execute_batch("ROLLBACK")?;
        if let Some(t) = t {
            t.aborted()?;
        }
        return Ok(false);
    }
    let mut updates = [(from, a - 1), (to, b + 1)];
    updates.sort();
    for (k, v) in updates {
        let stored = match t.as_mut() {
            Some(t) => t.tag(k, &v.to_string())?,
            None => v.to_string(),
        };
        put(k, &stored)?;
    }
    if let Some(t) = t.as_mut() {
        t.committing()?;
    }
    db.execute_batch("COMMIT")?;
    if let Some(t) = t {
        t.committed()?;
    }
    Ok(true)
}
