//! The process's memory, for `--rss` and the benchmarks: peak memory is the figure the paper
//! reports, and Linux keeps it in /proc/self/status (None elsewhere).

/// Peak resident memory so far, in bytes (VmHWM).
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_bytes("VmHWM:")
}

/// Resident memory now, in bytes (VmRSS).
pub fn rss_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

/// A memory figure (kB) from /proc/self/status, in bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
