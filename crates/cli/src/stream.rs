//! Histories in a NATS JetStream stream (`nats://HOST:PORT/STREAM`): read whole for `check`
//! and `convert`, or followed for `watch` with the same records, admission and rounds as logs
//! in a directory.

use krait_history::{Format, InputError, Keys, Loaded, Location, Polled, TxnRecord};
use krait_transport::nats::{Connection, Target};
use krait_transport::{Assembler, Source};
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// How long reading a whole stream waits out its server's outage before it gives up (a
/// follower waits for as long as it runs).
const OUTAGE_LIMIT: Duration = Duration::from_secs(60);

/// Whether a history argument names a stream rather than a path.
pub(crate) fn is_stream(path: &Path) -> bool {
    path.to_str().is_some_and(Target::is_nats)
}

fn input_error(path: &Path, e: impl std::fmt::Display) -> InputError {
    InputError::new(path, Location::Nowhere, e.to_string())
}

fn open(path: &Path) -> Result<krait_transport::nats::NatsSource, InputError> {
    open_after(path, 0)
}

/// The stream's records after stream sequence `seen`.
fn open_after(path: &Path, seen: u64) -> Result<krait_transport::nats::NatsSource, InputError> {
    let url = path.to_str().unwrap_or_default();
    let target = Target::parse(url).map_err(|e| input_error(path, e))?;
    let conn = Connection::open(&target).map_err(|e| input_error(path, e))?;
    conn.source_after(seen).map_err(|e| input_error(path, e))
}

/// Everything the stream holds now, as one history: pending records whose outcome never
/// arrived are transactions of unknown outcome.
pub(crate) fn read_all(path: &Path) -> Result<Loaded, InputError> {
    let mut src = open(path)?;
    let mut asm = Assembler::default();
    let mut lines = Vec::new();
    loop {
        let got = src
            .poll(Duration::from_millis(200), 100_000)
            .map_err(|e| input_error(path, e))?;
        let none = got.is_empty();
        for r in got {
            asm.push(r, &mut lines);
        }
        if none && src.caught_up().map_err(|e| input_error(path, e))? {
            break;
        }
        if let Some(d) = src.unreachable_for().filter(|d| *d > OUTAGE_LIMIT) {
            let why = format!(
                "the stream has been unreachable for {:.0} s after record {}",
                d.as_secs_f64(),
                src.seen()
            );
            return Err(input_error(path, why));
        }
    }
    asm.finish(&mut lines);
    let mut text = lines.join("\n");
    text.push('\n');
    let mut l = krait_history::read_jsonl(text.as_bytes(), path)?;
    l.format = Format::Jsonl;
    Ok(l)
}

/// A stream followed as it grows.
pub(crate) struct StreamFollower {
    path: std::path::PathBuf,
    src: krait_transport::nats::NatsSource,
    asm: Assembler,
    sessions: HashMap<String, u32>,
    /// Records read so far (a record's place, for error messages).
    records: u64,
    /// Per session (as the log names it): its name in its records and when it last sent one.
    seen: HashMap<String, (String, std::time::Instant)>,
    /// Sessions given up on as lost.
    lost: std::collections::HashSet<String>,
    /// When any record last arrived.
    last_any: Option<std::time::Instant>,
    /// Sessions numbered outside a poll (a lost one's pending record), for the next poll to
    /// announce: the caller's numbering follows the announcements.
    unannounced: Vec<String>,
    /// Sessions whose end record arrived, not yet told to the caller.
    ended: Vec<String>,
    ended_tokens: std::collections::HashSet<String>,
    /// The server was unreachable at the last poll.
    down: bool,
    /// The last poll read the stream to its end (reachable, and fewer records than asked).
    drained: bool,
}

/// What a follower has taken in, up to a stream position: saved with `watch --checkpoint`,
/// so a restarted follower reads on from the next record with the same pending records,
/// session numbers and silences. Instants are kept as ages.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct FollowerState {
    position: u64,
    asm: Assembler,
    sessions: HashMap<String, u32>,
    records: u64,
    seen: Vec<(String, String, Duration)>,
    lost: Vec<String>,
    last_any: Option<Duration>,
    unannounced: Vec<String>,
    ended: Vec<String>,
    ended_tokens: Vec<String>,
}

/// A session given up on: its name and its pending transaction, now of unknown outcome.
pub(crate) struct Lost {
    pub(crate) name: String,
    pub(crate) silent: Duration,
    pub(crate) pending: Option<TxnRecord>,
}

impl StreamFollower {
    pub(crate) fn new(path: &Path) -> Result<StreamFollower, InputError> {
        Ok(StreamFollower {
            path: path.to_path_buf(),
            src: open(path)?,
            asm: Assembler::default(),
            sessions: HashMap::new(),
            records: 0,
            seen: HashMap::new(),
            lost: Default::default(),
            last_any: None,
            unannounced: Vec::new(),
            ended: Vec::new(),
            ended_tokens: Default::default(),
            down: false,
            drained: false,
        })
    }

