//! `krait proxy`: a PostgreSQL wire-protocol proxy that records the transactions of an
//! unmodified application. The application connects to the proxy instead of the database;
//! every byte is forwarded unchanged, and on the declared tables (`--table accounts:id`) the
//! statements by primary key (one key or a list) are recorded as reads and writes of `TABLE/KEY/COLUMN`
//! (values as the database prints them, hashed: the history has repeated values wherever the
//! application writes one value twice, which the checker handles). Each client connection is
//! a session. At start the declared tables' rows are recorded as the `initial` session's one
//! transaction, so reads of data loaded before recording name their writer. With `sslmode` in
//! the upstream URL the hop to the database is TLS (`tls`); the application's is not.
//!
//! `UPDATE t SET c = c ± v WHERE pk = k` (or `pk IN (k, …)`) is sent with `RETURNING pk, c`
//! (by the simple protocol its query, by the extended one its Parse; the returned rows, and the
//! row description a Describe then gives, are kept from the client, which sees the replies it
//! asked for) and each returned row recorded as a read of the old value and a write of the
//! new one, under the key it returns. Not recorded (counted, and
//! named on stderr): other statements on the declared tables (ranges, joins, aggregates). A history
//! missing them can be wrong, so the count is part of the proxy's report.

mod conn;
mod forward;
mod notes;
mod sql;
mod stream;
mod tls;
mod values;
mod wire;

use crate::recorder::Recorder;
use forward::Context;
use notes::Notes;
use sql::TableSpec;
use std::io;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use stream::Addr;
use tls::UpstreamTls;

/// What to listen on, where to forward, where to record, which tables.
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Address to listen on, e.g. `127.0.0.1:6543`.
    pub listen: String,
    /// The database, as a URL (`postgres://user@host:port/db`): its host and port receive the
    /// connections, and its tables' rows at start are the initial state.
    pub upstream: String,
    /// The history directory (a JSON Lines log per connection).
    pub out: PathBuf,
    /// Declared tables: (name, primary-key column).
    pub tables: Vec<(String, String)>,
    /// PEM certificates to trust, beside the system's, for TLS to the upstream (a URL with
    /// `sslmode=prefer` or `require`; the certificate is always verified).
    pub upstream_ca: Option<PathBuf>,
    /// Once stopped, how long to wait for open connections to close before closing them
    /// (None: until they do).
    pub drain_timeout: Option<std::time::Duration>,
    /// Set (a second Ctrl-C) to close the open connections now, while the proxy waits.
    pub stop_now: Option<&'static AtomicBool>,
}

/// What a proxy run recorded.
#[derive(Clone, Debug, Default)]
pub struct ProxyReport {
    /// Client connections served.
    pub connections: u64,
    /// Statements on declared tables that were not recorded and may have written: each can
    /// make the verdict wrong.
    pub unrecorded: u64,
    /// Reads of declared tables that were not recorded (several rows, aggregates): the check
    /// is weaker for them, never wrong.
    pub unrecorded_reads: u64,
}

/// The declared tables' rows as the `initial` session's one committed transaction; each
/// table's columns are read too (a delete removes them all).
fn record_initial(
    rec: &Recorder,
    url: &str,
    tls: Option<&UpstreamTls>,
    tables: &mut [TableSpec],
) -> io::Result<()> {
    let c = match tls {
        None => postgres::Client::connect(url, postgres::NoTls),
        Some(t) => postgres::Client::connect(
            url,
            tokio_postgres_rustls::MakeRustlsConnect::new((*t.config).clone()),
        ),
    };
    let mut c =
        c.map_err(|e| io::Error::other(format!("{url}: {}", crate::postgres::describe(&e))))?;
    for tb in tables.iter_mut() {
        tb.cols = c
            .query(
                "SELECT column_name::text FROM information_schema.columns
                 WHERE table_name = $1 AND table_schema = ANY (current_schemas(false))
                 ORDER BY ordinal_position",
                &[&tb.name],
            )
            .map_err(|e| {
                io::Error::other(format!(
                    "reading {}'s columns: {}",
                    tb.name,
                    crate::postgres::describe(&e)
                ))
            })?
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect();
    }
    let initial = krait_history::INITIAL_STATE_FILE.trim_end_matches(".jsonl");
    let mut s = rec.session(initial)?;
    let mut t = s.begin()?;
    // Written in large pieces, not a system call per column: nothing has read these yet.
    t.defer_writes();
    for tb in tables {
        let rows = c
            .simple_query(&format!("SELECT * FROM {}", tb.name))
            .map_err(|e| {
                io::Error::other(format!(
                    "reading {}: {}",
                    tb.name,
                    crate::postgres::describe(&e)
                ))
            })?;
        for m in rows {
            let postgres::SimpleQueryMessage::Row(r) = m else {
                continue;
            };
            let cols = r.columns();
            let Some(pk) = cols.iter().position(|c| c.name() == tb.pk) else {
                return Err(io::Error::other(format!(
                    "table {} has no column {}",
                    tb.name, tb.pk
                )));
            };
            let key = r.get(pk).unwrap_or_default().as_bytes();
            for (i, c) in cols.iter().enumerate() {
                if i == pk {
                    continue;
                }
                let k = conn::key_of(tb, key, c.name());
                match r.get(i) {
                    // Hashed as the proxy hashes a column's text, and shown in certificates.
                    Some(v) => t.write_value(&k, v)?,
                    None => t.write(&k, conn::value_id(None))?,
                }
            }
        }
    }
    t.committed()
}

