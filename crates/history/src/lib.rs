//! krait-history: the history model every checker uses, and its formats.
//!
//! Inputs: Cobra binary log directories (`T*.log`), krait's native JSON Lines, and the formats of
//! other checkers: Jepsen/Elle EDN, PolySI/IsoVista text, dbcop JSON and bincode.
//! Outputs: a compact [`History`] (struct of arrays, dense ids), the resolution of each read to
//! the write it observed ([`resolve()`]), and writers for both formats.

pub mod cobra;
pub mod dbcop;
pub mod edn;
pub mod error;
pub mod fxhash;
pub mod jsonl;
pub mod model;
pub mod polysi;
pub mod resolve;
pub mod stream;
pub mod xxh64;

pub use error::{InputError, Location, Warning};
pub use model::*;
pub use resolve::{resolve, ReadProblem, Resolution, FROM_INIT, FROM_NOBODY};

use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Cobra,
    Jsonl,
    /// Jepsen/Elle `history.edn`.
    Edn,
    /// PolySI/IsoVista/Plume `r(k,v,s,t)` text.
    Polysi,
    /// dbcop JSON or OOPSLA'19 `history.bincode`.
    Dbcop,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cobra" => Ok(Format::Cobra),
            "jsonl" | "native" => Ok(Format::Jsonl),
            "edn" => Ok(Format::Edn),
            "polysi" => Ok(Format::Polysi),
            "dbcop" => Ok(Format::Dbcop),
            _ => Err(format!(
                "unknown format {s:?}; expected cobra, jsonl, edn, polysi or dbcop"
            )),
        }
    }
}

/// Picks the format from the path: a directory of `T*.log` is Cobra, one of `*.jsonl` JSON Lines,
/// one holding `history.bincode` dbcop; a file by its extension: `.edn` Elle, `.txt` PolySI,
/// `.bincode` dbcop, `.json` dbcop when it starts like a dbcop history; anything else JSON Lines.
pub fn detect(path: &Path) -> Result<Format, InputError> {
    if path.is_dir() {
        if cobra::is_cobra_dir(path) {
            return Ok(Format::Cobra);
        }
        if !jsonl::dir_files(path)?.is_empty() {
            return Ok(Format::Jsonl);
        }
        if path.join(dbcop::BINCODE_NAME).is_file() {
            return Ok(Format::Dbcop);
        }
        return Err(InputError::new(
            path,
            Location::Nowhere,
            "a directory, but it holds no T<n>.log or *.jsonl session files",
        ));
    }
    if !path.exists() {
        return Err(InputError::new(
            path,
            Location::Nowhere,
            "no such file or directory",
        ));
    }
    regular_file(path)?;
    Ok(match path.extension().and_then(|e| e.to_str()) {
        Some("edn") => Format::Edn,
        Some("txt") => Format::Polysi,
        Some("bincode") => Format::Dbcop,
        Some("json") if dbcop::looks_like_json_history(path) => Format::Dbcop,
        _ => Format::Jsonl,
    })
}

/// Refuses what is not a regular file (links are followed): reading a FIFO or a device would
/// block or never end.
pub fn regular_file(path: &Path) -> Result<(), InputError> {
    let m = std::fs::metadata(path).map_err(|e| InputError::io(path, e))?;
    regular(path, &m)
}

/// The same, for metadata at hand (a file being followed, already open).
pub(crate) fn regular(path: &Path, m: &std::fs::Metadata) -> Result<(), InputError> {
    if m.is_file() {
        Ok(())
    } else {
        Err(InputError::new(
            path,
            Location::Nowhere,
            "not a regular file (a FIFO, device or socket?): refused",
        ))
    }
}

pub struct Loaded {
    pub history: History,
    pub warnings: Vec<Warning>,
    pub format: Format,
}

pub fn load(path: &Path, format: Option<Format>) -> Result<Loaded, InputError> {
    let format = match format {
        Some(f) => f,
        None => detect(path)?,
    };
    match format {
        Format::Cobra => {
            let l = cobra::read_dir(path, cobra::CobraOptions::default())?;
            Ok(Loaded {
                history: l.history,
                warnings: l.warnings,
                format,
            })
        }
        Format::Jsonl => {
            let l = if path.is_dir() {
                jsonl::read_dir(path)?
            } else {
                jsonl::read_file(path)?
            };
            Ok(Loaded {
                history: l.history,
                warnings: l.warnings,
                format,
            })
        }
        Format::Edn | Format::Polysi | Format::Dbcop => {
            let l = match format {
                Format::Edn => edn::read_file(path)?,
                Format::Polysi => polysi::read_file(path)?,
                _ => dbcop::read_file(path)?,
            };
            Ok(Loaded {
                history: l.history,
                warnings: l.warnings,
                format,
            })
        }
    }
}

/// Counts for `krait stats` and the summary line.
#[derive(Clone, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct Summary {
    pub sessions: usize,
    pub txns: usize,
    pub committed: usize,
    pub aborted: usize,
    pub unknown: usize,
    pub reads: usize,
    pub writes: usize,
    pub keys: usize,
    pub initial_reads: usize,
    pub fences: usize,
    pub timestamps: bool,
}

pub fn summarize(h: &History) -> Summary {
    let mut s = Summary {
        sessions: h.num_sessions(),
        txns: h.num_txns(),
        keys: h.num_keys(),
        ..Default::default()
    };
    for st in &h.txn_status {
        match st {
            TxnStatus::Committed => s.committed += 1,
            TxnStatus::Aborted => s.aborted += 1,
            TxnStatus::Unknown => s.unknown += 1,
        }
    }
    for k in &h.op_kind {
        match k {
            OpKind::Write => s.writes += 1,
            OpKind::Read => s.reads += 1,
            OpKind::ReadInit => {
                s.reads += 1;
                s.initial_reads += 1
            }
        }
    }
    s.fences = (0..h.num_txns() as TxnId)
        .filter(|&t| h.is_fence(t))
        .count();
    s.timestamps = h.has_timestamps();
    s
}
