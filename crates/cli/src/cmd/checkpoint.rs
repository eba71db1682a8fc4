//! `krait watch nats://… --checkpoint FILE`: the verifier's whole state — the online checker
//! (bounded by garbage collection, like its memory), the follower's pending records and
//! session clocks, and the stream position they cover — saved every `--checkpoint-every` and
//! whenever a poll finds the stream quiet. A watch restarted with the same FILE goes on from
//! the next record: nothing before it is read or checked again, rounds are numbered on from
//! the saved one, and the only output repeated is the rounds reported between the last save
//! and the crash.
//!
//! The file is one JSON header line, for people and scripts (stream, level, round, record,
//! transactions), then the state in postcard, then eight bytes: the xxHash64 of all before
//! them. It is written to a temporary file, synced and renamed, so a crash leaves the old
//! checkpoint or the new one, never half of one; a disk, a copy or an editor that changes any
//! byte later makes it refused, never loaded: a state read back wrong once gave a correct
//! history a REJECT (a session edge to a transaction it never had, a write nobody made).

use crate::stream::FollowerState;
use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The layout's version: a checkpoint of another layout is refused, never misread.
const VERSION: u64 = 4;

/// Bytes of the checksum that ends the file.
const SUM: usize = 8;

/// Where and how often a watch saves its state.
pub(crate) struct Checkpoint {
    path: PathBuf,
    /// The stream's address, so a checkpoint is never applied to another stream.
    stream: String,
    /// The level checked: a checkpoint's verdict so far holds for that level only.
    level: String,
    every: Duration,
    last: Option<Instant>,
    /// (stream record, round) at the last save: a quiet poll saves only what changed.
    saved_at: (u64, u64),
}

/// The state a watch goes on from.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Saved {
    /// Transactions taken in so far.
    pub(crate) txns: u64,
    /// The follower's session numbers → the checker's.
    pub(crate) session_ids: Vec<u32>,
    pub(crate) follower: FollowerState,
    /// [`krait_checker::online::Online::save`]'s bytes.
    pub(crate) online: Vec<u8>,
}

/// What the header line says of a saved state.
pub(crate) struct Header {
    pub(crate) round: u64,
    pub(crate) record: u64,
}

impl Checkpoint {
    pub(crate) fn new(path: &Path, stream: &str, level: &str, every: Duration) -> Checkpoint {
        Checkpoint {
            path: path.to_path_buf(),
            stream: stream.to_string(),
            level: level.to_string(),
            every,
            last: None,
            saved_at: (0, 0),
        }
    }

    /// The saved state, or None when the file does not exist yet.
    pub(crate) fn load(&mut self) -> anyhow::Result<Option<(Header, Saved)>> {
        let p = self.path.display();
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {p}")),
        };
        let nl = bytes.iter().position(|&b| b == b'\n');
        let head: serde_json::Value = nl
            .and_then(|n| serde_json::from_slice(&bytes[..n]).ok())
            .with_context(|| format!("{p}: not a krait checkpoint (no header line)"))?;
        let version = head["krait_checkpoint"].as_u64().unwrap_or(0);
        anyhow::ensure!(
            version == VERSION,
            "{p}: a checkpoint of layout {version}, not {VERSION} (another krait version, or a damaged file): remove it to check the stream from its start"
        );
        let body = checked(&bytes).with_context(|| {
            format!("{p}: the checkpoint does not match its checksum (cut, or changed since it was written): remove it to check the stream from its start")
        })?;
        let field = |f: &str| {
            head[f]
                .as_u64()
                .with_context(|| format!("{p}: no {f:?} in the header"))
        };
        let text = |f: &str| head[f].as_str().unwrap_or_default().to_string();
        anyhow::ensure!(
            text("stream") == self.stream,
            "{p} is the checkpoint of {}, not of {}",
            text("stream"),
            self.stream
        );
        anyhow::ensure!(
            text("level") == self.level,
            "{p} was saved checking {}, not {}: restart with --level {} or remove it",
            text("level"),
            self.level,
            text("level")
        );
        let saved: Saved = postcard::from_bytes(&body[nl.unwrap() + 1..])
            .with_context(|| format!("{p}: the saved state is unreadable (cut or altered)"))?;
        let header = Header {
            round: field("round")?,
            record: field("record")?,
        };
        self.saved_at = (header.record, header.round);
        self.last = Some(Instant::now());
        Ok(Some((header, saved)))
    }

    /// Whether a save is due: `--checkpoint-every` has passed, or the stream is quiet and
    /// something changed (so an idle exit leaves the latest state behind).
    pub(crate) fn due(&self, quiet: bool, record: u64, round: u64) -> bool {
        let changed = (record, round) != self.saved_at;
        changed && (quiet || self.last.is_none_or(|t| t.elapsed() >= self.every))
    }

    /// Saves `s`, taken after round `round` and stream record `record`.
    pub(crate) fn save(&mut self, round: u64, record: u64, s: &Saved) -> anyhow::Result<()> {
        let head = serde_json::json!({
            "krait_checkpoint": VERSION,
            "stream": self.stream,
            "level": self.level,
            "round": round,
            "record": record,
            "txns": s.txns,
        });
        let tmp = self.path.with_extension("tmp");
        (|| -> std::io::Result<()> {
            let mut bytes = format!("{head}\n").into_bytes();
            bytes.extend(postcard::to_stdvec(s).map_err(std::io::Error::other)?);
            let sum = krait_history::hash_bytes(&bytes);
            bytes.extend(sum.to_le_bytes());
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })()
        .with_context(|| format!("writing {}", self.path.display()))?;
        self.saved_at = (record, round);
        self.last = Some(Instant::now());
        Ok(())
    }
}

