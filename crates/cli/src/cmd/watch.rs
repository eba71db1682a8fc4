//! `krait watch`: follow logs that are still being written (native JSON Lines or Cobra) and
//! check them in rounds, garbage-collecting what no future transaction can affect, until the
//! logs go quiet, a violation shows up, or forever.

use super::checkpoint::{Checkpoint, Saved};
use super::online::{self, Printer};
use crate::cmd::check::CheckArgs;
use crate::duration::parse_duration;
use crate::exit;
use clap::Args;
use krait_checker::online::{Online, OnlineOptions};
use krait_history::{Follower, Keys, StreamFormat};
use krait_history::{Format, KeyId};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The arguments of `krait watch`.
#[derive(Args, Clone)]
pub struct WatchArgs {
    #[command(flatten)]
    pub(crate) check: CheckArgs,
    /// How often to look for new transactions.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub(crate) interval: Duration,
    /// Stop, with the final verdict, once the logs have not grown for this long.
    #[arg(long, value_parser = parse_duration)]
    pub(crate) idle_exit: Option<Duration>,
    /// How many client sessions to expect: nothing is garbage-collected before all have
    /// written (a session that starts late would void the epoch guarantee). Files in a
    /// followed directory count on their own: collection waits until each has a transaction.
    #[arg(long, default_value_t = 0)]
    pub(crate) sessions: usize,
    /// At most this many transactions a round (a backlog is checked in several rounds).
    #[arg(long, default_value_t = 20_000)]
    pub(crate) max_round: usize,
    /// How long a read may name a write that no log holds yet before it is rejected as a read
    /// of a value nobody wrote (on top of two full passes over the logs): the slack for logs
    /// written with buffering.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub(crate) read_wait: Duration,
    /// Streams (nats://…): a session that sends nothing for this long while others go on is
    /// taken as lost for good (its host gone): its pending transaction becomes an unknown
    /// outcome and collection proceeds without it; a record it sends later is an error.
    /// E.g. --session-timeout 30s.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub(crate) session_timeout: Duration,
    /// Streams (nats://…): save the verifier's state in FILE (what it holds, bounded by
    /// garbage collection, and the stream position); a watch restarted with the same FILE
    /// goes on from the next record and round, re-reading and re-checking nothing (only the
    /// rounds reported since the last save are reported again). E.g. --checkpoint watch.ckpt
    #[arg(long, value_name = "FILE")]
    pub(crate) checkpoint: Option<std::path::PathBuf>,
    /// With --checkpoint: how often to save (also whenever a poll finds the stream quiet).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub(crate) checkpoint_every: Duration,
    /// The clients may write a value more than once per key (counters, flags, untagged
    /// recordings) or delete rows: a read may then have read any write of its value. Each
    /// read is checked once its transaction is two epochs old (fences), when no transaction
    /// still to come can be the one it read; without fences, when the watch ends.
    #[arg(long)]
    pub(crate) repeated_values: bool,
}

/// The online checker seen as the key table a log follower fills.
struct KeyAdapter<'a>(&'a mut Online);

impl Keys for KeyAdapter<'_> {
    fn key(&mut self, name: &str) -> KeyId {
        self.0.key(name)
    }
    fn fence_key(&mut self, k: KeyId) {
        self.0.set_fence_key(k);
    }
}

/// Where watch reads: logs in a directory, or a stream.
enum Feed {
    Files(Follower),
    Stream(Box<crate::stream::StreamFollower>),
}

impl Feed {
    fn poll(
        &mut self,
        keys: &mut dyn Keys,
        w: &WatchArgs,
    ) -> Result<krait_history::Polled, krait_history::InputError> {
        match self {
            Feed::Files(f) => f.poll(keys),
            // A short wait: the loop sleeps --interval between polls anyway.
            // Waits up to --interval for the first record (the loop does not sleep).
            Feed::Stream(s) => s.poll(keys, w.interval, w.round_cap()),
        }
    }
    fn finish(
        &mut self,
        keys: &mut dyn Keys,
    ) -> Result<(krait_history::Polled, Vec<String>), krait_history::InputError> {
        match self {
            Feed::Files(f) => f.finish(keys),
            Feed::Stream(s) => Ok((s.finish(keys)?, Vec::new())),
        }
    }
    /// A stream whose server did not answer the last poll (files are always there).
    fn unreachable(&self) -> bool {
        matches!(self, Feed::Stream(s) if s.unreachable())
    }
    /// Whether the last poll read every source to its end: only then has a read still naming
    /// no write seen waited a sweep more (a stream's backlog, or an outage, is no sweep).
    fn drained(&self) -> bool {
        match self {
            Feed::Files(_) => true,
            Feed::Stream(s) => s.drained(),
        }
    }
    /// Whether everything stored has been read: a quiet stream must also be caught up (and
    /// reachable) before --idle-exit ends the watch.
    fn caught_up(&mut self) -> bool {
        match self {
            Feed::Files(_) => true,
            Feed::Stream(s) => s.caught_up(),
        }
    }
    /// Whether --idle-exit ends the watch after this poll: nothing new since `quiet_since`
    /// for that long, the sources reachable and read to their end. An outage is no quiet
    /// (records may be stored meanwhile): it moves `quiet_since` on. Says what happened to
    /// a stream's connection.
    fn idle_end(
        &mut self,
        path: &std::path::Path,
        grew: bool,
        w: &WatchArgs,
        polled_at: Instant,
        quiet_since: &mut Instant,
    ) -> bool {
        if let Feed::Stream(f) = self {
            for n in f.take_notices() {
                eprintln!("{}: {n}", path.display());
            }
        }
        let down = self.unreachable();
        if down {
            *quiet_since = Instant::now();
        }
        !grew
            && !down
            && w.idle_exit
                .is_some_and(|d| polled_at.duration_since(*quiet_since) >= d)
            && self.caught_up()
    }
    /// Sources known to exist that have given no transaction yet (collection waits for them).
    fn silent(&self) -> usize {
        match self {
            Feed::Files(f) => f.silent_files(),
            Feed::Stream(_) => 0,
        }
    }
}

