//! JSON Lines read in large blocks of whole lines, each block cut into pieces parsed on every
//! core and handed back in line order: the calling thread takes each piece as soon as it and
//! the ones before it are parsed (parsing pieces itself while the next is not ready), so
//! adding a piece to the history overlaps parsing the rest. Parsing is pure (no key table, no
//! session table), so the order in which pieces finish cannot change what the caller sees: it
//! meets records and the first bad line (not JSON, or not UTF-8) exactly where a line-by-line
//! reader would.

use super::jsonl_scan::{itoa_buf, scan, LineRef, NameRef, OpRef};
use super::jsonl_serde::{LineIn, OpVal};
use crate::error::{InputError, Location};
use crate::fxhash::FxHashMap;
use crate::in_order::map_in_order;
use crate::model::{OpKind, ABSENT_VALUE};
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

/// Bytes read per block: large enough for every core to get long runs of lines, small enough
/// that a block's parsed operations stay a few megabytes.
/// (Tests use small blocks and pieces, so that every test crosses their edges.)
const BLOCK: usize = if cfg!(test) { 1 << 10 } else { 16 << 20 };

/// The smallest piece worth a task of its own.
const MIN_PIECE: usize = if cfg!(test) { 1 << 8 } else { 64 << 10 };

/// Pieces a block is cut into, per core: enough that the thread adding pieces to the history
/// rarely waits for one, few enough that each piece's key names (looked up once a piece) stay
/// a small part of the work.
const PIECES_PER_CORE: usize = 8;

/// A parsed record: by the scanner (operations in the piece's vector) or by serde.
pub(crate) enum Rec<'a> {
    Fast(LineRef<'a>),
    Slow(LineIn<'a>),
}

/// An operation's value as either parser gives it.
pub(crate) enum ValRef<'x> {
    Null,
    Num(u64),
    List(&'x [u64]),
}

/// The fields of a record other than its operations.
pub(crate) struct Head<'x> {
    pub session: Cow<'x, str>,
    pub txn: u64,
    pub status: Option<&'x str>,
    pub start: Option<u64>,
    pub commit: Option<u64>,
    pub num_ops: usize,
}

impl<'a> Rec<'a> {
    /// Parses one trimmed line: the scanner first, serde for what it leaves.
    pub fn parse(text: &'a str, ops: &mut Vec<OpRef<'a>>) -> Result<Rec<'a>, serde_json::Error> {
        match scan(text, ops) {
            Some(l) => Ok(Rec::Fast(l)),
            None => serde_json::from_str(text).map(Rec::Slow),
        }
    }

    pub fn head(&self) -> Head<'_> {
        match self {
            Rec::Fast(l) => Head {
                session: match l.session {
                    NameRef::Str(s) => Cow::Borrowed(s),
                    NameRef::Int(i) => Cow::Owned(i.to_string()),
                },
                txn: l.txn,
                status: l.status,
                start: l.start,
                commit: l.commit,
                num_ops: l.end - l.first,
            },
            Rec::Slow(l) => Head {
                session: l.session.to_key(),
                txn: l.txn,
                status: l.status.as_deref(),
                start: l.start,
                commit: l.commit,
                num_ops: l.ops.len(),
            },
        }
    }

    /// Calls `f(index, kind, key, value, application value)` for each operation in order,
    /// stopping at its first error. A scanned record's operations are in `scanned`.
    pub fn each_op<E>(
        &self,
        scanned: &[OpRef<'_>],
        mut f: impl FnMut(usize, &str, &str, ValRef<'_>, Option<&str>) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            Rec::Fast(l) => {
                let mut digits = itoa_buf::Buf::default();
                for (i, op) in scanned[l.first..l.end].iter().enumerate() {
                    let kind = if op.kind == b'w' { "w" } else { "r" };
                    let v = op.value.map_or(ValRef::Null, ValRef::Num);
                    f(i, kind, op.key.as_str(&mut digits), v, op.app)?;
                }
            }
            Rec::Slow(l) => {
                for (i, op) in l.ops.iter().enumerate() {
                    let v = match &op.value {
                        OpVal::Null => ValRef::Null,
                        OpVal::Num(n) => ValRef::Num(*n),
                        OpVal::List(l) => ValRef::List(l),
                    };
                    f(i, &op.kind, &op.key.to_key(), v, op.app.as_deref())?;
                }
            }
        }
        Ok(())
    }
}

