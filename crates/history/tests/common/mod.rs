//! Shared by the reader tests: a history rendered as text (so that a test states the exact
//! history it expects), and a hand-built dbcop bincode history.
#![allow(dead_code)]

use krait_history::{History, InputError, Loaded, Location, OpKind, NO_TIME};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

/// The history as text: sessions, transactions (id, status, times, ops), then list reads.
pub fn render(h: &History) -> String {
    let mut out = String::new();
    for s in 0..h.num_sessions() {
        let _ = writeln!(out, "{}:", h.session_names[s]);
        for t in h.session_range(s) {
            let ti = t as usize;
            let _ = write!(out, "  T{} {}", h.txn_ext[ti], h.txn_status[ti].as_str());
            if h.txn_start[ti] != NO_TIME || h.txn_commit[ti] != NO_TIME {
                let show = |x: u64| {
                    if x == NO_TIME {
                        "?".to_string()
                    } else {
                        x.to_string()
                    }
                };
                let _ = write!(
                    out,
                    " @{}-{}",
                    show(h.txn_start[ti]),
                    show(h.txn_commit[ti])
                );
            }
            let _ = write!(out, ":");
            for o in h.ops(t) {
                let k = &h.keys[h.op_key[o] as usize];
                let _ = match h.op_kind[o] {
                    OpKind::Write => write!(out, " w {k}={}", h.op_value[o]),
                    OpKind::Read => write!(out, " r {k}={}", h.op_value[o]),
                    OpKind::ReadInit => write!(out, " r {k}=init"),
                };
            }
            out.push('\n');
        }
    }
    for &(op, _, _) in &h.list_reads {
        let _ = writeln!(out, "list op{op}: {:?}", h.list_of(op).unwrap());
    }
    out
}

pub fn p(name: &str) -> PathBuf {
    PathBuf::from(name)
}

pub fn at(e: &InputError) -> (Location, &str) {
    (e.location, e.message.as_str())
}

/// bincode 1 (little-endian, u64 lengths) of dbcop's OOPSLA'19 History, built by hand.
#[derive(Default)]
pub struct Bincode(pub Vec<u8>);

pub type Ev = (bool, u64, u64, bool);

impl Bincode {
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn flag(&mut self, v: bool) -> &mut Self {
        self.0.push(v as u8);
        self
    }
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    pub fn history(sessions: &[Vec<(Vec<Ev>, bool)>]) -> Bincode {
        let mut b = Bincode::default();
        for v in [7, sessions.len() as u64, 3, 2, 2] {
            b.u64(v);
        }
        b.str("generated")
            .str("2019-06-01T10:00:00.123456789+02:00")
            .str("2019-06-01T10:00:01.5+02:00");
        b.u64(sessions.len() as u64);
        for s in sessions {
            b.u64(s.len() as u64);
            for (events, ok) in s {
                b.u64(events.len() as u64);
                for &(write, var, val, success) in events {
                    b.flag(write).u64(var).u64(val).flag(success);
                }
                b.flag(*ok);
            }
        }
        b
    }
}

/// Where the data of [`Bincode::history`] starts: header, three strings, the session count.
pub const DATA: usize = 40 + (8 + 9) + (8 + 35) + (8 + 27) + 8;

/// A dbcop JSON history in its wrapped form, with every kind of event.
pub const DBCOP_JSON: &str = r#"{
  "params": {"id": 0, "n_node": 3, "n_variable": 2, "n_transaction": 2, "n_event": 2},
  "info": "generated",
  "start": "2025-01-01T00:00:00.000000000+00:00",
  "end": "2025-01-01T00:00:00.001000000+00:00",
  "data": [
    [
      {"events": [{"Write": {"variable": 0, "version": 1}}, {"Read": {"variable": 1, "version": null}}], "committed": true},
      {"events": [{"Read": {"variable": 1, "version": 0}}, {"Write": {"variable": 1, "version": 2}}], "committed": false}
    ],
    [],
    [
      {"committed": true, "events": [["r", 0, 1], ["w", 2, 0], ["r", 2, 0], ["r", 0, 0], ["r", "name", null]]}
    ]
  ]
}
"#;

/// A reader that hands out 1 to 7 bytes per `read` call, so that every token, escape and
/// lookahead of a reader meets a refill somewhere.
pub struct Tiny<'a> {
    b: &'a [u8],
    k: usize,
}

impl Read for Tiny<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.k = self.k % 7 + 1;
        let n = self.k.min(out.len()).min(self.b.len());
        out[..n].copy_from_slice(&self.b[..n]);
        self.b = &self.b[n..];
        Ok(n)
    }
}

/// What a read gave, as text to compare: the history, warnings and format, or the error.
pub fn outcome(r: &Result<Loaded, InputError>) -> String {
    match r {
        Ok(l) => format!("{}{:?} {:?}", render(&l.history), l.warnings, l.format),
        Err(e) => format!("{e:?}"),
    }
}

/// Reads `b` from one slice and again in tiny reads (1-7 bytes per call, starting at each of
/// the 7 phases); every read must give the same outcome. Returns the first.
pub fn both(
    b: &[u8],
    read: impl Fn(&mut dyn BufRead) -> Result<Loaded, InputError>,
) -> Result<Loaded, InputError> {
    let whole = read(&mut &b[..]);
    let want = outcome(&whole);
    for k in 0..7 {
        let mut tiny = BufReader::with_capacity(3, Tiny { b, k });
        let got = outcome(&read(&mut tiny));
        assert_eq!(
            got, want,
            "read in tiny pieces (phase {k}) differs on {b:?}"
        );
    }
    whole
}
