//! PostgreSQL's wire protocol (v3), as much as a recording proxy reads: the startup packet, and
//! typed messages (a tag byte, a big-endian length that counts itself, the body). Everything is
//! forwarded byte for byte; these only look.

use std::io::{self, Read, Write};

/// The startup packet's codes for "may we use SSL / GSS encryption": the proxy answers `N` (no)
/// itself, so the client goes on in the clear and the upstream sees a plain startup.
pub(crate) const SSL_REQUEST: u32 = 80_877_103;
pub(crate) const GSS_REQUEST: u32 = 80_877_104;
/// A cancel request carries no session; it is forwarded and the connection closes.
pub(crate) const CANCEL_REQUEST: u32 = 80_877_102;

/// A message: its tag and its body (the length left out).
pub(crate) struct Msg {
    pub tag: u8,
    pub body: Vec<u8>,
}

/// Messages larger than this are refused (a garbled stream, not a real statement).
const MAX_LEN: usize = 1 << 30;

fn read_len(r: &mut impl Read) -> io::Result<Option<usize>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let n = u32::from_be_bytes(len) as usize;
    if !(4..=MAX_LEN).contains(&n) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message length of {n} bytes"),
        ));
    }
    Ok(Some(n - 4))
}

/// The startup packet (no tag): its body, the protocol or request code first.
pub(crate) fn read_startup(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let Some(n) = read_len(r)? else {
        return Ok(None);
    };
    let mut body = vec![0u8; n];
    r.read_exact(&mut body)?;
    Ok(Some(body))
}

pub(crate) fn write_startup(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    w.write_all(&((body.len() + 4) as u32).to_be_bytes())?;
    w.write_all(body)?;
    w.flush()
}

/// The next typed message, or None at the end of the stream.
pub(crate) fn read_msg(r: &mut impl Read) -> io::Result<Option<Msg>> {
    let mut tag = [0u8; 1];
    match r.read_exact(&mut tag) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let Some(n) = read_len(r)? else {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "a message cut after its tag",
        ));
    };
    let mut body = vec![0u8; n];
    r.read_exact(&mut body)?;
    Ok(Some(Msg { tag: tag[0], body }))
}

pub(crate) fn write_msg(w: &mut impl Write, m: &Msg) -> io::Result<()> {
    w.write_all(&[m.tag])?;
    w.write_all(&((m.body.len() + 4) as u32).to_be_bytes())?;
    w.write_all(&m.body)
}

/// Reads a body field by field.
pub(crate) struct Fields<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Fields<'a> {
        Fields { b, at: 0 }
    }
    /// A NUL-terminated string.
    pub(crate) fn cstr(&mut self) -> Option<String> {
        let rest = self.b.get(self.at..)?;
        let end = rest.iter().position(|&c| c == 0)?;
        self.at += end + 1;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    }
    pub(crate) fn i16(&mut self) -> Option<i16> {
        let v = self.b.get(self.at..self.at + 2)?;
        self.at += 2;
        Some(i16::from_be_bytes([v[0], v[1]]))
    }
    pub(crate) fn i32(&mut self) -> Option<i32> {
        let v = self.b.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(i32::from_be_bytes([v[0], v[1], v[2], v[3]]))
    }
    /// A length-prefixed value (-1: NULL).
    pub(crate) fn value(&mut self) -> Option<Option<Vec<u8>>> {
        let n = self.i32()?;
        if n < 0 {
            return Some(None);
        }
        let v = self.b.get(self.at..self.at + n as usize)?.to_vec();
        self.at += n as usize;
        Some(Some(v))
    }
    /// What is left after the fields read so far.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.b.get(self.at..).unwrap_or_default()
    }
    pub(crate) fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }
}
