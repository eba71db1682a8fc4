//! Words for list-append reads no version order can give (Elle's duplicate elements and
//! incompatible orders, aborted and intermediate elements).

use super::explain::{key_name, simple, txn_name};
use super::{Anomaly, Certificate};
use krait_history::{History, Resolution, TxnId};

impl Certificate {
    pub(super) fn hint_of_nobody(h: &History, r: &Resolution, op: u32, v: u64) -> Certificate {
        let t = r.op_txn[op as usize];
        let k = key_name(h, h.op_key[op as usize]);
        let summary = format!(
            "{} read {k} as a list holding {v}, a value no transaction wrote",
            txn_name(h, t)
        );
        simple(Anomaly::ReadOfNobody, summary, h, r, &[t])
    }

    pub(super) fn hint_aborted(h: &History, r: &Resolution, op: u32, w: u32) -> Certificate {
        let e = Element::of(h, r, op, w);
        let summary = format!(
            "{} read {} as a list holding {}, written by {}, which did not commit",
            e.reader, e.key, e.value, e.writer
        );
        simple(Anomaly::G1a, summary, h, r, &e.txns)
    }

    pub(super) fn duplicate_element(h: &History, r: &Resolution, op: u32, v: u64) -> Certificate {
        let t = r.op_txn[op as usize];
        let k = key_name(h, h.op_key[op as usize]);
        let summary = format!(
            "{} read {k} as a list holding {v} twice: a value appended once is in the list once",
            txn_name(h, t)
        );
        simple(Anomaly::DuplicateElements, summary, h, r, &[t])
    }

    /// `w` is an append the list shows at the wrong place (`what` says how).
    pub(super) fn list_skips(
        h: &History,
        r: &Resolution,
        op: u32,
        w: u32,
        what: &str,
    ) -> Certificate {
        let e = Element::of(h, r, op, w);
        let summary = format!(
            "{} read {} as a list in which {} {what}: {} appended to {} in another order or more than that",
            e.reader, e.key, e.value, e.writer, e.key
        );
        simple(Anomaly::IncompatibleOrder, summary, h, r, &e.txns)
    }

    /// Two different versions are each said to come right before `t`'s write of key `k`.
    pub(super) fn two_predecessors(
        h: &History,
        r: &Resolution,
        k: u32,
        t: TxnId,
        a: Option<TxnId>,
        b: Option<TxnId>,
    ) -> Certificate {
        let kn = key_name(h, k);
        let name = |x: Option<TxnId>| match x {
            Some(x) => format!("{}'s version", txn_name(h, x)),
            None => "the initial version".to_string(),
        };
        let summary = format!(
            "{}'s write of {kn} directly follows both {} and {} (a list read or a read-modify-write says each): a version has one predecessor, so the reads of {kn} disagree on its order",
            txn_name(h, t),
            name(a),
            name(b)
        );
        let ts: Vec<TxnId> = [Some(t), a, b].into_iter().flatten().collect();
        simple(Anomaly::IncompatibleOrder, summary, h, r, &ts)
    }

    /// Two versions are each said to come right after the same one (`p`, None: the initial).
    pub(super) fn two_successors(
        h: &History,
        r: &Resolution,
        k: u32,
        p: Option<TxnId>,
        t1: TxnId,
        t2: TxnId,
    ) -> Certificate {
        let kn = key_name(h, k);
        let version = match p {
            Some(p) => format!("{}'s version of {kn}", txn_name(h, p)),
            None => format!("the initial version of {kn}"),
        };
        let summary = format!(
            "{version} is directly followed by both {}'s and {}'s writes (a list read or a read-modify-write says each): the reads of {kn} disagree on its order",
            txn_name(h, t1),
            txn_name(h, t2)
        );
        let ts: Vec<TxnId> = [p, Some(t1), Some(t2)].into_iter().flatten().collect();
        simple(Anomaly::IncompatibleOrder, summary, h, r, &ts)
    }

    pub(super) fn hint_intermediate(h: &History, r: &Resolution, op: u32, w: u32) -> Certificate {
        let e = Element::of(h, r, op, w);
        let summary = format!(
            "{} read {} as a list in which another transaction's write follows {}, an intermediate version: {} wrote {} again",
            e.reader, e.key, e.value, e.writer, e.key
        );
        simple(Anomaly::G1b, summary, h, r, &e.txns)
    }
}

/// An element `w` of the list read by `op`, in words: who read, which key, which value, who
/// appended it, and the transactions to show.
struct Element {
    reader: String,
    key: String,
    value: u64,
    writer: String,
    txns: Vec<TxnId>,
}

impl Element {
    fn of(h: &History, r: &Resolution, op: u32, w: u32) -> Element {
        let (t, wt) = (r.op_txn[op as usize], r.op_txn[w as usize]);
        Element {
            reader: txn_name(h, t),
            key: key_name(h, h.op_key[op as usize]),
            value: h.op_value[w as usize],
            writer: txn_name(h, wt),
            txns: if wt == t { vec![t] } else { vec![t, wt] },
        }
    }
}
