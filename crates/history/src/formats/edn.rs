//! EDN syntax: reads the text of Jepsen histories into [`Node`]s (value plus line), knowing
//! nothing of what the values mean. Kept apart from `elle`, which gives them their meaning, so
//! that the tokenizer's many corner cases (strings, characters, tags, discards) are read and
//! tested on their own; errors name the line a form starts on. The text is read as it is parsed
//! (from a `Source`), so a large history is held one operation at a time, never whole.

use super::source::Source;
use crate::error::{InputError, Location};
use std::io::Read;
use std::path::Path;

/// Deeper nesting is refused rather than risking the stack: histories nest a few levels.
const MAX_DEPTH: usize = 200;

/// An EDN value. Only what histories need is interpreted; the rest is kept to describe it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Nil,
    Bool(bool),
    Int(i128),
    /// A number that is not an integer that fits in i128 (float, ratio, decimal, ##Inf).
    Num(String),
    Str(String),
    Char(char),
    Kw(String),
    Sym(String),
    Vector(Vec<Node>),
    List(Vec<Node>),
    Map(Vec<(Node, Node)>),
    Set(Vec<Node>),
    Tagged(String, Box<Node>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// The line the form starts on.
    pub line: u64,
    pub val: Val,
}

/// How an error message shows a value it did not expect.
pub(crate) fn describe(v: &Val) -> String {
    match v {
        Val::Nil => "nil".to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Num(s) => format!("the number {s}"),
        Val::Str(s) => format!("the string {s:?}"),
        Val::Char(c) => format!("the character {c:?}"),
        Val::Kw(k) => format!(":{k}"),
        Val::Sym(s) => format!("the symbol {s}"),
        Val::Vector(_) => "a vector".to_string(),
        Val::List(_) => "a list".to_string(),
        Val::Map(_) => "a map".to_string(),
        Val::Set(items) => format!("a set of {} elements", items.len()),
        Val::Tagged(t, _) => format!("a #{t} form"),
    }
}

fn is_closer(c: u8) -> bool {
    matches!(c, b')' | b']' | b'}')
}

fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t'
            | b'\n'
            | b'\r'
            | 0x0c
            | b','
            | b'('
            | b')'
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'"'
            | b';'
    )
}

fn closer_of(open: u8) -> (u8, &'static str) {
    match open {
        b'[' => (b']', "vector"),
        b'(' => (b')', "list"),
        _ => (b'}', "map"),
    }
}

struct Parser<'a, R> {
    s: Source<R>,
    line: u64,
    path: &'a Path,
    /// The bytes of the token being read.
    scratch: Vec<u8>,
}

impl<'a, R: Read> Parser<'a, R> {
    pub fn new(r: R, path: &'a Path) -> Self {
        let mut s = Source::new(r);
        if s.starts_with(b"\xEF\xBB\xBF") {
            s.advance(3);
        }
        Parser {
            s,
            line: 1,
            path,
            scratch: Vec::new(),
        }
    }

    fn err(&self, line: u64, msg: impl Into<String>) -> InputError {
        InputError::new(self.path, Location::Line(line), msg)
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.s.peek() {
            match c {
                b'\n' => {
                    self.line += 1;
                    self.s.bump();
                }
                b' ' | b'\t' | b'\r' | b',' | 0x0c => self.s.bump(),
                b';' => {
                    while self.s.peek().is_some_and(|c| c != b'\n') {
                        self.s.bump();
                    }
                }
                _ => break,
            }
        }
    }

    /// The byte that starts the next form or closes the open one, past whitespace, comments
    /// and `#_` discards; `None` at the end of the input.
    pub fn skip(&mut self, depth: usize) -> Result<Option<u8>, InputError> {
        loop {
            self.skip_ws();
            let next = self.s.peek();
            if next != Some(b'#') || self.s.peek_at(1) != Some(b'_') {
                return Ok(next);
            }
            let line = self.line;
            if depth > MAX_DEPTH {
                return Err(self.err(line, format!("forms nested more than {MAX_DEPTH} deep")));
            }
            self.s.advance(2);
            match self.skip(depth + 1)? {
                Some(c) if !is_closer(c) => {
                    self.form(depth + 1)?;
                }
                _ => return Err(self.err(line, "#_ is not followed by a form to discard")),
            }
        }
    }