/// The file without its checksum, where the checksum matches.
fn checked(bytes: &[u8]) -> Option<&[u8]> {
    let at = bytes.len().checked_sub(SUM)?;
    let (body, sum) = bytes.split_at(at);
    (krait_history::hash_bytes(body).to_le_bytes() == sum).then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_and_belongs_to_its_stream_and_level() {
        let p = std::env::temp_dir().join(format!("krait-cp-{}.ckpt", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let every = Duration::from_secs(1);
        let mut c = Checkpoint::new(&p, "nats://h:1/S", "serializable", every);
        assert!(c.load().unwrap().is_none());
        assert!(c.due(false, 10, 1), "nothing saved yet");
        let s = Saved {
            txns: 42,
            session_ids: vec![1, 0],
            follower: FollowerState::default(),
            online: b"state".to_vec(),
        };
        c.save(7, 1234, &s).unwrap();
        assert!(!c.due(true, 1234, 7), "nothing changed since");
        assert!(c.due(true, 1300, 7), "quiet, and more was read");
        assert!(!c.due(false, 1300, 7), "not quiet, and saved a moment ago");
        let (head, back) = Checkpoint::new(&p, "nats://h:1/S", "serializable", every)
            .load()
            .unwrap()
            .unwrap();
        assert_eq!((head.round, head.record), (7, 1234));
        assert_eq!(
            (back.txns, back.session_ids, back.online),
            (42, vec![1, 0], s.online)
        );
        let refused = |stream: &str, level: &str| {
            Checkpoint::new(&p, stream, level, every)
                .load()
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default()
        };
        assert!(refused("nats://h:1/OTHER", "serializable").contains("not of nats://h:1/OTHER"));
        assert!(
            refused("nats://h:1/S", "read-committed").contains("restart with --level serializable")
        );
        // A cut file is refused, not misread.
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 3]).unwrap();
        assert!(refused("nats://h:1/S", "serializable").contains("checksum"));
        std::fs::write(&p, b"{\"krait_checkpoint\":1}\n").unwrap();
        assert!(refused("nats://h:1/S", "serializable").contains("layout 1"));
        let _ = std::fs::remove_file(&p);
    }

    /// A real checker's state, saved, then every byte of the file changed in turn (each bit
    /// pattern flipped once): each damaged file is refused, so no verdict ever comes from it.
    #[test]
    fn every_damaged_byte_of_a_real_checkpoint_is_refused() {
        use krait_checker::online::{replay, Online, OnlineOptions};
        use krait_history::{build_history, SimpleTxn};
        let mut txns = Vec::new();
        for i in 0..40u64 {
            // Each reads what the one five before wrote to its key, then writes the key.
            let (s, k) = ((i % 3) as usize, format!("k{}", i % 5));
            let t = SimpleTxn::new(s, i + 1);
            let t = if i >= 5 { t.r(&k, 95 + i) } else { t };
            txns.push(t.w(&k, 100 + i));
        }
        let h = build_history(&txns).unwrap();
        let on = replay(&h, OnlineOptions::default(), 7, |_, _| {}).unwrap();
        assert!(on.verdict().is_none(), "the history is serializable");
        let p = std::env::temp_dir().join(format!("krait-cp-flip-{}.ckpt", std::process::id()));
        let every = Duration::from_secs(1);
        let s = Saved {
            txns: 40,
            session_ids: vec![0, 1, 2],
            follower: FollowerState::default(),
            online: on.save().unwrap(),
        };
        Checkpoint::new(&p, "nats://h:1/S", "serializable", every)
            .save(6, 40, &s)
            .unwrap();
        let good = std::fs::read(&p).unwrap();
        let load = || Checkpoint::new(&p, "nats://h:1/S", "serializable", every).load();
        let (_, back) = load().unwrap().unwrap();
        let restored = Online::restore(OnlineOptions::default(), &back.online).unwrap();
        assert_eq!(restored.live(), on.live());
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= flip;
                std::fs::write(&p, &bad).unwrap();
                assert!(
                    load().is_err(),
                    "byte {i} of {} xor {flip:#x}: loaded",
                    good.len()
                );
            }
        }
        let _ = std::fs::remove_file(&p);
    }
}
