//! What the raw history says by itself, with no search: who read what, which transactions took
//! part, and the version-order facts (a read-modify-write directly follows the version it read;
//! a list read orders the key's versions from the initial one). Written apart from the checker.

use krait_history::{History, OpKind, TxnId, TxnStatus};
use std::collections::{HashMap, HashSet};

/// A version of a key: the initial one, or the one a transaction installed (its last write).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ver {
    Init,
    Of(TxnId),
}

/// What a read observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Init,
    /// The write op.
    Write(usize),
    Nobody,
}

pub struct Facts<'a> {
    pub h: &'a History,
    pub op_txn: Vec<TxnId>,
    pub pos: Vec<u32>,
    pub session: Vec<u32>,
    /// Committed, or an unknown outcome that something taking part read (so committed).
    pub took_part: Vec<bool>,
    /// Per key: version → versions known to come directly before it.
    pred: HashMap<(u32, Ver), Vec<Ver>>,
    /// Per key: version → versions known to come after it (direct successions, list order).
    after: HashMap<(u32, Ver), Vec<Ver>>,
}

impl<'a> Facts<'a> {
    pub fn new(h: &'a History) -> Self {
        let mut op_txn = vec![0; h.num_ops()];
        let mut pos = vec![0; h.num_txns()];
        let mut session = vec![0; h.num_txns()];
        for s in 0..h.num_sessions() {
            for (i, t) in h.session_range(s).enumerate() {
                pos[t as usize] = i as u32;
                session[t as usize] = s as u32;
                for o in h.ops(t) {
                    op_txn[o] = t;
                }
            }
        }
        let mut f = Facts {
            h,
            op_txn,
            pos,
            session,
            took_part: Vec::new(),
            pred: HashMap::new(),
            after: HashMap::new(),
        };
        f.took_part = f.participants();
        f.version_facts();
        f
    }

    /// The write of value `v` to key `k`, if any.
    pub fn write_of(&self, k: u32, v: u64) -> Option<usize> {
        self.h.first_write(k, v).map(|o| o as usize)
    }

    pub fn seen(&self, o: usize) -> Seen {
        match self.h.op_kind[o] {
            OpKind::ReadInit => Seen::Init,
            OpKind::Read => match self.write_of(self.h.op_key[o], self.h.op_value[o]) {
                Some(w) => Seen::Write(w),
                None if self.h.init_value == Some(self.h.op_value[o]) => Seen::Init,
                None => Seen::Nobody,
            },
            OpKind::Write => Seen::Write(o),
        }
    }

    /// The transaction's reads of `k` made before it wrote `k` itself.
    pub fn external_reads(&self, t: TxnId, k: u32) -> Vec<usize> {
        let mut out = Vec::new();
        for o in self.h.ops(t) {
            if self.h.op_key[o] != k {
                continue;
            }
            if self.h.op_kind[o] == OpKind::Write {
                break;
            }
            out.push(o);
        }
        out
    }

    pub fn last_write(&self, t: TxnId, k: u32) -> Option<usize> {
        self.h
            .ops(t)
            .rev()
            .find(|&o| self.h.op_kind[o] == OpKind::Write && self.h.op_key[o] == k)
    }

    pub fn first_write(&self, t: TxnId, k: u32) -> Option<usize> {
        self.h
            .ops(t)
            .find(|&o| self.h.op_kind[o] == OpKind::Write && self.h.op_key[o] == k)
    }

    pub fn writes(&self, t: TxnId, k: u32) -> bool {
        self.last_write(t, k).is_some()
    }

    /// The version the transaction's first external read of `k` observed.
    pub fn version_read(&self, t: TxnId, k: u32) -> Option<Ver> {
        let o = *self.external_reads(t, k).first()?;
        match self.seen(o) {
            Seen::Init => Some(Ver::Init),
            Seen::Write(w) if self.last_write(self.op_txn[w], k) == Some(w) => {
                Some(Ver::Of(self.op_txn[w]))
            }
            _ => None,
        }
    }

