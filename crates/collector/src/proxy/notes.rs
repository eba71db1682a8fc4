//! What the proxy could not record, written down beside the history (`unrecorded.log` in its
//! directory, one JSON object per line): each statement on a declared table it could not map to
//! reads and writes, with the transaction it ran in and whether it may have written. The
//! history reader turns the file into a warning that `krait check` prints and puts in its JSON,
//! so the verdict says what it does not cover — however long after the run it is checked.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use krait_history::UNRECORDED_FILE;

/// The open notes file, shared by every connection.
pub(crate) struct Notes(Mutex<std::fs::File>);

impl Notes {
    pub(crate) fn create(dir: &Path) -> io::Result<Notes> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(UNRECORDED_FILE))?;
        Ok(Notes(Mutex::new(f)))
    }

    /// Notes a statement of session `session`, in the transaction with log id `txn` (None:
    /// outside any recorded transaction), before it is forwarded.
    pub(crate) fn add(
        &self,
        session: &str,
        txn: Option<u64>,
        may_write: bool,
        statement: &str,
    ) -> io::Result<()> {
        let line = serde_json::json!({
            "session": session,
            "txn": txn,
            "may_write": may_write,
            "statement": statement,
        });
        writeln!(self.0.lock().unwrap(), "{line}")
    }
}
