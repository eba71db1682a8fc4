//! `krait proxy`: a PostgreSQL wire-protocol proxy that records the transactions of an
//! unmodified application. The application connects to the proxy instead of the database;
//! every byte is forwarded unchanged, and on the declared tables (`--table accounts:id`) the
//! single-row statements by primary key are recorded as reads and writes of `TABLE/KEY/COLUMN`
//! (values as the database prints them, hashed: the history has repeated values wherever the
//! application writes one value twice, which the checker handles). Each client connection is
//! a session. At start the declared tables' rows are recorded as the `initial` session's one
//! transaction, so reads of data loaded before recording name their writer.
//!
//! `UPDATE t SET c = c ± v WHERE pk = k` is sent with `RETURNING c` (by the simple protocol
//! its query, by the extended one its Parse; the returned row, and the row description a
//! Describe then gives, are kept from the client, which sees the replies it asked for) and
//! recorded as a read of the old value and a write of the new one. Not recorded (counted, and
//! named on stderr): other statements on the declared tables (DELETE, range reads). A history
//! missing them can be wrong, so the count is part of the proxy's report.

mod conn;
mod notes;
mod sql;
mod values;
mod wire;

use crate::recorder::Recorder;
use conn::Conn;
use notes::Notes;
use sql::TableSpec;
use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// A connection's recording state, and the turn a held client statement waits for (see
/// `Conn::must_wait`), signalled by each ReadyForQuery.
type Shared = (Mutex<Conn>, Condvar);

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

fn upstream_addr(url: &str) -> io::Result<String> {
    let cfg: postgres::Config = url
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {e}")))?;
    let host = match cfg.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".to_string(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    Ok(format!("{host}:{port}"))
}

/// The declared tables' rows as the `initial` session's one committed transaction; each
/// table's columns are read too (a delete removes them all).
fn record_initial(rec: &Recorder, url: &str, tables: &mut [TableSpec]) -> io::Result<()> {
    let mut c = postgres::Client::connect(url, postgres::NoTls)
        .map_err(|e| io::Error::other(format!("{url}: {}", crate::postgres::describe(&e))))?;
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
    let mut s = rec.session("initial")?;
    let mut t = s.begin()?;
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

/// Forwards one direction of a connection, letting the recorder see each message first.
/// Messages are written through a buffer that is flushed whenever no further input is already
/// waiting, so a burst costs one write and a lone message is not held back.
fn pump(from: TcpStream, to: TcpStream, conn: &Shared, client_side: bool) -> io::Result<()> {
    let (lock, turn) = conn;
    let run = || -> io::Result<()> {
        let mut r = io::BufReader::with_capacity(64 << 10, from.try_clone()?);
        let mut w = io::BufWriter::with_capacity(64 << 10, to.try_clone()?);
        while let Some(mut m) = wire::read_msg(&mut r)? {
            let forward = {
                let mut c = lock.lock().unwrap();
                if client_side {
                    if c.must_wait(&m) {
                        // What is already buffered goes out first: the answer waited for may
                        // need it (the Sync that ends the transaction).
                        w.flush()?;
                        while c.must_wait(&m) {
                            c = turn.wait(c).unwrap();
                        }
                    }
                    c.on_client(&mut m)?;
                    true
                } else {
                    let forward = c.on_server(&mut m)?;
                    if m.tag == b'Z' {
                        turn.notify_all();
                    }
                    forward
                }
            };
            if forward {
                wire::write_msg(&mut w, &m)?;
            }
            if r.buffer().is_empty() {
                w.flush()?;
            }
            if client_side && m.tag == b'X' {
                break;
            }
        }
        w.flush()
    };
    let out = run();
    // Either way this direction is over, so is the other: a pump that stopped on an error
    // must not leave its partner waiting for bytes that never come.
    if !client_side {
        lock.lock().unwrap().closed = true;
        turn.notify_all();
    }
    let _ = from.shutdown(std::net::Shutdown::Both);
    let _ = to.shutdown(std::net::Shutdown::Both);
    out
}

/// Serves one client: the startup exchange (refusing SSL so the stream stays readable), then
/// both directions until either side closes.
fn serve_one(
    client: TcpStream,
    upstream: &str,
    rec: &Recorder,
    tables: &Arc<Vec<TableSpec>>,
    id: u64,
    unrecorded: &[AtomicU64; 2],
    notes: &Arc<Notes>,
) -> io::Result<()> {
    let mut client = client;
    let startup = loop {
        let Some(body) = wire::read_startup(&mut client)? else {
            return Ok(());
        };
        let code = body
            .get(..4)
            .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
        if code == wire::SSL_REQUEST || code == wire::GSS_REQUEST {
            client.write_all(b"N")?;
            continue;
        }
        break body;
    };
    let mut server = TcpStream::connect(upstream)?;
    server.set_nodelay(true)?;
    client.set_nodelay(true)?;
    wire::write_startup(&mut server, &startup)?;
    let code = startup
        .get(..4)
        .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    if code == wire::CANCEL_REQUEST {
        return Ok(());
    }
    let session = rec.session(&format!("conn-{id}"))?;
    let conn: Arc<Shared> = Arc::new((
        Mutex::new(Conn::new(session, tables.clone(), notes.clone())),
        Condvar::new(),
    ));
    let (c2, s2, k2) = (client.try_clone()?, server.try_clone()?, conn.clone());
    let up = std::thread::spawn(move || pump(c2, s2, &k2, true));
    let down = pump(server, client, &conn, false);
    let up = up
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the client pump panicked")));
    let mut c = conn.0.lock().unwrap();
    c.lost();
    unrecorded[0].fetch_add(c.unrecorded, Ordering::Relaxed);
    unrecorded[1].fetch_add(c.unrecorded_reads, Ordering::Relaxed);
    // A connection closed by either side is its end, not an error of the proxy's; a
    // recording that failed is.
    for e in [up, down].into_iter().filter_map(Result::err) {
        if !matches!(
            e.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::NotConnected
        ) {
            eprintln!("krait proxy: {}: {e}", c.session.name());
        }
    }
    Ok(())
}

/// Runs the proxy until `stop` is set (checked between connections every 50 ms), recording
/// into `cfg.out`; waits for open connections to close before returning.
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
    let rec = Recorder::create(&cfg.out)?;
    record_initial(&rec, &cfg.upstream, &mut tables)?;
    let tables = Arc::new(tables);
    let notes = Arc::new(Notes::create(&cfg.out)?);
    let upstream = upstream_addr(&cfg.upstream)?;
    let listener = TcpListener::bind(&cfg.listen)?;
    listener.set_nonblocking(true)?;
    let unrecorded = [AtomicU64::new(0), AtomicU64::new(0)];
    let mut connections = 0u64;
    std::thread::scope(|sc| -> io::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((client, _)) => {
                    client.set_nonblocking(false)?;
                    connections += 1;
                    let (rec, tables, upstream, unrecorded, notes) =
                        (&rec, &tables, &upstream, &unrecorded, &notes);
                    let id = connections;
                    sc.spawn(move || {
                        if let Err(e) =
                            serve_one(client, upstream, rec, tables, id, unrecorded, notes)
                        {
                            eprintln!("krait proxy: connection {id}: {e}");
                        }
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })?;
    Ok(ProxyReport {
        connections,
        unrecorded: unrecorded[0].load(Ordering::Relaxed),
        unrecorded_reads: unrecorded[1].load(Ordering::Relaxed),
    })
}
