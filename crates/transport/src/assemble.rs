//! Turning the records of a log back into transactions: a pending record stands until its
//! final record replaces it; one whose final record never comes (the collector died after
//! sending COMMIT) is the transaction with outcome unknown — what a log line cut short after
//! its operations says.

use crate::Kind;
use std::collections::HashMap;

/// One record as read from the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The session it belongs to, as the log names it (one name per session).
    pub session: String,
    /// The session's transaction number it is about (1, 2, …).
    pub n: u64,
    /// Pending or final.
    pub kind: Kind,
    /// The JSON Lines record.
    pub text: String,
}

/// Per session, the pending record whose final one has not arrived. Saved with a verifier's
/// checkpoint: a pending record read before it must still be replaced by its final one after.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Assembler {
    pending: HashMap<String, (u64, String)>,
    ended: Vec<String>,
}

impl Assembler {
    /// Takes the next record; transactions it completes are appended to `out`, in order.
    pub fn push(&mut self, r: Record, out: &mut Vec<String>) {
        match r.kind {
            Kind::Pending => {
                // A session runs one transaction at a time: an older pending record whose
                // final one never came stays as it is (unknown).
                if let Some((_, old)) = self.pending.insert(r.session, (r.n, r.text)) {
                    out.push(old);
                }
            }
            Kind::Final => {
                if let Some((n, old)) = self.pending.remove(&r.session) {
                    if n != r.n {
                        out.push(old);
                    }
                }
                out.push(r.text);
            }
            Kind::End => {
                if let Some((_, old)) = self.pending.remove(&r.session) {
                    out.push(old);
                }
                self.ended.push(r.session);
            }
        }
    }

    /// The sessions whose end record arrived since the last call.
    pub fn take_ended(&mut self) -> Vec<String> {
        std::mem::take(&mut self.ended)
    }

    /// The records of transactions whose outcome has not arrived: their writes may already be
    /// read by others.
    pub fn pending(&self) -> impl Iterator<Item = &str> {
        self.pending.values().map(|(_, t)| t.as_str())
    }

    /// Session `session` is given up on (its publisher is gone): its pending record, if any,
    /// is a transaction with outcome unknown.
    pub fn give_up(&mut self, session: &str) -> Option<String> {
        self.pending.remove(session).map(|(_, t)| t)
    }

    /// The log has ended (or its sessions are given up on): every pending record is a
    /// transaction with outcome unknown. Appended to `out` in session-name order.
    pub fn finish(&mut self, out: &mut Vec<String>) {
        let mut left: Vec<(String, (u64, String))> = self.pending.drain().collect();
        left.sort();
        out.extend(left.into_iter().map(|(_, (_, t))| t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(s: &str, n: u64, kind: Kind, text: &str) -> Record {
        Record {
            session: s.into(),
            n,
            kind,
            text: text.into(),
        }
    }

    #[test]
    fn a_final_record_replaces_its_pending_one() {
        let mut a = Assembler::default();
        let mut out = Vec::new();
        a.push(rec("c1", 1, Kind::Pending, "p1"), &mut out);
        assert!(out.is_empty());
        assert_eq!(a.pending().collect::<Vec<_>>(), ["p1"]);
        a.push(rec("c2", 1, Kind::Final, "f2"), &mut out);
        a.push(rec("c1", 1, Kind::Final, "f1"), &mut out);
        assert_eq!(out, ["f2", "f1"]);
        assert_eq!(a.pending().count(), 0);
    }

    #[test]
    fn a_pending_record_without_its_final_one_stands_as_unknown() {
        let mut a = Assembler::default();
        let mut out = Vec::new();
        a.push(rec("c1", 1, Kind::Pending, "p1"), &mut out);
        a.push(rec("c1", 2, Kind::Final, "f2"), &mut out);
        a.push(rec("c1", 3, Kind::Pending, "p3"), &mut out);
        a.push(rec("c1", 4, Kind::Pending, "p4"), &mut out);
        assert_eq!(out, ["p1", "f2", "p3"]);
        a.finish(&mut out);
        assert_eq!(out, ["p1", "f2", "p3", "p4"]);
    }

    #[test]
    fn an_end_record_closes_its_session() {
        let mut a = Assembler::default();
        let mut out = Vec::new();
        a.push(rec("c1", 1, Kind::Final, "f1"), &mut out);
        a.push(rec("c1", 2, Kind::End, ""), &mut out);
        assert_eq!(out, ["f1"]);
        assert_eq!(a.take_ended(), ["c1"]);
        assert!(a.take_ended().is_empty());
    }
}
