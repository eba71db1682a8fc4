//! Batch and follow read the same history from every cut of the logs a database test wrote
//! (issue #14). The collector writes each transaction's line in parts (head, each op before it
//! is sent, the outcome at the end), so a crash or a full disk cuts a line anywhere; `krait
//! check` (batch: `krait_history::load`) and `krait watch` (`Follower`: polls, then `finish`)
//! must read the same transactions ([`readings`]) from whatever is left. For each log file of
//! the directory, three kinds of cut:
//!
//! - Prefix cuts: the file cut at a byte, the other files whole, each read by both readers; the
//!   follower polls at the cut only, at the cut before it and then at the cut, or at two earlier
//!   points and then at the cut (the file appended to in between), and finishes. Every byte of
//!   every file of small directories (up to [`EVERY_BYTE_DIR_MAX`]); else line boundaries and
//!   the [`inner_cuts`] of lines in [`priority`] order, within [`PREFIX_SECS`]: each cut reads
//!   the whole directory twice, so the largest logs get only a few dozen.
//! - A sweep: one follower follows the file as it grows from nothing through every byte (files
//!   up to [`SWEEP_EVERY_BYTE_MAX`]) or every line boundary and some of the inner cuts of every
//!   line, polling at each; each poll must give exactly the lines completed since the last one,
//!   as the batch reader read them from the whole logs, and finishing at the end nothing more.
//!   This is `krait watch`'s path, and cheap: every line boundary of even the longest logs.
//! - Line cuts: every line, cut at all its [`inner_cuts`] (lines in [`priority`] order, up to
//!   [`LINE_CUTS_MAX`] cuts a directory) or at [`few_cuts`] (the others), in a file holding just
//!   the line before it and the cut line: how both readers complete a cut line depends on its bytes only (and the follower's,
//!   on where its last poll stopped, here inside or at the end of the line before), so this
//!   reads each cut at the cost of two lines rather than of the whole directory.
//!
//! Assumes the collector's layout: one session per file.
//!
//! [`readings`]: super::readings

use super::readings::{batch, diff, grouped, Following, Txn, Txns};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the prefix cuts of one directory may cost, in seconds by [`READ_NS_PER_BYTE`] and
/// [`CUT_OVERHEAD_NS`]: each cut reads the whole directory twice. About 2 s a test on an idle
/// machine: every line boundary and a few lines' inner cuts of 600-transaction logs (130 KB),
/// about a hundred cuts of the largest (4,000 transactions, 1 MB), whose every line boundary
/// the sweep covers instead.
pub const PREFIX_SECS: f64 = 2.0;
/// What a reader takes a byte in the test profile (measured: 5.5 ms for both readers over 300 KB
/// of 8-op lines on an idle machine; several times that on a loaded one).
pub const READ_NS_PER_BYTE: f64 = 10.0;
/// A cut's fixed cost (a follower, listing and opening files, twice).
pub const CUT_OVERHEAD_NS: f64 = 150e3;
/// Directories up to this size (the smallest tests') get a prefix cut at every byte of every
/// file, whatever the budget: 8 KB (40 transactions) takes 2.5 s on an idle machine, 8 s of
/// CPU on a loaded one.
pub const EVERY_BYTE_DIR_MAX: u64 = 10 << 10;
/// Files up to this size are swept byte by byte (a poll costs some 50-100 µs); larger ones at
/// their line boundaries and every [`SWEEP_STRIDE`]th inner cut of every line.
pub const SWEEP_EVERY_BYTE_MAX: usize = 8 << 10;
pub const SWEEP_STRIDE: usize = 4;
/// Line cuts of one directory at all of a line's [`inner_cuts`] (each cut some 0.2 ms), lines
/// in [`priority`] order; every further line gets its [`few_cuts`].
pub const LINE_CUTS_MAX: usize = 4000;

