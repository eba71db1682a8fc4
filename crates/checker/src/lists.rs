//! List-append reads (Elle): what a whole list states about its key's version order, and the
//! certificates for lists no version order can give.

use crate::build::INIT;
use crate::cert::{key_name, simple, txn_name, Anomaly, Certificate};
use crate::graph::{EdgeKind, Label, Node};
use krait_history::{History, OpKind, Resolution, TxnId};

/// List-append reads (Elle's semantics): the list is the key's version order from the empty
/// initial list. Each element was appended once by a transaction that committed; its first
/// element is the key's first version (right after the initial one); two adjacent elements of
/// one transaction are two consecutive appends of it; two of different transactions are the
/// last append of one and the first of the next, which directly follows it in the version
/// order — stated exactly like a read-modify-write (the later writer "read" the earlier), so
/// chains, coalescing and the plain encoding all keep it.
pub(crate) fn lists(
    h: &History,
    r: &Resolution,
    inc: &[bool],
    txn_node: &[Node],
    reads: &mut Vec<(u32, Node, Node)>,
    rmws: &mut Vec<(u32, Node, Node)>,
    edges: &mut Vec<(Node, Node)>,
    labels: &mut Vec<Label>,
) -> Result<(), Box<Certificate>> {
    let mut seen: krait_history::FxHashSet<u64> = Default::default();
    for &(op, _, _) in &h.list_reads {
        let reader = r.op_txn[op as usize];
        if !inc[reader as usize] {
            continue;
        }
        let list = h.list_of(op).unwrap();
        let k = h.op_key[op as usize];
        seen.clear();
        let mut prev: Option<(u32, TxnId)> = None;
        for &v in list {
            if !seen.insert(v) {
                return Err(Box::new(Certificate::duplicate_element(h, r, op, v)));
            }
            let Some(&w) = h.write_index.get(&(k, v)) else {
                return Err(Box::new(Certificate::hint_of_nobody(h, r, op, v)));
            };
            let t = r.op_txn[w as usize];
            if !inc[t as usize] {
                return Err(Box::new(Certificate::hint_aborted(h, r, op, w)));
            }
            if t == reader && w > op {
                return Err(Box::new(Certificate::future_read(h, r, t, op)));
            }
            let writes_k = |lo: usize, hi: usize| {
                (lo..hi).any(|x| h.op_kind[x] == OpKind::Write && h.op_key[x] == k)
            };
            let ops_t = h.ops(t);
            match prev {
                Some((pw, pt)) if pt == t => {
                    // Two appends of one transaction: consecutive, in program order.
                    if pw > w || writes_k(pw as usize + 1, w as usize) {
                        return Err(Box::new(Certificate::list_skips(
                            h,
                            r,
                            op,
                            w,
                            "does not directly follow its own transaction's previous append",
                        )));
                    }
                }
                _ => {
                    // A transaction's appends start here: this must be its first.
                    if writes_k(ops_t.start, w as usize) {
                        return Err(Box::new(Certificate::list_skips(
                            h,
                            r,
                            op,
                            w,
                            "is not preceded by its transaction's earlier append",
                        )));
                    }
                    let before = match prev {
                        None => INIT,
                        Some((pw, pt)) => {
                            // The previous transaction's appends end here: its last.
                            if writes_k(pw as usize + 1, h.ops(pt).end) {
                                return Err(Box::new(Certificate::hint_intermediate(h, r, op, pw)));
                            }
                            txn_node[pt as usize]
                        }
                    };
                    let n = txn_node[t as usize];
                    reads.push((k, before, n));
                    rmws.push((k, before, n));
                    if before != INIT {
                        edges.push((before, n));
                        labels.push(Label::fact(EdgeKind::Ww, k));
                    }
                }
            }
            prev = Some((w, t));
        }
    }
    Ok(())
}

impl Certificate {
    pub fn hint_of_nobody(h: &History, r: &Resolution, op: u32, v: u64) -> Certificate {
        let t = r.op_txn[op as usize];
        let k = key_name(h, h.op_key[op as usize]);
        let summary = format!(
            "{} read {k} as a list holding {v}, a value no transaction wrote",
            txn_name(h, t)
        );
        simple(Anomaly::ReadOfNobody, summary, h, r, &[t])
    }

    pub fn hint_aborted(h: &History, r: &Resolution, op: u32, w: u32) -> Certificate {
        let e = Element::of(h, r, op, w);
        let summary = format!(
            "{} read {} as a list holding {}, written by {}, which did not commit",
            e.reader, e.key, e.value, e.writer
        );
        simple(Anomaly::G1a, summary, h, r, &e.txns)
    }

    pub fn duplicate_element(h: &History, r: &Resolution, op: u32, v: u64) -> Certificate {
        let t = r.op_txn[op as usize];
        let k = key_name(h, h.op_key[op as usize]);
        let summary = format!(
            "{} read {k} as a list holding {v} twice: a value appended once is in the list once",
            txn_name(h, t)
        );
        simple(Anomaly::DuplicateElements, summary, h, r, &[t])
    }

    /// `w` is an append the list shows at the wrong place (`what` says how).
    pub fn list_skips(h: &History, r: &Resolution, op: u32, w: u32, what: &str) -> Certificate {
        let e = Element::of(h, r, op, w);
        let summary = format!(
            "{} read {} as a list in which {} {what}: {} appended to {} in another order or more than that",
            e.reader, e.key, e.value, e.writer, e.key
        );
        simple(Anomaly::IncompatibleOrder, summary, h, r, &e.txns)
    }

    /// Two different versions are each said to come right before `t`'s write of key `k`.
    pub fn two_predecessors(
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
    pub fn two_successors(
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

    pub fn hint_intermediate(h: &History, r: &Resolution, op: u32, w: u32) -> Certificate {
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
