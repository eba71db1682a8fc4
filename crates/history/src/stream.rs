//! Reading logs that are still being written: each poll reads what was appended since the last
//! one and returns the transactions completed in it, in each file's order.
//!
//! Input: a native JSON Lines file or directory of `*.jsonl`, or a Cobra log directory. Output
//! per poll: [`StreamTxn`]s (keys interned by the caller), plus the writes of records still being
//! written (a reader may already have seen them), and input errors with file and line/offset.

use crate::cobra::{self, DELETE_WRITE_ID, FENCE_KEY_HASH, INIT_WRITE_ID, NULL_WRITE_ID};
use crate::error::{InputError, Location};
use crate::model::{KeyId, OpKind, TxnStatus, NO_TIME};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One transaction read from a log.
#[derive(Clone, Debug)]
pub struct StreamTxn {
    pub session: String,
    pub ext: u64,
    pub status: TxnStatus,
    pub start: u64,
    pub commit: u64,
    pub ops: Vec<(OpKind, KeyId, u64)>,
    /// (op index, list) of list-append reads (native logs).
    pub lists: Vec<(u32, Vec<u64>)>,
    /// Cobra: (value hash, named writer) per op; empty for native logs.
    pub claims: Vec<(u64, u64)>,
}

/// What a poll found.
#[derive(Default, Debug)]
pub struct Polled {
    pub txns: Vec<StreamTxn>,
    /// (key, value) of writes in records not finished yet.
    pub provisional: Vec<(KeyId, u64)>,
    /// Session names in the order their files were found (Cobra: one per file).
    pub new_sessions: Vec<String>,
    /// Whether any file grew (or appeared) since the last poll, even by a part of a record.
    pub grew: bool,
}

