//! A recording session: one client's connection plus its history log.
//!
//! Every written value gets a unique write id, stored in the database as `k<id>|<value>` and
//! stripped again on read, so each read names the write it observed. The log is the native
//! JSON Lines format, written progressively so that nothing sent is lost if the client dies:
//! the start of a transaction's line when it begins, each write *before* it is sent, each read
//! when its value arrives, `]` (the operations are complete) just before COMMIT is sent, and the
//! outcome after. A line cut short is recovered by the reader: ops closed → outcome unknown;
//! otherwise the transaction never asked to commit → aborted.

use crate::store::{Store, StoreError};
use krait_history::NATIVE_FENCE_KEY;
use krait_transport::{Kind, Sink, TransportError};
use krait_workloads::{Tx, TxError};
use std::fs::File;
use std::io::Write;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// How a transaction ended, as logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TxnOutcome {
    Committed,
    Aborted(String),
    Unknown(String),
}

pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Longest application value a log keeps, in characters: enough to recognise it in a
/// certificate, short enough that the log stays a small multiple of the ids.
const LOGGED_APP_CHARS: usize = 64;

/// Appends one logged operation: `[kind, key, value]`, with the application's own value as a
/// fourth element where there is one (its first [`LOGGED_APP_CHARS`] characters), so
/// certificates can show what the application stored instead of ids and hashes.
pub(crate) fn push_op(
    out: &mut String,
    kind: &str,
    key: &str,
    value: Option<u64>,
    app: Option<&str>,
) {
    use std::fmt::Write as _;
    out.push_str("[\"");
    out.push_str(kind);
    out.push_str("\",");
    out.push_str(&serde_json::to_string(key).expect("a string serializes"));
    match value {
        Some(v) => {
            let _ = write!(out, ",{v}");
        }
        None => out.push_str(",null"),
    }
    if let (Some(a), Some(_)) = (app, value) {
        let a = match a.char_indices().nth(LOGGED_APP_CHARS) {
            Some((i, _)) => &a[..i],
            None => a,
        };
        out.push(',');
        out.push_str(&serde_json::to_string(a).expect("a string serializes"));
    }
    out.push(']');
}

/// Splits a stored value into (write id, application value); values the collector did not write
/// (the initial state) have no write id.
pub(crate) fn decode(stored: &str) -> (Option<u64>, &str) {
    if let Some(rest) = stored.strip_prefix('k') {
        if let Some(bar) = rest.find('|') {
            if let Ok(id) = rest[..bar].parse::<u64>() {
                return (Some(id), &rest[bar + 1..]);
            }
        }
    }
    (None, stored)
}

/// The stored form of `value` written with write id `id` (see [`decode`]).
pub(crate) fn encode(id: u64, value: &str) -> String {
    format!("k{id}|{value}")
}

/// One session's history log, written as the session goes, and where its records are also
/// published (`--publish`): the pending record just before COMMIT goes out, the final one
/// with the outcome (see `krait_transport`).
pub(crate) struct Log {
    file: File,
    fsync: bool,
    line: String,
    /// Records held back ([`Log::hold`]) until the next one that must reach the file at once.
    held: String,
    publish: Option<Published>,
    /// Times what was held was written out: a mark ([`Log::mark`]) from before the last one
    /// can no longer be gone back to.
    flushes: u64,
}

struct Published {
    sink: Box<dyn Sink>,
    /// The open transaction's record so far.
    text: String,
    /// The session's transactions begun so far.
    n: u64,
}

fn published(e: TransportError) -> StoreError {
    StoreError::Fatal(format!("publishing the history: {e}"))
}

