//! The recorder API: record your own application's transactions as a krait history, with the
//! same guarantees as krait's built-in workloads. One [`Recorder`] per history directory; one
//! [`RecSession`] per thread or connection (a session runs one transaction at a time); per
//! transaction a [`RecTxn`] that logs each read and write, then the outcome.
//!
//! Crash safety is the collector's: a transaction's line is started when it begins, a write is
//! logged *before* the application sends it, `]` is written (and with [`Recorder::fsync`]
//! synced) just before COMMIT goes out, and the outcome after. A line cut short by a crash is
//! read back as aborted (COMMIT never sent) or unknown (COMMIT sent, answer lost), so the
//! history never claims more than the database may have done.
//!
//! Values: a history needs each write's value to name it. [`RecTxn::tag`] makes a unique id
//! for a write and returns the string to store (`k<id>|<value>`), which
//! [`RecTxn::read_tagged`] strips again while logging the id; an application that cannot
//! change what it stores logs the values themselves ([`RecTxn::write_value`],
//! [`RecTxn::read_value`]), and the checker then matches each read to every write of that
//! value (repeated values are checked exactly, at more cost).

use crate::session::{decode, encode, now_ns, push_op, Log};
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A history being recorded into a directory: one JSON Lines log per session.
pub struct Recorder {
    dir: PathBuf,
    fsync: bool,
    sessions: Mutex<HashSet<String>>,
    next: AtomicU64,
    publish: Option<std::sync::Arc<krait_transport::nats::Connection>>,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl Recorder {
    /// Records into `dir`, created if missing. A directory that already holds session logs
    /// (`*.jsonl`) is refused: a history is one run.
    pub fn create(dir: impl AsRef<Path>) -> io::Result<Recorder> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)?;
        for e in std::fs::read_dir(&dir)? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} already holds session logs ({}); record into a new directory",
                        dir.display(),
                        p.display()
                    ),
                ));
            }
        }
        Ok(Recorder {
            dir,
            fsync: false,
            sessions: Mutex::new(HashSet::new()),
            next: AtomicU64::new(0),
            publish: None,
        })
    }

    /// Sync each transaction's operations to disk before its COMMIT is sent, and its outcome
    /// after (survives a machine crash, not only a process crash; slower).
    pub fn fsync(mut self, on: bool) -> Recorder {
        self.fsync = on;
        self
    }

    /// Also publish every session's records to a NATS JetStream stream (see
    /// `krait_transport`): the pending record is acknowledged before [`RecTxn::committing`]
    /// returns, the final one before the outcome call returns. `krait watch nats://…` on
    /// another host checks them as they arrive.
    pub fn publish(mut self, conn: std::sync::Arc<krait_transport::nats::Connection>) -> Recorder {
        self.publish = Some(conn);
        self
    }

    /// The directory the history is written to (`krait check DIR` checks it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new session, logged to `DIR/NAME.jsonl`: one thread or connection, running one
    /// transaction at a time, in order. Names are letters, digits, `-`, `_` and `.`, unique
    /// within the recorder.
    pub fn session(&self, name: &str) -> io::Result<RecSession> {
        let ok = !name.is_empty()
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            return Err(invalid(format!(
                "session name {name:?}: use letters, digits, '-', '_' and '.'"
            )));
        }
        if !self.sessions.lock().unwrap().insert(name.to_string()) {
            return Err(invalid(format!("session {name:?} exists already")));
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        let mut log = Log::create(&self.dir.join(format!("{name}.jsonl")), self.fsync)?;
        if let Some(c) = &self.publish {
            log.publish_to(Box::new(c.sink(name)));
        }
        Ok(RecSession {
            name: name.to_string(),
            log,
            // Transaction and write ids unique across the recorder's sessions, as the
            // collector's are: the session in the high bits, a counter below.
            base: (index + 1) << 40,
            txns: 0,
            writes: 0,
            open: None,
            ops: 0,
            next_op: 0,
            held_ops: Vec::new(),
            held_flushes: 0,
            gone: Vec::new(),
            defer: false,
        })
    }
}

