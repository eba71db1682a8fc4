//! Progress on stderr, only on a terminal: a spinner for a long check, a bar for a run. Piped
//! or redirected output stays clean for scripts.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// A spinner on stderr that appears only on a terminal, and only once a second has passed.
pub(crate) fn spinner() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
    pb.set_style(indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})").unwrap());
    pb.set_message("loading");
    let show = pb.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        if !show.is_finished() {
            show.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            show.enable_steady_tick(Duration::from_millis(120));
        }
    });
    Some(pb)
}

/// A bar of `done` out of `total` transactions, redrawn until `stop` is set (on a terminal
/// only: elsewhere it returns at once).
pub(crate) fn run_bar(done: &AtomicU64, stop: &AtomicBool, total: u64) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let pb = indicatif::ProgressBar::new(total);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} txns ({per_sec}, eta {eta})")
            .unwrap(),
    );
    while !stop.load(Ordering::Relaxed) {
        pb.set_position(done.load(Ordering::Relaxed));
        std::thread::sleep(Duration::from_millis(100));
    }
    pb.finish_and_clear();
}