/// How much of a directory's logs was compared.
#[derive(Default, Debug)]
pub struct CutStats {
    /// Log files, and their lines.
    pub files: usize,
    pub lines: usize,
    /// Prefix cuts (the other files whole), and the files cut at every byte.
    pub prefix_cuts: usize,
    pub every_byte_files: usize,
    /// Polls of the sweeps.
    pub sweep_polls: usize,
    /// Lines given line cuts at all their inner cuts (the others at a few), and all line cuts.
    pub lines_cut: usize,
    pub line_cuts: usize,
    /// Seconds it took: prefix cuts, sweeps, line cuts.
    pub secs: [f64; 3],
}

/// Checks that batch and follow read the same transactions from cuts of each `*.jsonl` file
/// of `dir` (see the module's doc); panics at the first difference, with the bytes, the cut
/// and both results. Works on copies (in /dev/shm where there is one).
pub fn batch_matches_follow(dir: &Path, tag: &str) -> CutStats {
    let t0 = Instant::now();
    let files = krait_history::jsonl_dir_files(dir).unwrap();
    assert!(!files.is_empty(), "{tag}: no logs in {}", dir.display());
    let texts: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let whole_reading = batch(dir).unwrap().0;
    let total: u64 = texts.iter().map(|t| t.len() as u64).sum();
    let (whole, one) = (scratch(dir, "prefix-cuts"), scratch(dir, "line-cuts"));
    for (f, t) in files.iter().zip(&texts) {
        std::fs::write(whole.join(f.file_name().unwrap()), t).unwrap();
    }
    let mut st = CutStats {
        files: files.len(),
        ..Default::default()
    };
    let cap = if total <= EVERY_BYTE_DIR_MAX {
        usize::MAX
    } else {
        let cut_ns = 2.0 * total as f64 * READ_NS_PER_BYTE + CUT_OVERHEAD_NS;
        (PREFIX_SECS * 1e9 / files.len() as f64 / cut_ns) as usize
    };
    let line_budget = LINE_CUTS_MAX / files.len();
    for (f, text) in files.iter().zip(&texts) {
        let ls = lines(text);
        st.lines += ls.len();
        let name = f.file_name().unwrap();
        let path = whole.join(name);
        let cuts = prefix_cuts(text, &ls, cap);
        st.every_byte_files += usize::from(cuts.len() == text.len() + 1);
        let t = Instant::now();
        for (i, &cut) in cuts.iter().enumerate() {
            let points = poll_points(i, &cuts, cut);
            compare(tag, &whole, &path, text, &points);
        }
        st.prefix_cuts += cuts.len();
        st.secs[0] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        st.sweep_polls += sweep(tag, &whole, &path, text, &ls, &whole_reading);
        std::fs::write(&path, text).unwrap();
        st.secs[1] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let path = one.join(name);
        let mut budget = line_budget;
        for li in priority(text, &ls) {
            let (a, e) = ls[li];
            let all = budget > 0;
            let cuts = if all {
                inner_cuts(&text[a..e])
            } else {
                few_cuts(&text[a..e])
            };
            budget = budget.saturating_sub(cuts.len());
            line_cuts(tag, &path, text, &ls, li, &cuts);
            st.line_cuts += cuts.len();
            st.lines_cut += usize::from(all);
        }
        // (An empty log gave no line to cut, and left no file.)
        let _ = std::fs::remove_file(&path);
        st.secs[2] += t.elapsed().as_secs_f64();
    }
    let _ = std::fs::remove_dir_all(&whole);
    let _ = std::fs::remove_dir_all(&one);
    println!(
        "{tag}: batch == follow on cuts of its logs, in {:.1} s: {st:?}",
        t0.elapsed().as_secs_f64()
    );
    st
}

