//! dbcop's JSON histories (the current dbcop): an array of sessions, each an array of
//! `{"events": [...], "committed": bool}`, bare or inside `{"params", "info", "start", "end",
//! "data"}`. Value 0 is every key's initial value. See `docs/history-format.md`.
//!
//! A hand-written reader rather than serde: errors name the line of the event that is wrong, and
//! a history is never held as a JSON tree, nor as text: it is parsed as it is read (from a
//! `Source`).

use super::gather::{Collector, POp, PTxn};
use super::source::Source;
use super::{Format, Loaded};
use crate::error::{InputError, Location};
use crate::model::{OpKind, TxnStatus};
use std::io::Read;
use std::path::Path;

/// Deeper nesting is refused rather than risking the stack: a history nests four levels.
const MAX_DEPTH: usize = 200;

/// Reads a dbcop JSON history from `input`; `path` names it in errors. The input is read as it
/// is parsed, never held whole; a read error is reported in place of whatever the parser made
/// of the input up to it.
pub fn read_json(input: impl Read, path: &Path) -> Result<Loaded, InputError> {
    let mut r = JsonReader {
        j: Json::new(input, path),
        col: Collector::new(),
        sessions: 0,
        next_ext: 1,
    };
    let res = r.history();
    match r.j.s.take_error() {
        Some(e) => Err(InputError::io(path, e)),
        None => res
            .and_then(|()| r.col.finish(path, true))
            .map(|history| Loaded {
                history,
                warnings: Vec::new(),
                format: Format::Dbcop,
            }),
    }
}

/// A JSON scalar as an event field needs it.
enum Scalar {
    Null,
    Nat(u64),
    Str(String),
    /// Anything else, described for an error message.
    Other(String),
}

fn describe(s: &Scalar) -> String {
    match s {
        Scalar::Null => "null".to_string(),
        Scalar::Nat(n) => n.to_string(),
        Scalar::Str(s) => format!("the string {s:?}"),
        Scalar::Other(d) => d.clone(),
    }
}

/// A pull parser over JSON text that knows the line it is on, so every error, including those
/// about the meaning of a value, names its line.
struct Json<'a, R> {
    s: Source<R>,
    line: u64,
    path: &'a Path,
    /// The bytes of the string or number being read.
    scratch: Vec<u8>,
}

impl<'a, R: Read> Json<'a, R> {
    fn new(r: R, path: &'a Path) -> Self {
        let mut s = Source::new(r);
        if s.starts_with(b"\xEF\xBB\xBF") {
            s.advance(3);
        }
        Json {
            s,
            line: 1,
            path,
            scratch: Vec::new(),
        }
    }

    fn err(&self, msg: impl Into<String>) -> InputError {
        InputError::new(self.path, Location::Line(self.line), msg)
    }
    fn err_at(&self, line: u64, msg: impl Into<String>) -> InputError {
        InputError::new(self.path, Location::Line(line), msg)
    }

    fn peek(&mut self) -> Option<u8> {
        while let Some(c) = self.s.peek() {
            match c {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => return Some(c),
            }
            self.s.bump();
        }
        None
    }