    /// Its state, for a checkpoint.
    pub(crate) fn state(&self) -> FollowerState {
        let sorted = |set: &std::collections::HashSet<String>| {
            let mut v: Vec<String> = set.iter().cloned().collect();
            v.sort();
            v
        };
        FollowerState {
            position: self.src.seen(),
            asm: self.asm.clone(),
            sessions: self.sessions.clone(),
            records: self.records,
            seen: self
                .seen
                .iter()
                .map(|(token, (name, at))| (token.clone(), name.clone(), at.elapsed()))
                .collect(),
            lost: sorted(&self.lost),
            last_any: self.last_any.map(|at| at.elapsed()),
            unannounced: self.unannounced.clone(),
            ended: self.ended.clone(),
            ended_tokens: sorted(&self.ended_tokens),
        }
    }

    /// A follower in state `st` (see [`StreamFollower::state`]), reading on after its position.
    pub(crate) fn resume(path: &Path, st: FollowerState) -> Result<StreamFollower, InputError> {
        let now = std::time::Instant::now();
        let ago = |d: Duration| now.checked_sub(d).unwrap_or(now);
        Ok(StreamFollower {
            path: path.to_path_buf(),
            src: open_after(path, st.position)?,
            asm: st.asm,
            sessions: st.sessions,
            records: st.records,
            seen: st
                .seen
                .into_iter()
                .map(|(token, name, age)| (token, (name, ago(age))))
                .collect(),
            lost: st.lost.into_iter().collect(),
            last_any: st.last_any.map(ago),
            unannounced: st.unannounced,
            ended: st.ended,
            ended_tokens: st.ended_tokens.into_iter().collect(),
            down: false,
            drained: false,
        })
    }

    fn parse(
        &mut self,
        text: &str,
        keys: &mut dyn Keys,
        new_sessions: &mut Vec<String>,
    ) -> Result<TxnRecord, InputError> {
        self.records += 1;
        let sessions = &mut self.sessions;
        let mut number = |name: &str| -> u32 {
            let n = sessions.len() as u32;
            *sessions.entry(name.to_string()).or_insert_with(|| {
                new_sessions.push(name.to_string());
                n
            })
        };
        krait_history::parse_jsonl_record(
            text,
            &self.path,
            Location::Line(self.records),
            keys,
            &mut number,
        )
    }

    fn polled(
        &mut self,
        lines: Vec<String>,
        grew: bool,
        keys: &mut dyn Keys,
    ) -> Result<Polled, InputError> {
        let mut out = Polled {
            txns: Vec::with_capacity(lines.len()),
            provisional: Vec::new(),
            new_sessions: std::mem::take(&mut self.unannounced),
            grew,
        };
        for l in &lines {
            let t = self.parse(l, keys, &mut out.new_sessions)?;
            out.txns.push(t);
        }
        // Writes of transactions whose COMMIT went out: others may read them already.
        let pending: Vec<String> = self.asm.pending().map(str::to_string).collect();
        for p in pending {
            let t = self.parse(&p, keys, &mut out.new_sessions)?;
            // Read again when it completes: its place is that one.
            self.records -= 1;
            out.provisional.extend(
                t.ops
                    .iter()
                    .filter(|o| o.0 == krait_history::OpKind::Write)
                    .map(|o| (o.1, o.2)),
            );
        }
        Ok(out)
    }

    /// The transactions completed since the last poll (waiting up to `wait` for the first),
    /// from at most `max` records: a backlog is taken a round's worth at a time, so each
    /// round ends with nothing read left waiting (a checkpoint's condition).
    pub(crate) fn poll(
        &mut self,
        keys: &mut dyn Keys,
        wait: Duration,
        max: usize,
    ) -> Result<Polled, InputError> {
        let got = self
            .src
            .poll(wait, max)
            .map_err(|e| input_error(&self.path, e))?;
        let grew = !got.is_empty();
        let now = std::time::Instant::now();
        let down = self.src.unreachable_for().is_some();
        if self.down && !down {
            // Nobody could send while the server was away: silences start again now.
            for e in self.seen.values_mut() {
                e.1 = now;
            }
            self.last_any = Some(now);
        }
        self.down = down;
        self.drained = !down && got.len() < max;
        let mut lines = Vec::new();
        for r in got {
            if self.lost.contains(&r.session) || self.ended_tokens.contains(&r.session) {
                let name = self.seen.get(&r.session).map_or(&r.session, |e| &e.0);
                let why = if self.lost.contains(&r.session) {
                    "after it was taken as lost (silent for longer than --session-timeout; give it a longer timeout)"
                } else {
                    "after its end record"
                };
                return Err(input_error(
                    &self.path,
                    format!("session {name} sent a record {why}"),
                ));
            }
            match self.seen.get_mut(&r.session) {
                Some(e) => e.1 = now,
                None => {
                    let name = serde_json::from_str::<serde_json::Value>(&r.text)
                        .ok()
                        .and_then(|v| match &v["session"] {
                            serde_json::Value::String(s) => Some(s.clone()),
                            serde_json::Value::Number(n) => Some(n.to_string()),
                            _ => None,
                        })
                        .unwrap_or_else(|| r.session.clone());
                    self.seen.insert(r.session.clone(), (name, now));
                }
            }
            self.last_any = Some(now);
            self.asm.push(r, &mut lines);
        }
        for token in self.asm.take_ended() {
            // Ended, not lost: no timeout applies to it any more.
            if let Some((name, _)) = self.seen.get(&token) {
                self.ended.push(name.clone());
            }
            self.ended_tokens.insert(token);
        }
        self.polled(lines, grew, keys)
    }

