//! A refillable byte window over any `Read`, shared by the readers of whole-file formats (EDN,
//! dbcop JSON, dbcop bincode): they parse from it byte by byte, with a few bytes of lookahead,
//! so that loading holds the history being built plus this window, never the whole file.
//!
//! A read error ends the input where it happened and is kept: the reader reports it in place
//! of whatever it made of the truncated input, as it did when it read the whole file first.

use std::io::{ErrorKind, Read};

/// Bytes read from the input per refill.
const CHUNK: usize = 64 << 10;

/// The unread part of an input: `buf[pos..end]`, refilled from `r` when it runs out.
pub(crate) struct Source<R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Offset in the input of `buf[0]`.
    base: u64,
    /// No more bytes will come: the input ended or failed.
    done: bool,
    /// The read error that ended the input, if one did.
    error: Option<std::io::Error>,
}

impl<R: Read> Source<R> {
    /// A window over `r`.
    pub fn new(r: R) -> Self {
        Source {
            r,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            base: 0,
            done: false,
            error: None,
        }
    }

    /// Makes `need` unread bytes available if the input holds that many; whether it does.
    /// The window grows only for a lookahead longer than it (a bincode string, say), and then
    /// as the bytes come, so that a corrupt length asks for no more memory than the input has.
    #[cold]
    pub fn fill(&mut self, need: usize) -> bool {
        while self.end - self.pos < need && !self.done {
            if self.end == self.buf.len() || self.buf.len() - self.pos < need {
                // Drop the consumed bytes, then grow if the lookahead still has no room.
                self.buf.copy_within(self.pos..self.end, 0);
                self.base += self.pos as u64;
                self.end -= self.pos;
                self.pos = 0;
                if self.end == self.buf.len() {
                    let len = need.min(self.buf.len().saturating_mul(2)).max(CHUNK);
                    self.buf.resize(len, 0);
                }
            }
            let end = self.end;
            match self.r.read(&mut self.buf[end..]) {
                Ok(0) => self.done = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.error = Some(e);
                    self.done = true;
                }
            }
        }
        self.end - self.pos >= need
    }

    /// The next byte, not consumed; `None` at the end of the input.
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        if self.pos < self.end || self.fill(1) {
            Some(self.buf[self.pos])
        } else {
            None
        }
    }

    /// The byte `k` bytes past the next one, not consumed.
    pub fn peek_at(&mut self, k: usize) -> Option<u8> {
        if self.pos + k < self.end || self.fill(k + 1) {
            Some(self.buf[self.pos + k])
        } else {
            None
        }
    }

    /// How many unread bytes the window holds now.
    pub fn available(&self) -> usize {
        self.end - self.pos
    }

    /// Whether the unread input starts with `s` (nothing is consumed).
    pub fn starts_with(&mut self, s: &[u8]) -> bool {
        self.fill(s.len());
        self.buf[self.pos..self.end].starts_with(s)
    }

    /// Up to `n` next bytes, fewer only at the end of the input; not consumed.
    pub fn ahead(&mut self, n: usize) -> &[u8] {
        self.fill(n);
        let end = self.end.min(self.pos + n);
        &self.buf[self.pos..end]
    }

    /// Consumes one byte (that [`Self::peek`] has seen).
    #[inline]
    pub fn bump(&mut self) {
        self.advance(1);
    }

    /// Consumes `n` bytes, or all that are left if fewer.
    pub fn advance(&mut self, mut n: usize) {
        while n > 0 && (self.pos < self.end || self.fill(1)) {
            let k = n.min(self.end - self.pos);
            self.pos += k;
            n -= k;
        }
    }

    /// The next byte, consumed.
    #[inline]
    pub fn next_byte(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    /// Moves bytes to `out` while `keep` holds for them; stops before the first that fails.
    pub fn take_while(&mut self, out: &mut Vec<u8>, keep: impl Fn(u8) -> bool) {
        while self.pos < self.end || self.fill(1) {
            let run = self.buf[self.pos..self.end]
                .iter()
                .position(|&c| !keep(c))
                .unwrap_or(self.end - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + run]);
            self.pos += run;
            if self.pos < self.end {
                return;
            }
        }
    }

    /// Offset in the input of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Consumes the rest of the input; how many bytes it held.
    pub fn skip_rest(&mut self) -> u64 {
        let mut n = 0;
        while self.pos < self.end || self.fill(1) {
            n += (self.end - self.pos) as u64;
            self.pos = self.end;
        }
        n
    }

    /// The read error that ended the input early, if one did (taken: asked once).
    pub fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }
}
