//! NATS JetStream: one stream per history (`nats://HOST:PORT/STREAM`), one subject per session
//! (`STREAM.<session>`), a message id per record (`<session>.<n>.p|f|e`), so the server drops a
//! record published twice. Publishing waits for the server's acknowledgement and retries, with
//! the same id, while the server is unreachable (a restart); reading uses an ordered consumer
//! from the stream's first record, made again from the last record read when the server is
//! lost (so a restart costs a reader nothing: it goes on where it stood), and checks that the
//! stream sequence goes up by one, so a record delivered twice is dropped and one skipped is
//! read again (or, gone from the stream, is an error: a verdict could not cover it).

use crate::{Coverage, Kind, Record, Sink, Source, TransportError};
use async_nats::jetstream::{self, consumer::pull, stream};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a record is remembered for dropping a republished copy.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);
/// How long publishing keeps retrying while the server is unreachable, and opening while it
/// is slow to answer.
const RETRY_FOR: Duration = Duration::from_secs(60);

/// A stream on a NATS server, from `nats://HOST[:PORT]/STREAM`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `HOST:PORT` (port 4222 when the address has none).
    pub server: String,
    /// The JetStream stream's name.
    pub stream: String,
}

impl Target {
    /// Whether `s` names a NATS stream (so callers pick this transport rather than a path).
    pub fn is_nats(s: &str) -> bool {
        s.starts_with("nats://")
    }

    /// Parses `nats://HOST[:PORT]/STREAM`.
    pub fn parse(s: &str) -> Result<Target, TransportError> {
        let bad = |why: &str| {
            TransportError::BadAddress(format!(
                "{s:?}: {why} (expected nats://HOST[:PORT]/STREAM, e.g. nats://127.0.0.1:4222/KRAIT)"
            ))
        };
        let rest = s
            .strip_prefix("nats://")
            .ok_or_else(|| bad("not a nats:// address"))?;
        let (host, stream) = rest.split_once('/').ok_or_else(|| bad("no stream name"))?;
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let ok = !stream.is_empty()
            && stream
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return Err(bad("a stream name is letters, digits, '-' and '_'"));
        }
        let server = if host.contains(':') {
            host.to_string()
        } else {
            format!("{host}:4222")
        };
        Ok(Target {
            server,
            stream: stream.to_string(),
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "nats://{}/{}", self.server, self.stream)
    }
}

fn unavailable(t: &Target, what: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Unavailable(format!("{t}: {what}: {e}"))
}

/// A subject-safe token for a session name: the name itself when it is letters, digits, `-`
/// and `_`, else its bytes in hex; the prefix keeps the two kinds apart.
fn session_token(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain {
        format!("s-{name}")
    } else {
        let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
        format!("h-{hex}")
    }
}

/// A connection to one stream, shared by a process's sessions.
pub struct Connection {
    target: Target,
    rt: tokio::runtime::Runtime,
    js: jetstream::Context,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection({})", self.target)
    }
}

/// Calls `f` until it succeeds, fails in a way `again` says is not worth another try, or has
/// failed for `RETRY_FOR`, pausing between tries (from 20 ms, doubling, up to 1 s).
fn retrying<T, E>(mut f: impl FnMut() -> Result<T, E>, again: impl Fn(&E) -> bool) -> Result<T, E> {
    let t0 = Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        match f() {
            Err(e) if again(&e) && t0.elapsed() < RETRY_FOR => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            r => return r,
        }
    }
}

