//! Faults between the collector and a real database, injected by a TCP proxy the test controls.
//!
//! - COMMIT held back: the proxy cuts the client off the moment it sends COMMIT and forwards
//!   the COMMIT to the server a while later, on the old server connection. The client sees a
//!   lost connection (outcome unknown), reconnects under the same session and goes on; the
//!   commit lands after the session's next transactions. This is what gave false G1c /
//!   G-single REJECTs when an unknown outcome was ordered before its session's later ones.
//! - Response lost: COMMIT reaches the server at once, and the client is cut off before the
//!   answer comes back.
//!
//! For each fault, on PostgreSQL and MariaDB at SERIALIZABLE: the run completes, the history
//! verifies ACCEPT (one-shot and in online rounds), there were unknown outcomes and
//! reconnections, and every row the database holds was written by a transaction the history
//! has as committed or unknown — no committed transaction is missing from the history.

use crate::common;

use common::TempDb;
use krait_collector::{backend, Isolation};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Copy)]
enum Fault {
    /// Every nth COMMIT is forwarded only after the delay, its client already cut off.
    HoldCommit { every: u32, delay: Duration },
    /// Every nth COMMIT is forwarded at once and its client cut off before the answer.
    LoseResponse { every: u32 },
}

/// Listens on an ephemeral port and forwards to `upstream`, injecting `fault`. Returns the
/// port and how many faults were injected so far.
fn proxy(upstream: String, fault: Fault) -> (u16, Arc<AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let commits = Arc::new(AtomicU32::new(0));
    let injected = Arc::new(AtomicU32::new(0));
    let inj = injected.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            // Server to client: a plain copy.
            std::thread::spawn(move || {
                let (mut from, mut to) = (s2, c2);
                let _ = std::io::copy(&mut from, &mut to);
                let _ = to.shutdown(Shutdown::Both);
            });
            let (commits, inj) = (commits.clone(), inj.clone());
            std::thread::spawn(move || pump(client, server, fault, &commits, &inj));
        }
    });
    (port, injected)
}

/// Client to server, watching for COMMIT (both protocols send the statement as text).
fn pump(
    mut client: TcpStream,
    mut server: TcpStream,
    fault: Fault,
    n: &AtomicU32,
    inj: &AtomicU32,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let k = match client.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => k,
        };
        let chunk = buf[..k].to_vec();
        let is_commit = chunk.windows(6).any(|w| w.eq_ignore_ascii_case(b"COMMIT"));
        let every = match fault {
            Fault::HoldCommit { every, .. } | Fault::LoseResponse { every } => every,
        };
        if is_commit && n.fetch_add(1, Ordering::Relaxed) % every == every - 1 {
            inj.fetch_add(1, Ordering::Relaxed);
            match fault {
                Fault::HoldCommit { delay, .. } => {
                    let _ = client.shutdown(Shutdown::Both);
                    std::thread::sleep(delay);
                    let _ = server.write_all(&chunk);
                }
                Fault::LoseResponse { .. } => {
                    let _ = server.write_all(&chunk);
                    let _ = client.shutdown(Shutdown::Both);
                }
            }
            // Let the server finish the commit before its connection goes.
            std::thread::sleep(Duration::from_millis(300));
            let _ = server.shutdown(Shutdown::Both);
            return;
        }
        if server.write_all(&chunk).is_err() {
            break;
        }
    }
    let _ = server.shutdown(Shutdown::Both);
}

/// The URL with its host:port replaced by the proxy's.
fn through(url: &str, port: u16) -> (String, String) {
    let at = url
        .find('@')
        .map(|i| i + 1)
        .unwrap_or_else(|| url.find("//").unwrap() + 2);
    let end = at + url[at..].find('/').unwrap();
    let upstream = url[at..end].to_string();
    (
        format!("{}127.0.0.1:{port}{}", &url[..at], &url[end..]),
        upstream,
    )
}

fn run_with(var: &str, tag: &str, fault: Fault) {
    let Some(db) = TempDb::new(var, tag) else {
        return;
    };
    let (port, injected) = {
        let (_, upstream) = through(&db.url, 0);
        proxy(upstream, fault)
    };
    let (mut url, _) = through(&db.url, port);
    if db.mysql {
        // The driver would otherwise switch to the server's Unix socket, around the proxy.
        url += "?prefer_socket=false";
    }
    let out = std::env::temp_dir().join(format!("krait-faults-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let b = backend(&url, Isolation::Serializable).unwrap();
    let (cfg, w) = common::blindw_run(&out, 600, 40, 11);
    let rep = krait_collector::run(b.as_ref(), &w, &cfg, &AtomicU64::new(0))
        .unwrap_or_else(|e| panic!("{tag}: the run must survive the faults: {e}"));
    assert!(
        injected.load(Ordering::Relaxed) > 3,
        "{tag}: faults injected"
    );
    assert!(rep.unknown > 0, "{tag}: unknown outcomes recorded");
    assert!(rep.reconnects > 0, "{tag}: sessions reconnected");
    // Online too, in small rounds; every row the database holds was written by a transaction
    // the history kept as committed or unknown.
    let checked = common::verifies_and_accounts_for_rows(&out, &db, 50, tag, "under faults");
    println!(
        "{tag}: {} committed, {} aborted, {} unknown, {} reconnects, {} faults; ACCEPT; {checked} rows match",
        rep.committed,
        rep.aborted,
        rep.unknown,
        rep.reconnects,
        injected.load(Ordering::Relaxed)
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn postgres_commit_held_back_while_the_session_goes_on() {
    run_with(
        "KRAIT_PG_URL",
        "pg_hold",
        Fault::HoldCommit {
            every: 25,
            delay: Duration::from_millis(150),
        },
    );
}

#[test]
fn postgres_commit_response_lost() {
    run_with("KRAIT_PG_URL", "pg_lose", Fault::LoseResponse { every: 25 });
}

#[test]
fn mariadb_commit_held_back_while_the_session_goes_on() {
    run_with(
        "KRAIT_MYSQL_URL",
        "my_hold",
        Fault::HoldCommit {
            every: 25,
            delay: Duration::from_millis(150),
        },
    );
}

#[test]
fn mariadb_commit_response_lost() {
    run_with(
        "KRAIT_MYSQL_URL",
        "my_lose",
        Fault::LoseResponse { every: 25 },
    );
}