    /// The stream sequence of the last record read.
    pub(crate) fn seen(&self) -> u64 {
        self.src.seen()
    }

    /// Whether the server was unreachable at the last poll: no quiet, no sweep, no end.
    pub(crate) fn unreachable(&self) -> bool {
        self.down
    }

    /// Whether the last poll read the stream to its end: a sweep, after which a read still
    /// naming no write seen has waited one more time.
    pub(crate) fn drained(&self) -> bool {
        self.drained
    }

    /// Whether every record the stream holds has been read (false while it cannot be asked).
    pub(crate) fn caught_up(&mut self) -> bool {
        self.src.caught_up().unwrap_or(false)
    }

    /// What happened to the connection since the last call (lost, regained, reread).
    pub(crate) fn take_notices(&mut self) -> Vec<String> {
        self.src.take_notices()
    }

    /// The stream's last record and the last one read.
    pub(crate) fn coverage(&mut self) -> Result<krait_transport::Coverage, InputError> {
        self.src.coverage().map_err(|e| input_error(&self.path, e))
    }

    /// The sessions that ended normally since the last call (their end record arrived).
    pub(crate) fn take_ended(&mut self) -> Vec<String> {
        std::mem::take(&mut self.ended)
    }

    /// Sessions that have sent nothing for `timeout` while others went on: their publishers
    /// are taken as gone for good, each one's pending transaction (if any) as unknown. A
    /// quiet stream loses nobody (that is --idle-exit's business).
    pub(crate) fn lost(
        &mut self,
        keys: &mut dyn Keys,
        timeout: Duration,
    ) -> Result<Vec<Lost>, InputError> {
        let Some(last_any) = self.last_any else {
            return Ok(Vec::new());
        };
        let now = std::time::Instant::now();
        let mut gone: Vec<(String, String, Duration)> = self
            .seen
            .iter()
            .filter(|(token, (_, at))| {
                !self.lost.contains(*token)
                    && !self.ended_tokens.contains(*token)
                    && now.duration_since(*at) > timeout
                    && last_any.duration_since(*at) > timeout / 2
            })
            .map(|(token, (name, at))| (token.clone(), name.clone(), now.duration_since(*at)))
            .collect();
        gone.sort();
        let mut out = Vec::new();
        for (token, name, silent) in gone {
            self.lost.insert(token.clone());
            let pending = match self.asm.give_up(&token) {
                Some(line) => {
                    let mut named = std::mem::take(&mut self.unannounced);
                    let t = self.parse(&line, keys, &mut named)?;
                    self.unannounced = named;
                    Some(t)
                }
                None => None,
            };
            out.push(Lost {
                name,
                silent,
                pending,
            });
        }
        Ok(out)
    }

    /// The stream is taken as ended: pending records are transactions of unknown outcome.
    pub(crate) fn finish(&mut self, keys: &mut dyn Keys) -> Result<Polled, InputError> {
        let mut p = self.poll(keys, Duration::from_millis(50), usize::MAX)?;
        let mut lines = Vec::new();
        self.asm.finish(&mut lines);
        let rest = self.polled(lines, false, keys)?;
        p.txns.extend(rest.txns);
        p.new_sessions.extend(rest.new_sessions);
        p.provisional.clear();
        Ok(p)
    }
}

/// Publishes a whole history to a stream, each session's transactions in order as final
/// records, `publishers` sessions at a time (a replay of finished logs: `krait convert H
/// nats://…`).
pub(crate) fn publish(
    h: &krait_history::History,
    url: &str,
    publishers: usize,
) -> anyhow::Result<u64> {
    use krait_transport::{Kind, Sink};
    let conn = Connection::open(&Target::parse(url)?)?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let sent = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|sc| -> anyhow::Result<()> {
        let workers: Vec<_> = (0..publishers.max(1))
            .map(|_| {
                sc.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let s = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if s >= h.num_sessions() {
                            return Ok(());
                        }
                        let mut sink = conn.sink(&h.session_names[s]);
                        let mut n = 0;
                        krait_history::for_each_jsonl_line(h, s, |line| {
                            n += 1;
                            sink.publish(n, Kind::Final, line.trim_end())
                        })?;
                        sent.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("a publisher panicked")?;
        }
        Ok(())
    })?;
    Ok(sent.into_inner())
}
