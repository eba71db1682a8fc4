//! `krait check --round-size N` (a finished history, in rounds) and `krait watch PATH` (logs
//! still being written): online verification with garbage collection, one line per round.

use crate::{options_of, CheckArgs};
use clap::Args;
use krait_checker::online::{Online, OnlineOptions, RoundStats, TxnIn};
use krait_checker::{Report, Verdict};
use krait_history::{Follower, Keys, StreamFormat};
use krait_history::{Format, KeyId};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Args, Clone)]
pub struct WatchArgs {
    #[command(flatten)]
    pub check: CheckArgs,
    /// How often to look for new transactions.
    #[arg(long, default_value = "200ms", value_parser = crate::parse_duration)]
    pub interval: Duration,
    /// Stop, with the final verdict, once the logs have not grown for this long.
    #[arg(long, value_parser = crate::parse_duration)]
    pub idle_exit: Option<Duration>,
    /// How many client sessions to expect: nothing is garbage-collected before all have
    /// written (a session that starts late would void the epoch guarantee). Files in a
    /// followed directory count on their own: collection waits until each has a transaction.
    #[arg(long, default_value_t = 0)]
    pub sessions: usize,
    /// At most this many transactions a round (a backlog is checked in several rounds).
    #[arg(long, default_value_t = 20_000)]
    pub max_round: usize,
    /// How long a read may name a write that no log holds yet before it is rejected as a read
    /// of a value nobody wrote (on top of two full passes over the logs): the slack for logs
    /// written with buffering.
    #[arg(long, default_value = "10s", value_parser = crate::parse_duration)]
    pub read_wait: Duration,
}

pub fn online_options(a: &CheckArgs) -> OnlineOptions {
    OnlineOptions {
        check: options_of(a),
        gc: !a.no_gc,
        reduce: !a.no_carry_reduction,
        fold: !a.no_fold,
        ..OnlineOptions::default()
    }
}

pub fn round_line(st: &RoundStats) -> String {
    format!(
        "round {}: +{} txns, {} checked, {} deleted ({} in all), {} live{}, {} constraints ({} after pruning), {} carried edges, epoch agree {}, {:.1} ms",
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
        st.constraints,
        st.constraints_after_prune,
        st.carried_edges,
        if st.epoch_agree >= u32::MAX - 2 {
            "-".to_string()
        } else {
            st.epoch_agree.to_string()
        },
        st.time.as_secs_f64() * 1e3
    )
}

struct Out {
    json: bool,
    /// JSON Lines: each round as it ends, then the verdict (watch runs indefinitely).
    stream: bool,
    rounds: Vec<RoundStats>,
    peak_live: usize,
    /// Watch: per transaction, ms from its logged commit to the end of the round that checked
    /// it (same machine's clock as the collector's, or clocks in sync).
    lags: Vec<f64>,
}

/// Wall-clock now in ns, the collector's timestamp unit.
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Out {
    fn lag(&mut self, on: &Online) {
        let now = now_ns();
        self.lags.extend(
            on.last_admitted_commits
                .iter()
                .map(|&c| now.saturating_sub(c) as f64 / 1e6),
        );
    }

    /// p50, p99 and max of the lags, in ms.
    fn lag_summary(&self) -> Option<(f64, f64, f64)> {
        if self.lags.is_empty() {
            return None;
        }
        let mut l = self.lags.clone();
        l.sort_by(f64::total_cmp);
        let at = |p: f64| l[((l.len() - 1) as f64 * p).round() as usize];
        Some((at(0.5), at(0.99), *l.last().unwrap()))
    }

    fn round(&mut self, st: &RoundStats) {
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

    fn end(
        &self,
        a: &CheckArgs,
        on: &Online,
        total: Duration,
        txns: u64,
    ) -> anyhow::Result<ExitCode> {
        let report: Option<&Report> = on.verdict();
        if self.json {
            let mut v = match report {
                Some(r) => krait_report::report_json(r),
                None => serde_json::json!({ "verdict": "ACCEPT" }),
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
                obj.insert("peak_rss_bytes".into(), crate::peak_rss_bytes().into());
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
                    "ACCEPT: {txns} transactions in {} rounds, {:.2} s; at most {} transactions in a round's graph, {} garbage-collected",
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
        }
        if let (Some(dot), Some(cert)) = (&a.dot, report.and_then(|r| r.verdict.certificate())) {
            crate::write_dot(cert, dot)?;
        }
        Ok(match report.map(|r| &r.verdict) {
            None | Some(Verdict::Accept) => ExitCode::SUCCESS,
            Some(Verdict::Reject(_)) => ExitCode::from(1),
            Some(Verdict::Unknown { .. }) => ExitCode::from(3),
        })
    }
}

/// A finished history, replayed in rounds.
pub fn check_rounds(a: &CheckArgs, round_size: usize) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(round_size > 0, "--round-size must be at least 1");
    no_order(a)?;
    let t = Instant::now();
    let loaded = crate::load(&a.path, a.format)?;
    let h = &loaded.history;
    let mut out = Out {
        json: a.json,
        stream: false,
        rounds: Vec::new(),
        peak_live: 0,
        lags: Vec::new(),
    };
    let on = match krait_checker::online::replay(h, online_options(a), round_size, |st, _| {
        out.round(st)
    }) {
        Ok(on) => on,
        Err(e) => {
            eprintln!("error: {}: {e}", a.path.display());
            return Ok(ExitCode::from(2));
        }
    };
    out.end(a, &on, t.elapsed(), h.num_txns() as u64)
}

struct KeyAdapter<'a>(&'a mut Online);

