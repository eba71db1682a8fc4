//! Words for what the known graph's construction found before any cycle: reads no serial order
//! can explain (aborted, intermediate, of nobody, of the future, non-repeatable, own write not
//! seen), contradicted log claims, lost updates, and (online) stale reads.

use super::explain::{key_name, simple, txn_name, txns};
use super::{Anomaly, CertEdge, Certificate};
use crate::findings::{Finding, Misplaced};
use crate::graph::EdgeKind;
use krait_history::{
    History, ReadProblem, Resolution, TxnId, FROM_AMBIGUOUS, FROM_INIT, FROM_NOBODY,
};

/// The certificate for a finding of the known graph's construction.
pub(crate) fn certify(h: &History, r: &Resolution, f: &Finding) -> Certificate {
    match *f {
        Finding::ReadProblem { op, ref problem } => Certificate::read_problem(h, r, op, problem),
        Finding::OwnWriteNotSeen { txn, op, own } => {
            Certificate::own_write_not_seen(h, r, txn, op, own)
        }
        Finding::ReadOfNobody { op } => Certificate::read_of_nobody(h, r, op),
        Finding::FutureRead { txn, op } => Certificate::future_read(h, r, txn, op),
        Finding::AbortedRead { op } => Certificate::aborted_read(h, r, op),
        Finding::IntermediateRead { op } => Certificate::intermediate_read(h, r, op),
        Finding::NoWriter { op, ref why } => Certificate::no_viable_writer(h, r, op, why),
        Finding::NonRepeatable {
            txn,
            key,
            first,
            second,
        } => Certificate::non_repeatable(h, r, txn, key, first, second),
        Finding::LostUpdate { key, from, t1, t2 } => {
            Certificate::lost_update(h, r, key, from, t1, t2)
        }
        Finding::LostUpdateByCount {
            key,
            op,
            ref readers,
            ref writers,
            init,
        } => Certificate::lost_update_by_count(h, r, key, op, readers, writers, init),
        Finding::TwoPredecessors { key, txn, a, b } => {
            Certificate::two_predecessors(h, r, key, txn, a, b)
        }
        Finding::TwoSuccessors { key, from, t1, t2 } => {
            Certificate::two_successors(h, r, key, from, t1, t2)
        }
        Finding::DuplicateElement { op, value } => Certificate::duplicate_element(h, r, op, value),
        Finding::ElementOfNobody { op, value } => Certificate::hint_of_nobody(h, r, op, value),
        Finding::AbortedElement { op, write } => Certificate::hint_aborted(h, r, op, write),
        Finding::MisplacedElement { op, write, how } => {
            let what = match how {
                Misplaced::AfterOwnAppend => {
                    "does not directly follow its own transaction's previous append"
                }
                Misplaced::WithoutEarlierAppend => {
                    "is not preceded by its transaction's earlier append"
                }
            };
            Certificate::list_skips(h, r, op, write, what)
        }
        Finding::IntermediateElement { op, write } => {
            Certificate::hint_intermediate(h, r, op, write)
        }
    }
}

/// Online: transaction `t` (of the round's history) read `what`, a version whose writer an
/// earlier round had found superseded (in `round`, or, None, folded into the initial version).
/// Under causal consistency (`causal`) the epochs put every old transaction in the causal past
/// of every transaction still to come, which is what the read then breaks.
#[allow(clippy::too_many_arguments)]
pub(crate) fn stale_read(
    h: &History,
    r: &Resolution,
    t: TxnId,
    what: &str,
    key: &str,
    writer: u64,
    round: Option<u64>,
    causal: bool,
) -> Certificate {
    let ext = txn_name(h, t);
    if causal {
        let by = match round {
            None => format!("T{writer} had overwritten it"),
            Some(round) => format!(
                "it was written by T{writer}, which round {round} garbage-collected as superseded (an old write of {key} follows it)"
            ),
        };
        let summary = format!(
            "{ext} read {what}, but {by}, and every old transaction is in the causal past of every transaction still to come (the fences' epochs): {ext} read a version older than one in its causal past"
        );
        return simple(Anomaly::CausalityViolation, summary, h, r, &[t]);
    }
    let summary = match round {
        None => format!(
            "{ext} read {what}, but T{writer} had overwritten it and precedes every transaction still to come (the fences' epochs), so {ext} read a version already overwritten before it began: a stale read"
        ),
        Some(round) => format!(
            "{ext} read {what}, written by T{writer}, which round {round} garbage-collected as superseded: an old write of {key} was known to follow T{writer}'s, and every old transaction precedes all transactions still to come (the fences' epochs), so {ext} read a version already overwritten before it began"
        ),
    };
    simple(Anomaly::StaleRead, summary, h, r, &[t])
}