/// What a line of a piece turned into; `line` counts from the piece's first line (1-based).
pub(crate) enum Item<'a> {
    /// A scanned record, its operations ready for the model but for their keys, which are
    /// numbered among the piece's [`Piece::names`].
    Fast {
        line: u64,
        head: LineRef<'a>,
        ops: Vec<(OpKind, u32, u64)>,
        app: super::jsonl::AppVals,
    },
    /// A record serde read.
    Slow {
        line: u64,
        rec: LineIn<'a>,
    },
    Bad {
        line: u64,
        err: serde_json::Error,
    },
    /// The line is not UTF-8.
    NotUtf8 {
        line: u64,
    },
}

/// A run of whole lines parsed together. Keys are numbered here, on every core, so that the
/// caller looks up each name once per piece rather than once per operation.
pub(crate) struct Piece<'a> {
    pub items: Vec<Item<'a>>,
    /// The key names, by their number in this piece, each with its text packed into one
    /// integer where it is shorter than 16 bytes ([`LONG`] otherwise): the caller's table of
    /// names looks those up without comparing strings.
    pub names: Vec<(NameRef<'a>, u128)>,
    /// Lines in the piece, for the next piece's numbering.
    pub lines: u64,
}

/// In [`Piece::names`]: a name of 16 bytes or more, not packed.
pub(crate) const LONG: u128 = u128::MAX;

/// Numbers the key names of a piece. Names of up to 15 bytes are compared as one integer held
/// in the table, not through a pointer into the block (a cache miss per operation).
struct LocalKeys<'a, 's> {
    short: &'s mut FxHashMap<u128, u32>,
    long: FxHashMap<NameRef<'a>, u32>,
}

impl<'a> LocalKeys<'a, '_> {
    /// The number of `name`, met in `piece` (the text a string name borrows from).
    fn number(
        &mut self,
        name: NameRef<'a>,
        piece: &str,
        names: &mut Vec<(NameRef<'a>, u128)>,
    ) -> u32 {
        let mut digits = itoa_buf::Buf::default();
        let text = name.as_str(&mut digits).as_bytes();
        let next = names.len() as u32;
        let (n, packed) = if text.len() < 16 {
            let len = text.len();
            // One 16-byte load from the piece, masked to the name, where the piece goes on that
            // far; bytes copied one by one would be read back through a stalled store.
            let at = (text.as_ptr() as usize).wrapping_sub(piece.as_ptr() as usize);
            let wide = match name {
                NameRef::Str(_) => piece.as_bytes().get(at..at + 16),
                NameRef::Int(_) => None,
            };
            let bytes = match wide {
                Some(w) => u128::from_le_bytes(w.try_into().unwrap_or([0; 16])),
                None => {
                    let mut packed = [0u8; 16];
                    packed[..len].copy_from_slice(text);
                    u128::from_le_bytes(packed)
                }
            };
            let packed = (bytes & ((1u128 << (8 * len)) - 1)) | ((len as u128) << 120);
            (*self.short.entry(packed).or_insert(next), packed)
        } else {
            (*self.long.entry(name).or_insert(next), LONG)
        };
        if n == next {
            names.push((name, packed));
        }
        n
    }
}