impl Keys for KeyAdapter<'_> {
    fn key(&mut self, name: &str) -> KeyId {
        self.0.key(name)
    }
    fn fence_key(&mut self, k: KeyId) {
        self.0.set_fence_key(k);
    }
}

fn no_order(a: &CheckArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        !a.order,
        "--order needs the whole history at once; online rounds delete transactions as they go"
    );
    Ok(())
}

/// Logs still being written, followed until they stop growing (or forever).
pub fn watch(w: &WatchArgs) -> anyhow::Result<ExitCode> {
    let a = &w.check;
    no_order(a)?;
    let fmt = match a.format {
        None => None,
        Some(Format::Jsonl) => Some(StreamFormat::Jsonl),
        Some(Format::Cobra) => Some(StreamFormat::Cobra),
        Some(f) => anyhow::bail!("watch follows native JSON Lines and Cobra logs, not {f:?}"),
    };
    let mut follower = Follower::new(&a.path, fmt)?;
    let mut on = Online::new(OnlineOptions {
        // In watch, --round-size caps a round like --max-round.
        max_admit: a.round_size.unwrap_or(w.max_round).max(1),
        read_wait: w.read_wait,
        ..online_options(a)
    });
    on.min_sessions = w.sessions;
    on.set_cobra_claims(follower.format == StreamFormat::Cobra);
    let mut out = Out {
        json: a.json,
        stream: true,
        rounds: Vec::new(),
        peak_live: 0,
        lags: Vec::new(),
    };
    let t0 = Instant::now();
    // When the last growth of the logs had been checked: the logs count as idle only when a
    // poll finds nothing new and was taken --idle-exit after that, so time spent checking a
    // long round is never taken for a client that went quiet (its half-written line for a
    // crash).
    let mut quiet_since = Instant::now();
    let mut txns = 0u64;
    if !a.json {
        eprintln!(
            "watching {} (new transactions every {} ms{})",
            a.path.display(),
            w.interval.as_millis(),
            match w.idle_exit {
                Some(d) => format!(", stopping after {:.1} s without any", d.as_secs_f64()),
                None => ", until interrupted".to_string(),
            }
        );
    }
    loop {
        let poll_time = Instant::now();
        let mut polled = follower.poll(&mut KeyAdapter(&mut on))?;
        let grew = polled.grew;
        let ending = !grew
            && w.idle_exit
                .is_some_and(|d| poll_time.duration_since(quiet_since) >= d);
        if ending {
            let (p, warnings) = follower.finish(&mut KeyAdapter(&mut on))?;
            for wn in warnings {
                eprintln!("warning: {wn}");
            }
            polled = p;
        }
        let step = (|| -> Result<(), krait_checker::online::OnlineError> {
            for s in &polled.new_sessions {
                on.session(s)?;
            }
            for t in polled.txns {
                txns += 1;
                let session = on.session(&t.session)?;
                on.push(TxnIn {
                    session,
                    ext: t.ext,
                    status: t.status,
                    start: t.start,
                    commit: t.commit,
                    ops: t.ops,
                    lists: t.lists,
                    claims: t.claims,
                })?;
            }
            on.next_sweep(polled.provisional.into_iter().collect());
            on.hold_gc = follower.silent_files() > 0;
            // A backlog takes several rounds.
            while let Some(st) = on.round()? {
                out.lag(&on);
                out.round(&st);
                if on.verdict().is_some() {
                    return Ok(());
                }
            }
            if ending {
                for st in on.finish()? {
                    out.round(&st);
                }
                out.lag(&on);
            }
            Ok(())
        })();
        if let Err(e) = step {
            eprintln!("error: {}: {e}", a.path.display());
            return Ok(ExitCode::from(2));
        }
        if on.verdict().is_some() || ending {
            break;
        }
        if grew {
            quiet_since = Instant::now();
        }
        std::thread::sleep(w.interval);
    }
    out.end(a, &on, t0.elapsed(), txns)
}
