//! Reading logs that are still being written: each poll reads what was appended since the last
//! one and returns the transactions completed in it, in each file's order.
//!
//! Input: a native JSON Lines file or directory of `*.jsonl`, or a Cobra log directory. Output
//! per poll: [`TxnRecord`]s (keys interned by the caller, sessions numbered by the follower), plus the writes of records still being
//! written (a reader may already have seen them), and input errors with file and line/offset.
//!
//! A module of its own, above `formats` rather than inside it: following is a way of reading
//! (file identities, offsets, unfinished records, polls) that applies to two formats, and it
//! decodes with their readers' own functions (`cobra::Decoder`, `jsonl::parse_stream_line`)
//! so that a log reads the same whether it is loaded whole or followed.

use crate::error::{InputError, Location};
use crate::formats::cobra::{self, Decoder, Record};
use crate::formats::{jsonl, regular};
use crate::fxhash::FxHashMap;
use crate::model::{KeyId, Keys, OpKind, TxnRecord, TxnStatus, DELETE_WRITE_ID};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What a poll found.
#[derive(Default, Debug)]
pub struct Polled {
    /// The transactions completed since the last poll, in each file's order.
    pub txns: Vec<TxnRecord>,
    /// (key, value) of writes in records not finished yet.
    pub provisional: Vec<(KeyId, u64)>,
    /// Names of the sessions first seen in this poll, in the order of their numbers: the
    /// follower numbers sessions from 0 as it first sees them (Cobra: one per file, when the
    /// file is found; JSON Lines: a line's `session`), and every record carries its number.
    pub new_sessions: Vec<String>,
    /// Whether any file grew (or appeared) since the last poll, even by a part of a record.
    pub grew: bool,
}

struct Tail {
    path: PathBuf,
    offset: u64,
    /// Bytes read but not yet consumed (an unfinished record).
    buf: Vec<u8>,
    /// Lines (JSONL) consumed so far, for error messages.
    line: u64,
    /// Cobra: timestamped variant, once known.
    ts: Option<bool>,
    /// Transactions this file has given so far.
    txns: u64,
    /// Cobra: the file's session number.
    session: u32,
    /// The file's identity (device, inode) when first read: a log replaced under the same
    /// name is another history, not more of this one.
    id: Option<(u64, u64)>,
}

#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

impl Tail {
    fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            buf: Vec::new(),
            line: 0,
            ts: None,
            txns: 0,
            session: 0,
            id: None,
        }
    }
    fn read_more(&mut self) -> Result<bool, InputError> {
        let mut f = std::fs::File::open(&self.path).map_err(|e| InputError::io(&self.path, e))?;
        let meta = f.metadata().map_err(|e| InputError::io(&self.path, e))?;
        regular(&self.path, &meta)?;
        let id = file_id(&meta);
        match self.id {
            None => self.id = id,
            Some(old) if id.is_some_and(|x| x != old) => {
                return Err(InputError::new(
                    &self.path,
                    Location::Offset(self.offset),
                    "the file was replaced while being followed (another file now has its name)",
                ))
            }
            _ => {}
        }
        let len = meta.len();
        if len < self.offset {
            return Err(InputError::new(
                &self.path,
                Location::Offset(len),
                "the file shrank while being followed (truncated or replaced)",
            ));
        }
        if len == self.offset {
            return Ok(false);
        }
        f.seek(SeekFrom::Start(self.offset))
            .map_err(|e| InputError::io(&self.path, e))?;
        let mut chunk = Vec::with_capacity((len - self.offset) as usize);
        f.take(len - self.offset)
            .read_to_end(&mut chunk)
            .map_err(|e| InputError::io(&self.path, e))?;
        self.offset += chunk.len() as u64;
        self.buf.extend_from_slice(&chunk);
        Ok(true)
    }
}

/// The formats that can be followed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StreamFormat {
    /// A native JSON Lines file or a directory of `*.jsonl`.
    Jsonl,
    /// A Cobra log directory.
    Cobra,
}

/// Follows a path: a JSONL file, a directory of `*.jsonl` files, or a Cobra log directory
/// (new files in a directory are picked up as they appear).
pub struct Follower {
    root: PathBuf,
    /// The format followed (given, or detected from the path).
    pub format: StreamFormat,
    tails: Vec<Tail>,
    is_dir: bool,
    /// Cobra key hashes → ids.
    cobra_keys: FxHashMap<u64, KeyId>,
    /// The logs ended: decide what is still undecided (the Cobra variant of a short file).
    ending: bool,
    /// Session names → numbers, in the order first seen.
    sessions: FxHashMap<String, u32>,
}