    /// Reads one form; the caller has seen (with [`Self::skip`]) that one starts here.
    pub fn form(&mut self, depth: usize) -> Result<Node, InputError> {
        let line = self.line;
        if depth > MAX_DEPTH {
            return Err(self.err(line, format!("forms nested more than {MAX_DEPTH} deep")));
        }
        // The caller has seen a byte here; `None` cannot happen, and reads as a closer would.
        let c = self.s.peek().unwrap_or(b')');
        let val = match c {
            b'[' | b'(' | b'{' => {
                self.s.bump();
                let (close, what) = closer_of(c);
                let items = self.items(close, what, line, depth)?;
                match c {
                    b'[' => Val::Vector(items),
                    b'(' => Val::List(items),
                    _ => {
                        if items.len() % 2 != 0 {
                            return Err(self.err(
                                line,
                                format!(
                                    "the map opened on this line holds {} forms; a map needs key-value pairs",
                                    items.len()
                                ),
                            ));
                        }
                        let mut it = items.into_iter();
                        let mut pairs = Vec::new();
                        while let (Some(k), Some(v)) = (it.next(), it.next()) {
                            pairs.push((k, v));
                        }
                        Val::Map(pairs)
                    }
                }
            }
            b'#' => self.dispatch(line, depth)?,
            b'"' => {
                self.s.bump();
                Val::Str(self.string(line)?)
            }
            b'\\' => self.character(line)?,
            c if is_closer(c) => {
                return Err(self.err(
                    line,
                    format!("unbalanced '{}': nothing is open here", c as char),
                ))
            }
            _ => self.atom(line)?,
        };
        Ok(Node { line, val })
    }

    fn items(
        &mut self,
        close: u8,
        what: &str,
        open: u64,
        depth: usize,
    ) -> Result<Vec<Node>, InputError> {
        let mut v = Vec::new();
        loop {
            match self.skip(depth)? {
                None => {
                    return Err(self.err(
                        open,
                        format!("unbalanced: the {what} opened on this line is never closed (the input ends first)"),
                    ))
                }
                Some(c) if c == close => {
                    self.s.bump();
                    return Ok(v);
                }
                Some(c) if is_closer(c) => {
                    return Err(self.err(
                        self.line,
                        format!(
                            "unbalanced: '{}' where the {what} opened on line {open} needs '{}'",
                            c as char, close as char
                        ),
                    ))
                }
                Some(_) => v.push(self.form(depth + 1)?),
            }
        }
    }

    fn dispatch(&mut self, line: u64, depth: usize) -> Result<Val, InputError> {
        match self.s.peek_at(1) {
            Some(b'{') => {
                self.s.advance(2);
                Ok(Val::Set(self.items(b'}', "set", line, depth)?))
            }
            Some(b'#') => {
                self.s.advance(2);
                let t = self.token_str(line)?;
                Ok(Val::Num(format!("##{t}")))
            }
            Some(b'"') => {
                // A Clojure regex literal: kept as its text.
                self.s.advance(2);
                Ok(Val::Str(self.string(line)?))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                self.s.bump();
                let tag = self.token_str(line)?;
                match self.skip(depth)? {
                    Some(c) if !is_closer(c) => {
                        let inner = self.form(depth + 1)?;
                        Ok(Val::Tagged(tag, Box::new(inner)))
                    }
                    _ => Err(self.err(line, format!("the tag #{tag} has no form after it"))),
                }
            }
            _ => Err(self.err(
                line,
                "'#' must start a set #{...}, a tag #name or a discard #_",
            )),
        }
    }

    fn token_str(&mut self, line: u64) -> Result<String, InputError> {
        self.scratch.clear();
        self.s.take_while(&mut self.scratch, |c| !is_delimiter(c));
        std::str::from_utf8(&self.scratch)
            .map(str::to_string)
            .map_err(|_| self.err(line, "not UTF-8 text"))
    }

    fn atom(&mut self, line: u64) -> Result<Val, InputError> {
        let t = self.token_str(line)?;
        Ok(match t.as_str() {
            "nil" => Val::Nil,
            "true" => Val::Bool(true),
            "false" => Val::Bool(false),
            _ if t.starts_with(':') => {
                let name = t.trim_start_matches(':');
                if name.is_empty() {
                    return Err(self.err(line, format!("{t:?} is not a keyword: it has no name")));
                }
                Val::Kw(name.to_string())
            }
            _ => {
                let unsigned = t.strip_prefix(['+', '-']).unwrap_or(&t);
                if unsigned.starts_with(|c: char| c.is_ascii_digit()) {
                    let int = t.strip_suffix('N').unwrap_or(&t);
                    match int.parse::<i128>() {
                        Ok(i) => Val::Int(i),
                        Err(_) => Val::Num(t),
                    }
                } else {
                    Val::Sym(t)
                }
            }
        })
    }