/// An empty directory for the copies of `dir`'s logs: in /dev/shm where there is one, since
/// every cut rewrites a file, which on a disk file system costs I/O (ext4 with discard: about
/// a millisecond a cut, five times the reading); else beside `dir`.
fn scratch(dir: &Path, what: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap().to_os_string();
    name.push(format!("-{what}"));
    let shm = Path::new("/dev/shm").join(&name);
    let _ = std::fs::remove_dir_all(&shm);
    if std::fs::create_dir(&shm).is_ok() {
        return shm;
    }
    let d = dir.with_file_name(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Follows `dir` while `file` grows to `text[..points.last()]`: written up to the first point,
/// polled, appended to the next point, polled, …, then finished. Returns the transactions and
/// how many warnings finishing gave.
fn follow_in_steps(
    dir: &Path,
    file: &Path,
    text: &[u8],
    points: &[usize],
) -> Result<(Txns, usize), String> {
    std::fs::write(file, &text[..points[0]]).unwrap();
    let mut f = Following::new(dir)?;
    let mut recs = Vec::new();
    for (i, &p) in points.iter().enumerate() {
        if i > 0 {
            append(file, &text[points[i - 1]..p]);
        }
        recs.extend(f.poll().map_err(|e| format!("poll at {p}: {e}"))?);
    }
    let (last, warnings) = f.finish().map_err(|e| format!("finish: {e}"))?;
    recs.extend(last);
    Ok((grouped(recs), warnings))
}

fn append(file: &Path, bytes: &[u8]) {
    if !bytes.is_empty() {
        let mut out = std::fs::OpenOptions::new().append(true).open(file).unwrap();
        out.write_all(bytes).unwrap();
    }
}

/// Where a cut is, for failure messages: the file, the cut, the polls, and the cut line
/// before | after the cut.
fn place(tag: &str, file: &Path, text: &[u8], cut: usize, points: &[usize]) -> String {
    let start = text[..cut]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let end = text[cut..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| cut + i);
    format!(
        "{tag}: {} cut at byte {cut} (polled at {points:?}); the cut line: {:?} | {:?}",
        file.display(),
        String::from_utf8_lossy(&text[start..cut]),
        String::from_utf8_lossy(&text[cut..end]),
    )
}

/// Reads `dir` both ways with `file` cut at `points.last()` (polled at each point) and panics
/// with the bytes, the cut and both results when they differ (transactions or warnings).
fn compare(tag: &str, dir: &Path, file: &Path, text: &[u8], points: &[usize]) {
    let cut = *points.last().unwrap();
    let followed = follow_in_steps(dir, file, text, points);
    let here = || place(tag, file, text, cut, points);
    let (batch, followed) = match (batch(dir), followed) {
        (Ok(b), Ok(f)) => (b, f),
        (b, f) => panic!(
            "{}: a reader failed: batch {:?}, follow {:?}",
            here(),
            b.err(),
            f.err()
        ),
    };
    if batch.0 != followed.0 {
        panic!(
            "{}: batch and follow differ: {}",
            here(),
            diff(&batch.0, &followed.0)
        );
    }
    assert!(
        batch.1 == followed.1,
        "{}: batch gave {} warnings, follow {}",
        here(),
        batch.1,
        followed.1
    );
}

/// One follower follows `file` (in `dir`, the other files whole) as it grows from nothing through
/// the sweep's points, polling at each: every record it gives must be its session's next in the
/// batch reading of the whole logs (`whole`), each poll must give one record per line completed
/// since the last, and at the end (finished) every session must be complete. Returns the polls.
fn sweep(
    tag: &str,
    dir: &Path,
    file: &Path,
    text: &[u8],
    ls: &[(usize, usize)],
    whole: &Txns,
) -> usize {
    let points: Vec<usize> = if text.len() <= SWEEP_EVERY_BYTE_MAX {
        (0..=text.len()).collect()
    } else {
        let mut p = vec![0, text.len()];
        for &(a, e) in ls {
            p.push(a);
            let inner = inner_cuts(&text[a..e]);
            p.extend(inner.into_iter().step_by(SWEEP_STRIDE).map(|c| a + c));
        }
        p.sort_unstable();
        p.dedup();
        p
    };
    std::fs::write(file, b"").unwrap();
    let mut f = Following::new(dir).unwrap();
    let mut next: HashMap<String, usize> = HashMap::new();
    let mut take = |recs: Vec<(String, Txn)>, at: &dyn Fn() -> String| {
        for (s, t) in recs {
            let i = next.entry(s.clone()).or_default();
            let want = whole.get(&s).and_then(|v| v.get(*i));
            assert_eq!(
                want,
                Some(&t),
                "{}: session {s:?}, its transaction {i}",
                at()
            );
            *i += 1;
        }
    };
    let mut prev = 0;
    for (n, &p) in points.iter().enumerate() {
        append(file, &text[prev..p]);
        let here = || {
            format!(
                "sweep: {}",
                place(tag, file, text, p, &points[n.saturating_sub(1)..=n])
            )
        };
        let recs = f.poll().unwrap_or_else(|e| panic!("{}: {e}", here()));
        if n > 0 {
            let completed = text[prev..p].iter().filter(|&&b| b == b'\n').count();
            assert_eq!(recs.len(), completed, "{}: records given", here());
        }
        take(recs, &here);
        prev = p;
    }
    let (last, warnings) = f.finish().unwrap();
    let at = || format!("sweep: {tag}: {} finished", file.display());
    take(last, &at);
    assert_eq!(warnings, 0, "{}", at());
    for (s, v) in whole {
        assert_eq!(
            next.get(s).copied().unwrap_or(0),
            v.len(),
            "{}: session {s:?} given",
            at()
        );
    }
    points.len()
}

/// Cuts line `li` of `text` at `cuts` (offsets in the line), in a file holding the line before
/// it and the line; the follower polls at the cut, or in the middle of the line before and at
/// the cut, or also at the line's start.
fn line_cuts(
    tag: &str,
    file: &Path,
    text: &[u8],
    ls: &[(usize, usize)],
    li: usize,
    cuts: &[usize],
) {
    let dir = file.parent().unwrap();
    let prev = if li == 0 { 0 } else { ls[li - 1].0 };
    let (a, e) = ls[li];
    let window = &text[prev..(e + 1).min(text.len())];
    let a = a - prev;
    debug_assert!(cuts.iter().all(|&c| c <= e - prev - a));
    for (i, &c) in cuts.iter().enumerate() {
        let cut = a + c;
        let points = match i % 3 {
            0 => vec![cut],
            1 => vec![a / 2, cut],
            _ => vec![a / 2, a, cut],
        };
        compare(tag, dir, file, window, &points);
    }
}

/// (start, end) of each line, its newline excluded; a last line without one included.
fn lines(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut a = 0;
    while a < text.len() {
        let e = text[a..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |i| a + i);
        out.push((a, e));
        a = e + 1;
    }
    out
}

/// Cuts inside one line (offsets in 1..=len, len being the line without its newline): its
/// first bytes, inside the head and its times, at and around the ops' opening bracket, inside
/// and between the first ops, in the middle of the ops, just before and after the ops' closing
/// bracket (COMMIT not sent / sent), inside the status key, before and after the status's first
/// letter, inside the commit time, and one and two bytes before the newline.
pub fn inner_cuts(line: &[u8]) -> Vec<usize> {
    let s = String::from_utf8_lossy(line);
    let find = |pat: &str| s.find(pat);
    let n = line.len();
    let mut c = vec![1, 2, 3, n.saturating_sub(2), n.saturating_sub(1), n];
    c.extend(find("\"txn\":").map(|i| i + 7));
    c.extend(find("\"start\":").map(|i| i + 10));
    if let Some(o) = find("\"ops\":[") {
        c.extend([o + 3, o + 6, o + 7, o + 9]);
        let ends = op_ends(line, o + 7);
        if let Some(&first) = ends.first() {
            c.extend([first - 1, first, first + 1, first + 2]);
        }
        if let Some(&mid) = ends.get(ends.len() / 2) {
            c.extend([mid.saturating_sub(3), mid]);
        }
        if let Some(close) = ops_close(line, o + 7) {
            c.extend([close, close + 1, close + 2]);
        }
    }
    if let Some(st) = find("\"status\":\"") {
        c.extend([st + 1, st + 9, st + 10, st + 11, st + 13]);
    }
    if let Some(cm) = find("\"commit\":") {
        c.extend([cm + 5, cm + 9, cm + 10, cm + 14]);
    }
    c.retain(|&x| x >= 1 && x <= n);
    c.sort_unstable();
    c.dedup();
    c
}

/// A few cuts inside a line, for lines past the budget of [`inner_cuts`]: inside the ops,
/// just before and after their closing bracket, just after the status's first letter.
pub fn few_cuts(line: &[u8]) -> Vec<usize> {
    let s = String::from_utf8_lossy(line);
    let mut c = Vec::new();
    if let Some(o) = s.find("\"ops\":[") {
        c.push(o + 9);
        c.extend(ops_close(line, o + 7).into_iter().flat_map(|x| [x, x + 1]));
    }
    c.extend(s.find("\"status\":\"").map(|st| st + 11));
    c.retain(|&x| x >= 1 && x <= line.len());
    c.sort_unstable();
    c.dedup();
    c
}

/// Ends (the index after `]`) of the ops that start at `body`.
fn op_ends(line: &[u8], body: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut depth, mut in_str, mut esc) = (1u32, false, false);
    for (i, &b) in line.iter().enumerate().skip(body) {
        if in_str {
            match b {
                _ if esc => esc = false,
                b'\\' => esc = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                match depth {
                    1 => out.push(i + 1),
                    0 => break,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    out
}

/// The index of the bracket that closes the ops starting at `body`.
fn ops_close(line: &[u8], body: usize) -> Option<usize> {
    let last = op_ends(line, body).last().copied().unwrap_or(body);
    line[last..]
        .iter()
        .position(|&b| b == b']')
        .map(|i| last + i)
}

/// At most `cap` prefix cuts of one file: every byte when the file is small, else its line
/// boundaries (spread evenly beyond three quarters of the cap) and the inner cuts of as many lines as the
/// rest allows, in [`priority`] order.
fn prefix_cuts(text: &[u8], ls: &[(usize, usize)], cap: usize) -> Vec<usize> {
    if text.len() < cap {
        return (0..=text.len()).collect();
    }
    // Line boundaries, at most three quarters of the cuts.
    let mut cuts: Vec<usize> = ls.iter().map(|l| l.0).chain([text.len()]).collect();
    if cuts.len() > (cap * 3 / 4).max(2) {
        let n = cuts.len();
        let keep = (cap * 3 / 4).max(2);
        cuts = (0..keep).map(|i| cuts[i * (n - 1) / (keep - 1)]).collect();
    }
    let mut room = cap.saturating_sub(cuts.len());
    for li in priority(text, ls) {
        let (a, e) = ls[li];
        let inner = inner_cuts(&text[a..e]);
        if inner.len() > room {
            break;
        }
        room -= inner.len();
        cuts.extend(inner.iter().map(|&c| a + c));
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// Where the follower polls before finishing at `cuts[i]`: there only; at the cut before and
/// there; or at two earlier points picked by a hash and there.
fn poll_points(i: usize, cuts: &[usize], cut: usize) -> Vec<usize> {
    match i % 3 {
        0 => vec![cut],
        1 => vec![cuts[i - 1], cut],
        _ => {
            let h = (cut as u64 ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            let x = (h >> 32) as usize % (cut + 1);
            let y = x + (h & 0xffff_ffff) as usize % (cut - x + 1);
            vec![x, y, cut]
        }
    }
}

/// The lines in the order they are worth cutting: outcomes other than committed first (a
/// fault's traces), then the first and last lines, then lines spread evenly, then the rest.
fn priority(text: &[u8], ls: &[(usize, usize)]) -> Vec<usize> {
    let n = ls.len();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut push = |i: usize, order: &mut Vec<usize>| {
        if i < n && !seen[i] {
            seen[i] = true;
            order.push(i);
        }
    };
    let committed = b"\"status\":\"committed\"";
    for (i, &(a, e)) in ls.iter().enumerate() {
        if !text[a..e].windows(committed.len()).any(|w| w == committed) {
            push(i, &mut order);
        }
    }
    for i in [0, 1, n.wrapping_sub(1), n.wrapping_sub(2)] {
        push(i, &mut order);
    }
    let mut x = 0.0f64;
    for _ in 0..n {
        x = (x + 0.618_033_988_749_895) % 1.0;
        push((x * n as f64) as usize, &mut order);
    }
    for i in 0..n {
        push(i, &mut order);
    }
    order
}