/// Reads `input` (named `path` in errors) in blocks of whole lines. `piece(piece, lines
/// before)` gets each piece parsed, in order; `last(text, line)` the final line when the input
/// does not end with a newline (a writer stopped mid-record: the caller decides what to
/// recover).
pub(crate) fn read_blocks(
    mut input: impl Read,
    path: &Path,
    mut piece: impl FnMut(Piece<'_>, u64) -> Result<(), InputError>,
    mut last: impl FnMut(&str, u64) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let mut buf: Vec<u8> = Vec::with_capacity(BLOCK);
    let mut lines_before = 0u64;
    loop {
        // What is left from the last read holds no line end: only the new bytes are searched
        // (searching it all again made one long line, a proxy's initial state, quadratic).
        let old = buf.len();
        let got = (&mut input)
            .take(BLOCK as u64)
            .read_to_end(&mut buf)
            .map_err(|e| {
                InputError::new(
                    path,
                    Location::Line(lines_before + 1),
                    format!("cannot read: {e}"),
                )
            })?;
        let eof = got == 0;
        if let Some(nl) = buf[old..]
            .iter()
            .rposition(|&c| c == b'\n')
            .map(|i| old + i)
        {
            let mut base = lines_before;
            map_in_order(cut(&buf[..=nl]), parse_piece, |p| {
                let lines = p.lines;
                piece(p, base)?;
                base += lines;
                Ok(())
            })?;
            lines_before = base;
            buf.drain(..=nl);
        }
        if eof {
            if !buf.is_empty() {
                let text =
                    std::str::from_utf8(&buf).map_err(|_| not_utf8(path, lines_before + 1))?;
                last(text, lines_before + 1)?;
            }
            return Ok(());
        }
    }
}

/// The error for a line that is not UTF-8, as a line reader gives it.
pub(crate) fn not_utf8(path: &Path, line: u64) -> InputError {
    InputError::new(
        path,
        Location::Line(line),
        "cannot read: stream did not contain valid UTF-8",
    )
}

fn count_lines(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

/// Cuts `text` (whole lines) into pieces for every core, each ending just after a newline.
fn cut(text: &[u8]) -> Vec<&[u8]> {
    let want = rayon::current_num_threads() * PIECES_PER_CORE;
    let size = text.len().div_ceil(want).max(MIN_PIECE);
    let mut pieces = Vec::with_capacity(want);
    let mut rest = text;
    while !rest.is_empty() {
        let cut = if rest.len() <= size {
            rest.len()
        } else {
            // The text ends with a newline, so one is always found.
            rest[size..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(rest.len(), |p| size + p + 1)
        };
        let (piece, after) = rest.split_at(cut);
        pieces.push(piece);
        rest = after;
    }
    pieces
}

/// Parses the lines of one piece; stops at the first bad one (the caller stops there too).
/// `short` is the thread's table of short names, used again piece after piece (a table grown
/// from empty for each piece rehashed as often as it doubled).
fn parse_piece<'a>(short: &mut FxHashMap<u128, u32>, bytes: &'a [u8]) -> Piece<'a> {
    let mut p = Piece {
        items: Vec::new(),
        names: Vec::new(),
        lines: 0,
    };
    // Lines up to the first that is not UTF-8 are parsed; that one is the piece's last item.
    let (text, bad) = match std::str::from_utf8(bytes) {
        Ok(t) => (t, None),
        Err(e) => {
            let upto = bytes[..e.valid_up_to()]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |i| i + 1);
            // Whole lines, all UTF-8.
            let t = std::str::from_utf8(&bytes[..upto]).unwrap_or_default();
            (t, Some(upto))
        }
    };
    short.clear();
    let mut keys = LocalKeys {
        short,
        long: FxHashMap::default(),
    };
    let mut line_ops = Vec::new();
    for raw in text.split_terminator('\n') {
        p.lines += 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        line_ops.clear();
        match Rec::parse(t, &mut line_ops) {
            Ok(Rec::Fast(head)) => {
                let mut ops = Vec::with_capacity(line_ops.len());
                let mut app = super::jsonl::AppVals::default();
                for (i, op) in line_ops.iter().enumerate() {
                    if let Some(a) = op.app {
                        app.push(i as u32, a);
                    }
                    let k = keys.number(op.key, text, &mut p.names);
                    ops.push(match (op.kind, op.value) {
                        (b'w', v) => (OpKind::Write, k, v.unwrap_or(ABSENT_VALUE)),
                        (_, Some(v)) => (OpKind::Read, k, v),
                        (_, None) => (OpKind::ReadInit, k, 0),
                    });
                }
                p.items.push(Item::Fast {
                    line: p.lines,
                    head,
                    ops,
                    app,
                });
            }
            Ok(Rec::Slow(rec)) => p.items.push(Item::Slow { line: p.lines, rec }),
            Err(err) => {
                p.items.push(Item::Bad { line: p.lines, err });
                // The rest of the piece is counted, not parsed: nothing after an error is read.
                let after = raw.as_ptr() as usize - bytes.as_ptr() as usize + raw.len() + 1;
                p.lines += count_lines(&bytes[after.min(bytes.len())..]);
                return p;
            }
        }
    }
    if let Some(upto) = bad {
        p.items.push(Item::NotUtf8 { line: p.lines + 1 });
        p.lines += count_lines(&bytes[upto..]);
    }
    p
}
