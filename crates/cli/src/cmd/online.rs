//! What `check --round-size` and `watch` share: online options from the check switches, and
//! the printing of rounds and of the final verdict (text, JSON, or JSON Lines for a watch that
//! may never end).

use super::args::CheckArgs;
use crate::lag::LagHistogram;
use crate::output::write_dot;
use crate::{exit, memory};
use krait_checker::online::{Online, OnlineOptions, RoundStats};
use krait_checker::Report;
use std::process::ExitCode;
use std::time::Duration;

/// The online checker's options these switches ask for.
pub(crate) fn options(a: &CheckArgs) -> OnlineOptions {
    OnlineOptions {
        check: a.options(),
        gc: !a.no_gc,
        reduce: !a.no_carry_reduction,
        fold: !a.no_fold,
        ..OnlineOptions::default()
    }
}

/// One round in words (the text output of `check --round-size` and `watch`).
pub(crate) fn round_line(st: &RoundStats) -> String {
    format!(
        "round {}: +{} txns, {} checked, {} deleted ({} in all), {} live{}, {}, {} carried edges, epoch agree {}, {:.1} ms{}",
        st.round,
        st.new,
        st.checked,
        st.deleted,
        st.deleted_total,
        st.live,
        if st.waiting > 0 {
            format!(" + {} waiting", st.waiting)
        } else {
            String::new()
        },
        match st.forced_edges {
            Some(f) => format!("{f} forced edges"),
            None => format!(
                "{} constraints ({} after pruning)",
                st.constraints, st.constraints_after_prune
            ),
        },
        st.carried_edges,
        if st.epoch_agree >= u32::MAX - 2 {
            "-".to_string()
        } else {
            st.epoch_agree.to_string()
        },
        st.time.as_secs_f64() * 1e3,
        match &st.gc_held {
            Some(why) => format!(" (garbage collection held: {why})"),
            None => String::new(),
        }
    )
}

/// Prints rounds as they end and the verdict at the end, as text, JSON or JSON Lines.
pub(crate) struct Printer {
    json: bool,
    /// JSON Lines: each round as it ends, then the verdict (watch runs indefinitely).
    stream: bool,
    rounds: Vec<RoundStats>,
    peak_live: usize,
    /// Watch: per transaction, ms from its logged commit to the end of the round that checked
    /// it (same machine's clock as the collector's, or clocks in sync), in fixed memory.
    lags: LagHistogram,
    /// Watch of a stream: how far it was read, against what it holds (said with the verdict).
    coverage: Option<krait_transport::Coverage>,
}