    fn found(&mut self) -> String {
        match self.peek() {
            None => "the end of the input".to_string(),
            Some(c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(c) => format!("byte 0x{c:02x}"),
        }
    }

    fn expect(&mut self, c: u8, context: &str) -> Result<(), InputError> {
        if self.peek() == Some(c) {
            self.s.bump();
            return Ok(());
        }
        let found = self.found();
        Err(self.err(format!("expected '{}' {context}, found {found}", c as char)))
    }

    /// In an array or object whose opening bracket is consumed: whether another element
    /// follows (consuming its comma), or the closing bracket (consumed).
    fn more(&mut self, first: &mut bool, close: u8) -> Result<bool, InputError> {
        match self.peek() {
            Some(c) if c == close => {
                self.s.bump();
                Ok(false)
            }
            Some(b',') if !*first => {
                self.s.bump();
                match self.peek() {
                    Some(c) if c == close => {
                        Err(self.err(format!("a trailing ',' before '{}'", close as char)))
                    }
                    _ => Ok(true),
                }
            }
            Some(_) if *first => {
                *first = false;
                Ok(true)
            }
            _ => {
                let found = self.found();
                Err(self.err(format!(
                    "expected ',' or '{}', found {found}",
                    close as char
                )))
            }
        }
    }

    /// The next key of an object, with its ':' consumed; `None` at the closing brace.
    fn key(&mut self, first: &mut bool) -> Result<Option<String>, InputError> {
        if !self.more(first, b'}')? {
            return Ok(None);
        }
        if self.peek() != Some(b'"') {
            let found = self.found();
            return Err(self.err(format!("expected a field name in quotes, found {found}")));
        }
        let k = self.string()?;
        self.expect(b':', "after a field name")?;
        Ok(Some(k))
    }

    fn string(&mut self) -> Result<String, InputError> {
        let line = self.line;
        self.scratch.clear();
        self.s.bump();
        self.scratch.push(b'"');
        loop {
            self.s
                .take_while(&mut self.scratch, |c| !matches!(c, b'"' | b'\\' | b'\n'));
            match self.s.next_byte() {
                None | Some(b'\n') => {
                    return Err(self.err_at(line, "a string opened on this line is never closed"))
                }
                Some(b'"') => break,
                Some(c) => {
                    // A backslash: it and the byte after it, whatever that is.
                    self.scratch.push(c);
                    if let Some(e) = self.s.next_byte() {
                        self.scratch.push(e);
                    }
                }
            }
        }
        self.scratch.push(b'"');
        serde_json::from_slice::<String>(&self.scratch)
            .map_err(|e| self.err_at(line, format!("a bad string: {e}")))
    }

    fn literal(&mut self) -> Result<&'static str, InputError> {
        for w in ["true", "false", "null"] {
            if self.s.starts_with(w.as_bytes()) {
                self.s.advance(w.len());
                return Ok(w);
            }
        }
        let found = self.found();
        Err(self.err(format!("expected a JSON value, found {found}")))
    }

    fn number(&mut self) -> Result<Scalar, InputError> {
        self.scratch.clear();
        self.s.take_while(&mut self.scratch, |c| {
            c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E')
        });
        let text = std::str::from_utf8(&self.scratch).unwrap_or_default();
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
            return Err(self.err(format!("{text:?} is not a JSON number")));
        }
        Ok(match text.parse::<u64>() {
            Ok(n) if text.bytes().all(|c| c.is_ascii_digit()) => Scalar::Nat(n),
            _ => Scalar::Other(text.to_string()),
        })
    }

    fn scalar(&mut self, depth: usize) -> Result<Scalar, InputError> {
        match self.peek() {
            Some(b'"') => Ok(Scalar::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[') => {
                self.skip_value(depth)?;
                Ok(Scalar::Other("an array".to_string()))
            }
            Some(b'{') => {
                self.skip_value(depth)?;
                Ok(Scalar::Other("an object".to_string()))
            }
            _ => Ok(match self.literal()? {
                "null" => Scalar::Null,
                w => Scalar::Other(w.to_string()),
            }),
        }
    }

    fn skip_value(&mut self, depth: usize) -> Result<(), InputError> {
        if depth > MAX_DEPTH {
            return Err(self.err(format!("values nested more than {MAX_DEPTH} deep")));
        }
        match self.peek() {
            Some(b'[') => {
                self.s.bump();
                let mut first = true;
                while self.more(&mut first, b']')? {
                    self.skip_value(depth + 1)?;
                }
            }
            Some(b'{') => {
                self.s.bump();
                let mut first = true;
                while self.key(&mut first)?.is_some() {
                    self.skip_value(depth + 1)?;
                }
            }
            _ => {
                self.scalar(depth)?;
            }
        }
        Ok(())
    }

    fn boolean(&mut self, field: &str) -> Result<bool, InputError> {
        match self.scalar(3)? {
            Scalar::Other(w) if w == "true" => Ok(true),
            Scalar::Other(w) if w == "false" => Ok(false),
            other => Err(self.err(format!(
                "\"{field}\" must be true or false, not {}",
                describe(&other)
            ))),
        }
    }
}

/// An event as read, before keys get ids.
struct Event {
    write: bool,
    variable: String,
    version: Option<u64>,
    line: u64,
    /// OOPSLA'19 events carry whether they were executed; the others always were.
    executed: bool,
}

struct JsonReader<'a, R> {
    j: Json<'a, R>,
    col: Collector,
    sessions: u64,
    next_ext: u64,
}

