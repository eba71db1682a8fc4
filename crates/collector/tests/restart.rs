//! The database restarted in the middle of a run: every session loses its connection (a COMMIT
//! in flight becomes an unknown outcome, anything else an abort), reconnects with backoff while
//! the server is down, and the run completes; the history verifies ACCEPT at SERIALIZABLE, one-
//! shot and online, and every row the database holds is accounted for.
//!
//! PostgreSQL restarted with `pg_ctlcluster`, MariaDB shut down with `mariadb-admin` and started
//! again (as the machine's services are started); alone in their own test binary, since they take
//! a server away from any test running beside them. Skipped, visibly, where a server cannot be
//! restarted.

use crate::common;

use common::TempDb;
use krait_collector::{backend, Isolation};
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

/// Records a run against `url` while `restart` takes the server down and brings it back.
fn run_through_restart(db: &TempDb, tag: &str, restart: &dyn Fn() -> bool) {
    let out = std::env::temp_dir().join(format!("krait-restart-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut url = db.url.clone();
    if db.mysql {
        // Over TCP, like the other tests' clients.
        url += "?prefer_socket=false";
    }
    let b = backend(&url, Isolation::Serializable).unwrap();
    let (cfg, w) = common::blindw_run(&out, 4000, 60, 5);
    let done = AtomicU64::new(0);
    let (rep, restarted) = std::thread::scope(|s| {
        let run = s.spawn(|| krait_collector::run(b.as_ref(), &w, &cfg, &done));
        // Restart once the run is well under way.
        let t0 = Instant::now();
        while done.load(Ordering::Relaxed) < 500 && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let restarted = restart();
        (run.join().unwrap(), restarted)
    });
    if !restarted {
        return skip(&format!("{tag}: the server could not be restarted"));
    }
    let rep = rep.unwrap_or_else(|e| panic!("{tag}: the run must survive a restart: {e}"));
    assert!(rep.reconnects > 0, "{tag}: sessions reconnected: {rep:?}");
    assert_eq!(rep.committed + rep.aborted + rep.unknown, 4000);
    let rows = common::verifies_and_accounts_for_rows(&out, db, 200, tag, "restarted mid-run");
    println!(
        "{tag}: {} committed, {} aborted, {} unknown, {} reconnects; ACCEPT; {rows} rows match",
        rep.committed, rep.aborted, rep.unknown, rep.reconnects
    );
    let _ = std::fs::remove_dir_all(&out);
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
    run_through_restart(&db, "postgres", &|| pg_ctl(&version, "restart"));
}

fn mariadb_up() -> bool {
    Command::new("mariadb-admin")
        .args(["-h", "127.0.0.1", "-P", "3306", "-u", "root", "ping"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn mariadb_start() {
    let _ = Command::new("start-stop-daemon")
        .args([
            "--start",
            "--oknodo",
            "--background",
            "--exec",
            "/usr/sbin/mariadbd",
        ])
        .status();
    for _ in 0..120 {
        if mariadb_up() {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Leaves MariaDB up whatever happens to the test.
struct MariaUp;
impl Drop for MariaUp {
    fn drop(&mut self) {
        if !mariadb_up() {
            mariadb_start();
        }
    }
}

#[test]
fn mariadb_restarted_mid_run() {
    let Some(db) = TempDb::new("KRAIT_MYSQL_URL", "restart") else {
        return;
    };
    if !std::path::Path::new("/usr/sbin/mariadbd").exists() || !mariadb_up() {
        return skip("no mariadbd to restart here");
    }
    let _up = MariaUp;
    run_through_restart(&db, "mariadb", &|| {
        let down = Command::new("mariadb-admin")
            .args(["-h", "127.0.0.1", "-P", "3306", "-u", "root", "shutdown"])
            .status()
            .is_ok_and(|s| s.success());
        std::thread::sleep(Duration::from_millis(500));
        mariadb_start();
        down && mariadb_up()
    });
}
