//! Forwarding one client connection: the startup exchange, then both directions at once, each
//! message shown to the connection's recording state on its way. Connections are tasks on a
//! small async runtime rather than two threads each: on a loaded machine every message would
//! otherwise wake a sleeping thread, and those context switches were most of the proxy's CPU
//! (pgbench's TPC-B: 14 per transaction). A runtime thread instead takes whatever became
//! ready while it ran, many messages per wake-up.

use super::conn::Conn;
use super::notes::Notes;
use super::sql::TableSpec;
use super::stream::{Addr, Upstream};
use super::tls::UpstreamTls;
use super::wire;
use crate::recorder::Recorder;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// A connection's recording state, and the turn a held client statement waits for (see
/// `Conn::must_wait`), signalled by each ReadyForQuery and by the end of the connection.
struct Shared {
    conn: Mutex<Conn>,
    turn: Notify,
}

/// What every connection shares: where it records, and the counts it adds to.
pub(crate) struct Context {
    pub rec: Recorder,
    pub tables: Arc<Vec<TableSpec>>,
    pub notes: Arc<Notes>,
    pub upstream: Addr,
    /// TLS to the upstream, where its URL's sslmode asks.
    pub tls: Option<UpstreamTls>,
    /// Statements not recorded that may have written; reads not recorded.
    pub unrecorded: [AtomicU64; 2],
    /// Set when the proxy stops waiting for its clients: every connection ends then, as if
    /// the client had gone (a transaction left open is rolled back by the database, one whose
    /// COMMIT is in flight recorded as of unknown outcome).
    pub closing: tokio::sync::watch::Receiver<bool>,
}

/// Input is read in pieces of at least this much; output goes out once per piece of input.
const BUF: usize = 64 << 10;

/// Forwards one direction, letting the recorder see each message first. Everything parsed
/// from one read goes out in one write, so a burst costs one system call each way and a lone
/// message is not held back.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    shared: &Shared,
    client_side: bool,
) -> io::Result<()> {
    let mut input: Vec<u8> = Vec::with_capacity(BUF);
    let mut at = 0;
    let mut out: Vec<u8> = Vec::with_capacity(BUF);
    loop {
        while let Some(mut m) = wire::take_msg(&input, &mut at)? {
            let forward = if client_side {
                loop {
                    let turn = shared.turn.notified();
                    tokio::pin!(turn);
                    // Registered before the check, so a ReadyForQuery between the two is
                    // not missed.
                    turn.as_mut().enable();
                    {
                        let mut c = shared.conn.lock().unwrap();
                        if !c.must_wait(&m) {
                            c.on_client(&mut m)?;
                            break;
                        }
                    }
                    // What is already parsed goes out first: the answer waited for may need
                    // it (the Sync that ends the transaction).
                    to.write_all(&out).await?;
                    out.clear();
                    turn.await;
                }
                true
            } else {
                let forward = shared.conn.lock().unwrap().on_server(&mut m)?;
                if m.tag == b'Z' {
                    shared.turn.notify_waiters();
                }
                forward
            };
            if forward {
                wire::put_msg(&mut out, &m);
            }
            if client_side && m.tag == b'X' {
                return to.write_all(&out).await;
            }
        }
        if !out.is_empty() {
            to.write_all(&out).await?;
            out.clear();
        }
        input.drain(..at);
        at = 0;
        input.reserve(BUF);
        if from.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
    }
}

/// Both directions until either ends; the first to end ends the other (a pump that stopped
/// on an error must not leave its partner waiting for bytes that never come).
async fn both(
    (cr, cw): (impl AsyncRead + Unpin, impl AsyncWrite + Unpin),
    (sr, sw): (impl AsyncRead + Unpin, impl AsyncWrite + Unpin),
    shared: &Shared,
    mut closing: tokio::sync::watch::Receiver<bool>,
) -> io::Result<()> {
    tokio::select! {
        r = pump(cr, sw, shared, true) => r,
        r = pump(sr, cw, shared, false) => r,
        _ = closing.wait_for(|c| *c) => Ok(()),
    }
}

/// Sends the client's startup packet upstream, then records the connection as a session
/// while it lasts; None for a cancel request, which has no session.
async fn relay(
    mut client: TcpStream,
    mut server: Upstream,
    startup: &[u8],
    ctx: &Context,
    id: u64,
) -> io::Result<Option<(Shared, io::Result<()>)>> {
    match &mut server {
        Upstream::Tcp(s) => wire::write_startup(s, startup).await?,
        Upstream::Unix(s) => wire::write_startup(s, startup).await?,
        Upstream::Tls(s) => wire::write_startup(s, startup).await?,
    }
    if wire::code_of(startup) == wire::CANCEL_REQUEST {
        return Ok(None);
    }
    let session = ctx.rec.session(&format!("conn-{id}"))?;
    let shared = Shared {
        conn: Mutex::new(Conn::new(session, ctx.tables.clone(), ctx.notes.clone())),
        turn: Notify::new(),
    };
    let closing = ctx.closing.clone();
    // Borrowed halves: each direction's reads and writes go straight to the socket.
    let out = match &mut server {
        Upstream::Tcp(s) => both(client.split(), s.split(), &shared, closing).await,
        Upstream::Unix(s) => both(client.split(), s.split(), &shared, closing).await,
        // A TLS stream is one state for both directions: halves that share it.
        Upstream::Tls(s) => {
            both(client.split(), tokio::io::split(&mut **s), &shared, closing).await
        }
    };
    Ok(Some((shared, out)))
}

/// Serves one client: the startup exchange (refusing SSL so the stream stays readable), then
/// both directions until either side closes.
pub(crate) async fn serve_one(mut client: TcpStream, ctx: Arc<Context>, id: u64) -> io::Result<()> {
    client.set_nodelay(true)?;
    let startup = loop {
        let Some(body) = wire::read_startup(&mut client).await? else {
            return Ok(());
        };
        let code = wire::code_of(&body);
        if code == wire::SSL_REQUEST || code == wire::GSS_REQUEST {
            client.write_all(b"N").await?;
            continue;
        }
        break body;
    };
    let server = ctx.upstream.connect(ctx.tls.as_ref()).await?;
    let Some((shared, out)) = relay(client, server, &startup, &ctx, id).await? else {
        return Ok(());
    };
    let mut c = shared.conn.lock().unwrap();
    c.closed = true;
    c.lost();
    ctx.unrecorded[0].fetch_add(c.unrecorded, Ordering::Relaxed);
    ctx.unrecorded[1].fetch_add(c.unrecorded_reads, Ordering::Relaxed);
    // A connection closed by either side is its end, not an error of the proxy's; a
    // recording that failed is.
    if let Err(e) = out {
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
