//! What the workloads' tests share: a serial in-memory store that records each transaction's
//! reads and writes (so a mix and an application invariant can be checked without a database),
//! and a store that fails on cue (so a workload that swallows an error is caught).

use crate::{Rng, Tx, TxError, Workload};
use std::collections::HashMap;

/// What one transaction did, in order.
#[derive(Default)]
pub(crate) struct Trace {
    pub(crate) reads: Vec<String>,
    pub(crate) writes: Vec<(String, String)>,
}

impl Trace {
    pub(crate) fn wrote(&self, prefix: &str) -> bool {
        self.writes.iter().any(|(k, _)| k.starts_with(prefix))
    }
    pub(crate) fn read(&self, prefix: &str) -> bool {
        self.reads.iter().any(|k| k.starts_with(prefix))
    }
}

/// A serial store: transactions apply in turn, so invariants of the application must hold.
struct MemTx<'a> {
    db: &'a mut HashMap<String, String>,
    trace: Trace,
}

impl Tx for MemTx<'_> {
    fn read(&mut self, key: &str) -> Result<Option<String>, TxError> {
        self.trace.reads.push(key.to_string());
        Ok(self.db.get(key).cloned())
    }
    fn write(&mut self, key: &str, value: &str) -> Result<(), TxError> {
        assert!(
            !self.trace.writes.iter().any(|(k, _)| k == key),
            "{key} written twice in one transaction"
        );
        self.trace.writes.push((key.to_string(), value.to_string()));
        self.db.insert(key.to_string(), value.to_string());
        Ok(())
    }
}

pub(crate) const TXNS: usize = 2000;

/// Runs `txns` transactions of `w` one after another, from client ids 0 to 7 in turn.
pub(crate) fn run(
    w: &dyn Workload,
    txns: usize,
    seed: u64,
) -> (HashMap<String, String>, Vec<Trace>) {
    let mut db: HashMap<String, String> = w.initial().into_iter().collect();
    let mut rng = Rng::new(seed);
    let mut traces = Vec::with_capacity(txns);
    for t in 0..txns {
        let mut tx = MemTx {
            db: &mut db,
            trace: Trace::default(),
        };
        w.run_txn(t % 8, &mut rng, &mut tx).unwrap();
        traces.push(tx.trace);
    }
    (db, traces)
}

/// Each class's share of `traces` is within 3.5 percentage points of its expected percent.
pub(crate) fn check_mix(
    traces: &[Trace],
    classes: &[(&str, f64)],
    classify: impl Fn(&Trace) -> &'static str,
) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in traces {
        *counts.entry(classify(t)).or_default() += 1;
    }
    assert_eq!(counts.values().sum::<usize>(), traces.len());
    for &(name, pct) in classes {
        let got = 100.0 * counts.get(name).copied().unwrap_or(0) as f64 / traces.len() as f64;
        assert!(
            (got - pct).abs() < 3.5,
            "{name}: {got:.1}% of transactions, expected {pct}% ({counts:?})"
        );
    }
    assert_eq!(
        counts.len(),
        classes.len(),
        "unexpected classes: {counts:?}"
    );
}

pub(crate) fn count_prefix(db: &HashMap<String, String>, prefix: &str) -> usize {
    db.keys().filter(|k| k.starts_with(prefix)).count()
}

/// Fails the `fail_at`-th operation and panics on any operation after that, so a workload
/// that swallows an error and carries on is caught.
pub(crate) struct FailTx {
    pub(crate) ops: usize,
    pub(crate) fail_at: usize,
}

impl FailTx {
    fn op(&mut self) -> Result<(), TxError> {
        self.ops += 1;
        assert!(self.ops <= self.fail_at, "operation after a failed one");
        if self.ops == self.fail_at {
            return Err(TxError("injected".into()));
        }
        Ok(())
    }
}

impl Tx for FailTx {
    fn read(&mut self, _key: &str) -> Result<Option<String>, TxError> {
        self.op().map(|_| None)
    }
    fn write(&mut self, _key: &str, _value: &str) -> Result<(), TxError> {
        self.op()
    }
}
