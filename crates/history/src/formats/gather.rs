//! What the EDN, PolySI and dbcop readers share: they all meet a session's transactions
//! interleaved with other sessions', so they gather them per session and build the history once
//! the whole input is read (the builder wants one session at a time). Transaction ids used twice
//! (and list-append elements appended twice) are reported here, naming both places.

use crate::error::{InputError, Location};
use crate::model::{History, HistoryBuilder, KeyId, OpKind, TxnStatus, NO_TIME};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// An operation waiting for its session to be built.
pub(crate) struct POp {
    pub kind: OpKind,
    pub key: KeyId,
    pub value: u64,
    pub at: Location,
}

/// A transaction waiting for its session to be built.
pub(crate) struct PTxn {
    pub ext: u64,
    pub status: TxnStatus,
    pub start: u64,
    pub commit: u64,
    pub at: Location,
    pub ops: Vec<POp>,
    /// `(i, list)`: the read `ops[i]` returned this whole list (list-append).
    pub lists: Vec<(u32, Vec<u64>)>,
}

impl PTxn {
    pub fn new(ext: u64, status: TxnStatus, at: Location) -> Self {
        PTxn {
            ext,
            status,
            start: NO_TIME,
            commit: NO_TIME,
            at,
            ops: Vec::new(),
            lists: Vec::new(),
        }
    }
}

pub(crate) struct Collector {
    pub b: HistoryBuilder,
    sessions: Vec<(String, Vec<PTxn>)>,
    index: HashMap<String, usize>,
}

/// How an error message names another place in the same file.
pub(crate) fn place(at: Location) -> String {
    match at {
        Location::Line(l) => format!("line {l}"),
        Location::Offset(o) => format!("byte offset {o}"),
        Location::Nowhere => "another place".to_string(),
    }
}

impl Collector {
    pub fn new() -> Self {
        Collector {
            b: HistoryBuilder::new(),
            sessions: Vec::new(),
            index: HashMap::new(),
        }
    }
    pub fn key(&mut self, name: &str) -> KeyId {
        self.b.key(name)
    }
    pub fn session(&mut self, name: &str) -> usize {
        if let Some(&s) = self.index.get(name) {
            return s;
        }
        self.sessions.push((name.to_string(), Vec::new()));
        self.index.insert(name.to_string(), self.sessions.len() - 1);
        self.sessions.len() - 1
    }
    /// The name of session `s`.
    pub fn session_name(&self, s: usize) -> &str {
        &self.sessions[s].0
    }
    pub fn push(&mut self, s: usize, t: PTxn) {
        self.sessions[s].1.push(t);
    }
    pub fn last_mut(&mut self, s: usize) -> Option<&mut PTxn> {
        self.sessions[s].1.last_mut()
    }
    /// Builds the history, sessions in order of first appearance (empty ones left out).
    /// `zero_is_initial`: every key starts at 0 (the convention of dbcop, PolySI and IsoVista):
    /// a read of 0 reads the initial state where no write of the key wrote 0, and that write
    /// where one did. IsoVista's histories begin with a transaction writing 0 to every key, its
    /// initial state made explicit: taking the initial state as one more candidate would let
    /// that transaction float into the middle of the order and reset keys (a false ACCEPT).
    pub fn finish(mut self, path: &Path, zero_is_initial: bool) -> Result<History, InputError> {
        let zero_written: HashSet<KeyId> = if zero_is_initial {
            self.sessions
                .iter()
                .flat_map(|(_, t)| t.iter())
                .flat_map(|t| t.ops.iter())
                .filter(|o| o.kind == OpKind::Write && o.value == 0)
                .map(|o| o.key)
                .collect()
        } else {
            HashSet::new()
        };
        let has_lists = self
            .sessions
            .iter()
            .any(|(_, t)| t.iter().any(|t| !t.lists.is_empty()));
        let mut op_at: Vec<Location> = Vec::new();
        let mut txn_at: Vec<Location> = Vec::new();
        let b = &mut self.b;
        for (name, txns) in std::mem::take(&mut self.sessions) {
            if txns.is_empty() {
                continue;
            }
            b.begin_session(name);
            for t in txns {
                let mut lists = t.lists.iter().peekable();
                for (i, o) in t.ops.iter().enumerate() {
                    let kind = if zero_is_initial
                        && o.kind == OpKind::Read
                        && o.value == 0
                        && !zero_written.contains(&o.key)
                    {
                        OpKind::ReadInit
                    } else {
                        o.kind
                    };
                    let value = if kind == OpKind::ReadInit { 0 } else { o.value };
                    let earlier = b.op(kind, o.key, value);
                    // A list holds each appended element once: an element appended twice would
                    // leave a list read unable to say which append it shows.
                    if let (Some(prev), true) = (earlier, has_lists) {
                        return Err(InputError::new(
                            path,
                            o.at,
                            format!(
                                "key {:?} is appended the value {} more than once (list-append values must be unique per key; the other append is at {})",
                                b.h.keys[o.key as usize],
                                o.value,
                                place(op_at[prev as usize])
                            ),
                        ));
                    }
                    op_at.push(o.at);
                    if let Some((_, l)) = lists.next_if(|l| l.0 as usize == i) {
                        b.list(l);
                    }
                }
                match b.finish_txn(t.ext, t.status, t.start, t.commit) {
                    Ok(_) => txn_at.push(t.at),
                    Err(prev) => {
                        return Err(InputError::new(
                            path,
                            t.at,
                            format!(
                                "transaction id {} is used twice (first at {})",
                                t.ext,
                                place(txn_at[prev as usize])
                            ),
                        ))
                    }
                }
            }
        }
        Ok(self.b.finish())
    }
}