/// One session's log. Its transactions are recorded in the order they ran.
pub struct RecSession {
    name: String,
    log: Log,
    base: u64,
    txns: u64,
    writes: u64,
    /// The transaction being recorded: (an operation logged yet, COMMIT announced).
    open: Option<(bool, bool)>,
    /// Its writes wait for COMMIT's announcement ([`RecTxn::defer_writes`]).
    defer: bool,
    /// Operations of the open transaction in its record (logged, not taken back).
    ops: u32,
    /// Operations of the open transaction numbered so far: an [`OpMark`] is one of them.
    next_op: OpMark,
    /// The open transaction's operations still held, so still removable: (number, where it
    /// starts in the held bytes and in the published record), in order. Valid while the log
    /// has written nothing out since `held_flushes`.
    held_ops: Vec<(OpMark, (usize, usize))>,
    held_flushes: u64,
    /// Operations taken back ([`RecSession::retract`]).
    gone: Vec<OpMark>,
}

/// An operation's number in its transaction ([`RecSession::mark`]): the operations between
/// two marks are the ones a statement logged, to take back if it did not happen.
pub(crate) type OpMark = u32;

impl RecSession {
    /// The session's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Records the start of a transaction: call it before the application sends BEGIN (or
    /// its first statement). End it with [`RecTxn::committed`], [`RecTxn::aborted`] or
    /// [`RecTxn::unknown`]; dropped without one, it is recorded as aborted if COMMIT was not
    /// announced ([`RecTxn::committing`]) and as unknown if it was.
    pub fn begin(&mut self) -> io::Result<RecTxn<'_>> {
        self.open_txn()?;
        Ok(RecTxn { s: self })
    }

    /// Whether a transaction is being recorded.
    pub(crate) fn in_txn(&self) -> bool {
        self.open.is_some()
    }

    /// The id the transaction being recorded has in the log (None outside one).
    pub(crate) fn txn_id(&self) -> Option<u64> {
        self.open.map(|_| self.base | self.txns)
    }

    /// Starts a transaction's line (one owner at a time: [`RecTxn`], or the proxy, which
    /// follows a connection's transactions without holding a borrow).
    pub(crate) fn open_txn(&mut self) -> io::Result<()> {
        if self.open.is_some() {
            // The previous one never got its outcome: the most it may have done.
            self.drop_txn();
        }
        self.txns += 1;
        let txn = self.base | self.txns;
        let head = format!(
            "{{\"session\":{},\"txn\":{txn},\"start\":{},\"ops\":[",
            serde_json::to_string(&self.name).expect("a string serializes"),
            now_ns()
        );
        self.log.hold(&head);
        self.open = Some((false, false));
        self.defer = false;
        self.ops = 0;
        self.next_op = 0;
        self.held_ops.clear();
        self.gone.clear();
        Ok(())
    }

    /// The number the open transaction's next operation will have.
    pub(crate) fn mark(&self) -> OpMark {
        self.next_op
    }

    /// Forgets which operations are held once the log wrote them out.
    fn sync_held(&mut self) {
        if self.log.flushes() != self.held_flushes {
            self.held_ops.clear();
            self.held_flushes = self.log.flushes();
        }
    }

    /// Takes back the open transaction's operations numbered `from..to`: they did not happen
    /// (an UPDATE or DELETE that matched no row, statements rolled back to a savepoint),
    /// whatever was logged after them. Only what is still held can be; returns how many of
    /// them are still in the record because they reached the file (or COMMIT was announced).
    pub(crate) fn retract(&mut self, from: OpMark, to: OpMark) -> u32 {
        let Some((_, committing)) = self.open else {
            return 0;
        };
        self.sync_held();
        let removable = !committing;
        let mut stuck = 0;
        let mut i = self.held_ops.len();
        for id in (from..to).rev() {
            if self.gone.contains(&id) {
                continue;
            }
            while i > 0 && self.held_ops[i - 1].0 > id {
                i -= 1;
            }
            let held = i > 0 && self.held_ops[i - 1].0 == id;
            if !(held && removable) {
                stuck += 1;
                continue;
            }
            let at = self.held_ops[i - 1].1;
            let end = self.held_ops.get(i).map(|e| e.1);
            // The record's first operation has no comma before it; the next one then loses
            // its own.
            let first = !self.log.comma_at(at);
            let (mut dh, mut dt) = self.log.cut(at, end);
            if first && end.is_some() {
                let (h, t) = self.log.uncomma(at);
                (dh, dt) = (dh + h, dt + t);
            }
            self.held_ops.remove(i - 1);
            i -= 1;
            for e in &mut self.held_ops[i..] {
                e.1 = (e.1 .0 - dh, e.1 .1 - dt);
            }
            self.gone.push(id);
            self.ops -= 1;
        }
        // A comma goes before the next operation only if one is left in the record.
        if let Some((a, _)) = self.open.as_mut() {
            *a = self.ops > 0;
        }
        stuck
    }

    /// Operations the open transaction logged so far.
    pub(crate) fn txn_ops(&self) -> u32 {
        self.ops
    }

    /// Logs one operation; `app` is the application's own value, kept for certificates.
    pub(crate) fn op(
        &mut self,
        kind: &str,
        key: &str,
        value: Option<u64>,
        app: Option<&str>,
    ) -> io::Result<()> {
        let Some((any, committing)) = self.open.as_mut() else {
            return Err(invalid(format!("{kind}({key}) outside a transaction")));
        };
        if *committing {
            return Err(invalid(format!(
                "{kind}({key}) after committing(): a transaction's operations end before COMMIT is sent"
            )));
        }
        let mut line = String::with_capacity(48);
        if *any {
            line.push(',');
        }
        *any = true;
        self.ops += 1;
        let id = self.next_op;
        self.next_op += 1;
        push_op(&mut line, kind, key, value, app);
        self.sync_held();
        if kind == "r" || self.defer {
            self.held_ops.push((id, self.log.at()));
            // A read is logged once its answer is in: nothing waits on it reaching the file
            // before the next write or COMMIT goes out, which carries it there. Deferred
            // writes likewise wait for COMMIT: the database undoes them if the client dies
            // first. What is held is written out in large pieces, never all at the end.
            self.log.hold(&line);
            if self.log.held() >= HELD_MAX {
                self.log.write_held().map_err(io::Error::other)?;
            }
            Ok(())
        } else {
            self.log.emit(&line).map_err(io::Error::other)
        }
    }

    /// From now until its end, the open transaction's writes are held with its reads until
    /// COMMIT is announced (see [`RecTxn::defer_writes`]).
    pub(crate) fn defer_writes(&mut self) {
        self.defer = true;
    }

    /// A fresh write id, unique in the recorder.
    pub(crate) fn next_write_id(&mut self) -> u64 {
        self.writes += 1;
        self.base | self.writes
    }

    pub(crate) fn committing(&mut self) -> io::Result<()> {
        match self.open.as_mut() {
            Some((_, c)) if !*c => {
                *c = true;
                self.log.commit_point().map_err(io::Error::other)
            }
            _ => Ok(()),
        }
    }

    /// Ends the transaction: `committed`, `aborted` or `unknown`.
    pub(crate) fn end(&mut self, status: &str) -> io::Result<()> {
        let Some((_, committing)) = self.open.take() else {
            return Ok(());
        };
        let close = if committing { "" } else { "]" };
        let commit = if status == "committed" {
            format!(",\"commit\":{}", now_ns())
        } else {
            String::new()
        };
        self.log
            .emit(&format!("{close},\"status\":\"{status}\"{commit}}}\n"))
            .map_err(io::Error::other)?;
        self.log.sync().map_err(io::Error::other)
    }

    /// No outcome was given (a panic, an early return, a lost client): the most the database
    /// may have done — aborted before COMMIT was announced, unknown after.
    pub(crate) fn drop_txn(&mut self) {
        if let Some((_, committing)) = self.open {
            let _ = if committing {
                self.end("unknown")
            } else {
                self.end("aborted")
            };
        }
    }
}