impl<R: Read> JsonReader<'_, R> {
    fn variable(&mut self, line: u64) -> Result<String, InputError> {
        match self.j.scalar(4)? {
            Scalar::Nat(n) => Ok(n.to_string()),
            Scalar::Str(s) => Ok(s),
            other => Err(self.j.err_at(
                line,
                format!(
                    "a variable must be a non-negative integer or a string, not {}",
                    describe(&other)
                ),
            )),
        }
    }

    fn version(&mut self, line: u64, write: bool) -> Result<Option<u64>, InputError> {
        match self.j.scalar(4)? {
            Scalar::Nat(n) => Ok(Some(n)),
            Scalar::Null if !write => Ok(None),
            other => Err(self.j.err_at(
                line,
                format!(
                    "a {} version must be an integer from 0 to {}{}, not {}",
                    if write { "written" } else { "read" },
                    u64::MAX,
                    if write {
                        ""
                    } else {
                        " (or null for the initial state)"
                    },
                    describe(&other)
                ),
            )),
        }
    }

    fn event(&mut self) -> Result<Event, InputError> {
        self.j.peek();
        let line = self.j.line;
        let shape = "an event is {\"Read\": {...}}, {\"Write\": {...}} or [\"r\" or \"w\", variable, version]";
        match self.j.peek() {
            Some(b'[') => {
                self.j.s.bump();
                let mut first = true;
                let mut n = 0;
                let mut fields = (false, String::new(), None);
                while self.j.more(&mut first, b']')? {
                    match n {
                        0 => {
                            fields.0 = match self.j.scalar(4)? {
                                Scalar::Str(t) if t == "r" => false,
                                Scalar::Str(t) if t == "w" => true,
                                other => {
                                    let kind = match other {
                                        Scalar::Str(t) => format!("{t:?}"),
                                        o => describe(&o),
                                    };
                                    return Err(self.j.err_at(
                                        line,
                                        format!(
                                            "unknown event kind {kind}; expected \"r\" or \"w\""
                                        ),
                                    ));
                                }
                            }
                        }
                        1 => fields.1 = self.variable(line)?,
                        2 => fields.2 = self.version(line, fields.0)?,
                        _ => {
                            return Err(self.j.err_at(
                                line,
                                format!("{shape}; this one has more than 3 elements"),
                            ))
                        }
                    }
                    n += 1;
                }
                if n != 3 {
                    return Err(self
                        .j
                        .err_at(line, format!("{shape}; this one has {n} elements")));
                }
                Ok(Event {
                    write: fields.0,
                    variable: fields.1,
                    version: fields.2,
                    line,
                    executed: true,
                })
            }
            Some(b'{') => {
                self.j.s.bump();
                let mut first = true;
                let Some(tag) = self.j.key(&mut first)? else {
                    return Err(self.j.err_at(line, format!("{shape}; this one is empty")));
                };
                match tag.as_str() {
                    "Read" | "Write" => {
                        let write = tag == "Write";
                        self.j.expect(b'{', &format!("after \"{tag}\":"))?;
                        let (mut variable, mut version) = (None, None);
                        let mut inner_first = true;
                        while let Some(k) = self.j.key(&mut inner_first)? {
                            match k.as_str() {
                                "variable" => variable = Some(self.variable(line)?),
                                "version" => version = Some(self.version(line, write)?),
                                _ => self.j.skip_value(4)?,
                            }
                        }
                        if self.j.key(&mut first)?.is_some() {
                            return Err(self
                                .j
                                .err_at(line, format!("{shape}; this one has a second field")));
                        }
                        let (Some(variable), Some(version)) = (variable, version) else {
                            return Err(self.j.err_at(
                                line,
                                format!("a {tag} event needs \"variable\" and \"version\""),
                            ));
                        };
                        Ok(Event {
                            write,
                            variable,
                            version,
                            line,
                            executed: true,
                        })
                    }
                    "write" | "variable" | "value" | "success" => {
                        let (mut write, mut variable, mut value, mut success) =
                            (None, None, None, None);
                        let mut k = Some(tag);
                        while let Some(name) = k {
                            match name.as_str() {
                                "write" => write = Some(self.j.boolean("write")?),
                                "variable" => variable = Some(self.variable(line)?),
                                "value" => value = Some(self.version(line, true)?),
                                "success" => success = Some(self.j.boolean("success")?),
                                _ => self.j.skip_value(4)?,
                            }
                            k = self.j.key(&mut first)?;
                        }
                        let (Some(write), Some(variable), Some(Some(value)), Some(success)) =
                            (write, variable, value, success)
                        else {
                            return Err(self.j.err_at(
                                line,
                                "an OOPSLA'19 event needs \"write\", \"variable\", \"value\" and \"success\"",
                            ));
                        };
                        Ok(Event {
                            write,
                            variable,
                            version: Some(value),
                            line,
                            executed: success,
                        })
                    }
                    _ => Err(self
                        .j
                        .err_at(line, format!("unknown event {tag:?}; {shape}"))),
                }
            }
            _ => {
                let found = self.j.found();
                Err(self
                    .j
                    .err(format!("expected an event, found {found}; {shape}")))
            }
        }
    }

    fn txn(&mut self, s: usize) -> Result<(), InputError> {
        self.j.peek();
        let line = self.j.line;
        self.j.expect(
            b'{',
            "to open a transaction {\"events\": [...], \"committed\": ...}",
        )?;
        let mut first = true;
        let (mut events, mut committed) = (None, None);
        while let Some(k) = self.j.key(&mut first)? {
            match k.as_str() {
                "events" => {
                    self.j.expect(b'[', "to open a transaction's events")?;
                    let mut ev = Vec::new();
                    let mut efirst = true;
                    while self.j.more(&mut efirst, b']')? {
                        ev.push(self.event()?);
                    }
                    events = Some(ev);
                }
                "committed" | "success" => committed = Some(self.j.boolean(&k)?),
                _ => self.j.skip_value(3)?,
            }
        }
        let Some(events) = events else {
            return Err(self.j.err_at(line, "a transaction without \"events\""));
        };
        let Some(committed) = committed else {
            return Err(self
                .j
                .err_at(line, "a transaction without \"committed\": true or false"));
        };
        let status = if committed {
            TxnStatus::Committed
        } else {
            TxnStatus::Aborted
        };
        let mut t = PTxn::new(self.next_ext, status, Location::Line(line));
        self.next_ext += 1;
        for e in events.into_iter().filter(|e| e.executed) {
            let key = self.col.key(&e.variable);
            let (kind, value) = match (e.write, e.version) {
                (true, v) => (OpKind::Write, v.unwrap_or_default()),
                (false, Some(v)) => (OpKind::Read, v),
                (false, None) => (OpKind::ReadInit, 0),
            };
            t.ops.push(POp {
                kind,
                key,
                value,
                at: Location::Line(e.line),
            });
        }
        self.col.push(s, t);
        Ok(())
    }

    fn sessions(&mut self) -> Result<(), InputError> {
        self.j.expect(b'[', "to open the array of sessions")?;
        let mut first = true;
        while self.j.more(&mut first, b']')? {
            self.sessions += 1;
            let s = self.col.session(&self.sessions.to_string());
            self.j
                .expect(b'[', "to open a session (an array of transactions)")?;
            let mut tfirst = true;
            while self.j.more(&mut tfirst, b']')? {
                self.txn(s)?;
            }
        }
        Ok(())
    }

    /// The whole history: an array of sessions, or an object with them in `"data"`; nothing
    /// after it.
    fn history(&mut self) -> Result<(), InputError> {
        match self.j.peek() {
            Some(b'[') => self.sessions()?,
            Some(b'{') => {
                let line = self.j.line;
                self.j.s.bump();
                let mut first = true;
                let mut data = false;
                while let Some(k) = self.j.key(&mut first)? {
                    if k == "data" {
                        if data {
                            return Err(self.j.err("a second \"data\" field"));
                        }
                        self.sessions()?;
                        data = true;
                    } else {
                        self.j.skip_value(1)?;
                    }
                }
                if !data {
                    return Err(self
                        .j
                        .err_at(line, "the history object has no \"data\" field"));
                }
            }
            _ => {
                let found = self.j.found();
                return Err(self.j.err(format!(
                    "expected a dbcop history (an array of sessions, or an object with \"data\"), found {found}"
                )));
            }
        }
        if self.j.peek().is_some() {
            return Err(self.j.err("more text after the history"));
        }
        Ok(())
    }
}
