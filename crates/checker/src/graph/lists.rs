//! List-append reads (Elle): what a whole list states about its key's version order, or the
//! finding that no version order can give it.

use super::{Built, EdgeKind, Facts, Label, INIT};
use crate::findings::{Finding, Misplaced};
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
    b: &mut Built,
    f: &mut Facts,
) -> Result<(), Finding> {
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
                return Err(Finding::DuplicateElement { op, value: v });
            }
            let Some(w) = h.first_write(k, v) else {
                return Err(Finding::ElementOfNobody { op, value: v });
            };
            let t = r.op_txn[w as usize];
            if !inc[t as usize] {
                return Err(Finding::AbortedElement { op, write: w });
            }
            if t == reader && w > op {
                return Err(Finding::FutureRead { txn: t, op });
            }
            let writes_k = |lo: usize, hi: usize| {
                (lo..hi).any(|x| h.op_kind[x] == OpKind::Write && h.op_key[x] == k)
            };
            let ops_t = h.ops(t);
            match prev {
                Some((pw, pt)) if pt == t => {
                    // Two appends of one transaction: consecutive, in program order.
                    if pw > w || writes_k(pw as usize + 1, w as usize) {
                        return Err(Finding::MisplacedElement {
                            op,
                            write: w,
                            how: Misplaced::AfterOwnAppend,
                        });
                    }
                }
                _ => {
                    // A transaction's appends start here: this must be its first.
                    if writes_k(ops_t.start, w as usize) {
                        return Err(Finding::MisplacedElement {
                            op,
                            write: w,
                            how: Misplaced::WithoutEarlierAppend,
                        });
                    }
                    let before = match prev {
                        None => INIT,
                        Some((pw, pt)) => {
                            // The previous transaction's appends end here: its last.
                            if writes_k(pw as usize + 1, h.ops(pt).end) {
                                return Err(Finding::IntermediateElement { op, write: pw });
                            }
                            b.txn_node[pt as usize]
                        }
                    };
                    let n = b.txn_node[t as usize];
                    f.reads.push((k, before, n));
                    f.rmws.push((k, before, n));
                    if before != INIT {
                        b.push_edge(before, n, Label::fact(EdgeKind::Ww, k));
                    }
                }
            }
            prev = Some((w, t));
        }
    }
    Ok(())
}
