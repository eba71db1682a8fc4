//! `krait watch nats://… --checkpoint FILE`: where a verifier got to, so that a restarted one
//! reports from the next round — nothing reported twice, nothing skipped. The checker's state
//! is not saved: a restarted watch reads the stream from its first record again and re-checks
//! what came before the checkpoint silently (its verdict still counts: a violation there is
//! reported), then goes on reporting, numbering rounds after the last one reported.

use anyhow::Context;
use std::path::{Path, PathBuf};

/// The last round reported, and the stream position every record up to which it covered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    path: PathBuf,
    /// The stream's address, so a checkpoint is never applied to another stream.
    pub(crate) stream: String,
    /// The number of the last round reported.
    pub(crate) round: u64,
    /// The stream sequence of the last record that round covered.
    pub(crate) seq: u64,
}

impl Checkpoint {
    /// The checkpoint in `path` for `stream`, or a fresh one when the file does not exist.
    pub(crate) fn load(path: &Path, stream: &str) -> anyhow::Result<Checkpoint> {
        let fresh = Checkpoint {
            path: path.to_path_buf(),
            stream: stream.to_string(),
            round: 0,
            seq: 0,
        };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(fresh),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a krait checkpoint", path.display()))?;
        let field = |f: &str| {
            v[f].as_u64()
                .with_context(|| format!("{}: no {f:?} in the checkpoint", path.display()))
        };
        let saved = v["stream"].as_str().unwrap_or_default();
        anyhow::ensure!(
            saved == stream,
            "{} is the checkpoint of {saved}, not of {stream}",
            path.display()
        );
        Ok(Checkpoint {
            round: field("round")?,
            seq: field("seq")?,
            ..fresh
        })
    }

    /// Records that round `round` covered every record up to `seq`; written to a temporary
    /// file and renamed, so a crash leaves the old checkpoint or the new one.
    pub(crate) fn save(&mut self, round: u64, seq: u64) -> anyhow::Result<()> {
        self.round = round;
        self.seq = seq;
        let v = serde_json::json!({"stream": self.stream, "round": round, "seq": seq});
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, v.to_string())
            .and_then(|_| std::fs::rename(&tmp, &self.path))
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_and_belongs_to_its_stream() {
        let p = std::env::temp_dir().join(format!("krait-cp-{}.json", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let mut c = Checkpoint::load(&p, "nats://h:1/S").unwrap();
        assert_eq!((c.round, c.seq), (0, 0));
        c.save(7, 1234).unwrap();
        let again = Checkpoint::load(&p, "nats://h:1/S").unwrap();
        assert_eq!((again.round, again.seq), (7, 1234));
        assert!(Checkpoint::load(&p, "nats://h:1/OTHER").is_err());
        let _ = std::fs::remove_file(&p);
    }
}
