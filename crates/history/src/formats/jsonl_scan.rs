//! A zero-copy scanner for the shape nearly every JSON Lines record has: an object of `session`,
//! `txn`, `status`, `start`, `commit` and `ops`, strings without escapes, operations
//! `[kind, key, number-or-null]` or with an application value as a fourth string.
//!
//! It decides only how fast a line is read, never what it means: anything outside that shape
//! (an escape, a list value, a repeated or unknown field, a number serde would refuse, a negative
//! name) makes it give up, and the caller hands the line to serde_json, which yields the same
//! record or the exact error. The scanner allocates nothing; operations go into a sink the
//! caller reuses: a vector of them, or a piece of a log that stores them nearly as the model
//! will (see `jsonl_block`), with no record per operation in between.

/// A session or key name as written: a string, or a non-negative integer (named by its digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum NameRef<'a> {
    Str(&'a str),
    Int(u64),
}

impl NameRef<'_> {
    /// The name as text, without allocating for strings; `buf` holds an integer's digits.
    pub fn as_str<'b>(&'b self, buf: &'b mut itoa_buf::Buf) -> &'b str {
        match self {
            NameRef::Str(s) => s,
            NameRef::Int(i) => buf.format(*i),
        }
    }
}

/// Formats integers on the stack (what `i64::to_string` gives, without the allocation).
pub(crate) mod itoa_buf {
    /// Room for the digits of any `u64`.
    #[derive(Default)]
    pub struct Buf([u8; 20]);

    impl Buf {
        pub fn format(&mut self, mut v: u64) -> &str {
            let mut i = self.0.len();
            loop {
                i -= 1;
                self.0[i] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            // Only ASCII digits were written.
            std::str::from_utf8(&self.0[i..]).unwrap_or("0")
        }
    }
}

/// One operation of a scanned line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpRef<'a> {
    /// `b'r'` or `b'w'` (any other kind is serde's to reject).
    pub kind: u8,
    pub key: NameRef<'a>,
    /// `None` for `null` (the initial state).
    pub value: Option<u64>,
    pub app: Option<&'a str>,
}

/// Where the scanner puts a line's operations.
pub(crate) trait OpSink<'a> {
    /// Operations pushed so far (a line's are `first..end` of this count).
    fn len(&self) -> usize;
    fn push(&mut self, op: OpRef<'a>);
    /// Forgets the operations pushed after the first `len` (a line the scanner gave up on).
    fn rollback(&mut self, len: usize);
}

impl<'a> OpSink<'a> for Vec<OpRef<'a>> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    #[inline]
    fn push(&mut self, op: OpRef<'a>) {
        Vec::push(self, op);
    }
    fn rollback(&mut self, len: usize) {
        self.truncate(len);
    }
}

/// A scanned record; its operations are `first..end` of those pushed to the sink given to
/// [`scan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineRef<'a> {
    pub session: NameRef<'a>,
    pub txn: u64,
    pub status: Option<&'a str>,
    pub start: Option<u64>,
    pub commit: Option<u64>,
    pub first: usize,
    pub end: usize,
}