impl Log {
    pub(crate) fn create(path: &std::path::Path, fsync: bool) -> std::io::Result<Log> {
        Ok(Log {
            file: File::create(path)?,
            fsync,
            line: String::with_capacity(256),
            held: String::with_capacity(256),
            publish: None,
            flushes: 0,
        })
    }
    /// Publishes each transaction's records to `sink` too.
    pub(crate) fn publish_to(&mut self, sink: Box<dyn Sink>) {
        self.publish = Some(Published {
            sink,
            text: String::with_capacity(256),
            n: 0,
        });
    }
    /// Appends `s` to the log without writing it yet: for what nothing the database does can
    /// depend on before the next [`Log::emit`] (a transaction's start, a read's answer), which
    /// then writes it with its own record in one system call. A crash in between loses only a
    /// transaction that had not announced its COMMIT, which is taken as aborted anyway.
    pub(crate) fn hold(&mut self, s: &str) {
        self.held.push_str(s);
        if let Some(p) = self.publish.as_mut() {
            if p.text.is_empty() {
                p.n += 1;
            }
            p.text.push_str(s);
        }
    }
    /// Bytes held back so far.
    pub(crate) fn held(&self) -> usize {
        self.held.len()
    }
    /// Writes what is held to the log file now (publishing is unchanged: it follows records,
    /// not system calls).
    pub(crate) fn write_held(&mut self) -> Result<(), StoreError> {
        let written = self.file.write_all(self.held.as_bytes());
        self.held.clear();
        self.flushes += 1;
        written.map_err(|e| StoreError::Fatal(format!("writing the history log: {e}")))
    }
    /// Where the next record begins: (bytes held, bytes of the record published).
    pub(crate) fn at(&self) -> (usize, usize) {
        let text = self.publish.as_ref().map_or(0, |p| p.text.len());
        (self.held.len(), text)
    }
    /// Times what was held was written out so far.
    pub(crate) fn flushes(&self) -> u64 {
        self.flushes
    }
    /// Forgets the held bytes from `at.0` (and of the published record from `at.1`) up to
    /// `end` (the next operation's place, or the end): an operation that did not happen.
    /// Returns how many bytes each lost.
    pub(crate) fn cut(
        &mut self,
        at: (usize, usize),
        end: Option<(usize, usize)>,
    ) -> (usize, usize) {
        let h = end.map_or(self.held.len(), |e| e.0);
        self.held.replace_range(at.0..h, "");
        let t = match self.publish.as_mut() {
            Some(p) => {
                let t = end.map_or(p.text.len(), |e| e.1);
                p.text.replace_range(at.1..t, "");
                t - at.1
            }
            None => 0,
        };
        (h - at.0, t)
    }
    /// Whether the held bytes at `at` begin with a comma (an operation after the first).
    pub(crate) fn comma_at(&self, at: (usize, usize)) -> bool {
        self.held[at.0..].starts_with(',')
    }
    /// Drops the comma at `at` (the record's first operation gave its place to the next);
    /// returns how many bytes each lost.
    pub(crate) fn uncomma(&mut self, at: (usize, usize)) -> (usize, usize) {
        let mut out = (0, 0);
        if self.held[at.0..].starts_with(',') {
            self.held.remove(at.0);
            out.0 = 1;
        }
        if let Some(p) = self.publish.as_mut() {
            if p.text[at.1..].starts_with(',') {
                p.text.remove(at.1);
                out.1 = 1;
            }
        }
        out
    }
    /// Appends `s` and everything held to the log file now.
    pub(crate) fn emit(&mut self, s: &str) -> Result<(), StoreError> {
        self.hold(s);
        self.write_held()?;
        if let Some(p) = self.publish.as_mut() {
            // A record ends with its line: the outcome is known.
            if s.ends_with('\n') {
                let r = p.sink.publish(p.n, Kind::Final, p.text.trim_end());
                p.text.clear();
                r.map_err(published)?;
            }
        }
        Ok(())
    }
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        if self.fsync {
            self.file
                .sync_data()
                .map_err(|e| StoreError::Fatal(format!("syncing the history log: {e}")))?;
        }
        Ok(())
    }
    /// The session ends normally: its stream hears so (a session that stops without this is
    /// taken as a lost host only after a timeout).
    fn end_published(&mut self) {
        if let Some(p) = self.publish.as_mut() {
            let _ = p.sink.publish(p.n + 1, Kind::End, "{}");
        }
    }
    /// The operations are complete and COMMIT is about to go out: closes the ops, makes them
    /// durable (with fsync) and publishes the pending record, acknowledged before COMMIT is
    /// sent, so a collector that dies now leaves a transaction of unknown outcome, not none.
    pub(crate) fn commit_point(&mut self) -> Result<(), StoreError> {
        self.emit("]")?;
        self.sync()?;
        if let Some(p) = self.publish.as_mut() {
            let pending = format!("{},\"status\":\"unknown\"}}", p.text);
            p.sink
                .publish(p.n, Kind::Pending, &pending)
                .map_err(published)?;
        }
        Ok(())
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.end_published();
    }
}

