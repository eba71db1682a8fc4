//! Cobra's binary per-session logs: a directory of `T<n>.log`, each a sequence of records
//! `S txn`, `W wid key value`, `R writer wid key value`, `C txn` (one opcode byte, then
//! big-endian i64 fields). Only committed transactions appear. See `docs/history-format.md`.

use crate::error::{InputError, Location, Warning};
use crate::fxhash::FxHashMap;
use crate::model::{History, HistoryBuilder, KeyId, OpKind, TxnStatus, NO_TIME};
use crate::TxnId;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Write id of a read of the initial, pre-loaded state.
pub const INIT_WRITE_ID: u64 = 0xbebe_ebee;
/// Write id of a read of a key that did not exist (also the initial version).
pub const NULL_WRITE_ID: u64 = 0xdead_beef;
/// Write id every delete carries (so deletes cannot be told apart by a reader).
pub const DELETE_WRITE_ID: u64 = 0xabcd_efab;
/// XXH64 of "FZVERSION" as UTF-16LE: the fence key.
pub const FENCE_KEY_HASH: u64 = 0xb887_3aa8_2ef6_c6d3;

#[derive(Clone, Copy, Debug, Default)]
pub struct CobraOptions {
    /// The variant with an 8-byte timestamp after `S` and `C`; `None` detects it.
    pub timestamps: Option<bool>,
}

/// The session files of a Cobra history directory, ordered by their number.
pub fn session_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, InputError> {
    let rd = std::fs::read_dir(dir).map_err(|e| InputError::io(dir, e))?;
    let mut files = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| InputError::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(num) = name.strip_prefix('T').and_then(|s| s.strip_suffix(".log")) {
            if let Ok(n) = num.parse::<u64>() {
                crate::regular_file(&entry.path())?;
                files.push((n, entry.path()));
            }
        }
    }
    files.sort();
    Ok(files)
}

pub fn is_cobra_dir(dir: &Path) -> bool {
    dir.is_dir() && session_files(dir).map(|f| !f.is_empty()).unwrap_or(false)
}

