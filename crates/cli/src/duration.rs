//! Durations on the command line (`--clock-drift 100ms`, `--interval 2s`): a number with a unit,
//! milliseconds when none is given, since that is what clock drifts and polling intervals are
//! usually measured in.

use std::time::Duration;

/// Parses `100ms`, `2s`, `500us`, `10ns` or a bare number of milliseconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|i| s.split_at(i))
        .unwrap_or((s, "ms"));
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?}: expected e.g. 100ms"))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return Err(format!("bad duration unit {unit:?}: use ns, us, ms or s")),
    };
    if v < 0.0 || !v.is_finite() {
        return Err(format!("bad duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}
