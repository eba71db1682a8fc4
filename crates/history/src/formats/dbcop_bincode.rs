//! The `history.bincode` of the OOPSLA'19 dbcop: bincode 1 of its History struct, sessions of
//! transactions of `{write, variable, value, success}` events. Value 0 is every key's initial
//! value; events that did not succeed never reached the database and are left out. Errors name
//! the byte offset of the field that is wrong. See `docs/history-format.md`.
//!
//! The file is parsed as it is read (from a `Source`): loading holds the history, not the file.

use super::gather::{Collector, POp, PTxn};
use super::source::Source;
use super::{Format, Loaded};
use crate::error::{InputError, Location, Warning};
use crate::model::{OpKind, TxnStatus};
use std::io::Read;
use std::path::Path;

/// Reads a dbcop bincode history from `input`; `path` names it in errors. The input is read as
/// it is parsed; a read error is reported in place of whatever the parser made of the input up
/// to it.
pub fn read_bincode(input: impl Read, path: &Path) -> Result<Loaded, InputError> {
    read_from(input, None, path)
}

/// The same, for an input known to hold `len` bytes (a file, by its metadata): a length prefix
/// is then checked against that instead of against bytes read ahead.
pub(crate) fn read_from(
    input: impl Read,
    len: Option<u64>,
    path: &Path,
) -> Result<Loaded, InputError> {
    let mut b = Bin {
        s: Source::new(input),
        len,
        path,
    };
    let res = parse(&mut b);
    match b.s.take_error() {
        Some(e) => Err(InputError::io(path, e)),
        None => res,
    }
}

/// bincode 1 with its default options, as dbcop writes it: little-endian fixed-width u64
/// lengths and integers, one byte per bool.
struct Bin<'a, R> {
    s: Source<R>,
    /// The input's length, when known.
    len: Option<u64>,
    path: &'a Path,
}

impl<R: Read> Bin<'_, R> {
    fn err(&self, at: u64, msg: impl Into<String>) -> InputError {
        InputError::new(self.path, Location::Offset(at), msg)
    }
    fn pos(&self) -> u64 {
        self.s.offset()
    }
    /// Whether at least `need` bytes are left; if not, how many are. Without the input's
    /// length this reads them ahead: no more than the input holds.
    fn left_at_least(&mut self, need: u64) -> Result<(), u64> {
        let left = match self.len {
            Some(len) => len.saturating_sub(self.pos()),
            None if self.s.fill(usize::try_from(need).unwrap_or(usize::MAX)) => return Ok(()),
            None => self.s.available() as u64,
        };
        if need > left {
            Err(left)
        } else {
            Ok(())
        }
    }
    fn u64(&mut self, what: &str) -> Result<u64, InputError> {
        let bytes = self.s.ahead(8);
        let Ok(bytes) = <[u8; 8]>::try_from(bytes) else {
            let left = bytes.len();
            return Err(self.err(
                self.pos(),
                format!("the file ends inside {what} (8 bytes needed, {left} left)"),
            ));
        };
        self.s.advance(8);
        Ok(u64::from_le_bytes(bytes))
    }
    fn flag(&mut self, what: &str) -> Result<bool, InputError> {
        match self.s.peek() {
            None => Err(self.err(self.pos(), format!("the file ends before {what}"))),
            Some(v @ (0 | 1)) => {
                self.s.bump();
                Ok(v == 1)
            }
            Some(v) => Err(self.err(
                self.pos(),
                format!("{what} must be a bool byte 0 or 1, not {v}"),
            )),
        }
    }
    /// A length prefix, checked against what the rest of the file can hold so that a corrupt
    /// count is an error, not a huge allocation.
    fn count(&mut self, what: &str, min_each: u64) -> Result<u64, InputError> {
        let at = self.pos();
        let n = self.u64(what)?;
        if let Err(left) = self.left_at_least(n.saturating_mul(min_each)) {
            return Err(self.err(
                at,
                format!(
                    "{what} is {n}, more than the {left} bytes left can hold (not a dbcop history.bincode?)"
                ),
            ));
        }
        Ok(n)
    }
    fn string(&mut self, what: &str) -> Result<String, InputError> {
        let at = self.pos();
        let len = self.count(&format!("the length of {what}"), 1)? as usize;
        let bytes = self.s.ahead(len);
        if bytes.len() < len {
            // Only when the file is shorter than its length said (it changed while read).
            let left = bytes.len();
            return Err(self.err(
                at,
                format!("the file ends inside {what} ({len} bytes needed, {left} left)"),
            ));
        }
        let text = std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| {
                self.err(
                    at,
                    format!("{what} is not UTF-8 text (not a dbcop history.bincode?)"),
                )
            })?;
        self.s.advance(len);
        Ok(text)
    }
}

fn parse<R: Read>(b: &mut Bin<'_, R>) -> Result<Loaded, InputError> {
    let path = b.path;
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
            let at = b.pos();
            let nevents = b.count("the number of events of a transaction", 18)?;
            let mut ops = Vec::new();
            for _ in 0..nevents {
                let eat = b.pos();
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
                        at: Location::Offset(eat),
                    });
                }
            }
            let status = if b.flag("a transaction's success flag")? {
                TxnStatus::Committed
            } else {
                TxnStatus::Aborted
            };
            let mut t = PTxn::new(ext, status, Location::Offset(at));
            ext += 1;
            t.ops = ops;
            col.push(s, t);
        }
    }
    let mut warnings = Vec::new();
    let end = b.pos();
    let left = b.s.skip_rest();
    if left > 0 {
        warnings.push(Warning {
            path: path.to_path_buf(),
            location: Location::Offset(end),
            message: format!("{left} bytes after the history are ignored"),
        });
    }
    Ok(Loaded {
        history: col.finish(path, true)?,
        warnings,
        format: Format::Dbcop,
    })
}