/// The number of session `name`, a new one (announced in `new`) on first sight.
fn session_number(sessions: &mut FxHashMap<String, u32>, new: &mut Vec<String>, name: &str) -> u32 {
    if let Some(&s) = sessions.get(name) {
        return s;
    }
    let s = sessions.len() as u32;
    sessions.insert(name.to_string(), s);
    new.push(name.to_string());
    s
}

impl Follower {
    /// Follows `root`, in the format given or the one its path suggests.
    pub fn new(root: &Path, format: Option<StreamFormat>) -> Result<Follower, InputError> {
        let is_dir = root.is_dir();
        let format = match format {
            Some(f) => f,
            None if is_dir && cobra::is_cobra_dir(root) => StreamFormat::Cobra,
            None => StreamFormat::Jsonl,
        };
        if !is_dir && !root.exists() {
            return Err(InputError::new(root, Location::Nowhere, "no such file"));
        }
        Ok(Follower {
            root: root.to_path_buf(),
            format,
            tails: Vec::new(),
            is_dir,
            cobra_keys: Default::default(),
            ending: false,
            sessions: Default::default(),
        })
    }

    fn discover(&mut self, out: &mut Polled) -> Result<(), InputError> {
        let files: Vec<PathBuf> = if !self.is_dir {
            vec![self.root.clone()]
        } else if self.format == StreamFormat::Cobra {
            cobra::session_files(&self.root)?
                .into_iter()
                .map(|(_, p)| p)
                .collect()
        } else {
            jsonl::dir_files(&self.root)?
        };
        for f in files {
            if !self.tails.iter().any(|t| t.path == f) {
                let mut tail = Tail::new(f);
                if self.format == StreamFormat::Cobra {
                    let name = cobra::session_name(&tail.path);
                    tail.session = session_number(&mut self.sessions, &mut out.new_sessions, &name);
                }
                self.tails.push(tail);
                out.grew = true;
            }
        }
        Ok(())
    }

    /// Reads what was appended to every file since the last poll.
    pub fn poll(&mut self, keys: &mut dyn Keys) -> Result<Polled, InputError> {
        let mut out = Polled::default();
        self.discover(&mut out)?;
        for i in 0..self.tails.len() {
            out.grew |= self.tails[i].read_more()?;
            let before = out.txns.len();
            match self.format {
                StreamFormat::Jsonl => {
                    jsonl_take(&mut self.tails[i], keys, &mut self.sessions, &mut out)?
                }
                StreamFormat::Cobra => {
                    let t = &mut self.tails[i];
                    cobra_take(t, &mut self.cobra_keys, keys, &mut out, self.ending)?
                }
            }
            self.tails[i].txns += (out.txns.len() - before) as u64;
        }
        Ok(out)
    }

    /// Files found that have not given a transaction yet: their sessions are not known yet.
    pub fn silent_files(&self) -> usize {
        self.tails.iter().filter(|t| t.txns == 0).count()
    }

    /// The logs ended for good: an unfinished last record is a client that stopped. Returns
    /// what can be recovered of it (JSONL: the outcome is unknown or aborted, as in a one-shot
    /// read; Cobra: only committed transactions are logged, so it is dropped) with warnings.
    pub fn finish(&mut self, keys: &mut dyn Keys) -> Result<(Polled, Vec<String>), InputError> {
        self.ending = true;
        let mut out = self.poll(keys)?;
        let mut warnings = Vec::new();
        for t in &mut self.tails {
            if t.buf.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            match self.format {
                StreamFormat::Jsonl => {
                    let text = String::from_utf8_lossy(&t.buf).trim().to_string();
                    let at = Location::Line(t.line + 1);
                    if t.path.file_name().is_some_and(|n| n == jsonl::INITIAL_STATE_FILE) {
                        return Err(jsonl::cut_initial_state(&t.path, at));
                    }
                    match jsonl::repair(&text) {
                        Some(jsonl::Repair::Drop) => warnings.push(format!(
                            "{}: {at}{}",
                            t.path.display(),
                            jsonl::CUT_HEAD
                        )),
                        Some(jsonl::Repair::Fixed(fixed, _)) => {
                            let mut number = |name: &str| {
                                session_number(&mut self.sessions, &mut out.new_sessions, name)
                            };
                            let rec =
                                jsonl::parse_stream_line(&fixed, &t.path, at, keys, &mut number)?;
                            // A record complete but for its newline is complete, as the batch
                            // reader takes it: nothing was cut, nothing to warn about.
                            if fixed != text {
                                warnings.push(format!(
                                    "{}: {at}the last line is cut short (the client stopped): read as a transaction with outcome {}",
                                    t.path.display(),
                                    rec.status.as_str()
                                ));
                            }
                            out.txns.push(rec);
                        }
                        None => {
                            return Err(InputError::new(
                                &t.path,
                                at,
                                "the last line is cut short and cannot be recovered",
                            ))
                        }
                    }
                }
                StreamFormat::Cobra => warnings.push(format!(
                    "{}: byte offset {}: the file ends inside a transaction (the client stopped): transaction dropped",
                    t.path.display(),
                    t.offset - t.buf.len() as u64
                )),
            }
            t.buf.clear();
        }
        out.provisional.clear();
        Ok((out, warnings))
    }
}

