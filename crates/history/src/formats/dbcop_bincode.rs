//! The `history.bincode` of the OOPSLA'19 dbcop: bincode 1 of its History struct, sessions of
//! transactions of `{write, variable, value, success}` events. Value 0 is every key's initial
//! value; events that did not succeed never reached the database and are left out. Errors name
//! the byte offset of the field that is wrong. See `docs/history-format.md`.

use super::gather::{Collector, POp, PTxn};
use super::{Format, Loaded};
use crate::error::{InputError, Location, Warning};
use crate::model::{OpKind, TxnStatus};
use std::io::Read;
use std::path::Path;

/// Reads a dbcop bincode history from `input`; `path` names it in errors.
pub fn read_bincode(mut input: impl Read, path: &Path) -> Result<Loaded, InputError> {
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::io(path, e))?;
    parse_bincode(&bytes, path)
}

/// bincode 1 with its default options, as dbcop writes it: little-endian fixed-width u64
/// lengths and integers, one byte per bool.
struct Bin<'a> {
    b: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl Bin<'_> {
    fn err(&self, at: usize, msg: impl Into<String>) -> InputError {
        InputError::new(self.path, Location::Offset(at as u64), msg)
    }
    fn left(&self) -> usize {
        self.b.len() - self.pos
    }
    fn u64(&mut self, what: &str) -> Result<u64, InputError> {
        let Some(bytes) = self.b.get(self.pos..self.pos + 8) else {
            return Err(self.err(
                self.pos,
                format!(
                    "the file ends inside {what} (8 bytes needed, {} left)",
                    self.left()
                ),
            ));
        };
        self.pos += 8;
        Ok(u64::from_le_bytes(bytes.try_into().unwrap_or_default()))
    }
    fn flag(&mut self, what: &str) -> Result<bool, InputError> {
        match self.b.get(self.pos) {
            None => Err(self.err(self.pos, format!("the file ends before {what}"))),
            Some(&v @ (0 | 1)) => {
                self.pos += 1;
                Ok(v == 1)
            }
            Some(&v) => Err(self.err(
                self.pos,
                format!("{what} must be a bool byte 0 or 1, not {v}"),
            )),
        }
    }
    /// A length prefix, checked against what the rest of the file can hold so that a corrupt
    /// count is an error, not a huge allocation.
    fn count(&mut self, what: &str, min_each: u64) -> Result<u64, InputError> {
        let at = self.pos;
        let n = self.u64(what)?;
        if n.saturating_mul(min_each) > self.left() as u64 {
            return Err(self.err(
                at,
                format!(
                    "{what} is {n}, more than the {} bytes left can hold (not a dbcop history.bincode?)",
                    self.left()
                ),
            ));
        }
        Ok(n)
    }
    fn string(&mut self, what: &str) -> Result<String, InputError> {
        let at = self.pos;
        let len = self.count(&format!("the length of {what}"), 1)? as usize;
        let text = std::str::from_utf8(&self.b[self.pos..self.pos + len])
            .map_err(|_| {
                self.err(
                    at,
                    format!("{what} is not UTF-8 text (not a dbcop history.bincode?)"),
                )
            })?
            .to_string();
        self.pos += len;
        Ok(text)
    }
}

pub(crate) fn parse_bincode(bytes: &[u8], path: &Path) -> Result<Loaded, InputError> {
    let mut b = Bin {
        b: bytes,
        pos: 0,
        path,
    };
    // HistParams: id, n_node, n_variable, n_transaction, n_event. Counts we do not need.
    for field in ["id", "n_node", "n_variable", "n_transaction", "n_event"] {
        b.u64(&format!("the header field {field}"))?;
    }
    b.string("the info text")?;
    b.string("the start time")?;
    b.string("the end time")?;
    let mut col = Collector::new();
    let mut ext = 1u64;
    // Smallest encodings: a session is its count (8), a transaction its count and flag (9),
    // an event two flags and two u64s (18).
    let nsessions = b.count("the number of sessions", 8)?;
    for si in 1..=nsessions {
        let s = col.session(&si.to_string());
        let ntxns = b.count(&format!("the number of transactions of session {si}"), 9)?;
        for _ in 0..ntxns {
            let at = b.pos;
            let nevents = b.count("the number of events of a transaction", 18)?;
            let mut ops = Vec::new();
            for _ in 0..nevents {
                let eat = b.pos;
                let write = b.flag("an event's write flag")?;
                let variable = b.u64("an event's variable")?;
                let value = b.u64("an event's value")?;
                // An event that did not succeed never reached the database.
                if b.flag("an event's success flag")? {
                    let key = col.key(&variable.to_string());
                    ops.push(POp {
                        kind: if write { OpKind::Write } else { OpKind::Read },
                        key,
                        value,
                        at: Location::Offset(eat as u64),
                    });
                }
            }
            let status = if b.flag("a transaction's success flag")? {
                TxnStatus::Committed
            } else {
                TxnStatus::Aborted
            };
            let mut t = PTxn::new(ext, status, Location::Offset(at as u64));
            ext += 1;
            t.ops = ops;
            col.push(s, t);
        }
    }
    let mut warnings = Vec::new();
    if b.left() > 0 {
        warnings.push(Warning {
            path: path.to_path_buf(),
            location: Location::Offset(b.pos as u64),
            message: format!("{} bytes after the history are ignored", b.left()),
        });
    }
    Ok(Loaded {
        history: col.finish(path, true)?,
        warnings,
        format: Format::Dbcop,
    })
}
