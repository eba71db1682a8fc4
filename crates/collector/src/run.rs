//! Runs a workload with N client sessions against a backend, recording each session's history
//! to `OUT/c<i>.jsonl`, and measures throughput and latency.

use crate::session::{Log, Session, TxnOutcome};
use crate::store::{Backend, StoreError};
use krait_workloads::{Rng, Workload};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What a run does: how many clients, how many transactions, and where the history goes.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Client sessions, each on its own thread and connection.
    pub clients: usize,
    /// Transactions in all (attempts, aborted ones included; fences not counted).
    pub txns: usize,
    /// A fence transaction every this many transactions per session (epochs for online
    /// checking); `None` for none.
    pub fence_every: Option<usize>,
    /// None: run without recording (the overhead baseline).
    pub out: Option<PathBuf>,
    /// fsync each log after every transaction (survives a machine crash, costs throughput).
    pub fsync: bool,
    /// Client `i`'s [`Rng`] is seeded with `seed + 7919 i`.
    pub seed: u64,
    /// Replace the session logs an earlier run left in `out` (otherwise such a directory is
    /// refused: nothing of the user's is deleted unasked).
    pub replace: bool,
    /// The first client's number: sessions are `c<first_client + i>`, and their transaction
    /// and write ids are made from that number, so runs on several hosts with disjoint
    /// ranges make one history.
    pub first_client: usize,
    /// Load the workload's initial rows first (off for every host but one, or all of them
    /// once a `--txns 0` run has loaded them).
    pub setup: bool,
    /// Also publish each session's records to this stream.
    pub publish: Option<std::sync::Arc<krait_transport::nats::Connection>>,
}

/// Holds a run's output directory: one run at a time writes a directory.
struct DirLock(PathBuf);

impl DirLock {
    fn take(dir: &Path) -> Result<DirLock, StoreError> {
        let p = dir.join(".krait-run.lock");
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(mut f) => {
                use std::io::Write;
                let _ = writeln!(f, "{}", std::process::id());
                Ok(DirLock(p))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(StoreError::Fatal(format!(
                "{} is being written by another krait run (its lock {} exists; remove it if no run is)",
                dir.display(),
                p.display()
            ))),
            Err(e) => Err(StoreError::Fatal(format!("locking {}: {e}", p.display()))),
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What a run did: outcomes, timing and history size.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// Transactions that committed.
    pub committed: u64,
    /// Transactions the database aborted (or the workload gave up on).
    pub aborted: u64,
    /// Transactions whose COMMIT's outcome was lost with the connection.
    pub unknown: u64,
    /// Wall-clock time of the run, setup excluded.
    pub wall: Duration,
    /// Latency of every transaction attempt, sorted.
    pub latencies: Vec<Duration>,
    /// Bytes of history written, all sessions together.
    pub history_bytes: u64,
    /// First few abort reasons, for the user.
    pub abort_examples: Vec<String>,
    /// Connections re-established after one was lost (a restart, a cut connection).
    pub reconnects: u64,
}

impl RunReport {
    /// Transaction attempts per second.
    pub fn throughput(&self) -> f64 {
        (self.committed + self.aborted + self.unknown) as f64 / self.wall.as_secs_f64().max(1e-9)
    }
    /// The latency at quantile `p` (0.9 is p90); zero when nothing ran.
    pub fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies[i]
    }
    /// History bytes per 1,000 transaction attempts.
    pub fn bytes_per_1000(&self) -> f64 {
        let n = (self.committed + self.aborted + self.unknown).max(1) as f64;
        self.history_bytes as f64 / n * 1000.0
    }
}

/// Sets the backend up with the workload's initial rows, then runs it. `done` counts finished
/// transactions (for a progress bar).
pub fn run(
    backend: &dyn Backend,
    workload: &dyn Workload,
    cfg: &RunConfig,
    done: &AtomicU64,
) -> Result<RunReport, StoreError> {
    let mut _lock = None;
    if let Some(dir) = &cfg.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| StoreError::Fatal(format!("creating {}: {e}", dir.display())))?;
        _lock = Some(DirLock::take(dir)?);
        // A directory holds one run: earlier session logs are replaced only when asked.
        let old: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                    .collect()
            })
            .unwrap_or_default();
        if !old.is_empty() && !cfg.replace {
            return Err(StoreError::Fatal(format!(
                "{} already holds {} session logs (e.g. {}); use --force to replace them, or another directory",
                dir.display(),
                old.len(),
                old[0].display()
            )));
        }
        for p in old {
            let _ = std::fs::remove_file(p);
        }
    }
    if cfg.setup {
        backend.setup(&workload.initial())?;
    }
    let t0 = Instant::now();
    let results: Vec<Result<RunReport, StoreError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..cfg.clients)
            .map(|i| {
                scope.spawn(move || -> Result<RunReport, StoreError> {
                    let n = cfg.txns / cfg.clients + usize::from(i < cfg.txns % cfg.clients);
                    let g = cfg.first_client + i;
                    let log = match &cfg.out {
                        Some(dir) => {
                            let mut log = Log::create(&dir.join(format!("c{g}.jsonl")), cfg.fsync)
                                .map_err(|e| {
                                    StoreError::Fatal(format!(
                                        "creating the log of session c{g}: {e}"
                                    ))
                                })?;
                            if let Some(c) = &cfg.publish {
                                log.publish_to(Box::new(c.sink(&format!("c{g}"))));
                            }
                            Some(log)
                        }
                        None => None,
                    };
                    // Many clients starting at once can find the database out of connections.
                    let store = crate::session::connect_with_backoff(&|| backend.connect())?;
                    let mut s = Session::new(
                        g,
                        store,
                        log,
                        cfg.fence_every,
                        Box::new(move || backend.connect()),
                    );
                    let mut rng = Rng::new(cfg.seed.wrapping_add(g as u64 * 7919));
                    let mut rep = RunReport::default();
                    for _ in 0..n {
                        let (o, lat) = s.run(&mut |tx| workload.run_txn(g, &mut rng, tx))?;
                        match o {
                            TxnOutcome::Committed => rep.committed += 1,
                            TxnOutcome::Aborted(why) => {
                                rep.aborted += 1;
                                if rep.abort_examples.len() < 3 {
                                    rep.abort_examples.push(why);
                                }
                            }
                            TxnOutcome::Unknown(_) => rep.unknown += 1,
                        }
                        rep.latencies.push(lat);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    s.close()?;
                    rep.history_bytes = s.log_bytes;
                    rep.reconnects = s.reconnects;
                    Ok(rep)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(StoreError::Fatal("a client thread panicked".into())))
            })
            .collect()
    });
    let mut total = RunReport {
        wall: t0.elapsed(),
        ..Default::default()
    };
    for r in results {
        let r = r?;
        total.committed += r.committed;
        total.aborted += r.aborted;
        total.unknown += r.unknown;
        total.reconnects += r.reconnects;
        total.latencies.extend(r.latencies);
        total.history_bytes += r.history_bytes;
        if total.abort_examples.len() < 3 {
            total.abort_examples.extend(
                r.abort_examples
                    .into_iter()
                    .take(3 - total.abort_examples.len()),
            );
        }
    }
    total.latencies.sort_unstable();
    Ok(total)
}