#[inline]
fn be(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// Whether the bytes parse as the timestamped variant: the first record must be `S` and the
/// plain layout must not, while the stamped one does, reach a valid opcode after it.
fn looks_timestamped(b: &[u8]) -> bool {
    fn walk(b: &[u8], ts: bool) -> bool {
        let mut i = 0;
        let mut seen = 0;
        while i < b.len() && seen < 64 {
            let len = match b[i] {
                b'S' | b'C' => 9 + if ts { 8 } else { 0 },
                b'W' => 25,
                b'R' => 33,
                _ => return false,
            };
            i += len;
            seen += 1;
        }
        true
    }
    !b.is_empty() && !walk(b, false) && walk(b, true)
}

/// [`looks_timestamped`] for the start of a file still being written.
pub(crate) fn looks_timestamped_prefix(b: &[u8]) -> bool {
    looks_timestamped(b)
}

pub struct Loaded {
    pub history: History,
    pub warnings: Vec<Warning>,
}

pub fn read_dir(dir: &Path, opts: CobraOptions) -> Result<Loaded, InputError> {
    let files = session_files(dir)?;
    if files.is_empty() {
        return Err(InputError::new(
            dir,
            Location::Nowhere,
            "no T<n>.log session files in this directory",
        ));
    }
    let mut b = HistoryBuilder::new().with_cobra_claims();
    let mut keys: FxHashMap<u64, KeyId> = FxHashMap::default();
    let mut warnings = Vec::new();
    for (_, path) in &files {
        let bytes = std::fs::read(path).map_err(|e| InputError::io(path, e))?;
        let ts = opts.timestamps.unwrap_or_else(|| looks_timestamped(&bytes));
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("?")
            .to_string();
        b.begin_session(name);
        parse_session(&bytes, path, ts, &mut b, &mut keys, &mut warnings)?;
        b.end_session();
    }
    Ok(Loaded {
        history: b.finish(),
        warnings,
    })
}

/// Parses one session's bytes (exposed for tests on hand-made byte sequences).
pub fn parse_session(
    bytes: &[u8],
    path: &Path,
    ts: bool,
    b: &mut HistoryBuilder,
    keys: &mut FxHashMap<u64, KeyId>,
    warnings: &mut Vec<Warning>,
) -> Result<(), InputError> {
    let tsl = if ts { 8 } else { 0 };
    let mut i = 0usize;
    // (txn id, start timestamp, offset of its S record)
    let mut open: Option<(u64, u64, usize)> = None;
    let err = |at: usize, msg: String| InputError::new(path, Location::Offset(at as u64), msg);
    let mut key_of = |b: &mut HistoryBuilder, h: u64| -> KeyId {
        *keys.entry(h).or_insert_with(|| {
            if h == FENCE_KEY_HASH {
                let k = b.new_key_unindexed("FZVERSION".to_string());
                b.set_fence_key(k);
                k
            } else {
                b.new_key_unindexed(format!("{h:016x}"))
            }
        })
    };
    while i < bytes.len() {
        let op = bytes[i];
        let len = match op {
            b'S' | b'C' => 9 + tsl,
            b'W' => 25,
            b'R' => 33,
            _ => {
                let shown = if op.is_ascii_graphic() {
                    format!(" ('{}')", op as char)
                } else {
                    String::new()
                };
                return Err(err(
                    i,
                    format!("bad opcode 0x{op:02x}{shown}; expected S, W, R or C"),
                ));
            }
        };
        if i + len > bytes.len() {
            let what = match open {
                Some((t, _, _)) => format!(
                    "truncated record '{}' in transaction {t}: transaction dropped",
                    op as char
                ),
                None => format!("truncated record '{}' at end of file: ignored", op as char),
            };
            if open.is_some() {
                b.discard_open_ops();
            }
            warnings.push(Warning {
                path: path.to_path_buf(),
                location: Location::Offset(i as u64),
                message: what,
            });
            return Ok(());
        }
        match op {
            b'S' => {
                if let Some((t, _, at)) = open {
                    return Err(err(i, format!("transaction {t} (started at byte offset {at}) has no commit before this start")));
                }
                let start = if ts { be(bytes, i + 9) } else { NO_TIME };
                open = Some((be(bytes, i + 1), start, i));
            }
            b'C' => {
                let t = be(bytes, i + 1);
                match open {
                    Some((o, start, _)) if o == t => {
                        let commit = if ts { be(bytes, i + 9) } else { NO_TIME };
                        if let Err(prev) = b.finish_txn(t, TxnStatus::Committed, start, commit) {
                            let _ = prev;
                            return Err(err(i, format!("transaction id {t} is used twice")));
                        }
                        open = None;
                    }
                    Some((o, _, _)) => {
                        return Err(err(
                            i,
                            format!(
                                "commit of transaction {t}, but transaction {o} is the one open"
                            ),
                        ))
                    }
                    None => {
                        return Err(err(
                            i,
                            format!("commit of transaction {t}, which never started"),
                        ))
                    }
                }
            }
            b'W' | b'R' => {
                if open.is_none() {
                    return Err(err(
                        i,
                        format!("'{}' record outside a transaction", op as char),
                    ));
                }
                if op == b'W' {
                    let (wid, kh, vh) = (be(bytes, i + 1), be(bytes, i + 9), be(bytes, i + 17));
                    let k = key_of(b, kh);
                    if wid == DELETE_WRITE_ID {
                        b.op_unindexed(OpKind::Write, k, wid);
                    } else if wid == INIT_WRITE_ID || wid == NULL_WRITE_ID {
                        return Err(err(
                            i,
                            format!("write uses the reserved initial-state write id 0x{wid:x}"),
                        ));
                    } else if b.op(OpKind::Write, k, wid).is_err() {
                        return Err(err(
                            i,
                            format!("write id 0x{wid:x} is used by an earlier write"),
                        ));
                    }
                    b.cobra_claim(vh, 0);
                } else {
                    let (wt, wid, kh, vh) = (
                        be(bytes, i + 1),
                        be(bytes, i + 9),
                        be(bytes, i + 17),
                        be(bytes, i + 25),
                    );
                    let k = key_of(b, kh);
                    let init = wid == INIT_WRITE_ID || wid == NULL_WRITE_ID;
                    b.op_unindexed(if init { OpKind::ReadInit } else { OpKind::Read }, k, wid);
                    b.cobra_claim(vh, wt);
                }
            }
            _ => unreachable!(),
        }
        i += len;
    }
    if let Some((t, _, at)) = open {
        b.discard_open_ops();
        warnings.push(Warning {
            path: path.to_path_buf(),
            location: Location::Offset(at as u64),
            message: format!("transaction {t} has no commit (the file ends): transaction dropped"),
        });
    }
    Ok(())
}

/// Writes `h` as a Cobra log directory. Only committed transactions can be written (the format
/// has no aborts or unknown outcomes); keys that are not 16-digit hex hashes are hashed (XXH64
/// of UTF-16LE, as Cobra's client does). An unknown outcome that a written transaction read did
/// commit, at a time unknown: it is written as committed in a log of its own, so that no
/// session order claims it committed before its session's later transactions (the order after
/// its session's earlier commits is lost, which can only hide a violation, never make one).
/// List-append reads have no Cobra form: such a history is refused. Returns how many
/// transactions were left out and how many unknown outcomes got logs of their own.
pub fn write_dir(h: &History, dir: &Path, timestamps: bool) -> std::io::Result<(usize, usize)> {
    if h.has_lists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the history has list-append reads, which Cobra logs cannot carry (convert to .jsonl)",
        ));
    }
    std::fs::create_dir_all(dir)?;
    let key_hash: Vec<u64> = h.keys.iter().map(|k| cobra_key_hash(k)).collect();
    let writer_of = crate::resolve::writer_txns(h);
    // Unknown outcomes read by what is written, transitively.
    let mut written: Vec<bool> = h
        .txn_status
        .iter()
        .map(|&s| s == TxnStatus::Committed)
        .collect();
    let mut stack: Vec<TxnId> = (0..h.num_txns() as TxnId)
        .filter(|&t| written[t as usize])
        .collect();
    while let Some(t) = stack.pop() {
        for o in h.ops(t) {
            if let Some(w) = writer_of[o] {
                if !written[w as usize] && h.txn_status[w as usize] == TxnStatus::Unknown {
                    written[w as usize] = true;
                    stack.push(w);
                }
            }
        }
    }
    let mut skipped = 0;
    let mut own_log: Vec<TxnId> = Vec::new();
    let mut used: std::collections::HashSet<String> = Default::default();
    for s in 0..h.num_sessions() {
        let name = &h.session_names[s];
        let file = if name.starts_with('T') && name[1..].parse::<u64>().is_ok() {
            format!("{name}.log")
        } else {
            format!("T{s}.log")
        };
        used.insert(file.clone());
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(file))?);
        for t in h.session_range(s) {
            match h.txn_status[t as usize] {
                TxnStatus::Committed => {
                    write_txn(h, t, &key_hash, &writer_of, timestamps, &mut out)?
                }
                _ if written[t as usize] => own_log.push(t),
                _ => skipped += 1,
            }
        }
        out.flush()?;
    }
    let mut n = h.num_sessions();
    for &t in &own_log {
        let file = loop {
            let f = format!("T{n}.log");
            n += 1;
            if used.insert(f.clone()) {
                break f;
            }
        };
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(file))?);
        write_txn(h, t, &key_hash, &writer_of, timestamps, &mut out)?;
        out.flush()?;
    }
    Ok((skipped, own_log.len()))
}