/// Scans `text` (one trimmed line), pushing its operations to `ops`; `None` (with `ops` as it
/// was) when the line is outside the shape this scanner reads.
#[inline]
pub(crate) fn scan<'a, S: OpSink<'a>>(text: &'a str, ops: &mut S) -> Option<LineRef<'a>> {
    let first = ops.len();
    let r = Scanner {
        s: text,
        b: text.as_bytes(),
        i: 0,
    }
    .line(ops, first);
    if r.is_none() {
        ops.rollback(first);
    }
    r
}

/// Where the string starting at `b[0]` (just after its opening quote) closes; `None` at an
/// escape or a control character (the string is serde's to read) or where it does not close.
/// Eight bytes at a time: a key name is mostly shorter than that.
#[inline(always)]
fn closing_quote(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The bytes of `w` that are zero, as their high bits (exact for the first such byte).
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let mut at = 0;
    while let Some(word) = b.get(at..at + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let hits = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if hits != 0 {
            let i = at + (hits.trailing_zeros() / 8) as usize;
            return (b[i] == b'"').then_some(i);
        }
        at += 8;
    }
    let i = at
        + b[at..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    (b[i] == b'"').then_some(i)
}

/// The value and count of the digits `b` starts with, read eight bytes at once, where fewer
/// than eight digits lead eight bytes (most numbers of a history: the per-digit loop was a
/// tenth of parsing a read-heavy log); `None` otherwise, for the loop to read.
#[inline(always)]
fn digits_in_word(b: &[u8]) -> Option<(u64, usize)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let w = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
    // A byte's high bit is set in one of the two where it is not a digit: exact for every byte
    // up to the first non-digit, which is all that is read.
    let not_digit = (w.wrapping_sub(ONES * 0x30) | w.wrapping_add(ONES * 0x46)) & (ONES * 0x80);
    let len = (not_digit.trailing_zeros() / 8) as usize;
    if len == 0 || len == 8 {
        return None;
    }
    // The digits' values in the top `len` bytes, zeros (leading zeros) below.
    let mut v = (w.wrapping_sub(ONES * 0x30) << (8 * (8 - len))) & (ONES * 0x0f);
    v = v.wrapping_mul(1 + (10 << 8)) >> 8 & 0x00ff_00ff_00ff_00ff;
    v = v.wrapping_mul(1 + (100 << 16)) >> 16 & 0x0000_ffff_0000_ffff;
    v = v.wrapping_mul(1 + (10_000 << 32)) >> 32;
    Some((v, len))
}

struct Scanner<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// The next non-blank byte, not consumed.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    /// A string without escapes or control characters.
    #[inline]
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        self.i += closing_quote(self.b.get(start..)?)?;
        // Both ends sit next to an ASCII quote, so they are character boundaries.
        let s = self.s.get(start..self.i)?;
        self.i += 1;
        Some(s)
    }

    /// An unsigned integer as JSON writes it: no sign, no leading zero, no fraction or exponent.
    #[inline]
    fn number(&mut self) -> Option<u64> {
        self.ws();
        let rest = self.b.get(self.i..)?;
        let (mut v, mut len) = digits_in_word(rest).unwrap_or((0, 0));
        while let Some(&d) = rest.get(len) {
            let x = d.wrapping_sub(b'0');
            if x > 9 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(x));
            len += 1;
        }
        if len == 0 || (len > 1 && rest[0] == b'0') {
            return None;
        }
        // Nineteen digits never overflow; more might, and then the number is serde's to read.
        if len > 19 {
            v = rest[..len].iter().try_fold(0u64, |v, &d| {
                v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })?;
        }
        self.i += len;
        match rest.get(len) {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(v),
        }
    }

    /// A name: a string, or an integer serde reads as an `i64`.
    #[inline]
    fn name(&mut self) -> Option<NameRef<'a>> {
        match self.peek()? {
            b'"' => self.string().map(NameRef::Str),
            _ => self
                .number()
                .filter(|&v| v <= i64::MAX as u64)
                .map(NameRef::Int),
        }
    }

    /// `null`, or a value number.
    #[inline]
    fn value(&mut self) -> Option<Option<u64>> {
        if self.peek()? == b'n' {
            let rest = self.b.get(self.i..self.i + 4)?;
            if rest != b"null"
                || self
                    .b
                    .get(self.i + 4)
                    .is_some_and(u8::is_ascii_alphanumeric)
            {
                return None;
            }
            self.i += 4;
            return Some(None);
        }
        self.number().map(Some)
    }

    fn op(&mut self) -> Option<OpRef<'a>> {
        if let Some(op) = self.op_compact() {
            return Some(op);
        }
        self.eat(b'[')?;
        let kind = match self.string()? {
            "r" => b'r',
            "w" => b'w',
            _ => return None,
        };
        self.eat(b',')?;
        let key = self.name()?;
        self.eat(b',')?;
        // `null`: a read of no row, or a write that deletes it.
        let value = self.value()?;
        let app = match self.peek()? {
            b',' => {
                self.i += 1;
                Some(self.string()?)
            }
            _ => None,
        };
        self.eat(b']')?;
        Some(OpRef {
            kind,
            key,
            value,
            app,
        })
    }

    /// `["r","key",value]` or `["w","key",value]` written without blanks and without an
    /// application value, as krait and most writers print an operation: read by fixed bytes
    /// rather than token by token (most of a read-heavy file is such operations). Anything else,
    /// or a value [`Scanner::value`] would refuse, leaves the position as it was for [`Scanner::op`]
    /// to read the general way.
    #[inline]
    fn op_compact(&mut self) -> Option<OpRef<'a>> {
        let kind = match *self.b.get(self.i..self.i + 6)? {
            [b'[', b'"', k @ (b'r' | b'w'), b'"', b',', b'"'] => k,
            _ => return None,
        };
        let start = self.i + 6;
        let j = start + closing_quote(self.b.get(start..)?)?;
        if self.b.get(j + 1) != Some(&b',') {
            return None;
        }
        // Both ends sit next to an ASCII quote, so they are character boundaries.
        let key = self.s.get(start..j)?;
        let at = self.i;
        self.i = j + 2;
        let value = match self.b.get(self.i) {
            Some(b'n') if self.b.get(self.i..self.i + 5) == Some(b"null]") => {
                self.i += 4;
                Some(None)
            }
            Some(b'0'..=b'9') => self.number().map(Some),
            _ => None,
        };
        match value {
            Some(value) if self.b.get(self.i) == Some(&b']') => {
                self.i += 1;
                Some(OpRef {
                    kind,
                    key: NameRef::Str(key),
                    value,
                    app: None,
                })
            }
            _ => {
                self.i = at;
                None
            }
        }
    }

    fn ops<S: OpSink<'a>>(&mut self, ops: &mut S) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            ops.push(self.op()?);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    #[inline]
    fn line<S: OpSink<'a>>(mut self, ops: &mut S, first: usize) -> Option<LineRef<'a>> {
        self.eat(b'{')?;
        let (mut session, mut txn, mut status, mut start, mut commit) =
            (None, None, None, None, None);
        let mut have_ops = false;
        loop {
            let field = self.string()?;
            self.eat(b':')?;
            // A repeated field is serde's error to report.
            match field {
                "session" if session.is_none() => session = Some(self.name()?),
                "txn" if txn.is_none() => txn = Some(self.number()?),
                "status" if status.is_none() => status = Some(self.string()?),
                "start" if start.is_none() => start = Some(self.number()?),
                "commit" if commit.is_none() => commit = Some(self.number()?),
                "ops" if !have_ops => {
                    self.ops(ops)?;
                    have_ops = true;
                }
                _ => return None,
            }
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        self.ws();
        if self.i != self.b.len() || !have_ops {
            return None;
        }
        Some(LineRef {
            session: session?,
            txn: txn?,
            status,
            start,
            commit,
            first,
            end: ops.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> (LineRef<'_>, Vec<OpRef<'_>>) {
        let mut ops = Vec::new();
        let l = scan(text, &mut ops).unwrap_or_else(|| panic!("not scanned: {text}"));
        (l, ops)
    }

    fn refused(text: &str) {
        let mut ops = vec![OpRef {
            kind: b'w',
            key: NameRef::Int(1),
            value: Some(1),
            app: None,
        }];
        assert!(scan(text, &mut ops).is_none(), "scanned: {text}");
        assert_eq!(ops.len(), 1, "ops left behind by {text}");
    }

    #[test]
    fn reads_the_common_shape() {
        let (l, ops) = ok(
            r#"{"session":"c1","txn":7,"status":"committed","start":10,"commit":20,"ops":[["w","x",1],["r", 5 ,null],["r","y",3,"app"]]}"#,
        );
        assert_eq!(l.session, NameRef::Str("c1"));
        assert_eq!(
            (l.txn, l.status, l.start, l.commit),
            (7, Some("committed"), Some(10), Some(20))
        );
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[1].key, NameRef::Int(5));
        assert_eq!(ops[1].value, None);
        assert_eq!(ops[2].app, Some("app"));
        let (l, ops) = ok(r#" { "ops" : [ ] , "txn" : 0 , "session" : 3 } "#);
        assert_eq!(
            (l.session, l.txn, l.status, ops.len()),
            (NameRef::Int(3), 0, None, 0)
        );
    }

    #[test]
    fn leaves_everything_else_to_serde() {
        for t in [
            r#"{"session":"c\"1","txn":1,"ops":[]}"#,
            r#"{"session":"c1","txn":1,"ops":[["r","x",[1,2]]]}"#,
            r#"{"session":"c1","txn":1,"txn":2,"ops":[]}"#,
            r#"{"session":"c1","txn":1,"ops":[],"extra":1}"#,
            r#"{"session":"c1","txn":01,"ops":[]}"#,
            r#"{"session":"c1","txn":1.0,"ops":[]}"#,
            r#"{"session":"c1","txn":-1,"ops":[]}"#,
            r#"{"session":-1,"txn":1,"ops":[]}"#,
            r#"{"session":"c1","txn":18446744073709551616,"ops":[]}"#,
            r#"{"session":9223372036854775808,"txn":1,"ops":[]}"#,
            r#"{"session":"c1","txn":1,"ops":[["w","x",1]]} x"#,
            r#"{"session":"c1","txn":1,"ops":[["w","x",nullx]]}"#,
            r#"{"session":"c1","txn":1,"status":null,"ops":[]}"#,
            r#"{"session":"c1","txn":1,"ops":[["w","x",1],]}"#,
            r#"{"session":"c1","txn":1,"ops":[["w","x",1,"a","b"]]}"#,
            r#"{"session":"c1","txn":1,"ops":[["x","x",1]]}"#,
            r#"{"session":"c1","txn":1,"ops":[["w","x",[1]]]}"#,
            // An escape or a control character, within a name's first eight bytes or after.
            r#"{"session":"c1","txn":1,"ops":[["w","abcdefghij\"k",1]]}"#,
            "{\"session\":\"c1\",\"txn\":1,\"ops\":[[\"w\",\"a\tb\",1]]}",
            "{\"session\":\"c1\",\"txn\":1,\"ops\":[[\"w\",\"abcdefghij\u{1f}\",1]]}",
            r#"{"session":"c1","txn":1}"#,
            r#"{"session":"c1","ops":[]}"#,
            r#"{"session":"c1","txn":1,"ops":[["w","x"#,
            "{}",
            "",
        ] {
            refused(t);
        }
    }

    /// Operations written without blanks (read by fixed bytes) scan as the same operations
    /// with blanks (read token by token) do, or are refused alike.
    #[test]
    fn compact_operations_read_as_spaced_ones() {
        for op in [
            r#"["r","k1305",null]"#,
            r#"["w","k7",18446744073709551615]"#,
            r#"["r","",0]"#,
            r#"["r","k\"1",2]"#,
            r#"["r","k",null ]"#,
            r#"["r","k",nullx]"#,
            r#"["r","k",01]"#,
            r#"["r","k",1.5]"#,
            r#"["r","k",18446744073709551616]"#,
            r#"["r","k",1,"app"]"#,
            r#"["r","k",[1]]"#,
            r#"["x","k",1]"#,
            r#"["r",7,1]"#,
            r#"["r","k"]"#,
            r#"["r","k","#,
        ] {
            let spaced = op.replacen('[', "[ ", 1);
            let line = |o: &str| format!(r#"{{"session":"s","txn":1,"ops":[{o},["w","x",1]]}}"#);
            let (a, b) = (line(op), line(&spaced));
            let (mut ops_a, mut ops_b) = (Vec::new(), Vec::new());
            let got = scan(&a, &mut ops_a).map(|l| (l.first, l.end));
            let want = scan(&b, &mut ops_b).map(|l| (l.first, l.end));
            assert_eq!(got, want, "{op}");
            assert_eq!(ops_a, ops_b, "{op}");
        }
    }

    /// Eight bytes at once read what a digit at a time reads, whatever follows the digits.
    #[test]
    fn digits_read_by_the_word_are_read_by_the_digit() {
        let tails: [&[u8]; 6] = [
            b"]]}xxxxxx",
            b",",
            b"\x00\x00\x00\x00\x00\x00\x00\x00",
            b"\xff\xba\x80/:",
            b" ",
            b"e5",
        ];
        let mut n = 0u64;
        for len in 0..=12usize {
            for first in [b'0', b'1', b'5', b'9'] {
                let mut digits = vec![first];
                while digits.len() < len {
                    n = n
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    digits.push(b'0' + (n >> 60) as u8 % 10);
                }
                digits.truncate(len);
                for tail in tails {
                    let b = [&digits[..], tail].concat();
                    let lead = b.iter().take_while(|c| c.is_ascii_digit()).count();
                    let want = (lead > 0 && lead < 8 && b.len() >= 8).then(|| {
                        let v = b[..lead]
                            .iter()
                            .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'));
                        (v, lead)
                    });
                    assert_eq!(
                        digits_in_word(&b),
                        want,
                        "{:?}",
                        String::from_utf8_lossy(&b)
                    );
                }
            }
        }
    }

    #[test]
    fn integers_print_as_serde_prints_them() {
        let mut b = itoa_buf::Buf::default();
        for v in [0u64, 7, 10, 12345, i64::MAX as u64, u64::MAX] {
            assert_eq!(b.format(v), v.to_string());
        }
    }
}
