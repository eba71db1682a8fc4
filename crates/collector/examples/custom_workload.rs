//! Record a workload of your own and check it: a small bank (transfers and audits) run by four
//! clients against embedded SQLite through the collector's public API, written to a history
//! directory, then checked for serializability with krait-checker.
//!
//! Run it with `cargo run -p krait-collector --example custom_workload`.

use krait_collector::{backend, Isolation, RunConfig};
use krait_workloads::{Rng, Tx, TxError, Workload};
use std::sync::atomic::AtomicU64;

/// `accounts` accounts of 100 each; a transfer moves money between two of them, an audit reads
/// them all. Under serializability every audit sees the same total.
struct Bank {
    accounts: u64,
}

fn balance(tx: &mut dyn Tx, account: u64) -> Result<i64, TxError> {
    Ok(tx
        .read(&format!("acct{account}"))?
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}

impl Workload for Bank {
    fn name(&self) -> String {
        "bank".into()
    }

    fn initial(&self) -> Vec<(String, String)> {
        (0..self.accounts)
            .map(|a| (format!("acct{a}"), "100".to_string()))
            .collect()
    }

    fn run_txn(&self, _client: usize, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        if rng.chance(0.3) {
            // Audit: read every account.
            for a in 0..self.accounts {
                balance(tx, a)?;
            }
            return Ok(());
        }
        // Transfer: up to 10 from one account to another, never below zero.
        let from = rng.below(self.accounts);
        let to = (from + 1 + rng.below(self.accounts - 1)) % self.accounts;
        let (a, b) = (balance(tx, from)?, balance(tx, to)?);
        let amount = (1 + rng.below(10) as i64).min(a);
        tx.write(&format!("acct{from}"), &(a - amount).to_string())?;
        tx.write(&format!("acct{to}"), &(b + amount).to_string())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = std::env::temp_dir().join(format!("krait-example-{}", std::process::id()));
    let (db, out) = (tmp.join("bank.sqlite"), tmp.join("history"));
    std::fs::create_dir_all(&tmp)?;

    // Record: 4 clients, 400 transactions, a fence every 20 per client.
    let store = backend(&format!("sqlite:{}", db.display()), Isolation::Serializable)?;
    let cfg = RunConfig {
        clients: 4,
        txns: 400,
        fence_every: Some(20),
        out: Some(out.clone()),
        fsync: false,
        seed: 1,
        replace: true,
        first_client: 0,
        setup: true,
        publish: None,
    };
    let run = krait_collector::run(
        store.as_ref(),
        &Bank { accounts: 8 },
        &cfg,
        &AtomicU64::new(0),
    )?;
    println!(
        "recorded {} transactions ({} committed, {} aborted) on {} into {}",
        run.committed + run.aborted + run.unknown,
        run.committed,
        run.aborted,
        store.describe(),
        out.display()
    );

    // Check: load the session logs and ask whether some serial order explains every read.
    let loaded = krait_history::load(&out, Some(krait_history::Format::Jsonl))?;
    let report = krait_checker::check(&loaded.history, &krait_checker::Options::default())?;
    match &report.verdict {
        krait_checker::Verdict::Accept => println!("verdict: ACCEPT (serializable)"),
        krait_checker::Verdict::Reject(c) => println!("verdict: REJECT: {}", c.summary),
        krait_checker::Verdict::Unknown { .. } => println!("verdict: UNKNOWN (budget ran out)"),
    }
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}