/// Runs the proxy until `stop` is set (checked between connections every 50 ms), recording
/// into `cfg.out`; then refuses new connections and waits for open ones to close, for
/// `cfg.drain_timeout` at most (or until `cfg.stop_now`), before closing them itself.
pub fn serve(cfg: &ProxyConfig, stop: &AtomicBool) -> io::Result<ProxyReport> {
    let mut tables: Vec<TableSpec> = cfg
        .tables
        .iter()
        .map(|(n, k)| TableSpec {
            name: n.to_ascii_lowercase(),
            pk: k.to_ascii_lowercase(),
            cols: Vec::new(),
        })
        .collect();
    // TLS first: its sslmode check names what the URL parser would only call invalid.
    let tls = UpstreamTls::of(&cfg.upstream, cfg.upstream_ca.as_deref())?;
    let upstream = Addr::of(&cfg.upstream)?;
    let rec = Recorder::create(&cfg.out)?;
    record_initial(&rec, &cfg.upstream, tls.as_ref(), &mut tables)?;
    // On disk before "listening": a crash or power loss cannot then keep the clients' logs
    // and lose the rows their first reads saw.
    std::fs::File::open(cfg.out.join(krait_history::INITIAL_STATE_FILE))?.sync_all()?;
    std::fs::File::open(&cfg.out)?.sync_all()?;
    let (close, closing) = tokio::sync::watch::channel(false);
    let ctx = Arc::new(Context {
        rec,
        tables: Arc::new(tables),
        notes: Arc::new(Notes::create(&cfg.out)?),
        upstream,
        tls,
        unrecorded: [AtomicU64::new(0), AtomicU64::new(0)],
        closing,
    });
    // One thread accepts and forwards every connection: the proxy's work is small beside
    // the database's, and a second thread would wake for messages the first could have
    // taken in passing.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let listener = TcpListener::bind(&cfg.listen)
        .map_err(|e| io::Error::new(e.kind(), format!("listening on {}: {e}", cfg.listen)))?;
    listener.set_nonblocking(true)?;
    // Only now: the socket is bound and the initial state recorded, so a client that
    // connects on this line is served and its reads name their writers.
    eprintln!(
        "krait proxy: listening on {}, forwarding to {}, recording into {} (Ctrl-C ends)",
        cfg.listen,
        cfg.upstream,
        cfg.out.display()
    );
    let connections = rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let mut connections = 0u64;
        let mut open = tokio::task::JoinSet::new();
        while !stop.load(Ordering::Relaxed) {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = tokio::time::sleep(std::time::Duration::from_millis(50)) => continue,
            };
            let client = match accepted {
                Ok((c, _)) => c,
                // A client gone before it was accepted is its own affair, not the proxy's end.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            };
            connections += 1;
            let (ctx, id) = (ctx.clone(), connections);
            while open.try_join_next().is_some() {}
            open.spawn(async move {
                if let Err(e) = forward::serve_one(client, ctx, id).await {
                    eprintln!("krait proxy: connection {id}: {e}");
                }
            });
        }
        // New connections are refused from now on, not accepted and left waiting.
        drop(listener);
        drain(&mut open, cfg, &close).await;
        Ok::<_, io::Error>(connections)
    })?;
    Ok(ProxyReport {
        connections,
        unrecorded: ctx.unrecorded[0].load(Ordering::Relaxed),
        unrecorded_reads: ctx.unrecorded[1].load(Ordering::Relaxed),
    })
}

/// Waits for the open connections to close, saying so; closes them once `cfg.drain_timeout`
/// has passed or `cfg.stop_now` is set.
async fn drain(
    open: &mut tokio::task::JoinSet<()>,
    cfg: &ProxyConfig,
    close: &tokio::sync::watch::Sender<bool>,
) {
    if open.is_empty() {
        return;
    }
    eprintln!(
        "krait proxy: stopping: {} connection(s) still open; waiting {} for them to close (Ctrl-C again closes them now: a transaction left open is rolled back, one whose COMMIT is in flight recorded as of unknown outcome)",
        open.len(),
        match cfg.drain_timeout {
            Some(d) => format!("up to {:.1} s", d.as_secs_f64()),
            None => "until they do".to_string(),
        }
    );
    let deadline = cfg.drain_timeout.map(|d| tokio::time::Instant::now() + d);
    loop {
        tokio::select! {
            j = open.join_next() => if j.is_none() { return },
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {
                let due = deadline.is_some_and(|d| tokio::time::Instant::now() >= d)
                    || cfg.stop_now.is_some_and(|s| s.load(Ordering::Relaxed));
                if due && !*close.borrow() {
                    eprintln!("krait proxy: closing the {} connection(s) still open", open.len());
                    let _ = close.send(true);
                }
            }
        }
    }
}
