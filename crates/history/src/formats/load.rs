//! Which reader a path needs, and the one entry point that loads any of them: detection looks
//! at the path (a directory's files, a file's extension, the start of a `.json`), never at the
//! whole input.

use super::{cobra, dbcop_bincode, dbcop_json, elle, jsonl, polysi, regular_file, Format, Loaded};
use crate::error::{InputError, Location};
use std::io::Read;
use std::path::Path;

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
        if path.join(BINCODE_NAME).is_file() {
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
        Some("json") if looks_like_json_history(path) => Format::Dbcop,
        _ => Format::Jsonl,
    })
}

/// Loads a history in the given format, or in the one [`detect`] picks.
pub fn load(path: &Path, format: Option<Format>) -> Result<Loaded, InputError> {
    let format = match format {
        Some(f) => f,
        None => detect(path)?,
    };
    match format {
        Format::Cobra => cobra::read_dir(path, cobra::CobraOptions::default()),
        Format::Jsonl if path.is_dir() => jsonl::read_dir(path),
        Format::Jsonl => jsonl::read_file(path),
        Format::Edn => elle::read_file(path),
        Format::Polysi => polysi::read_file(path),
        Format::Dbcop => read_dbcop(path),
    }
}

/// The file dbcop writes an executed history to, in a directory per history.
const BINCODE_NAME: &str = "history.bincode";

/// A history path: a directory holding `history.bincode`, a `.bincode` file, a `.json` file,
/// or anything else by its first byte (JSON starts with `[` or `{`).
fn read_dbcop(path: &Path) -> Result<Loaded, InputError> {
    let path_buf;
    let path = if path.is_dir() {
        path_buf = path.join(BINCODE_NAME);
        path_buf.as_path()
    } else {
        path
    };
    let open = || std::fs::File::open(path).map_err(|e| InputError::io(path, e));
    let json = match path.extension().and_then(|e| e.to_str()) {
        Some("bincode") => false,
        Some("json") => true,
        _ => matches!(first_byte(open()?, path)?, Some(b'[' | b'{')),
    };
    let f = open()?;
    if json {
        dbcop_json::read_json(f, path)
    } else {
        let len = f.metadata().ok().map(|m| m.len());
        dbcop_bincode::read_from(f, len, path)
    }
}

/// The first byte of `f` past a UTF-8 byte-order mark and whitespace, reading no further.
fn first_byte(mut f: impl Read, path: &Path) -> Result<Option<u8>, InputError> {
    let mut buf = [0u8; 4096];
    let mut start = true;
    // A byte-order mark's bytes seen so far, kept until it is known whether it is one.
    let mut held = Vec::new();
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => return Ok(held.iter().copied().find(|c: &u8| !c.is_ascii_whitespace())),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(InputError::io(path, e)),
        };
        let mut chunk = &buf[..n];
        if start {
            held.extend_from_slice(chunk);
            if held.len() < 3 && b"\xEF\xBB\xBF".starts_with(&held) {
                continue;
            }
            start = false;
            chunk = held.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&held);
        }
        if let Some(&c) = chunk.iter().find(|c| !c.is_ascii_whitespace()) {
            return Ok(Some(c));
        }
        held.clear();
    }
}

/// Whether the start of a `.json` file looks like a dbcop history rather than krait's JSON
/// Lines: a top-level array, or an object whose first field is one of dbcop's.
fn looks_like_json_history(path: &Path) -> bool {
    let mut head = [0u8; 512];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let head = &head[..n];
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start();
    if text.starts_with('[') {
        return true;
    }
    let Some(rest) = text.strip_prefix('{') else {
        return false;
    };
    ["params", "info", "start", "end", "data"]
        .iter()
        .any(|k| rest.trim_start().starts_with(&format!("\"{k}\"")))
}