    fn participants(&self) -> Vec<bool> {
        let h = self.h;
        let mut part: Vec<bool> = h
            .txn_status
            .iter()
            .map(|&s| s == TxnStatus::Committed)
            .collect();
        let mut stack: Vec<TxnId> = (0..h.num_txns() as TxnId)
            .filter(|&t| part[t as usize])
            .collect();
        while let Some(t) = stack.pop() {
            for o in h.ops(t) {
                let mut sources = Vec::new();
                if let Seen::Write(w) = self.seen(o) {
                    sources.push(self.op_txn[w]);
                }
                if let Some(list) = h.list_of(o as u32) {
                    for &v in list {
                        if let Some(w) = self.write_of(h.op_key[o], v) {
                            sources.push(self.op_txn[w]);
                        }
                    }
                }
                for w in sources {
                    if !part[w as usize] && h.txn_status[w as usize] == TxnStatus::Unknown {
                        part[w as usize] = true;
                        stack.push(w);
                    }
                }
            }
        }
        part
    }

    fn version_facts(&mut self) {
        let h = self.h;
        let mut pred: HashMap<(u32, Ver), Vec<Ver>> = HashMap::new();
        let mut later: HashMap<(u32, Ver), Vec<Ver>> = HashMap::new();
        for t in 0..h.num_txns() as TxnId {
            if !self.took_part[t as usize] {
                continue;
            }
            let mut keys: Vec<u32> = h.ops(t).map(|o| h.op_key[o]).collect();
            keys.sort_unstable();
            keys.dedup();
            for k in keys {
                // A read-modify-write directly follows the version it read.
                if self.writes(t, k) {
                    if let Some(v) = self.version_read(t, k) {
                        pred.entry((k, Ver::Of(t))).or_default().push(v);
                    }
                }
            }
            for o in h.ops(t) {
                let Some(list) = h.list_of(o as u32) else {
                    continue;
                };
                let k = h.op_key[o];
                let mut prev = Ver::Init;
                for &v in list {
                    let Some(w) = self.write_of(k, v) else {
                        break;
                    };
                    let wt = Ver::Of(self.op_txn[w]);
                    if wt != prev {
                        if self.first_write(self.op_txn[w], k) == Some(w) {
                            pred.entry((k, wt)).or_default().push(prev);
                        }
                        later.entry((k, prev)).or_default().push(wt);
                    }
                    prev = wt;
                }
            }
        }
        for (&(k, y), ps) in pred.iter_mut() {
            ps.sort_unstable();
            ps.dedup();
            for &p in ps.iter() {
                later.entry((k, p)).or_default().push(y);
            }
        }
        self.pred = pred;
        self.after = later;
    }

    /// The one version known to come directly before `v` on `k`, if exactly one is.
    fn only_pred(&self, k: u32, v: Ver) -> Option<Ver> {
        match self.pred.get(&(k, v)).map(|p| p.as_slice()) {
            Some([p]) => Some(*p),
            _ => None,
        }
    }

    /// The first version of the run of direct successions `v` belongs to: in every version
    /// order, a run is contiguous, so two runs are wholly ordered one way or the other.
    pub fn run_head(&self, k: u32, v: Ver) -> Ver {
        let mut x = v;
        let mut steps = 0;
        while let Some(p) = self.only_pred(k, x) {
            x = p;
            steps += 1;
            if p == Ver::Init || steps > self.h.num_txns() {
                break;
            }
        }
        x
    }

    /// The version `v` directly follows, when the facts name exactly one.
    pub fn direct_pred(&self, k: u32, v: Ver) -> Option<Ver> {
        self.only_pred(k, v)
    }

    /// `a` comes before `b` in every version order of `k` the history allows, by facts alone:
    /// a path of facts from `a` to `b`, or from a version `a` directly follows (through a run
    /// of direct successions that does not pass `b`): nothing lies between a version and its
    /// direct successor, so whatever follows the one follows the other too.
    pub fn before(&self, k: u32, a: Ver, b: Ver) -> bool {
        if a == b {
            return false;
        }
        let mut seen: HashSet<Ver> = HashSet::new();
        let mut x = a;
        for _ in 0..=self.h.num_txns() {
            if x == Ver::Init || self.forward(k, x, b, &mut seen) {
                return true;
            }
            match self.pred.get(&(k, x)).and_then(|p| p.first()) {
                Some(&p) if p != b => x = p,
                _ => return false,
            }
        }
        false
    }

    fn forward(&self, k: u32, a: Ver, b: Ver, seen: &mut HashSet<Ver>) -> bool {
        let mut stack = vec![a];
        while let Some(x) = stack.pop() {
            for &n in self.after.get(&(k, x)).into_iter().flatten() {
                if n == b {
                    return true;
                }
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        false
    }
}