fn write_txn(
    h: &History,
    t: TxnId,
    key_hash: &[u64],
    writer_of: &[Option<TxnId>],
    timestamps: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let ext = h.txn_ext[t as usize];
    out.write_all(b"S")?;
    out.write_all(&ext.to_be_bytes())?;
    if timestamps {
        out.write_all(&h.txn_start[t as usize].to_be_bytes())?;
    }
    for o in h.ops(t) {
        let k = key_hash[h.op_key[o] as usize];
        let v = h.op_value[o];
        let vh = h
            .cobra
            .as_ref()
            .map(|c| c.value_hash[o])
            .unwrap_or_else(|| value_hash(v));
        match h.op_kind[o] {
            OpKind::Write => {
                out.write_all(b"W")?;
                for x in [v, k, vh] {
                    out.write_all(&x.to_be_bytes())?;
                }
            }
            OpKind::Read | OpKind::ReadInit => {
                let (wt, wid) = if h.op_kind[o] == OpKind::ReadInit {
                    let wid = if v == NULL_WRITE_ID || v == INIT_WRITE_ID {
                        v
                    } else {
                        INIT_WRITE_ID
                    };
                    (wid, wid)
                } else {
                    let claimed = h.cobra.as_ref().map(|c| c.read_writer[o]);
                    (
                        claimed.unwrap_or_else(|| {
                            writer_of[o].map(|w| h.txn_ext[w as usize]).unwrap_or(0)
                        }),
                        v,
                    )
                };
                let vh = if h.cobra.is_none() && h.op_kind[o] == OpKind::ReadInit {
                    0
                } else {
                    vh
                };
                out.write_all(b"R")?;
                for x in [wt, wid, k, vh] {
                    out.write_all(&x.to_be_bytes())?;
                }
            }
        }
    }
    out.write_all(b"C")?;
    out.write_all(&ext.to_be_bytes())?;
    if timestamps {
        out.write_all(&h.txn_commit[t as usize].to_be_bytes())?;
    }
    Ok(())
}

fn cobra_key_hash(k: &str) -> u64 {
    if k == "FZVERSION" {
        return FENCE_KEY_HASH;
    }
    if k.len() == 16 {
        if let Ok(h) = u64::from_str_radix(k, 16) {
            return h;
        }
    }
    let utf16: Vec<u8> = k.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    crate::xxh64::xxh64(&utf16, 0)
}

fn value_hash(v: u64) -> u64 {
    crate::xxh64::xxh64(&v.to_le_bytes(), 0)
}
