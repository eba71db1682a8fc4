//! The online checker's index of writes by (key, value): which queued or live transactions
//! wrote each value. A value is written once in the common case, which costs one map entry;
//! a value written again (histories with repeated values) keeps its later writers beside it.

use super::Writer;
use krait_history::{FxHashMap, KeyId};

/// (key, value) → the transactions that wrote it, queued or live, first one apart.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(super) struct WriteIndex {
    first: FxHashMap<(KeyId, u64), Writer>,
    /// Every writer after the first, for values written more than once.
    more: FxHashMap<(KeyId, u64), Vec<Writer>>,
}

impl WriteIndex {
    /// Whether some queued or live transaction wrote `kv`.
    pub(super) fn contains_key(&self, kv: &(KeyId, u64)) -> bool {
        self.first.contains_key(kv)
    }

    /// The first writer of `kv` still held.
    pub(super) fn get(&self, kv: &(KeyId, u64)) -> Option<&Writer> {
        self.first.get(kv)
    }

    /// Every writer of `kv` still held.
    pub(super) fn all(&self, kv: &(KeyId, u64)) -> impl Iterator<Item = Writer> + '_ {
        self.first
            .get(kv)
            .into_iter()
            .chain(self.more.get(kv).into_iter().flatten())
            .copied()
    }

    /// Adds a writer of `kv`.
    pub(super) fn insert(&mut self, kv: (KeyId, u64), w: Writer) {
        match self.first.entry(kv) {
            std::collections::hash_map::Entry::Occupied(_) => {
                self.more.entry(kv).or_default().push(w);
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(w);
            }
        }
    }

    /// The queued writer `from` of `kv` is now `to` (admitted).
    pub(super) fn replace(&mut self, kv: (KeyId, u64), from: Writer, to: Writer) {
        if let Some(w) = self.first.get_mut(&kv) {
            if *w == from {
                *w = to;
            }
        }
        if let Some(ws) = self.more.get_mut(&kv) {
            for w in ws.iter_mut().filter(|w| **w == from) {
                *w = to;
            }
        }
    }

    /// Removes writer `w` of `kv`; whether it was there.
    pub(super) fn remove(&mut self, kv: (KeyId, u64), w: Writer) -> bool {
        let mut found = false;
        if let Some(ws) = self.more.get_mut(&kv) {
            let before = ws.len();
            ws.retain(|x| *x != w);
            found = ws.len() != before;
        }
        if self.first.get(&kv) == Some(&w) {
            found = true;
            match self.more.get_mut(&kv).and_then(|ws| ws.pop()) {
                Some(next) => {
                    self.first.insert(kv, next);
                }
                None => {
                    self.first.remove(&kv);
                }
            }
        }
        if self.more.get(&kv).is_some_and(|ws| ws.is_empty()) {
            self.more.remove(&kv);
        }
        found
    }
}