impl Drop for RecSession {
    fn drop(&mut self) {
        self.drop_txn();
    }
}

/// One transaction being recorded.
pub struct RecTxn<'a> {
    s: &'a mut RecSession,
}

impl RecTxn<'_> {
    /// A read of `key` returned the version written with `value` (`None`: the key's initial
    /// state, or no row). Log it once the value has arrived.
    pub fn read(&mut self, key: &str, value: Option<u64>) -> io::Result<()> {
        self.s.op("r", key, value, None)
    }

    /// A write of `value` to `key`. Log it *before* the application sends it.
    pub fn write(&mut self, key: &str, value: u64) -> io::Result<()> {
        self.s.op("w", key, Some(value), None)
    }

    /// A write of the application's `value` to `key`, tagged with a fresh unique id: logs the
    /// write and returns what to store instead of `value` (`k<id>|<value>`). Reads of it are
    /// logged with [`RecTxn::read_tagged`], which gives `value` back.
    pub fn tag(&mut self, key: &str, value: &str) -> io::Result<String> {
        let id = self.s.next_write_id();
        self.s.op("w", key, Some(id), Some(value))?;
        Ok(encode(id, value))
    }

    /// A read of `key` that returned `stored` (what the database holds, tagged by
    /// [`RecTxn::tag`]; `None` for no row): logs the write it names and returns the
    /// application's value. A value without a tag was not written by a recorded transaction
    /// and is logged as the key's initial state.
    pub fn read_tagged<'v>(
        &mut self,
        key: &str,
        stored: Option<&'v str>,
    ) -> io::Result<Option<&'v str>> {
        match stored {
            None => {
                self.read(key, None)?;
                Ok(None)
            }
            Some(s) => {
                let (id, value) = decode(s);
                self.s.op("r", key, id, Some(value))?;
                Ok(Some(value))
            }
        }
    }

    /// A write of the application's own `value` to `key`, untagged: logged as a hash of the
    /// value, so two writes of one value are one value to the checker (it then considers every
    /// writer a read of it may have read).
    pub fn write_value(&mut self, key: &str, value: &str) -> io::Result<()> {
        self.s.op("w", key, Some(value_id(value)), Some(value))
    }

    /// A read of `key` that returned the application's own `value` (untagged; `None`: no row).
    /// A value no recorded transaction wrote (data loaded before recording) is a read of
    /// nobody's write: load initial data through a recorded session, or tag values.
    pub fn read_value(&mut self, key: &str, value: Option<&str>) -> io::Result<()> {
        self.s.op("r", key, value.map(value_id), value)
    }

    /// The application runs this transaction inside `BEGIN … COMMIT` (or the database's own
    /// transaction object): a client that dies before COMMIT is sent has its writes undone
    /// by the database, so they need not reach the log before they are sent. From this call
    /// on, writes are held with the reads and written with [`RecTxn::committing`] (which
    /// must then be called before COMMIT is sent), one system call for the transaction
    /// instead of one per write. Never for a write sent in autocommit mode: it commits with
    /// its statement, and a crash right after it would lose a committed write.
    pub fn defer_writes(&mut self) {
        self.s.defer_writes();
    }

    /// The operations are complete and COMMIT is about to be sent: from here a lost answer
    /// means the outcome is unknown. Synced to disk first with [`Recorder::fsync`].
    pub fn committing(&mut self) -> io::Result<()> {
        self.s.committing()
    }

    /// The database answered COMMIT with success.
    pub fn committed(self) -> io::Result<()> {
        self.s.end("committed")
    }

    /// The transaction rolled back: the application gave up, a statement failed, or COMMIT
    /// was refused (a serialization failure).
    pub fn aborted(self) -> io::Result<()> {
        self.s.end("aborted")
    }

    /// COMMIT was sent and no answer came (the connection broke): the database may or may not
    /// have committed it. Retry it, if at all, as a new transaction.
    pub fn unknown(self) -> io::Result<()> {
        self.s.end("unknown")
    }
}

impl Drop for RecTxn<'_> {
    fn drop(&mut self) {
        self.s.drop_txn();
    }
}

/// Held records beyond this many bytes are written out at once, so a long transaction holds
/// a bounded buffer.
const HELD_MAX: usize = 64 << 10;

/// An untagged value as a history value: a hash, equal for equal values.
fn value_id(value: &str) -> u64 {
    krait_history::hash_value(value)
}