/// Waits for `path` to appear, so that watch can be started before the clients that create
/// it; with `--idle-exit`, for that long at most.
fn wait_for(path: &std::path::Path, w: &WatchArgs) -> anyhow::Result<()> {
    if path.exists() {
        return Ok(());
    }
    eprintln!("waiting for {} to appear", path.display());
    let t0 = Instant::now();
    while !path.exists() {
        if let Some(d) = w.idle_exit {
            anyhow::ensure!(
                t0.elapsed() < d,
                "{}: no such file or directory (waited {:.1} s for it to appear)",
                path.display(),
                d.as_secs_f64()
            );
        }
        std::thread::sleep(w.interval);
    }
    Ok(())
}

impl WatchArgs {
    /// The most transactions a round admits (`--round-size` caps it like `--max-round`).
    fn round_cap(&self) -> usize {
        self.check.round_size.unwrap_or(self.max_round).max(1)
    }

    /// Whether the output is JSON (then an error is a JSON object too).
    pub fn wants_json(&self) -> bool {
        self.check.wants_json()
    }
}

/// Where a watch starts: its feed, its checker, and what they had taken in already.
struct Start {
    follower: Feed,
    on: Online,
    txns: u64,
    session_ids: Vec<u32>,
}

/// A watch going on from its checkpoint (`head`, `saved`), refused if saved another way.
fn resume(
    w: &WatchArgs,
    opts: OnlineOptions,
    head: &super::checkpoint::Header,
    saved: Saved,
) -> anyhow::Result<Start> {
    let a = &w.check;
    let on = Online::restore(opts, &saved.online)
        .map_err(|e| anyhow::anyhow!("{}: {e}", w.checkpoint.as_ref().unwrap().display()))?;
    if on.repeated_values() != w.repeated_values {
        anyhow::bail!(
            "{}: saved {} --repeated-values; restart the watch the same way (what was collected depends on it)",
            w.checkpoint.as_ref().unwrap().display(),
            if on.repeated_values() { "with" } else { "without" }
        );
    }
    let f = crate::stream::StreamFollower::resume(&a.path, saved.follower)?;
    if !a.json {
        eprintln!(
            "resuming after round {} at stream record {}: {} transactions taken in, {} held, {} garbage-collected",
            head.round,
            head.record,
            saved.txns,
            on.live() + on.waiting(),
            on.deleted_total()
        );
    }
    Ok(Start {
        follower: Feed::Stream(Box::new(f)),
        on,
        txns: saved.txns,
        session_ids: saved.session_ids,
    })
}

/// A watch from the start of its stream or logs (waiting for the logs to appear).
fn fresh(
    w: &WatchArgs,
    opts: OnlineOptions,
    is_stream: bool,
    fmt: Option<StreamFormat>,
) -> anyhow::Result<Start> {
    let a = &w.check;
    let follower = if is_stream {
        Feed::Stream(Box::new(crate::stream::StreamFollower::new(&a.path)?))
    } else {
        wait_for(&a.path, w)?;
        Feed::Files(Follower::new(&a.path, fmt)?)
    };
    let mut on = Online::new(opts);
    if w.repeated_values {
        on.allow_repeated_values();
    }
    Ok(Start {
        follower,
        on,
        txns: 0,
        session_ids: Vec::new(),
    })
}