fn jsonl_take(
    t: &mut Tail,
    keys: &mut dyn Keys,
    sessions: &mut FxHashMap<String, u32>,
    out: &mut Polled,
) -> Result<(), InputError> {
    let mut consumed = 0;
    while let Some(nl) = t.buf[consumed..].iter().position(|&b| b == b'\n') {
        let line = &t.buf[consumed..consumed + nl];
        consumed += nl + 1;
        t.line += 1;
        let at = Location::Line(t.line);
        let text = std::str::from_utf8(line)
            .map_err(|_| InputError::new(&t.path, at, "not UTF-8"))?
            .trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let mut number = |name: &str| session_number(sessions, &mut out.new_sessions, name);
        let rec = jsonl::parse_stream_line(text, &t.path, at, keys, &mut number)?;
        out.txns.push(rec);
    }
    t.buf.drain(..consumed);
    // A line still being written: its writes may already be visible to readers.
    if !t.buf.is_empty() {
        let text = String::from_utf8_lossy(&t.buf);
        if let Some(jsonl::Repair::Fixed(fixed, _)) = jsonl::repair(text.trim()) {
            let at = Location::Line(t.line + 1);
            // Its session is not announced until the line is complete.
            let mut no_number = |_: &str| u32::MAX;
            if let Ok(rec) = jsonl::parse_stream_line(&fixed, &t.path, at, keys, &mut no_number) {
                out.provisional.extend(
                    rec.ops
                        .iter()
                        .filter(|o| o.0 == OpKind::Write)
                        .map(|o| (o.1, o.2)),
                );
            }
        }
    }
    Ok(())
}

fn cobra_take(
    t: &mut Tail,
    hashes: &mut FxHashMap<u64, KeyId>,
    keys: &mut dyn Keys,
    out: &mut Polled,
    ending: bool,
) -> Result<(), InputError> {
    if t.buf.is_empty() {
        return Ok(());
    }
    // Decide the variant once enough of the file is there to tell.
    let ts = match t.ts {
        Some(ts) => ts,
        None if t.buf.len() < 1024 && !ending => return Ok(()),
        None => {
            let ts = cobra::looks_timestamped(&t.buf);
            t.ts = Some(ts);
            ts
        }
    };
    let base = t.offset - t.buf.len() as u64;
    let mut key_of = |h: u64| -> KeyId {
        *hashes.entry(h).or_insert_with(|| {
            let (name, fence) = cobra::key_name(h);
            let k = keys.key(&name);
            if fence {
                keys.fence_key(k);
            }
            k
        })
    };
    let mut d = Decoder::new(&t.buf, &t.path, base, ts);
    let mut consumed = 0;
    let mut ops: Vec<(OpKind, KeyId, u64)> = Vec::new();
    let mut claims: Vec<(u64, u64)> = Vec::new();
    // A record cut short ends the loop like the end of the bytes: the rest comes with more.
    while let Some(rec) = d.next_record()? {
        match rec {
            Record::Start => {
                ops.clear();
                claims.clear();
            }
            Record::Op(op) => {
                ops.push((op.kind, key_of(op.key_hash), op.wid));
                claims.push((op.value_hash, op.writer));
            }
            Record::Commit {
                txn, start, commit, ..
            } => {
                out.txns.push(TxnRecord {
                    lists: Vec::new(),
                    app: Vec::new(),
                    session: t.session,
                    ext: txn,
                    status: TxnStatus::Committed,
                    start,
                    commit,
                    ops: std::mem::take(&mut ops),
                    claims: std::mem::take(&mut claims),
                });
                consumed = d.pos();
            }
        }
    }
    if d.open().is_some() {
        out.provisional.extend(
            ops.iter()
                .filter(|o| o.0 == OpKind::Write && o.2 != DELETE_WRITE_ID)
                .map(|o| (o.1, o.2)),
        );
    }
    t.buf.drain(..consumed);
    Ok(())
}
