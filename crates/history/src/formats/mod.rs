//! Every input format krait reads, one file each, and what they all share: the [`Format`] names,
//! the one [`Loaded`] shape every reader returns, and the refusal of files that are not regular.
//! Detection and dispatch are in `load`, so that this file depends on no reader and every
//! reader may depend on it.
//!
//! Readers turn bytes into the model (`crate::model`); the model knows nothing of them.

pub(crate) mod cobra;
mod cobra_part;
#[cfg(test)]
mod cobra_tests;
pub(crate) mod cobra_write;
pub(crate) mod dbcop_bincode;
pub(crate) mod dbcop_json;
pub(crate) mod edn;
pub(crate) mod elle;
mod gather;
pub(crate) mod jsonl;
mod jsonl_block;
mod jsonl_build;
mod jsonl_repair;
mod jsonl_scan;
mod jsonl_serde;
#[cfg(test)]
mod jsonl_tests;
pub(crate) mod jsonl_write;
pub(crate) mod load;
pub(crate) mod polysi;
mod source;
pub(crate) mod unrecorded;

use crate::error::{InputError, Location, Warning};
use crate::model::History;
use std::path::Path;

/// An input format, as named on the command line (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Cobra's binary per-session logs (a directory of `T<n>.log`).
    Cobra,
    /// krait's native JSON Lines (a file, or a directory of `*.jsonl`).
    Jsonl,
    /// Jepsen/Elle `history.edn`.
    Edn,
    /// PolySI/IsoVista/Plume `r(k,v,s,t)` text.
    Polysi,
    /// dbcop JSON or OOPSLA'19 `history.bincode`.
    Dbcop,
}

/// A format name `Format::from_str` does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?}; expected cobra, jsonl, edn, polysi or dbcop")]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, UnknownFormat> {
        match s {
            "cobra" => Ok(Format::Cobra),
            "jsonl" | "native" => Ok(Format::Jsonl),
            "edn" => Ok(Format::Edn),
            "polysi" => Ok(Format::Polysi),
            "dbcop" => Ok(Format::Dbcop),
            _ => Err(UnknownFormat(s.to_string())),
        }
    }
}

/// What every reader returns: the history, the problems that did not stop loading, and the
/// format it was read as.
pub struct Loaded {
    /// The history read.
    pub history: History,
    /// Problems that did not stop loading (a truncated last transaction, say).
    pub warnings: Vec<Warning>,
    /// The format the input was read as.
    pub format: Format,
}

/// Refuses what is not a regular file (links are followed): reading a FIFO or a device would
/// block or never end.
pub(crate) fn regular_file(path: &Path) -> Result<(), InputError> {
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
