//! The database restarted in the middle of a run: every session loses its connection (a COMMIT
//! in flight becomes an unknown outcome, anything else an abort), reconnects with backoff while
//! the server is down, and the run completes; the history verifies ACCEPT at SERIALIZABLE, one-
//! shot and online, and every row the database holds is accounted for.
//!
//! PostgreSQL only, restarted with `pg_ctlcluster` (as the machine's services are); alone in its
//! own test binary, since it takes the server away from any test running beside it. Skipped,
//! visibly, where the server cannot be restarted.

mod common;

use common::TempDb;
use krait_checker::{check, Options};
use krait_collector::{backend, Isolation, RunConfig};
use krait_workloads::BlindWKv;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn skip(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {msg}");
}

fn cluster() -> Option<String> {
    let v = std::fs::read_dir("/etc/postgresql")
        .ok()?
        .flatten()
        .next()?
        .file_name();
    Some(v.to_string_lossy().into_owned())
}

fn pg_ctl(version: &str, action: &str) -> bool {
    Command::new("pg_ctlcluster")
        .args(["--skip-systemctl-redirect", version, "main", action])
        .args(if action == "restart" {
            &["-m", "fast"][..]
        } else {
            &[][..]
        })
        .status()
        .is_ok_and(|s| s.success())
}

/// Leaves the server up whatever happens to the test.
struct Up(String);
impl Drop for Up {
    fn drop(&mut self) {
        let ready = || {
            Command::new("pg_isready")
                .args(["-h", "127.0.0.1", "-q"])
                .status()
                .is_ok_and(|s| s.success())
        };
        if !ready() {
            pg_ctl(&self.0, "start");
        }
        for _ in 0..60 {
            if ready() {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

#[test]
fn postgres_restarted_mid_run() {
    let Some(db) = TempDb::new("KRAIT_PG_URL", "restart") else {
        return;
    };
    let Some(version) = cluster() else {
        return skip("no PostgreSQL cluster to restart here");
    };
    if Command::new("pg_ctlcluster")
        .arg("--help")
        .output()
        .is_err()
    {
        return skip("pg_ctlcluster is not available");
    }
    let _up = Up(version.clone());
    let out = std::env::temp_dir().join(format!("krait-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let b = backend(&db.url, Isolation::Serializable).unwrap();
    let cfg = RunConfig {
        clients: 4,
        txns: 4000,
        fence_every: Some(20),
        out: Some(out.clone()),
        fsync: false,
        seed: 5,
        replace: false,
    };
    let w = BlindWKv {
        keys: 60,
        ops: 4,
        read_only: 0.5,
    };
    let done = AtomicU64::new(0);
    let (rep, restarted) = std::thread::scope(|s| {
        let run = s.spawn(|| krait_collector::run(b.as_ref(), &w, &cfg, &done));
        // Restart once the run is well under way.
        let t0 = Instant::now();
        while done.load(Ordering::Relaxed) < 500 && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let restarted = pg_ctl(&version, "restart");
        (run.join().unwrap(), restarted)
    });
    if !restarted {
        return skip("pg_ctlcluster could not restart the server");
    }
    let rep = rep.unwrap_or_else(|e| panic!("the run must survive a restart: {e}"));
    assert!(rep.reconnects > 0, "sessions reconnected: {rep:?}");
    assert_eq!(rep.committed + rep.aborted + rep.unknown, 4000);
    let l = krait_history::load(&out, None).unwrap();
    let h = &l.history;
    let v = check(h, &Options::default()).unwrap().verdict;
    assert!(v.is_accept(), "a correct database restarted mid-run: {v:?}");
    let on = krait_checker::online::replay(h, Default::default(), 200, |_, _| {}).unwrap();
    assert!(on.verdict().is_none(), "online: {:?}", on.verdict());
    let rows = common::rows_accounted_for(&db, h, "restart");
    println!(
        "restart: {} committed, {} aborted, {} unknown, {} reconnects; ACCEPT; {rows} rows match",
        rep.committed, rep.aborted, rep.unknown, rep.reconnects
    );
    let _ = std::fs::remove_dir_all(&out);
}
