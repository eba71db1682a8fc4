//! The proxy under test: served on a free port of its own, recording into a directory of its
//! own, until the test's client code is done; the history it wrote, loaded.

use super::TempDb;
use krait_collector::{serve_proxy, ProxyConfig};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-proxy-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The proxy's own port and history directory, serving `db` until the returned flag is set.
pub fn with_proxy<T>(
    db: &TempDb,
    tables: &[(&str, &str)],
    name: &str,
    run: impl FnOnce(u16, &str) -> T,
) -> (T, krait_history::Loaded, krait_collector::ProxyReport) {
    with_proxy_to(db, &db.url, tables, name, run)
}

/// `db`'s URL through its Unix-domain socket (`KRAIT_PG_SOCKET_DIR`, by default Debian's
/// `/var/run/postgresql`), when the socket is there.
pub fn unix_url(db: &TempDb) -> Option<String> {
    let dir = std::env::var("KRAIT_PG_SOCKET_DIR").unwrap_or("/var/run/postgresql".into());
    let cfg: postgres::Config = db.url.parse().ok()?;
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    std::path::Path::new(&dir)
        .join(format!(".s.PGSQL.{port}"))
        .exists()
        .then(|| {
            let (user, db) = (cfg.get_user()?, cfg.get_dbname()?);
            Some(format!(
                "postgres://{user}@{}:{port}/{db}",
                dir.replace('/', "%2F")
            ))
        })
        .flatten()
}

/// As [`with_proxy`], the proxy forwarding to `upstream`.
pub fn with_proxy_to<T>(
    db: &TempDb,
    upstream: &str,
    tables: &[(&str, &str)],
    name: &str,
    run: impl FnOnce(u16, &str) -> T,
) -> (T, krait_history::Loaded, krait_collector::ProxyReport) {
    with_proxy_tls(db, upstream, None, tables, name, run)
}

/// As [`with_proxy_to`], trusting the certificates in `ca` for TLS to the upstream.
pub fn with_proxy_tls<T>(
    db: &TempDb,
    upstream: &str,
    ca: Option<&std::path::Path>,
    tables: &[(&str, &str)],
    name: &str,
    run: impl FnOnce(u16, &str) -> T,
) -> (T, krait_history::Loaded, krait_collector::ProxyReport) {
    let port = free_port();
    let out = tmp(name);
    let cfg = ProxyConfig {
        listen: format!("127.0.0.1:{port}"),
        upstream: upstream.to_string(),
        out: out.clone(),
        tables: tables
            .iter()
            .map(|(t, k)| (t.to_string(), k.to_string()))
            .collect(),
        upstream_ca: ca.map(|p| p.to_path_buf()),
        drain_timeout: None,
        stop_now: None,
    };
    let stop = AtomicBool::new(false);
    let (base, dbname) = db.url.rsplit_once('/').unwrap();
    let via = format!(
        "{}@127.0.0.1:{port}/{dbname}",
        base.rsplit_once('@').unwrap().0
    );
    let (t, report) = std::thread::scope(|sc| {
        let proxy = sc.spawn(|| serve_proxy(&cfg, &stop));
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            // A proxy that failed to start fails the test with its reason, not a wait forever.
            if proxy.is_finished() {
                match proxy.join() {
                    Ok(Err(e)) => panic!("the proxy did not start: {e}"),
                    _ => panic!("the proxy ended before it listened"),
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // Stopped on the way out, panic or not: a failing client must fail the test, not
        // leave the proxy serving forever.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let stopping = Stop(&stop);
        let t = run(port, &via);
        drop(stopping);
        (t, proxy.join().unwrap().unwrap())
    });
    let l = krait_history::load(&out, None).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    (t, l, report)
}

/// The one-shot verdict on a recorded history at `level`.
pub fn verdict(h: &krait_history::History, level: krait_checker::Level) -> krait_checker::Verdict {
    let o = krait_checker::Options {
        level,
        ..krait_checker::Options::default()
    };
    krait_checker::check(h, &o).unwrap().verdict
}

/// Writes of `key` by committed transactions (a transaction recorded as aborted wrote nothing).
pub fn committed_writes(h: &krait_history::History, key: &str) -> usize {
    (0..h.num_txns() as u32)
        .filter(|&t| h.txn_status[t as usize] == krait_history::TxnStatus::Committed)
        .flat_map(|t| h.ops(t))
        .filter(|&o| {
            h.keys[h.op_key[o] as usize] == key && h.op_kind[o] == krait_history::OpKind::Write
        })
        .count()
}

/// A database of its own (None: no KRAIT_PG_URL, said skipped) with table `kv (k INT PRIMARY
/// KEY, v TEXT)` holding row (1, 'a').
pub fn kv_db(name: &str) -> Option<TempDb> {
    let db = TempDb::new("KRAIT_PG_URL", name)?;
    let mut admin = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "CREATE TABLE kv (k INT PRIMARY KEY, v TEXT); INSERT INTO kv VALUES (1, 'a');",
        )
        .unwrap();
    Some(db)
}