/// One client: its connection, its log, and the ids that make its writes unique.
pub(crate) struct Session<'a> {
    pub(crate) name: String,
    store: Box<dyn Store>,
    log: Option<Log>,
    txn_base: u64,
    txn_counter: u64,
    wid_counter: u64,
    fence_every: Option<usize>,
    since_fence: usize,
    reconnect: Box<dyn Fn() -> Result<Box<dyn Store>, StoreError> + Send + 'a>,
    /// Bytes of history written.
    pub(crate) log_bytes: u64,
    /// Connections re-established after one was lost.
    pub(crate) reconnects: u64,
}

/// How long a session keeps trying to reconnect (a database restart takes seconds).
const RECONNECT_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// A connection, retried with exponential backoff while the database is unreachable
/// (restarting, out of connections); a fatal error (bad credentials, no such database) or
/// `RECONNECT_FOR` without success ends the run.
pub(crate) fn connect_with_backoff(
    connect: &dyn Fn() -> Result<Box<dyn Store>, StoreError>,
) -> Result<Box<dyn Store>, StoreError> {
    let t0 = Instant::now();
    let mut wait = std::time::Duration::from_millis(20);
    loop {
        match connect() {
            Err(StoreError::Lost(_)) if t0.elapsed() < RECONNECT_FOR => {
                std::thread::sleep(wait);
                wait = (wait * 2).min(std::time::Duration::from_secs(1));
            }
            Err(StoreError::Lost(e)) => {
                return Err(StoreError::Fatal(format!(
                    "could not connect for {} s: {e}",
                    RECONNECT_FOR.as_secs()
                )))
            }
            other => return other,
        }
    }
}

struct RecTx<'a> {
    store: &'a mut dyn Store,
    log: Option<&'a mut Log>,
    log_bytes: &'a mut u64,
    first_op: bool,
    wid_base: u64,
    wid_counter: &'a mut u64,
    failure: Option<StoreError>,
}

impl RecTx<'_> {
    fn log_op(
        &mut self,
        kind: &str,
        key: &str,
        value: Option<u64>,
        app: Option<&str>,
    ) -> Result<(), TxError> {
        let Some(log) = self.log.as_deref_mut() else {
            return Ok(());
        };
        log.line.clear();
        if !self.first_op {
            log.line.push(',');
        }
        self.first_op = false;
        push_op(&mut log.line, kind, key, value, app);
        let line = std::mem::take(&mut log.line);
        *self.log_bytes += line.len() as u64;
        let r = log.emit(&line);
        log.line = line;
        r.map_err(|e| self.fail(e))
    }
    fn fail(&mut self, e: StoreError) -> TxError {
        let t = TxError(e.to_string());
        self.failure = Some(e);
        t
    }
}

impl Tx for RecTx<'_> {
    fn read(&mut self, key: &str) -> Result<Option<String>, TxError> {
        let raw = self.store.read(key).map_err(|e| self.fail(e))?;
        let (id, value) = match &raw {
            Some(s) => {
                let (id, v) = decode(s);
                (id, Some(v.to_string()))
            }
            None => (None, None),
        };
        self.log_op("r", key, id, value.as_deref())?;
        Ok(value)
    }
    fn write(&mut self, key: &str, value: &str) -> Result<(), TxError> {
        *self.wid_counter += 1;
        let id = self.wid_base | *self.wid_counter;
        // Logged before the request goes out: a crash after sending loses nothing.
        self.log_op("w", key, Some(id), Some(value))?;
        self.store
            .write(key, &encode(id, value))
            .map_err(|e| self.fail(e))
    }
}

impl<'a> Session<'a> {
    /// A new connection after one was lost (see [`connect_with_backoff`]).
    fn reconnect_with_backoff(&mut self) -> Result<Box<dyn Store>, StoreError> {
        let s = connect_with_backoff(&*self.reconnect)?;
        self.reconnects += 1;
        Ok(s)
    }