    /// The rest of a string whose opening quote is consumed.
    fn string(&mut self, open: u64) -> Result<String, InputError> {
        let mut out = Vec::new();
        loop {
            let Some(c) = self.s.next_byte() else {
                return Err(self.err(
                    open,
                    "unbalanced: the string opened on this line is never closed (the input ends first)",
                ));
            };
            match c {
                b'"' => break,
                b'\n' => {
                    self.line += 1;
                    out.push(c);
                }
                b'\\' => {
                    let Some(e) = self.s.next_byte() else {
                        continue;
                    };
                    let ch = match e {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'"' => '"',
                        b'\\' => '\\',
                        b'u' => {
                            // Fewer than 4 bytes left: none are taken, as none are hex.
                            let hex = self.s.ahead(4);
                            let hex = if hex.len() == 4 { hex } else { &[] };
                            let code = std::str::from_utf8(hex)
                                .ok()
                                .and_then(|h| u32::from_str_radix(h, 16).ok());
                            let n = hex.len();
                            self.s.advance(n);
                            // A lone surrogate half has no UTF-8 form; its meaning does not
                            // matter to a history, so it is kept as a replacement character.
                            match code {
                                Some(c) if n == 4 => {
                                    char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER)
                                }
                                _ => {
                                    return Err(
                                        self.err(self.line, "\\u in a string needs 4 hex digits")
                                    )
                                }
                            }
                        }
                        _ => {
                            return Err(self.err(
                                self.line,
                                format!("unknown escape \\{} in a string", e as char),
                            ))
                        }
                    };
                    let mut b = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err(open, "a string that is not UTF-8 text"))
    }

    fn character(&mut self, line: u64) -> Result<Val, InputError> {
        self.s.bump();
        let Some(c) = self.s.peek() else {
            return Err(self.err(line, "a '\\' at the end of the input"));
        };
        if is_delimiter(c) {
            self.s.bump();
            if c == b'\n' {
                self.line += 1;
            }
            return Ok(Val::Char(c as char));
        }
        let t = self.token_str(line)?;
        let ch = match t.as_str() {
            "newline" => '\n',
            "space" => ' ',
            "tab" => '\t',
            "return" => '\r',
            "backspace" => '\u{8}',
            "formfeed" => '\u{c}',
            _ if t.len() == 5 && t.starts_with('u') => u32::from_str_radix(&t[1..], 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| self.err(line, format!("unknown character \\{t}")))?,
            _ if t.chars().count() == 1 => t.chars().next().unwrap_or_default(),
            _ => return Err(self.err(line, format!("unknown character \\{t}"))),
        };
        Ok(Val::Char(ch))
    }
}

/// Calls `each` on every top-level form, or, when the input is one vector (or list), on every
/// element of it: a large history is then read op by op and never held as one tree.
///
/// The input is read as it is parsed; a read error is reported in place of whatever the
/// parser or `each` made of the input up to it.
pub(crate) fn each_form(
    input: impl Read,
    path: &Path,
    each: impl FnMut(Node) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let mut p = Parser::new(input, path);
    let r = forms(&mut p, each);
    match p.s.take_error() {
        Some(e) => Err(InputError::io(path, e)),
        None => r,
    }
}

fn forms<R: Read>(
    p: &mut Parser<'_, R>,
    mut each: impl FnMut(Node) -> Result<(), InputError>,
) -> Result<(), InputError> {
    match p.skip(0)? {
        // The whole history as one vector (or list) of operations: read it op by op so that
        // a large history is never held as one tree.
        Some(open @ (b'[' | b'(')) => {
            let line = p.line;
            let (close, what) = closer_of(open);
            p.s.bump();
            loop {
                match p.skip(1)? {
                    None => {
                        return Err(p.err(
                            line,
                            format!("unbalanced: the {what} opened on this line is never closed (the input ends first)"),
                        ))
                    }
                    Some(c) if c == close => {
                        p.s.bump();
                        break;
                    }
                    Some(c) if is_closer(c) => {
                        return Err(p.err(
                            p.line,
                            format!(
                                "unbalanced: '{}' where the {what} opened on line {line} needs '{}'",
                                c as char, close as char
                            ),
                        ))
                    }
                    Some(_) => {
                        let n = p.form(2)?;
                        each(n)?;
                    }
                }
            }
            let closed = p.line;
            if p.skip(0)?.is_some() {
                return Err(p.err(
                    p.line,
                    format!(
                        "more text after the {what} of operations that closed on line {closed}"
                    ),
                ));
            }
        }
        _ => loop {
            match p.skip(0)? {
                None => break,
                Some(_) => {
                    let n = p.form(1)?;
                    each(n)?;
                }
            }
        },
    }
    Ok(())
}