impl Connection {
    /// Connects to the server and makes sure the stream exists (created, file-backed, with
    /// the subjects `STREAM.>`, if it does not). A server that is there but slow to answer (a
    /// connect or JetStream request timing out, as under load) is asked again for
    /// `RETRY_FOR`, as publishing does; anything else (refused, no JetStream) fails at once.
    pub fn open(target: &Target) -> Result<Arc<Connection>, TransportError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| unavailable(target, "starting the client", e))?;
        // Only a timeout is worth another try.
        let js = retrying(
            || rt.block_on(Self::attempt(target)),
            |(timed_out, _)| *timed_out,
        )
        .map_err(|(_, e)| e)?;
        Ok(Arc::new(Connection {
            target: target.clone(),
            rt,
            js,
        }))
    }

    /// One try at [`Connection::open`]; the error says whether it timed out.
    async fn attempt(target: &Target) -> Result<jetstream::Context, (bool, TransportError)> {
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(5))
            .connect(target.server.as_str())
            .await
            .map_err(|e| {
                let timed_out = e.kind() == async_nats::ConnectErrorKind::TimedOut;
                (timed_out, unavailable(target, "connecting", e))
            })?;
        let js = jetstream::new(client);
        js.get_or_create_stream(stream::Config {
            name: target.stream.clone(),
            subjects: vec![format!("{}.>", target.stream)],
            storage: stream::StorageType::File,
            duplicate_window: DUPLICATE_WINDOW,
            ..Default::default()
        })
        .await
        .map_err(|e| {
            let timed_out = e.kind() == jetstream::context::CreateStreamErrorKind::TimedOut;
            (
                timed_out,
                unavailable(
                    target,
                    "creating the stream (is JetStream enabled, nats-server -js?)",
                    e,
                ),
            )
        })?;
        Ok(js)
    }

    /// A sink for session `name`'s records.
    pub fn sink(self: &Arc<Self>, name: &str) -> NatsSink {
        let token = session_token(name);
        NatsSink {
            subject: format!("{}.{token}", self.target.stream),
            token,
            conn: self.clone(),
        }
    }

    /// Deletes the stream and everything in it (tests; `krait` never deletes a stream).
    pub fn delete_stream(&self) -> Result<(), TransportError> {
        self.rt
            .block_on(self.js.delete_stream(&self.target.stream))
            .map(|_| ())
            .map_err(|e| unavailable(&self.target, "deleting the stream", e))
    }

    /// The stream's records from the first, in order.
    pub fn source(self: &Arc<Self>) -> Result<NatsSource, TransportError> {
        self.source_after(0)
    }

    /// The stream's records after stream sequence `seen`, in order (a restarted reader goes on
    /// after the last record it had taken in).
    pub fn source_after(self: &Arc<Self>, seen: u64) -> Result<NatsSource, TransportError> {
        Ok(NatsSource {
            conn: self.clone(),
            messages: Some(self.consumer_after(seen)?),
            seen,
            down_since: None,
            after_gap: false,
            notices: Vec::new(),
        })
    }

    /// An ordered consumer of the stream's records after stream sequence `seen`.
    fn consumer_after(&self, seen: u64) -> Result<pull::Ordered, TransportError> {
        let t = &self.target;
        let deliver_policy = if seen == 0 {
            jetstream::consumer::DeliverPolicy::All
        } else {
            jetstream::consumer::DeliverPolicy::ByStartSequence {
                start_sequence: seen + 1,
            }
        };
        let messages = self.rt.block_on(async {
            let s = self
                .js
                .get_stream(&t.stream)
                .await
                .map_err(|e| unavailable(t, "opening the stream", e))?;
            let c = s
                .create_consumer(pull::OrderedConfig {
                    deliver_policy,
                    ..Default::default()
                })
                .await
                .map_err(|e| unavailable(t, "creating a consumer", e))?;
            c.messages()
                .await
                .map_err(|e| unavailable(t, "reading the stream", e))
        })?;
        Ok(messages)
    }

    /// The stream sequence of the last record the stream holds.
    fn last_sequence(&self) -> Result<u64, TransportError> {
        self.rt
            .block_on(async {
                let mut s = self.js.get_stream(&self.target.stream).await?;
                Ok::<_, async_nats::Error>(s.info().await?.state.last_sequence)
            })
            .map_err(|e| unavailable(&self.target, "reading the stream's state", e))
    }
}

/// One session's records, published to `STREAM.<session>`.
pub struct NatsSink {
    conn: Arc<Connection>,
    subject: String,
    token: String,
}

