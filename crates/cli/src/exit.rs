//! Exit codes, named: scripts and CI branch on them, so each has one meaning across subcommands.

use krait_checker::Verdict;
use std::process::ExitCode;

/// The history is serializable (or a command succeeded).
pub const ACCEPT: u8 = 0;
/// The history is not serializable; a certificate says why.
pub const REJECT: u8 = 1;
/// Bad input or usage: the history, the arguments or a file could not be used.
pub const BAD_INPUT: u8 = 2;
/// Undecided: the solver's budget ran out (or a verdict of a kind that cannot be confirmed).
pub const UNKNOWN: u8 = 3;
/// `krait run`: the database or the log failed for good; the history so far still loads.
pub const RUN_FAILED: u8 = 4;
/// The command's own output could not be written (a full disk, a closed descriptor): what it
/// checked or recorded is unaffected, but its result was not shown.
pub const OUTPUT_FAILED: u8 = 5;

/// The exit code of a verdict; no verdict (an online check that found nothing) is ACCEPT.
pub fn of_verdict(v: Option<&Verdict>) -> ExitCode {
    ExitCode::from(match v {
        None | Some(Verdict::Accept) => ACCEPT,
        Some(Verdict::Reject(_)) => REJECT,
        Some(Verdict::Unknown { .. }) => UNKNOWN,
    })
}
