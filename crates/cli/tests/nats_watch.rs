//! `krait watch nats://…` as a verifier of its own: histories replayed into a stream by
//! several publishers with a fault (fractured reads), with sessions arriving late and out of
//! order across subjects, and a verifier killed mid-stream and restarted from its checkpoint.
//! Needs `KRAIT_NATS_URL`; each test uses a stream of its own and deletes it.

use crate::common;

use common::nats::{check, generated, published, stop, tmp, watch, watched, Stream};
use std::path::Path;
use std::time::Duration;

/// The collectors' fault case: eight publishers replay a history with fractured reads (a
/// reader sees one of a transaction's writes and misses another, which no database at
/// SERIALIZABLE does, so it comes from the simulated store) while watch verifies.
#[test]
fn fractured_reads_published_by_eight_hosts_are_caught_with_their_cycle() {
    let Some(stream) = Stream::from_env("fractured") else {
        return;
    };
    let dir = tmp("fractured");
    let h = dir.join("h.jsonl");
    generated(&h, "20000", &["--fractured-reads", "0.001"]);
    let (one_shot_code, one_shot) = check(h.to_str().unwrap());
    assert_eq!((one_shot_code, &one_shot["verdict"]), (1, &"REJECT".into()));
    let w = watch(&stream.url, "8", &["--idle-exit", "3s"]);
    published(&h, &stream.url, &["--publishers", "8"]);
    let (code, lines, err) = watched(w);
    assert_eq!(code, Some(1), "{lines:?} {err}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "REJECT", "{last}");
    // A fractured read is a cycle through a write→read edge and an anti-dependency: the
    // reader read from T1 and missed T1's other write, so it precedes T1 on that key.
    let cycle = last["cycle"].as_array().unwrap();
    let kinds: Vec<&str> = cycle.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(kinds.contains(&"wr") && kinds.contains(&"rw"), "{last}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records that arrive late and out of order across subjects: every other session is
/// published while watch runs, the rest — whose writes the first ones' reads name — 1.5 s
/// later.
/// The readers wait for their writers instead of being rejected, nothing is collected before
/// every expected session has spoken, and every transaction is checked once: ACCEPT.
#[test]
fn sessions_published_late_and_out_of_order_are_waited_for_and_checked_once() {
    let Some(stream) = Stream::from_env("late") else {
        return;
    };
    let dir = tmp("late");
    let h = dir.join("h.jsonl");
    generated(&h, "8000", &[]);
    // Split by session, every other one late.
    let text = std::fs::read_to_string(&h).unwrap();
    let (mut early, mut late) = (String::new(), String::new());
    let mut names = std::collections::HashMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let seen = names.len();
        let n = *names.entry(v["session"].to_string()).or_insert(seen);
        let half = if n % 2 == 0 { &mut early } else { &mut late };
        half.push_str(line);
        half.push('\n');
    }
    assert_eq!(names.len(), 8);
    let (h1, h2) = (dir.join("early.jsonl"), dir.join("late.jsonl"));
    std::fs::write(&h1, early).unwrap();
    std::fs::write(&h2, late).unwrap();
    let publish = |part: &Path| published(part, &stream.url, &["--publishers", "4"]);
    let w = watch(&stream.url, "8", &["--idle-exit", "4s"]);
    publish(&h1);
    std::thread::sleep(Duration::from_millis(1500));
    publish(&h2);
    let (code, lines, err) = watched(w);
    assert_eq!(code, Some(0), "{lines:?} {err}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "ACCEPT", "{last}");
    let (_, whole) = check(h.to_str().unwrap());
    assert_eq!(last["history"]["txns"], whole["history"]["txns"], "{last}");
    // The early half waited: some round ran with readers still waiting for the late half.
    assert!(
        lines
            .iter()
            .any(|l| l["waiting"].as_u64().is_some_and(|n| n > 0)),
        "no reader waited: {lines:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restarted_watch_resumes_after_its_last_reported_round() {
    let Some(stream) = Stream::from_env("resume") else {
        return;
    };
    let dir = tmp("resume");
    let h = dir.join("h.jsonl");
    generated(&h, "60000", &[]);
    published(&h, &stream.url, &[]);
    let ckpt = dir.join("watch.ckpt");
    let ckpt_arg = ckpt.to_str().unwrap();
    let resumable = |idle: &str| {
        watch(
            &stream.url,
            "8",
            &[
                "--idle-exit",
                idle,
                "--max-round",
                "1000",
                "--interval",
                "50ms",
                "--checkpoint",
                ckpt_arg,
                "--checkpoint-every",
                "100ms",
            ],
        )
    };
    // The checkpoint's header line names the round it was saved after.
    let saved = || -> u64 {
        std::fs::read(&ckpt)
            .ok()
            .and_then(|b| {
                let line = b.split(|&c| c == b'\n').next()?.to_vec();
                serde_json::from_slice::<serde_json::Value>(&line).ok()
            })
            .and_then(|v| v["round"].as_u64())
            .unwrap_or(0)
    };
    // The first verifier dies a few rounds in.
    let mut first = resumable("30s");
    let t0 = std::time::Instant::now();
    while saved() < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop(&mut first, libc::SIGKILL);
    let cut = saved();
    assert!(cut >= 3, "no checkpoint written");
    let first_lines = watched(first).1;
    let before: Vec<u64> = first_lines
        .iter()
        .filter_map(|l| l["round"].as_u64().filter(|_| l.get("new").is_some()))
        .collect();
    assert!(before.len() as u64 >= cut, "{before:?} {cut}");
    // What the saved state had admitted: the rounds up to the checkpoint's.
    let admitted = |lines: &[serde_json::Value], rounds: std::ops::RangeInclusive<u64>| -> u64 {
        lines
            .iter()
            .filter(|l| l["round"].as_u64().is_some_and(|r| rounds.contains(&r)))
            .filter_map(|l| l["new"].as_u64())
            .sum()
    };
    let checked_before = admitted(&first_lines, 1..=cut);
    assert!(checked_before > 0);
    // The second reports from the next round on, and checks everything.
    let (_, lines, _) = watched(resumable("2s"));
    let rounds: Vec<u64> = lines
        .iter()
        .filter(|l| l.get("new").is_some())
        .map(|l| l["round"].as_u64().unwrap())
        .collect();
    assert_eq!(rounds.first(), Some(&(cut + 1)), "{rounds:?}");
    assert!(rounds.windows(2).all(|w| w[1] == w[0] + 1), "{rounds:?}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "ACCEPT", "{last}");
    let (_, whole) = check(&stream.url);
    assert_eq!(last["history"]["txns"], whole["history"]["txns"], "{last}");
    // It went on from the saved state: it checked only what the first had not, once each.
    let total = whole["history"]["txns"].as_u64().unwrap();
    assert_eq!(
        checked_before + admitted(&lines, cut + 1..=u64::MAX),
        total,
        "{rounds:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Values that repeat (20 per key), published by four hosts: `watch --repeated-values` gives
/// the one-shot verdict, correct or with stale reads, and collects as it goes; without the
/// flag the first repeated value is an error that names it.
#[test]
fn repeated_values_over_a_stream() {
    let Some(stream) = Stream::from_env("repeated") else {
        return;
    };
    let dir = tmp("repeated");
    for (stale, want) in [("0", 0), ("0.002", 1)] {
        let h = dir.join(format!("h-{stale}.jsonl"));
        generated(
            &h,
            "8000",
            &[
                "--value-range",
                "20",
                "--keys",
                "200",
                "--stale-reads",
                stale,
            ],
        );
        let (code, _) = check(h.to_str().unwrap());
        assert_eq!(code, want);
        stream.delete();
        published(&h, &stream.url, &["--publishers", "4"]);
        let (code, lines, err) = watched(watch(&stream.url, "8", &["--idle-exit", "2s"]));
        assert_eq!(code, Some(2), "{lines:?} {err}");
        assert!(err.contains("--repeated-values"), "{err}");
        let ckpt = dir.join(format!("w-{stale}.ckpt"));
        let w = watch(
            &stream.url,
            "8",
            &[
                "--idle-exit",
                "2s",
                "--repeated-values",
                "--checkpoint",
                ckpt.to_str().unwrap(),
            ],
        );
        let (code, lines, err) = watched(w);
        assert_eq!(code, Some(want), "{lines:?} {err}");
        if ckpt.exists() {
            // What was collected depends on the flag: a restart without it is refused.
            let w = watch(&stream.url, "8", &["--checkpoint", ckpt.to_str().unwrap()]);
            let (code, _, err) = watched(w);
            assert_eq!(code, Some(2), "{err}");
            assert!(err.contains("saved with --repeated-values"), "{err}");
        } else {
            assert_eq!(want, 1, "a correct watch saved no checkpoint");
        }
        let deleted = lines
            .iter()
            .filter_map(|l| l["deleted_total"].as_u64())
            .max()
            .unwrap_or(0);
        if want == 0 {
            assert!(deleted > 4000, "{deleted} collected: {lines:?}");
        }
    }
    stream.delete();
    let _ = std::fs::remove_dir_all(&dir);
}
