//! The two readings compared by [`super::cuts`], without a checker: session name → its
//! transactions in session order, each (id, status, times, ops with key names, lists), from
//! the batch reader's `History` and from the follower's records.

use krait_history::{Follower, History, KeyId, Keys, OpKind, TxnRecord, TxnStatus};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// One transaction as both readers must give it.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct Txn {
    pub id: u64,
    pub status: TxnStatus,
    pub start: u64,
    pub commit: u64,
    pub ops: Vec<(OpKind, String, u64)>,
    pub lists: Vec<(u32, Vec<u64>)>,
    pub app: Vec<(u32, String)>,
}

/// Session name → its transactions, in session order.
pub type Txns = BTreeMap<String, Vec<Txn>>;

/// What the batch reader read.
pub fn from_history(h: &History) -> Txns {
    let mut out = Txns::new();
    for s in 0..h.num_sessions() {
        for t in h.session_range(s) {
            let r = h.ops(t);
            let first = r.start;
            let ti = t as usize;
            let key = |o: usize| h.keys[h.op_key[o] as usize].clone();
            let txn = Txn {
                id: h.txn_ext[ti],
                status: h.txn_status[ti],
                start: h.txn_start[ti],
                commit: h.txn_commit[ti],
                ops: r
                    .clone()
                    .map(|o| (h.op_kind[o], key(o), h.op_value[o]))
                    .collect(),
                app: r
                    .clone()
                    .filter_map(|o| {
                        let a = h.app_value(o as u32)?;
                        Some(((o - first) as u32, a.to_string()))
                    })
                    .collect(),
                lists: r
                    .filter_map(|o| {
                        let l = h.list_of(o as u32)?;
                        Some(((o - first) as u32, l.to_vec()))
                    })
                    .collect(),
            };
            out.entry(h.session_names[s].clone()).or_default().push(txn);
        }
    }
    out
}

/// The batch reading of a directory and its number of warnings.
pub fn batch(dir: &Path) -> Result<(Txns, usize), String> {
    krait_history::load(dir, None)
        .map(|l| (from_history(&l.history), l.warnings.len()))
        .map_err(|e| e.to_string())
}

/// Keys interned for the follower.
#[derive(Default)]
struct KeyTable {
    names: Vec<String>,
    ids: HashMap<String, KeyId>,
}

impl Keys for KeyTable {
    fn key(&mut self, name: &str) -> KeyId {
        if let Some(&k) = self.ids.get(name) {
            return k;
        }
        self.names.push(name.to_string());
        self.ids
            .insert(name.to_string(), self.names.len() as KeyId - 1);
        self.names.len() as KeyId - 1
    }
    fn fence_key(&mut self, _: KeyId) {}
}

/// A follower with what it announced: its records carry its own session numbers, whose names
/// come in the order numbered (`Polled::new_sessions`, over all polls).
pub struct Following {
    f: Follower,
    keys: KeyTable,
    names: Vec<String>,
}

impl Following {
    pub fn new(dir: &Path) -> Result<Following, String> {
        Ok(Following {
            f: Follower::new(dir, None).map_err(|e| e.to_string())?,
            keys: KeyTable::default(),
            names: Vec::new(),
        })
    }

    /// The transactions completed since the last poll, with their session names, in order.
    pub fn poll(&mut self) -> Result<Vec<(String, Txn)>, String> {
        let polled = self.f.poll(&mut self.keys).map_err(|e| e.to_string())?;
        self.names.extend(polled.new_sessions);
        Ok(self.named(polled.txns))
    }

    /// The logs ended: the rest, and how many warnings finishing gave.
    pub fn finish(&mut self) -> Result<(Vec<(String, Txn)>, usize), String> {
        let (last, warnings) = self.f.finish(&mut self.keys).map_err(|e| e.to_string())?;
        self.names.extend(last.new_sessions);
        Ok((self.named(last.txns), warnings.len()))
    }

    fn named(&self, recs: Vec<TxnRecord>) -> Vec<(String, Txn)> {
        recs.into_iter()
            .map(|t| {
                let name = self
                    .names
                    .get(t.session as usize)
                    .unwrap_or_else(|| panic!("session {} was never announced", t.session));
                let txn = Txn {
                    id: t.ext,
                    status: t.status,
                    start: t.start,
                    commit: t.commit,
                    ops: t
                        .ops
                        .iter()
                        .map(|&(k, key, v)| (k, self.keys.names[key as usize].clone(), v))
                        .collect(),
                    lists: t.lists,
                    app: t.app,
                };
                (name.clone(), txn)
            })
            .collect()
    }
}

/// Records grouped by session, in the order given.
pub fn grouped(recs: Vec<(String, Txn)>) -> Txns {
    let mut out = Txns::new();
    for (s, t) in recs {
        out.entry(s).or_default().push(t);
    }
    out
}

/// The first difference between two readings, for a failure message.
pub fn diff(batch: &Txns, followed: &Txns) -> String {
    let names: BTreeSet<&String> = batch.keys().chain(followed.keys()).collect();
    for s in names {
        let (b, f) = (batch.get(s), followed.get(s));
        let (b, f) = (b.map_or(&[][..], |v| v), f.map_or(&[][..], |v| v));
        for i in 0..b.len().max(f.len()) {
            if b.get(i) != f.get(i) {
                return format!(
                    "session {s:?}, its transaction {i}: batch {:?}, follow {:?}",
                    b.get(i),
                    f.get(i)
                );
            }
        }
    }
    "no difference".to_string()
}