/// The caller's key table: name → id. Cobra's fence key is named "FZVERSION".
pub trait Keys {
    fn key(&mut self, name: &str) -> KeyId;
    fn fence_key(&mut self, k: KeyId);
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
            id: None,
        }
    }
    fn read_more(&mut self) -> Result<bool, InputError> {
        let mut f = std::fs::File::open(&self.path).map_err(|e| InputError::io(&self.path, e))?;
        let meta = f.metadata().map_err(|e| InputError::io(&self.path, e))?;
        crate::regular(&self.path, &meta)?;
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

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StreamFormat {
    Jsonl,
    Cobra,
}

/// Follows a path: a JSONL file, a directory of `*.jsonl` files, or a Cobra log directory
/// (new files in a directory are picked up as they appear).
pub struct Follower {
    root: PathBuf,
    pub format: StreamFormat,
    tails: Vec<Tail>,
    is_dir: bool,
    /// Cobra key hashes → ids.
    cobra_keys: crate::fxhash::FxHashMap<u64, KeyId>,
    /// The logs ended: decide what is still undecided (the Cobra variant of a short file).
    ending: bool,
}

impl Follower {
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
            crate::jsonl::dir_files(&self.root)?
        };
        for f in files {
            if !self.tails.iter().any(|t| t.path == f) {
                if self.format == StreamFormat::Cobra {
                    out.new_sessions.push(session_name(&f));
                }
                self.tails.push(Tail::new(f));
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
                StreamFormat::Jsonl => jsonl_take(&mut self.tails[i], keys, &mut out)?,
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
                    match crate::jsonl::repair(&text) {
                        Some(crate::jsonl::Repair::Drop) => warnings.push(format!(
                            "{}: {at}{}",
                            t.path.display(),
                            crate::jsonl::CUT_HEAD
                        )),
                        Some(crate::jsonl::Repair::Fixed(fixed, _)) => {
                            let rec = crate::jsonl::parse_stream_line(&fixed, &t.path, at, keys)?;
                            warnings.push(format!(
                                "{}: {at}the last line is cut short (the client stopped): read as a transaction with outcome {}",
                                t.path.display(),
                                rec.status.as_str()
                            ));
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

fn session_name(p: &Path) -> String {
    p.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_string()
}

fn jsonl_take(t: &mut Tail, keys: &mut dyn Keys, out: &mut Polled) -> Result<(), InputError> {
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
        out.txns
            .push(crate::jsonl::parse_stream_line(text, &t.path, at, keys)?);
    }
    t.buf.drain(..consumed);
    // A line still being written: its writes may already be visible to readers.
    if !t.buf.is_empty() {
        let text = String::from_utf8_lossy(&t.buf);
        if let Some(crate::jsonl::Repair::Fixed(fixed, _)) = crate::jsonl::repair(text.trim()) {
            let at = Location::Line(t.line + 1);
            if let Ok(rec) = crate::jsonl::parse_stream_line(&fixed, &t.path, at, keys) {
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

fn be(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

fn cobra_take(
    t: &mut Tail,
    hashes: &mut crate::fxhash::FxHashMap<u64, KeyId>,
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
            let ts = cobra::looks_timestamped_prefix(&t.buf);
            t.ts = Some(ts);
            ts
        }
    };
    let tsl = if ts { 8 } else { 0 };
    let base = t.offset - t.buf.len() as u64;
    let err =
        |at: usize, msg: String| InputError::new(&t.path, Location::Offset(base + at as u64), msg);
    let session = session_name(&t.path);
    let mut key_of = |h: u64| -> KeyId {
        *hashes.entry(h).or_insert_with(|| {
            if h == FENCE_KEY_HASH {
                let k = keys.key("FZVERSION");
                keys.fence_key(k);
                k
            } else {
                keys.key(&format!("{h:016x}"))
            }
        })
    };
    let b = &t.buf;
    let mut i = 0;
    let mut consumed = 0;
    let mut open: Option<(u64, u64)> = None;
    let mut ops: Vec<(OpKind, KeyId, u64)> = Vec::new();
    let mut claims: Vec<(u64, u64)> = Vec::new();
    while i < b.len() {
        let op = b[i];
        let len = match op {
            b'S' | b'C' => 9 + tsl,
            b'W' => 25,
            b'R' => 33,
            _ => {
                return Err(err(
                    i,
                    format!("bad opcode 0x{op:02x}; expected S, W, R or C"),
                ))
            }
        };
        if i + len > b.len() {
            break;
        }
        match op {
            b'S' => {
                if let Some((o, _)) = open {
                    return Err(err(
                        i,
                        format!("transaction {o} has no commit before this start"),
                    ));
                }
                open = Some((be(b, i + 1), if ts { be(b, i + 9) } else { NO_TIME }));
                ops.clear();
                claims.clear();
            }
            b'C' => {
                let id = be(b, i + 1);
                match open {
                    Some((o, start)) if o == id => {
                        out.txns.push(StreamTxn {
                            lists: Vec::new(),
                            session: session.clone(),
                            ext: id,
                            status: TxnStatus::Committed,
                            start,
                            commit: if ts { be(b, i + 9) } else { NO_TIME },
                            ops: std::mem::take(&mut ops),
                            claims: std::mem::take(&mut claims),
                        });
                        open = None;
                        consumed = i + len;
                    }
                    Some((o, _)) => {
                        return Err(err(
                            i,
                            format!(
                                "commit of transaction {id}, but transaction {o} is the one open"
                            ),
                        ))
                    }
                    None => {
                        return Err(err(
                            i,
                            format!("commit of transaction {id}, which never started"),
                        ))
                    }
                }
            }
            _ => {
                if open.is_none() {
                    return Err(err(
                        i,
                        format!("'{}' record outside a transaction", op as char),
                    ));
                }
                if op == b'W' {
                    let (wid, kh, vh) = (be(b, i + 1), be(b, i + 9), be(b, i + 17));
                    if wid == INIT_WRITE_ID || wid == NULL_WRITE_ID {
                        return Err(err(
                            i,
                            format!("write uses the reserved initial-state write id 0x{wid:x}"),
                        ));
                    }
                    ops.push((OpKind::Write, key_of(kh), wid));
                    claims.push((vh, 0));
                } else {
                    let (wt, wid, kh, vh) =
                        (be(b, i + 1), be(b, i + 9), be(b, i + 17), be(b, i + 25));
                    let init = wid == INIT_WRITE_ID || wid == NULL_WRITE_ID;
                    let kind = if init { OpKind::ReadInit } else { OpKind::Read };
                    ops.push((kind, key_of(kh), wid));
                    claims.push((vh, wt));
                }
            }
        }
        i += len;
    }
    if open.is_some() {
        out.provisional.extend(
            ops.iter()
                .filter(|o| o.0 == OpKind::Write && o.2 != DELETE_WRITE_ID)
                .map(|o| (o.1, o.2)),
        );
    }
    t.buf.drain(..consumed);
    Ok(())
}
