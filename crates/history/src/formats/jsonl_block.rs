//! JSON Lines read in large blocks of whole lines, each block cut into pieces parsed on every
//! core and handed back in line order: the calling thread takes each piece as soon as it and
//! the ones before it are parsed (parsing pieces itself while the next is not ready), so
//! adding a piece to the history overlaps parsing the rest. Parsing is pure (no key table, no
//! session table), so the order in which pieces finish cannot change what the caller sees: it
//! meets records and the first bad line (not JSON, or not UTF-8) exactly where a line-by-line
//! reader would.

use super::jsonl_scan::{itoa_buf, scan, LineRef, NameRef, OpRef, OpSink};
use super::jsonl_serde::{LineIn, OpVal};
use crate::error::{InputError, Location};
use crate::fxhash::FxHashMap;
use crate::in_order::{lock, map_in_order};
use crate::model::{OpKind, ABSENT_VALUE};
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;
use std::sync::Mutex;

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
    pub fn parse(text: &'a str, ops: &mut impl OpSink<'a>) -> Result<Rec<'a>, serde_json::Error> {
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
    /// A scanned record: its operations are `head.first..head.end` of [`Piece::ops`], which
    /// first names `names[..names_end]` of [`Piece::names`].
    Fast {
        line: u64,
        head: LineRef<'a>,
        names_end: u32,
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
    /// The operations of its scanned records.
    pub ops: PieceOps,
    /// Lines in the piece, for the next piece's numbering.
    pub lines: u64,
}

/// Operations as the model stores them, but for their keys: each is its number among the
/// piece's names, the operation's kind in its top two bits ([`pack`]). Twelve bytes an
/// operation, written once as the line is scanned and read once as the calling thread stores
/// them in file order.
#[derive(Default)]
pub(crate) struct PieceOps {
    pub keys: Vec<u32>,
    pub values: Vec<u64>,
}

/// Pieces of this many bytes or more (a single line that long) are left to serde: a piece's key
/// numbers must stay below 2^30 for [`pack`], and a name takes a byte at least.
const SCAN_BELOW: usize = 1 << 30;

/// A key number and an operation kind in one word (see [`SCAN_BELOW`]).
#[inline]
pub(crate) fn pack(kind: OpKind, key: u32) -> u32 {
    let k = match kind {
        OpKind::Read => 0,
        OpKind::ReadInit => 1,
        OpKind::Write => 2,
    };
    k << 30 | key
}

/// The kind and key number [`pack`] put in one word.
#[inline]
pub(crate) fn unpack(x: u32) -> (OpKind, u32) {
    let kind = match x >> 30 {
        0 => OpKind::Read,
        1 => OpKind::ReadInit,
        _ => OpKind::Write,
    };
    (kind, x & ((1 << 30) - 1))
}