    /// `index` makes transaction ids and write ids unique across the sessions of a run.
    pub(crate) fn new(
        index: usize,
        store: Box<dyn Store>,
        log: Option<Log>,
        fence_every: Option<usize>,
        reconnect: Box<dyn Fn() -> Result<Box<dyn Store>, StoreError> + Send + 'a>,
    ) -> Session<'a> {
        Session {
            name: format!("c{index}"),
            store,
            log,
            txn_base: (index as u64 + 1) << 40,
            txn_counter: 0,
            wid_counter: 0,
            fence_every,
            since_fence: 0,
            reconnect,
            log_bytes: 0,
            reconnects: 0,
        }
    }

    /// Runs one transaction of the workload (preceded by a fence when one is due). Returns the
    /// outcome of the workload's transaction and its latency; a fatal store error stops the run.
    pub(crate) fn run(
        &mut self,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<(), TxError>,
    ) -> Result<(TxnOutcome, std::time::Duration), StoreError> {
        if let Some(n) = self.fence_every {
            if self.since_fence + 1 >= n {
                self.fence()?;
            } else {
                self.since_fence += 1;
            }
        }
        self.one(body)
    }

    /// A fence transaction, retried until it commits: epochs need them.
    fn fence(&mut self) -> Result<(), StoreError> {
        self.since_fence = 0;
        for _ in 0..100 {
            let (o, _) = self.one(&mut |tx: &mut dyn Tx| {
                let v: u64 = tx
                    .read(NATIVE_FENCE_KEY)?
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                tx.write(NATIVE_FENCE_KEY, &(v + 1).to_string())
            })?;
            if o == TxnOutcome::Committed {
                break;
            }
        }
        Ok(())
    }

    /// The session's work is done: a last fence (when fencing) bounds the transactions since
    /// the previous one, so an online verifier can collect them once the session has ended.
    pub(crate) fn close(&mut self) -> Result<(), StoreError> {
        if self.fence_every.is_some() && self.since_fence > 0 {
            self.fence()?;
        }
        Ok(())
    }

    fn one(
        &mut self,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<(), TxError>,
    ) -> Result<(TxnOutcome, std::time::Duration), StoreError> {
        self.txn_counter += 1;
        let txn = self.txn_base | self.txn_counter;
        let t0 = Instant::now();
        let start = now_ns();
        if let Some(log) = self.log.as_mut() {
            let head = format!(
                "{{\"session\":\"{}\",\"txn\":{txn},\"start\":{start},\"ops\":[",
                self.name
            );
            self.log_bytes += head.len() as u64;
            log.emit(&head)?;
        }
        let outcome = match self.store.begin() {
            Err(StoreError::Fatal(e)) => return Err(StoreError::Fatal(e)),
            Err(e) => Err(e),
            Ok(()) => {
                let mut tx = RecTx {
                    store: self.store.as_mut(),
                    log: self.log.as_mut(),
                    log_bytes: &mut self.log_bytes,
                    first_op: true,
                    wid_base: self.txn_base,
                    wid_counter: &mut self.wid_counter,
                    failure: None,
                };
                let r = body(&mut tx);
                let failure = tx.failure.take();
                match (r, failure) {
                    (Ok(()), _) => Ok(()),
                    (Err(_), Some(e)) => Err(e),
                    (Err(e), None) => Err(StoreError::Abort(format!("the workload gave up: {e}"))),
                }
            }
        };
        let (status, end) = match outcome {
            Err(StoreError::Fatal(e)) => return Err(StoreError::Fatal(e)),
            Err(e) => {
                // COMMIT was never sent, so the database cannot have committed it.
                self.store.rollback();
                if matches!(e, StoreError::Lost(_)) {
                    self.store = self.reconnect_with_backoff()?;
                }
                (
                    TxnOutcome::Aborted(e.to_string()),
                    "],\"status\":\"aborted\"}\n".to_string(),
                )
            }
            Ok(()) => {
                if let Some(log) = self.log.as_mut() {
                    // With --fsync the transaction's ops are on disk (and with --publish in
                    // the stream) before COMMIT is sent: a crash after the commit cannot lose
                    // a committed transaction's record.
                    log.commit_point()?;
                    self.log_bytes += 1;
                }
                match self.store.commit() {
                    Ok(()) => (
                        TxnOutcome::Committed,
                        format!(",\"status\":\"committed\",\"commit\":{}}}\n", now_ns()),
                    ),
                    Err(StoreError::Abort(e)) => {
                        self.store.rollback();
                        (
                            TxnOutcome::Aborted(e),
                            ",\"status\":\"aborted\"}\n".to_string(),
                        )
                    }
                    Err(StoreError::Lost(e)) => {
                        self.store = self.reconnect_with_backoff()?;
                        (
                            TxnOutcome::Unknown(e),
                            ",\"status\":\"unknown\"}\n".to_string(),
                        )
                    }
                    Err(f) => return Err(f),
                }
            }
        };
        if let Some(log) = self.log.as_mut() {
            self.log_bytes += end.len() as u64;
            log.emit(&end)?;
            log.sync()?;
        }
        Ok((status, t0.elapsed()))
    }
}