impl Certificate {
    pub(super) fn read_problem(
        h: &History,
        r: &Resolution,
        o: u32,
        p: &ReadProblem,
    ) -> Certificate {
        let t = r.op_txn[o as usize];
        let k = key_name(h, h.op_key[o as usize]);
        let summary = match p {
            ReadProblem::WrongWriter { claimed, actual } => format!(
                "{} read {k} naming write {:#x} of transaction {claimed}, but that write belongs to T{actual}",
                txn_name(h, t),
                h.op_value[o as usize]
            ),
            ReadProblem::ValueMismatch { read, written } => format!(
                "{} read {k} with value hash {read:#x}, but the write it names wrote value hash {written:#x}: the database returned a value nobody wrote",
                txn_name(h, t)
            ),
            ReadProblem::AmbiguousDelete => {
                format!("{} read {k} naming a delete, which the log format cannot attribute to one writer", txn_name(h, t))
            }
            ReadProblem::InitialMismatch {
                read,
                earlier,
                earlier_op,
            } => format!(
                "{} read the initial version of {k} with value hash {read:#x}, but {} read it with value hash {earlier:#x}: a key's initial version holds one value, so one of them returned a value nobody wrote",
                txn_name(h, t),
                txn_name(h, r.op_txn[*earlier_op as usize])
            ),
        };
        let mut ts = vec![t];
        if let ReadProblem::InitialMismatch { earlier_op, .. } = p {
            ts.push(r.op_txn[*earlier_op as usize]);
        }
        if let Some(w) = r.writer_txn(o) {
            ts.push(w);
        }
        simple(Anomaly::GarbageRead, summary, h, r, &ts)
    }

    pub(super) fn read_of_nobody(h: &History, r: &Resolution, o: u32) -> Certificate {
        let t = r.op_txn[o as usize];
        let k = key_name(h, h.op_key[o as usize]);
        let summary = match &h.cobra {
            Some(c) if c.get(h, o as usize).1 != 0 => {
                let claimed = c.get(h, o as usize).1;
                if h.txn_index.contains_key(&claimed) {
                    format!(
                        "{} read {k} from write {:#x} of T{claimed}, but T{claimed} made no such write",
                        txn_name(h, t),
                        h.op_value[o as usize]
                    )
                } else {
                    format!(
                        "{} read {k} from transaction {claimed}, which is not in the history: a write by no committed transaction (aborted, never committed, or the history is incomplete)",
                        txn_name(h, t)
                    )
                }
            }
            _ => format!(
                "{} read {k} = {}, a value no transaction in the history wrote (garbage, or an incomplete history)",
                txn_name(h, t),
                h.value_text(o as usize)
            ),
        };
        simple(Anomaly::ReadOfNobody, summary, h, r, &[t])
    }

    pub(super) fn aborted_read(h: &History, r: &Resolution, o: u32) -> Certificate {
        let t = r.op_txn[o as usize];
        let w = r.writer_txn(o).unwrap();
        let k = key_name(h, h.op_key[o as usize]);
        let summary = format!(
            "{} read {k} = {}, written by {}, which {}",
            txn_name(h, t),
            h.value_text(o as usize),
            txn_name(h, w),
            if h.txn_status[w as usize] == krait_history::TxnStatus::Aborted {
                "aborted"
            } else {
                "did not commit"
            }
        );
        simple(Anomaly::G1a, summary, h, r, &[t, w])
    }

    pub(super) fn intermediate_read(h: &History, r: &Resolution, o: u32) -> Certificate {
        let t = r.op_txn[o as usize];
        let w = r.writer_txn(o).unwrap();
        let k = key_name(h, h.op_key[o as usize]);
        let summary = format!(
            "{} read {k} = {}, an intermediate version: {} wrote {k} again before committing",
            txn_name(h, t),
            h.value_text(o as usize),
            txn_name(h, w)
        );
        simple(Anomaly::G1b, summary, h, r, &[t, w])
    }

    pub(super) fn own_write_not_seen(
        h: &History,
        r: &Resolution,
        t: TxnId,
        o: u32,
        own: u32,
    ) -> Certificate {
        let k = key_name(h, h.op_key[o as usize]);
        let seen = match r.read_from[o as usize] {
            FROM_INIT => "the initial value".to_string(),
            FROM_NOBODY => format!("{} (written by nobody)", h.value_text(o as usize)),
            FROM_AMBIGUOUS => super::explain::source_text(h, r, o),
            x if r.op_txn[x as usize] == t => {
                format!("its own earlier write {}", h.value_text(x as usize))
            }
            x => format!(
                "{} from {}",
                h.value_text(x as usize),
                txn_name(h, r.op_txn[x as usize])
            ),
        };
        let summary = format!(
            "{} wrote {k} = {} and then read {k} as {seen}: a transaction must see its own latest write",
            txn_name(h, t),
            h.value_text(own as usize)
        );
        let mut ts = vec![t];
        if let Some(w) = r.writer_txn(o) {
            ts.push(w);
        }
        simple(Anomaly::OwnWriteNotSeen, summary, h, r, &ts)
    }

