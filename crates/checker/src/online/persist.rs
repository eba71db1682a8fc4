//! Saving the online checker's state and restoring it in another process (`watch
//! --checkpoint`): a verifier restarted mid-stream then goes on from where the saved one
//! stood instead of re-checking the stream from its start. What is saved is bounded by
//! garbage collection, like the checker's memory.

use super::{Online, OnlineError, OnlineOptions};

/// The first bytes of a saved state, with the format's version: a state from another
/// version of the layout is refused, never misread.
const MAGIC: &[u8; 8] = b"krait-o3";

impl Online {
    /// The checker's state, to be given to [`Online::restore`] later, possibly in another
    /// process. Refused once a verdict is reached: there is nothing to go on with then.
    pub fn save(&self) -> Result<Vec<u8>, OnlineError> {
        if self.verdict.is_some() {
            return Err(OnlineError::State(
                "a verdict was reached: nothing to resume".into(),
            ));
        }
        let mut out = MAGIC.to_vec();
        postcard::to_io(self, &mut out).map_err(|e| OnlineError::State(e.to_string()))?;
        Ok(out)
    }

    /// A checker in the state `bytes` saved ([`Online::save`]), checking with `opts`.
    pub fn restore(opts: OnlineOptions, bytes: &[u8]) -> Result<Online, OnlineError> {
        let body = bytes.strip_prefix(MAGIC.as_slice()).ok_or_else(|| {
            OnlineError::State("not a saved online checker of this krait version".into())
        })?;
        let mut on: Online = postcard::from_bytes(body)
            .map_err(|e| OnlineError::State(format!("unreadable saved state: {e}")))?;
        // What was carried holds the orders of the level it was checked at: serializability's
        // would say more than causal consistency's rounds may assume.
        let level = opts.check.level.name(false);
        if on.round > 0 && on.level != level {
            return Err(OnlineError::State(format!(
                "the saved checker checked {}, not {level}: restore it with the same --level",
                on.level
            )));
        }
        on.opts = opts;
        Ok(on)
    }
}

/// An `Instant` saved as how long ago it was, and restored as that long before now: waiting
/// times go on from where they stood, whatever the clocks of the two processes.
pub(super) mod age {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::time::{Duration, Instant};

    pub(crate) fn serialize<S: Serializer>(at: &Instant, s: S) -> Result<S::Ok, S::Error> {
        at.elapsed().serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Instant, D::Error> {
        let age = Duration::deserialize(d)?;
        let now = Instant::now();
        Ok(now.checked_sub(age).unwrap_or(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use krait_history::{OpKind, TxnRecord, TxnStatus, NO_TIME};

    fn txn(on: &mut Online, s: u32, ext: u64, ops: &[(OpKind, &str, u64)]) -> TxnRecord {
        TxnRecord {
            session: s,
            ext,
            status: TxnStatus::Committed,
            start: NO_TIME,
            commit: NO_TIME,
            ops: ops.iter().map(|&(k, n, v)| (k, on.key(n), v)).collect(),
            lists: Vec::new(),
            app: Vec::new(),
            claims: Vec::new(),
        }
    }

    /// A restored checker goes on exactly as the saved one would have: same rounds, same
    /// waiting reads, same verdict when a later transaction breaks the history.
    #[test]
    fn a_restored_checker_goes_on_as_the_saved_one() {
        use OpKind::{Read, Write};
        let mut on = Online::new(OnlineOptions::default());
        let a = on.session("a").unwrap();
        let b = on.session("b").unwrap();
        let t1 = txn(&mut on, a, 1, &[(Write, "x", 1), (Write, "y", 1)]);
        on.push(t1).unwrap();
        on.round().unwrap();
        // Waits for a write of y = 2 not seen yet.
        // Waits for a write of y = 3 not seen yet.
        let t2 = txn(&mut on, b, 2, &[(Read, "y", 3), (Write, "x", 2)]);
        on.push(t2).unwrap();
        assert!(on.round().unwrap().is_none());
        let bytes = on.save().unwrap();
        let mut back = Online::restore(OnlineOptions::default(), &bytes).unwrap();
        assert_eq!(back.rounds(), on.rounds());
        assert_eq!(back.waiting(), 1);
        assert_eq!(back.pushed(), 2);
        assert_eq!(back.live(), on.live());
        // T3 reads T2's x and writes the y T2 read: T2 -wr-> T3 -wr-> T2.
        let t3 = txn(&mut back, a, 3, &[(Read, "x", 2), (Write, "y", 3)]);
        back.push(t3).unwrap();
        while back.round().unwrap().is_some() {}
        assert!(back.verdict().is_some_and(|r| r.verdict.is_reject()));
        assert!(back.save().is_err());
        assert!(Online::restore(OnlineOptions::default(), b"krait-o0").is_err());
        assert!(Online::restore(OnlineOptions::default(), b"krait-o1\xff").is_err());
    }
}