/// The scanner's sink for a piece: operations stored in [`PieceOps`] as they are scanned, their
/// keys numbered once the line is, in one tight loop ([`PieceSink::number_line`]): the table of
/// names outgrows the cache, and lookups one after another overlap their misses, where lookups
/// between the scanner's branches waited for each in turn (a third of parsing).
struct PieceSink<'a, 's> {
    keys: LocalKeys<'a, 's>,
    names: Vec<(NameRef<'a>, u128)>,
    text: &'a str,
    ops: PieceOps,
    /// The keys of the current line's operations, not yet numbered.
    line_keys: Vec<NameRef<'a>>,
    /// (op, value) of the current line, the op counted among the piece's.
    apps: Vec<(usize, &'a str)>,
}

impl PieceSink<'_, '_> {
    /// Starts a line.
    fn clear_line(&mut self) {
        self.line_keys.clear();
        self.apps.clear();
    }

    /// Numbers the keys of the line just scanned, its operations from `first` on.
    fn number_line(&mut self, first: usize) {
        let keys = &mut self.ops.keys[first..];
        for (x, &name) in keys.iter_mut().zip(&self.line_keys) {
            *x |= self.keys.number(name, self.text, &mut self.names);
        }
    }
}

impl<'a> OpSink<'a> for PieceSink<'a, '_> {
    fn len(&self) -> usize {
        self.ops.keys.len()
    }

    #[inline]
    fn push(&mut self, op: OpRef<'a>) {
        self.line_keys.push(op.key);
        let (kind, v) = match (op.kind, op.value) {
            (b'w', v) => (OpKind::Write, v.unwrap_or(ABSENT_VALUE)),
            (_, Some(v)) => (OpKind::Read, v),
            (_, None) => (OpKind::ReadInit, 0),
        };
        if let Some(a) = op.app {
            self.apps.push((self.ops.keys.len(), a));
        }
        self.ops.keys.push(pack(kind, 0));
        self.ops.values.push(v);
    }

    fn rollback(&mut self, ops: usize) {
        // Keys are numbered only once a line is scanned whole.
        self.ops.keys.truncate(ops);
        self.ops.values.truncate(ops);
        self.clear_line();
    }
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

/// Where a log's bytes come from: a regular file mapped into memory (read in place: no copy,
/// and no fresh buffer, whose first touch cost this machine more than parsing its bytes), or
/// any other reader (standard input, a pipe), read into a buffer a block at a time.
pub(crate) enum Input<'m> {
    Mapped(&'m [u8]),
    Reader(Box<dyn Read + 'm>),
}

/// Reads `input` (named `path` in errors) in blocks of whole lines. `piece(piece, lines
/// before)` gets each piece parsed, in order; `last(text, line)` the final line when the input
/// does not end with a newline (a writer stopped mid-record: the caller decides what to
/// recover).
pub(crate) fn read_blocks(
    input: Input<'_>,
    path: &Path,
    mut piece: impl FnMut(&mut Piece<'_>, u64) -> Result<(), InputError>,
    last: impl FnMut(&str, u64) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let mut lines_before = 0u64;
    let spare = Mutex::new(Vec::new());
    let rest = match input {
        Input::Mapped(mut rest) => {
            // Blocks as a reader would cut them, so that a block's parsed lines stay bounded.
            while let Some(nl) = block_end(rest) {
                let (block, after) = rest.split_at(nl + 1);
                whole_lines(block, &mut lines_before, &spare, &mut piece)?;
                rest = after;
            }
            rest
        }
        Input::Reader(mut input) => {
            let mut buf: Vec<u8> = Vec::with_capacity(BLOCK);
            loop {
                // What is left from the last read holds no line end: only the new bytes are
                // searched (searching it all again made one long line, a proxy's initial
                // state, quadratic).
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
                if let Some(nl) = buf[old..]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map(|i| old + i)
                {
                    whole_lines(&buf[..=nl], &mut lines_before, &spare, &mut piece)?;
                    buf.drain(..=nl);
                }
                if got == 0 {
                    break;
                }
            }
            return last_line(&buf, path, lines_before, last);
        }
    };
    last_line(rest, path, lines_before, last)
}

/// Where the first block of `rest` ends: the last newline of its first [`BLOCK`] bytes, or the
/// first after them where a line is longer; `None` when `rest` holds no newline.
fn block_end(rest: &[u8]) -> Option<usize> {
    let head = &rest[..rest.len().min(BLOCK)];
    head.iter().rposition(|&c| c == b'\n').or_else(|| {
        rest[head.len()..]
            .iter()
            .position(|&c| c == b'\n')
            .map(|p| head.len() + p)
    })
}

/// Parses `text` (whole lines) on every core, handing its pieces to `piece` in order. A piece's
/// operations, once the caller has stored them, leave their room in `spare` for a later piece:
/// a long log's pieces reuse a few pieces' worth of memory (first touches of fresh memory cost
/// this machine about as much as parsing what fills it).
fn whole_lines(
    text: &[u8],
    lines_before: &mut u64,
    spare: &Mutex<Vec<PieceOps>>,
    piece: &mut impl FnMut(&mut Piece<'_>, u64) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let parse = |short: &mut FxHashMap<u128, u32>, bytes| {
        let room = lock(spare).pop().unwrap_or_default();
        parse_piece(short, bytes, room)
    };
    map_in_order(cut(text), parse, |mut p| {
        piece(&mut p, *lines_before)?;
        *lines_before += p.lines;
        let mut room = p.ops;
        room.keys.clear();
        room.values.clear();
        lock(spare).push(room);
        Ok(())
    })
}

/// The bytes after the last newline, if any: a last line without one.
fn last_line(
    rest: &[u8],
    path: &Path,
    lines_before: u64,
    mut last: impl FnMut(&str, u64) -> Result<(), InputError>,
) -> Result<(), InputError> {
    if rest.is_empty() {
        return Ok(());
    }
    let text = std::str::from_utf8(rest).map_err(|_| not_utf8(path, lines_before + 1))?;
    last(text, lines_before + 1)
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
fn parse_piece<'a>(
    short: &mut FxHashMap<u128, u32>,
    bytes: &'a [u8],
    mut room: PieceOps,
) -> Piece<'a> {
    let (mut items, mut lines) = (Vec::new(), 0u64);
    // Lines up to the first that is not UTF-8 are parsed; that one is the piece's last item.
    let (text, mut bad) = match std::str::from_utf8(bytes) {
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
    let mut sink = PieceSink {
        keys: LocalKeys {
            short,
            long: FxHashMap::default(),
        },
        names: Vec::new(),
        text,
        ops: {
            // Room for as many operations as the piece could hold (ten bytes each at least), so
            // that storing them never copies them; what is not written is never touched.
            room.keys.reserve(text.len() / 10 + 1);
            room.values.reserve(text.len() / 10 + 1);
            room
        },
        line_keys: Vec::new(),
        apps: Vec::new(),
    };
    for raw in text.split_terminator('\n') {
        lines += 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        sink.clear_line();
        let rec = if text.len() < SCAN_BELOW {
            Rec::parse(t, &mut sink)
        } else {
            serde_json::from_str(t).map(Rec::Slow)
        };
        match rec {
            Ok(Rec::Fast(head)) => {
                sink.number_line(head.first);
                let mut app = super::jsonl::AppVals::default();
                for &(o, a) in &sink.apps {
                    app.push((o - head.first) as u32, a);
                }
                items.push(Item::Fast {
                    line: lines,
                    head,
                    names_end: sink.names.len() as u32,
                    app,
                });
            }
            Ok(Rec::Slow(rec)) => items.push(Item::Slow { line: lines, rec }),
            Err(err) => {
                items.push(Item::Bad { line: lines, err });
                // The rest of the piece is counted, not parsed: nothing after an error is read.
                let after = raw.as_ptr() as usize - bytes.as_ptr() as usize + raw.len() + 1;
                lines += count_lines(&bytes[after.min(bytes.len())..]);
                bad = None;
                break;
            }
        }
    }
    if let Some(upto) = bad {
        items.push(Item::NotUtf8 { line: lines + 1 });
        lines += count_lines(&bytes[upto..]);
    }
    Piece {
        items,
        names: sink.names,
        ops: sink.ops,
        lines,
    }
}