    pub(super) fn future_read(h: &History, r: &Resolution, t: TxnId, o: u32) -> Certificate {
        let k = key_name(h, h.op_key[o as usize]);
        let summary = format!(
            "{} read {k} = {}, a value it only writes later: no execution can produce this",
            txn_name(h, t),
            h.value_text(o as usize)
        );
        simple(Anomaly::ReadOfNobody, summary, h, r, &[t])
    }

    pub(super) fn non_repeatable(
        h: &History,
        r: &Resolution,
        t: TxnId,
        k: u32,
        a: u32,
        b: u32,
    ) -> Certificate {
        let summary = format!(
            "{} read {} twice and saw two versions: {} and then {}",
            txn_name(h, t),
            key_name(h, k),
            super::explain::source_text(h, r, a),
            super::explain::source_text(h, r, b)
        );
        let mut ts = vec![t];
        ts.extend(r.writer_txn(a));
        ts.extend(r.writer_txn(b));
        simple(Anomaly::NonRepeatableRead, summary, h, r, &ts)
    }

    /// More transactions read one value of `k` and then overwrote it than there are versions
    /// holding it (`graph::versions`): the counts, and every transaction counted.
    pub(super) fn lost_update_by_count(
        h: &History,
        r: &Resolution,
        k: u32,
        op: u32,
        readers: &[TxnId],
        writers: &[TxnId],
        init: bool,
    ) -> Certificate {
        let kn = key_name(h, k);
        let value = match h.op_kind[op as usize] {
            krait_history::OpKind::ReadInit => "its initial value".to_string(),
            _ => h.value_text(op as usize),
        };
        let names = |ts: &[TxnId]| {
            const SHOWN: usize = 12;
            let mut v: Vec<String> = ts.iter().take(SHOWN).map(|&t| txn_name(h, t)).collect();
            if ts.len() > SHOWN {
                v.push(format!("{} more", ts.len() - SHOWN));
            }
            v.join(", ")
        };
        let versions = writers.len() + usize::from(init);
        let mut holders = Vec::new();
        if !writers.is_empty() {
            holders.push(format!("written last by {}", names(writers)));
        }
        if init {
            holders.push("the initial version".to_string());
        }
        let summary = format!(
            "lost update on {kn}: {} committed transactions read {kn} = {value} and then overwrote it ({}), but only {versions} version{} of {kn} hold{} {value} ({}). Each version is read and then overwritten by at most one transaction, so two of them read the same version and both overwrote it, whichever write of {value} each one read",
            readers.len(),
            names(readers),
            if versions == 1 { "" } else { "s" },
            if versions == 1 { "s" } else { "" },
            holders.join("; "),
        );
        let mut ts: Vec<TxnId> = readers.iter().chain(writers).copied().collect();
        ts.sort_unstable();
        ts.dedup();
        simple(Anomaly::LostUpdate, summary, h, r, &ts)
    }

    pub(super) fn lost_update(
        h: &History,
        r: &Resolution,
        k: u32,
        from: Option<TxnId>,
        t1: TxnId,
        t2: TxnId,
    ) -> Certificate {
        let kn = key_name(h, k);
        let version = match from {
            Some(w) => format!("the version of {kn} written by {}", txn_name(h, w)),
            None => format!("the initial version of {kn}"),
        };
        let mut summary = format!(
            "{} and {} both read {version} and both overwrote it: one of the updates is lost",
            txn_name(h, t1),
            txn_name(h, t2)
        );
        if h.fence_key == Some(k) {
            // Reported only when nothing else is (see graph::known): say so.
            summary.push_str(&format!(
                " ({kn} is the collector's own fence key, read and written every few transactions per session to number epochs; the workload's own keys show no violation)"
            ));
        }
        let (n1, n2) = (txn_name(h, t1), txn_name(h, t2));
        let cycle = vec![
            CertEdge {
                from: n1.clone(),
                to: n2.clone(),
                kind: EdgeKind::Rw,
                key: Some(kn.clone()),
                explanation: format!("{n1} read {version}, which {n2} overwrote"),
                forced_because: None,
                deduced: None,
                assumed: false,
            },
            CertEdge {
                from: n2.clone(),
                to: n1.clone(),
                kind: EdgeKind::Rw,
                key: Some(kn.clone()),
                explanation: format!("{n2} read {version}, which {n1} overwrote"),
                forced_because: None,
                deduced: None,
                assumed: false,
            },
        ];
        let mut ts = vec![t1, t2];
        if let Some(w) = from {
            ts.push(w);
        }
        Certificate {
            anomaly: Anomaly::LostUpdate,
            summary,
            cycle,
            constraints: Vec::new(),
            cases: Vec::new(),
            txns: txns(h, r, &ts),
        }
    }
}
