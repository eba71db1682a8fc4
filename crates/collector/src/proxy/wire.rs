//! PostgreSQL's wire protocol (v3), as much as a recording proxy reads: the startup packet, and
//! typed messages (a tag byte, a big-endian length that counts itself, the body). Everything is
//! forwarded byte for byte; these only look.

use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

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

/// The code at the start of a startup packet's body (protocol version or request).
pub(crate) fn code_of(body: &[u8]) -> u32 {
    body.get(..4)
        .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
}

fn length(n: u32) -> io::Result<usize> {
    let n = n as usize;
    if !(4..=MAX_LEN).contains(&n) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message length of {n} bytes"),
        ));
    }
    Ok(n - 4)
}

/// The startup packet (no tag): its body, the protocol or request code first; None when the
/// client closed before sending one.
pub(crate) async fn read_startup(r: &mut (impl AsyncRead + Unpin)) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut body = vec![0u8; length(u32::from_be_bytes(len))?];
    r.read_exact(&mut body).await?;
    Ok(Some(body))
}

pub(crate) async fn write_startup(
    w: &mut (impl AsyncWrite + Unpin),
    body: &[u8],
) -> io::Result<()> {
    let mut b = Vec::with_capacity(body.len() + 4);
    b.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    b.extend_from_slice(body);
    w.write_all(&b).await
}

/// The next whole typed message in `buf[*at..]`, moving `at` past it; None until all of it
/// has arrived.
pub(crate) fn take_msg(buf: &[u8], at: &mut usize) -> io::Result<Option<Msg>> {
    let Some(head) = buf.get(*at..*at + 5) else {
        return Ok(None);
    };
    let n = length(u32::from_be_bytes([head[1], head[2], head[3], head[4]]))?;
    let Some(body) = buf.get(*at + 5..*at + 5 + n) else {
        return Ok(None);
    };
    let m = Msg {
        tag: head[0],
        body: body.to_vec(),
    };
    *at += 5 + n;
    Ok(Some(m))
}

/// Appends message `m` to `out`, as it goes on the wire.
pub(crate) fn put_msg(out: &mut Vec<u8>, m: &Msg) {
    out.push(m.tag);
    out.extend_from_slice(&((m.body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(&m.body);
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