impl Sink for NatsSink {
    fn publish(&mut self, n: u64, kind: Kind, record: &str) -> Result<(), TransportError> {
        let k = match kind {
            Kind::Pending => 'p',
            Kind::Final => 'f',
            Kind::End => 'e',
        };
        let id = format!("{}.{n}.{k}", self.token);
        let c = &self.conn;
        // Unreachable or restarting: the same id again, so a copy the server did store before
        // the acknowledgement was lost is dropped.
        retrying(
            || {
                let msg = jetstream::message::PublishMessage::build()
                    .payload(record.to_string().into())
                    .message_id(&id);
                c.rt.block_on(async {
                    let ack = c.js.send_publish(self.subject.clone(), msg).await?;
                    ack.await.map_err(async_nats::Error::from)
                })
            },
            |_| true,
        )
        .map(|_| ())
        .map_err(|e| {
            unavailable(
                &c.target,
                &format!("publishing {id} (retried for {} s)", RETRY_FOR.as_secs()),
                e,
            )
        })
    }
}

/// The stream's records, as an ordered consumer delivers them.
pub struct NatsSource {
    conn: Arc<Connection>,
    /// None while it must be made again: the server was lost, or a record was skipped.
    messages: Option<pull::Ordered>,
    /// The stream sequence of the last record returned.
    seen: u64,
    /// Since when the server has not answered (None: it answered the last request).
    down_since: Option<Instant>,
    /// The consumer was made again after a skipped record: skipped once more, it is gone.
    after_gap: bool,
    notices: Vec<String>,
}

impl NatsSource {
    /// The stream sequence of the last record returned (0 before the first).
    pub fn seen(&self) -> u64 {
        self.seen
    }

    fn record(&self, m: &jetstream::Message) -> Result<Record, TransportError> {
        let t = &self.conn.target;
        let id = m
            .headers
            .as_ref()
            .and_then(|h| h.get("Nats-Msg-Id"))
            .map(|v| v.as_str().to_string())
            .unwrap_or_default();
        let bad = || {
            TransportError::Unavailable(format!(
                "{t}: record {:?} on {} has no krait message id <session>.<n>.p|f|e",
                String::from_utf8_lossy(&m.payload),
                m.subject
            ))
        };
        let (rest, k) = id.rsplit_once('.').ok_or_else(bad)?;
        let (session, n) = rest.rsplit_once('.').ok_or_else(bad)?;
        let kind = match k {
            "p" => Kind::Pending,
            "f" => Kind::Final,
            "e" => Kind::End,
            _ => return Err(bad()),
        };
        let text = String::from_utf8(m.payload.to_vec()).map_err(|_| bad())?;
        Ok(Record {
            session: session.to_string(),
            n: n.parse().map_err(|_| bad())?,
            kind,
            text,
        })
    }

    /// The server stopped answering: the consumer is made again on a later poll.
    fn lose(&mut self, e: impl std::fmt::Display) {
        self.messages = None;
        if self.down_since.is_none() {
            self.down_since = Some(Instant::now());
            self.notices.push(format!(
                "lost the stream after record {} ({e}); reconnecting, and none of the outage counts as quiet",
                self.seen
            ));
        }
    }

    /// Whether the client is connected to the server now (it reconnects by itself).
    fn connected(&self) -> bool {
        self.conn.js.client().connection_state() == async_nats::connection::State::Connected
    }

    /// Makes the consumer again where it is missing, after the last record returned; false
    /// while the server does not answer (having waited `wait`, as a poll would).
    fn reopen(&mut self, wait: Duration) -> bool {
        if self.messages.is_some() {
            return true;
        }
        if !self.connected() {
            std::thread::sleep(wait);
            return false;
        }
        match self.conn.consumer_after(self.seen) {
            Ok(m) => {
                self.messages = Some(m);
                if let Some(t) = self.down_since.take() {
                    self.notices.push(format!(
                        "regained the stream after {:.1} s; reading on after record {}",
                        t.elapsed().as_secs_f64(),
                        self.seen
                    ));
                }
                true
            }
            Err(e) => {
                self.lose(e);
                std::thread::sleep(wait);
                false
            }
        }
    }

