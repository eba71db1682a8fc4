//! Input errors: every one names the file, where in it, and what was wrong.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in an input a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// The whole input (or its path).
    Nowhere,
    /// Byte offset of the record that is wrong (binary formats).
    Offset(u64),
    /// 1-based line number (text formats).
    Line(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Nowhere => Ok(()),
            Location::Offset(o) => write!(f, "byte offset {o}: "),
            Location::Line(l) => write!(f, "line {l}: "),
        }
    }
}

/// An input that cannot be read as a history: loading stops.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{}: {location}{message}", path.display())]
pub struct InputError {
    /// The file (or directory) that is wrong.
    pub path: PathBuf,
    /// Where in it.
    pub location: Location,
    /// What is wrong.
    pub message: String,
}

impl InputError {
    /// An error at `location` of `path`.
    pub fn new(path: &Path, location: Location, message: impl Into<String>) -> Self {
        InputError {
            path: path.to_path_buf(),
            location,
            message: message.into(),
        }
    }
    /// `path` could not be read.
    pub fn io(path: &Path, e: std::io::Error) -> Self {
        InputError::new(path, Location::Nowhere, format!("cannot read: {e}"))
    }
}

/// A problem that does not stop loading (a truncated last transaction, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The file the problem is in.
    pub path: PathBuf,
    /// Where in it.
    pub location: Location,
    /// What was wrong, and what loading made of it.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}{}",
            self.path.display(),
            self.location,
            self.message
        )
    }
}