/// Logs still being written, followed until they stop growing (or forever).
pub fn run(w: &WatchArgs) -> anyhow::Result<ExitCode> {
    let a = &w.check;
    online::refuse_one_shot_flags(a)?;
    let fmt = match a.format {
        None => None,
        Some(Format::Jsonl) => Some(StreamFormat::Jsonl),
        Some(Format::Cobra) => Some(StreamFormat::Cobra),
        Some(f) => anyhow::bail!("watch follows native JSON Lines and Cobra logs, not {f:?}"),
    };
    let opts = OnlineOptions {
        // In watch, --round-size caps a round like --max-round.
        max_admit: w.round_cap(),
        read_wait: w.read_wait,
        track_commits: true,
        ..online::options(a)
    };
    let is_stream = crate::stream::is_stream(&a.path);
    let path_text = a.path.display().to_string();
    let mut ckpt = match &w.checkpoint {
        None => None,
        Some(_) if !is_stream => {
            anyhow::bail!("--checkpoint is for streams (nats://…): logs in a directory are read from their start")
        }
        Some(p) => Some(Checkpoint::new(
            p,
            &path_text,
            a.level_name(),
            w.checkpoint_every,
        )),
    };
    let resumed = match ckpt.as_mut() {
        Some(c) => c.load()?,
        None => None,
    };
    let Start {
        mut follower,
        mut on,
        mut txns,
        mut session_ids,
    } = match resumed {
        Some((head, saved)) => resume(w, opts, &head, saved)?,
        None => fresh(w, opts, is_stream, fmt)?,
    };
    on.min_sessions = w.sessions;
    on.set_cobra_claims(matches!(&follower, Feed::Files(f) if f.format == StreamFormat::Cobra));
    let mut out = Printer::new(a.json, true);
    let t0 = Instant::now();
    // When the last growth of the logs had been checked: the logs count as idle only when a
    // poll finds nothing new and was taken --idle-exit after that, so time spent checking a
    // long round is never taken for a client that went quiet (its half-written line for a
    // crash).
    let mut quiet_since = Instant::now();
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
        let mut polled = follower.poll(&mut KeyAdapter(&mut on), w)?;
        let grew = polled.grew;
        let ending = follower.idle_end(&a.path, grew, w, poll_time, &mut quiet_since);
        if ending {
            let (p, warnings) = follower.finish(&mut KeyAdapter(&mut on))?;
            for wn in warnings {
                eprintln!("warning: {wn}");
            }
            polled = p;
        }
        let (mut lost, ended) = match &mut follower {
            Feed::Stream(f) if !ending => (
                f.lost(&mut KeyAdapter(&mut on), w.session_timeout)?,
                f.take_ended(),
            ),
            _ => (Vec::new(), Vec::new()),
        };
        let step = (|| -> Result<(), krait_checker::online::OnlineError> {
            // The follower numbers sessions as it first sees them; the checker by its own count.
            for s in &polled.new_sessions {
                session_ids.push(on.session(s)?);
            }
            for mut t in polled.txns {
                txns += 1;
                t.session = session_ids[t.session as usize];
                on.push(t)?;
            }
            // A session that said it ended sends nothing more: fences agree without it.
            for name in &ended {
                let s = on.session(name)?;
                on.close_session(s);
            }
            for l in lost.drain(..) {
                let s = on.session(&l.name)?;
                if let Some(mut t) = l.pending {
                    txns += 1;
                    t.session = s;
                    on.push(t)?;
                }
                on.close_session(s);
                out.session_lost(&l.name, l.silent);
            }
            if follower.drained() {
                on.next_sweep(polled.provisional.into_iter().collect());
            }
            on.hold_gc = follower.silent() > 0;
            // A backlog takes several rounds.
            while let Some(st) = on.round()? {
                out.lag(&mut on);
                out.round(&st);
                if on.verdict().is_some() {
                    return Ok(());
                }
            }
            if ending {
                for st in on.finish()? {
                    out.round(&st);
                }
                out.lag(&mut on);
            }
            Ok(())
        })();
        if let Err(e) = step {
            eprintln!("error: {}: {e}", a.path.display());
            return Ok(ExitCode::from(exit::BAD_INPUT));
        }
        if let (Some(c), Feed::Stream(f)) = (ckpt.as_mut(), &follower) {
            // After the rounds are reported: a crash before the next save repeats only those.
            if !ending && on.verdict().is_none() && c.due(!grew, f.seen(), on.rounds()) {
                let saved = Saved {
                    txns,
                    session_ids: session_ids.clone(),
                    follower: f.state(),
                    online: on.save()?,
                };
                c.save(on.rounds(), f.seen(), &saved)?;
            }
        }
        if on.verdict().is_some() || ending {
            break;
        }
        if grew {
            quiet_since = Instant::now();
        }
        // A stream's poll itself waits for records; a backlog is read without pausing.
        if matches!(follower, Feed::Files(_)) {
            std::thread::sleep(w.interval);
        }
    }
    if let Feed::Stream(f) = &mut follower {
        out.stream_coverage(f.coverage()?);
    }
    out.end(a, &on, t0.elapsed(), txns)
}
