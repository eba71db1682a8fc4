//! `krait proxy` to a PostgreSQL that speaks TLS (`sslmode=require` in the upstream URL), as a
//! cloud database does: the hop to the database is encrypted and its certificate verified, the
//! application still connects in plaintext, and the history is recorded as without TLS. Needs
//! KRAIT_PG_URL and a server with `ssl = on` whose certificate file is readable here and names
//! `localhost` (Debian's default: the snakeoil certificate); says it skipped otherwise.

use crate::common;

use common::proxy::{committed_writes, free_port, kv_db, tmp, verdict, with_proxy_tls};
use krait_checker::Level;
use std::io::Write;
use std::path::PathBuf;

/// The server's certificate file, when the server has TLS on and the file can be read here.
fn server_cert(db: &common::TempDb) -> Option<PathBuf> {
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).ok()?;
    let on: String = c.query_one("SHOW ssl", &[]).ok()?.get(0);
    let file: String = c.query_one("SHOW ssl_cert_file", &[]).ok()?.get(0);
    let file = PathBuf::from(file);
    let ok = on == "on" && std::fs::read(&file).is_ok();
    if !ok {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: the server has no TLS (ssl = {on}) or its certificate {} cannot be read",
            file.display()
        );
    }
    ok.then_some(file)
}

/// The test database's URL with `host` and `sslmode=mode`.
fn tls_url(db: &common::TempDb, host: &str, mode: &str) -> String {
    let (_, dbname) = db.url.rsplit_once('/').unwrap();
    let user = db
        .url
        .split("://")
        .nth(1)
        .unwrap()
        .split('@')
        .next()
        .unwrap();
    let port = db
        .url
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap();
    format!("postgres://{user}@{host}:{port}/{dbname}?sslmode={mode}")
}

#[test]
fn the_hop_to_a_tls_database_is_encrypted_and_the_history_recorded() {
    let Some(db) = kv_db("proxy_tls") else {
        return;
    };
    let Some(cert) = server_cert(&db) else {
        return;
    };
    // `localhost`: the name the certificate holds.
    let upstream = tls_url(&db, "localhost", "require");
    let (ssl, l, report) = with_proxy_tls(
        &db,
        &upstream,
        Some(&cert),
        &[("kv", "k")],
        "tls",
        |_, via| {
            let mut c = postgres::Client::connect(via, postgres::NoTls).unwrap();
            let mut tx = c.transaction().unwrap();
            let r = tx.query_one("SELECT v FROM kv WHERE k = 1", &[]).unwrap();
            assert_eq!(r.get::<_, String>(0), "a");
            tx.execute("UPDATE kv SET v = 'b' WHERE k = 1", &[])
                .unwrap();
            tx.commit().unwrap();
            c.execute("INSERT INTO kv (k, v) VALUES (2, 'c')", &[])
                .unwrap();
            // What the server says of the proxy's connection to it.
            c.query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get::<_, bool>(0)
        },
    );
    assert!(ssl, "the proxy's connection to the server is not TLS");
    assert_eq!(report.unrecorded, 0);
    let h = &l.history;
    assert_eq!(committed_writes(h, "kv/1/v"), 2, "the load and the UPDATE");
    assert_eq!(committed_writes(h, "kv/2/v"), 1);
    assert!(verdict(h, Level::Serializable).is_accept());
}

/// A certificate for another host than the URL names is refused, even one the machine trusts
/// (Debian puts its snakeoil certificate among the system's): the proxy does not start, and
/// says why.
#[test]
fn a_certificate_for_another_host_is_refused() {
    let Some(db) = common::TempDb::new("KRAIT_PG_URL", "proxy_tls_untrusted") else {
        return;
    };
    if server_cert(&db).is_none() {
        return;
    }
    // Trusted, but for another name.
    let cfg = krait_collector::ProxyConfig {
        listen: format!("127.0.0.1:{}", free_port()),
        // The certificate names localhost, not 127.0.0.1.
        upstream: tls_url(&db, "127.0.0.1", "require"),
        out: tmp("tls_other_host"),
        tables: vec![("kv".into(), "k".into())],
        upstream_ca: server_cert(&db),
        drain_timeout: None,
        stop_now: None,
    };
    let stop = std::sync::atomic::AtomicBool::new(true);
    let e = krait_collector::serve_proxy(&cfg, &stop).unwrap_err();
    assert!(e.to_string().contains("certificate"), "{e}");
    let _ = std::fs::remove_dir_all(&cfg.out);
}