    /// The records of `got` that follow the last one returned, in order: one delivered again
    /// is dropped; after one skipped, the rest wait for the consumer to be made again.
    fn in_sequence(&mut self, got: &[jetstream::Message]) -> Result<Vec<Record>, TransportError> {
        let t = &self.conn.target;
        let mut out = Vec::with_capacity(got.len());
        for m in got {
            let seq = m
                .info()
                .map_err(|e| unavailable(t, "reading a record's stream sequence", e))?
                .stream_sequence;
            if seq <= self.seen {
                continue;
            }
            if self.seen > 0 && seq != self.seen + 1 {
                if self.after_gap {
                    return Err(TransportError::Unavailable(format!(
                        "{t}: records {}..{} are no longer in the stream (deleted or expired): no verdict could cover them",
                        self.seen + 1,
                        seq - 1
                    )));
                }
                self.after_gap = true;
                self.messages = None;
                self.notices.push(format!(
                    "the stream skipped records {}..{}; reading them again",
                    self.seen + 1,
                    seq - 1
                ));
                break;
            }
            self.after_gap = false;
            self.seen = seq;
            out.push(self.record(m)?);
        }
        Ok(out)
    }
}

impl Source for NatsSource {
    fn poll(&mut self, wait: Duration, max: usize) -> Result<Vec<Record>, TransportError> {
        if !self.reopen(wait) {
            return Ok(Vec::new());
        }
        let conn = self.conn.clone();
        let messages = self.messages.as_mut().expect("made by reopen");
        // One trip into the runtime per poll: up to `wait` for the first record, then what
        // keeps arriving without a pause (a backlog comes in one poll).
        let got = conn.rt.block_on(async {
            let mut got = Vec::new();
            let mut deadline = tokio::time::Instant::now() + wait;
            while got.len() < max {
                match tokio::time::timeout_at(deadline, messages.next()).await {
                    Err(_) | Ok(None) => break,
                    Ok(Some(Err(e))) => return Err(e),
                    Ok(Some(Ok(m))) => got.push(m),
                }
                deadline = tokio::time::Instant::now() + Duration::from_millis(5);
            }
            Ok(got)
        });
        match got {
            // An ordered consumer waits out a lost connection without a word: nothing read
            // then is an outage, not a quiet stream.
            Ok(got) if got.is_empty() && !self.connected() => {
                self.lose("the connection to the server is down");
                Ok(Vec::new())
            }
            Ok(got) => self.in_sequence(&got),
            Err(e) => {
                self.lose(e);
                Ok(Vec::new())
            }
        }
    }

    /// Unreachable is not caught up: false, and the outage is noted.
    fn caught_up(&mut self) -> Result<bool, TransportError> {
        match self.conn.last_sequence() {
            Ok(last) => Ok(self.down_since.is_none() && self.seen >= last),
            Err(e) => {
                self.lose(e);
                Ok(false)
            }
        }
    }

    fn coverage(&mut self) -> Result<Coverage, TransportError> {
        Ok(Coverage {
            stored: self.conn.last_sequence()?,
            read: self.seen,
        })
    }

    fn unreachable_for(&self) -> Option<Duration> {
        self.down_since.map(|t| t.elapsed())
    }

    fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_or_say_what_is_wrong() {
        assert_eq!(
            Target::parse("nats://127.0.0.1:4222/KRAIT").unwrap(),
            Target {
                server: "127.0.0.1:4222".into(),
                stream: "KRAIT".into()
            }
        );
        assert_eq!(Target::parse("nats://h/S").unwrap().server, "h:4222");
        for bad in [
            "nats://h",
            "nats:///S",
            "nats://h/a.b",
            "http://h/S",
            "nats://h/",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn session_tokens_are_subject_safe_and_distinct() {
        assert_eq!(session_token("c1"), "s-c1");
        assert_eq!(session_token("a.b"), "h-612e62");
        assert_ne!(session_token("h-612e62"), session_token("a.b"));
    }

    /// A refused connection is no slow server: it is said at once, naming the address, rather
    /// than retried as a timeout is.
    #[test]
    fn nothing_listening_is_an_error_naming_the_server() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("nats://127.0.0.1:{port}/S");
        match Connection::open(&Target::parse(&url).unwrap()) {
            Err(TransportError::Unavailable(e)) => {
                assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
                assert!(e.contains("connecting"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
}