/// Wall-clock now in ns, the collector's timestamp unit.
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Printer {
    /// `json`: JSON output; `stream`: as JSON Lines, each round as it ends (watch).
    pub(crate) fn new(json: bool, stream: bool) -> Printer {
        Printer {
            json,
            stream,
            rounds: Vec::new(),
            peak_live: 0,
            lags: LagHistogram::new(),
            coverage: None,
        }
    }

    /// A watched stream's last record and the last one read, said with the verdict.
    pub(crate) fn stream_coverage(&mut self, c: krait_transport::Coverage) {
        self.coverage = Some(c);
    }

    /// The coverage in words: a verdict covers the records read, and says so when that is
    /// not all the stream holds.
    fn coverage_line(&self) -> Option<String> {
        let c = self.coverage?;
        Some(if c.read >= c.stored {
            format!("stream: all {} records read", c.stored)
        } else {
            format!(
                "stream: {} of its {} records read; the verdict covers those only",
                c.read, c.stored
            )
        })
    }

    /// Records the lag of the transactions admitted since the last call (each once).
    pub(crate) fn lag(&mut self, on: &mut Online) {
        let now = now_ns();
        for c in on.take_admitted_commits() {
            self.lags.add(now.saturating_sub(c) as f64 / 1e6);
        }
    }

    /// p50, p99 and max of the lags, in ms (the quantiles within 1%).
    fn lag_summary(&self) -> Option<(f64, f64, f64)> {
        self.lags.summary()
    }

    /// One round ended.
    pub(crate) fn round(&mut self, st: &RoundStats) {
        self.peak_live = self.peak_live.max(st.checked);
        if self.json && self.stream {
            if let Ok(line) = serde_json::to_string(st) {
                println!("{line}");
            }
        } else if self.json {
            self.rounds.push(st.clone());
        } else {
            println!("{}", round_line(st));
        }
    }

    /// A session was taken as lost (watch on a stream): a line of its own, so scripts see
    /// where in the rounds it happened (JSON Lines: `{"session_lost": NAME, "silent_ms": …}`).
    pub(crate) fn session_lost(&self, name: &str, silent: Duration) {
        if self.json && self.stream {
            println!(
                "{}",
                serde_json::json!({"session_lost": name, "silent_ms": silent.as_secs_f64() * 1e3})
            );
        } else {
            eprintln!(
                "session {name}: nothing for {:.1} s while others went on: taken as lost (a transaction it had sent COMMIT for is an unknown outcome); collection goes on without it",
                silent.as_secs_f64()
            );
        }
    }

    /// The verdict, with totals; returns the verdict's exit code.
    pub(crate) fn end(
        &self,
        a: &CheckArgs,
        on: &Online,
        total: Duration,
        txns: u64,
    ) -> anyhow::Result<ExitCode> {
        let report: Option<&Report> = on.verdict();
        if let Some(file) = &a.junit {
            crate::junit::write(file, &a.path, a.level_name(), report, total)?;
        }
        if self.json {
            let mut v = match report {
                Some(r) => krait_report::report_json(r),
                None => serde_json::json!({
                    "verdict": "ACCEPT",
                    "level": a.level_name(),
                    "schema_version": krait_report::SCHEMA_VERSION,
                }),
            };
            let obj = v.as_object_mut().unwrap();
            obj.insert("path".into(), a.path.display().to_string().into());
            if !self.stream {
                obj.insert("rounds".into(), serde_json::to_value(&self.rounds)?);
            }
            obj.insert("round".into(), on.rounds().into());
            // `txns` is the certificate's list; the count goes with the history's.
            obj.insert("history".into(), serde_json::json!({ "txns": txns }));
            obj.insert("total_ms".into(), (total.as_secs_f64() * 1e3).into());
            obj.insert("peak_checked".into(), self.peak_live.into());
            obj.insert("deleted".into(), on.deleted_total().into());
            if let Some((p50, p99, max)) = self.lag_summary() {
                obj.insert(
                    "lag_ms".into(),
                    serde_json::json!({ "p50": p50, "p99": p99, "max": max }),
                );
            }
            if a.rss {
                obj.insert("peak_rss_bytes".into(), memory::peak_rss_bytes().into());
            }
            if let Some(c) = self.coverage {
                let records = serde_json::json!({ "stored": c.stored, "read": c.read });
                obj.insert("stream_records".into(), records);
            }
            if self.stream {
                println!("{}", serde_json::to_string(&v)?);
            } else {
                println!("{}", serde_json::to_string_pretty(&v)?);
            }
        } else {
            match report {
                Some(r) => {
                    println!("round {}: violation found", on.rounds());
                    print!("{}", krait_report::report_text(r, a.timings));
                }
                None => println!(
                    "ACCEPT ({}): {txns} transactions in {} rounds, {:.2} s; at most {} transactions in a round's graph, {} garbage-collected",
                    krait_report::level_words(a.level_name()),
                    on.rounds(),
                    total.as_secs_f64(),
                    self.peak_live,
                    on.deleted_total()
                ),
            }
            if let Some((p50, p99, max)) = self.lag_summary() {
                println!(
                    "lag from commit to verified: p50 {p50:.0} ms, p99 {p99:.0} ms, max {max:.0} ms"
                );
            }
            if let Some(line) = self.coverage_line() {
                println!("{line}");
            }
        }
        if let (Some(dot), Some(cert)) = (&a.dot, report.and_then(|r| r.verdict.certificate())) {
            write_dot(cert, dot)?;
        }
        Ok(exit::of_verdict(report.map(|r| &r.verdict)))
    }
}

/// Online rounds cannot give a serial order or a report of the whole history: refused up front.
pub(crate) fn refuse_one_shot_flags(a: &CheckArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        !a.order,
        "--order needs the whole history at once; online rounds delete transactions as they go"
    );
    anyhow::ensure!(
        !a.no_session_order,
        "--no-session-order is for a one-shot check: online rounds rely on each session's order"
    );
    anyhow::ensure!(
        a.report.is_none(),
        "--report (--out) is for a one-shot check: online rounds delete the transactions a report would show"
    );
    Ok(())
}
