//! krait-history: the history model every checker uses, and its formats.
//!
//! Inputs: Cobra binary log directories (`T*.log`), krait's native JSON Lines, and the formats of
//! other checkers: Jepsen/Elle EDN, PolySI/IsoVista text, dbcop JSON and bincode.
//! Outputs: a compact [`History`] (struct of arrays, dense ids), the resolution of each read to
//! the write it observed ([`resolve()`]), and writers for Cobra logs and JSON Lines.
//!
//! Layout: `model` (the history, its builder, read resolution) knows no format; `formats` (one
//! file per format, plus detection and dispatch) reads into the model; `follow` tails logs that
//! are still being written, with the readers' own decoders. Everything other crates use is
//! re-exported here; the modules themselves are private.

#![warn(missing_docs)]

mod error;
mod follow;
mod formats;
mod fxhash;
pub mod in_order;
mod model;
#[cfg(test)]
mod test_rng;
mod xxh64;

pub use error::{InputError, Location, Warning};
pub use follow::{Follower, Polled, StreamFormat};
pub use formats::cobra::{read_dir as read_cobra_dir, read_log as read_cobra_log, CobraOptions};
pub use formats::cobra_write::write_dir as write_cobra_dir;
pub use formats::dbcop_bincode::read_bincode as read_dbcop_bincode;
pub use formats::dbcop_json::read_json as read_dbcop_json;
pub use formats::elle::read as read_edn;
pub use formats::jsonl::{
    dir_files as jsonl_dir_files, parse_stream_line as parse_jsonl_record, read as read_jsonl,
    read_dir as read_jsonl_dir, read_file as read_jsonl_file, INITIAL_STATE_FILE,
};
pub use formats::jsonl_write::{
    for_each_line as for_each_jsonl_line, write as write_jsonl, write_file as write_jsonl_file,
};
pub use formats::load::{detect, load};
pub use formats::polysi::read as read_polysi;
pub use formats::unrecorded::UNRECORDED_FILE;
pub use formats::{Format, Loaded, UnknownFormat};
pub use fxhash::{FxHashMap, FxHashSet};

/// A value as histories hold it, for a recorder that logs an application's own values rather
/// than tagged write ids: a 64-bit hash (xxHash64), equal for equal values.
pub fn hash_value(value: &str) -> u64 {
    hash_bytes(value.as_bytes())
}

/// [`hash_value`] of raw bytes (a value as a database sent it).
pub fn hash_bytes(value: &[u8]) -> u64 {
    xxh64::xxh64(value, 0)
}
pub use model::*;

/// Asks the processor to bring `x`'s cache line in ahead of its use (a hint: nothing else
/// changes). For loops whose next items' scattered loads are known ahead.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and cannot fault; SSE is part of
    // every x86-64 processor.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (x as *const T).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
