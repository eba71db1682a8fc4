//! `krait proxy`: record an unmodified application's transactions by standing between it and
//! PostgreSQL (see `krait_collector::serve_proxy` and docs/recording.md). Runs until Ctrl-C or
//! SIGTERM, then says what it recorded and what it could not.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// The arguments of `krait proxy`.
#[derive(Args)]
pub struct ProxyArgs {
    /// The address the application connects to instead of the database, e.g. 127.0.0.1:6543.
    #[arg(long, default_value = "127.0.0.1:6543")]
    listen: String,
    /// The database, as a URL, e.g. postgres://postgres@127.0.0.1:5432/shop: connections go to
    /// its host and port, or to its Unix-domain socket when the host is a socket directory
    /// (postgres://postgres@%2Fvar%2Frun%2Fpostgresql/shop, cheaper on the same machine); its
    /// tables' rows when the proxy starts are the initial state. With sslmode=require in it
    /// (or prefer) the hop to the database is TLS, the certificate verified against the
    /// system's roots and --upstream-ca, and its host name checked; the application still
    /// connects to the proxy in plaintext.
    #[arg(long)]
    upstream: String,
    /// PEM certificates to trust for TLS to the upstream beside the system's (a private CA, or
    /// a self-signed server certificate).
    #[arg(long, value_name = "FILE")]
    upstream_ca: Option<PathBuf>,
    /// The history directory (one JSON Lines log per connection; new or empty), e.g. --out hist.
    #[arg(long)]
    out: PathBuf,
    /// A table to record, NAME:PRIMARY_KEY_COLUMN, e.g. --table accounts:id (repeat it).
    #[arg(long = "table", value_name = "NAME:KEY", required = true)]
    tables: Vec<String>,
    /// On Ctrl-C or SIGTERM, how long to wait for open connections to close before closing
    /// them (a second Ctrl-C closes them at once), e.g. 10s.
    #[arg(long, default_value = "10s", value_parser = crate::duration::parse_duration)]
    drain_timeout: std::time::Duration,
}

static STOP: AtomicBool = AtomicBool::new(false);
/// A second signal: close the connections still open now.
static STOP_NOW: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    if STOP.swap(true, Ordering::Relaxed) {
        STOP_NOW.store(true, Ordering::Relaxed);
    }
}

/// Serves until interrupted; exit 0, or 2 for bad arguments or a database it cannot read.
pub fn run(a: &ProxyArgs) -> anyhow::Result<ExitCode> {
    let mut tables = Vec::new();
    for t in &a.tables {
        let Some((name, key)) = t.split_once(':') else {
            anyhow::bail!("--table {t}: want NAME:PRIMARY_KEY_COLUMN, e.g. accounts:id");
        };
        tables.push((name.to_string(), key.to_string()));
    }
    #[cfg(unix)]
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let cfg = krait_collector::ProxyConfig {
        listen: a.listen.clone(),
        upstream: a.upstream.clone(),
        out: a.out.clone(),
        tables,
        upstream_ca: a.upstream_ca.clone(),
        drain_timeout: Some(a.drain_timeout),
        stop_now: Some(&STOP_NOW),
    };
    let report = krait_collector::serve_proxy(&cfg, &STOP)?;
    println!(
        "recorded {} connections into {}; check it: krait check {}",
        report.connections,
        a.out.display(),
        a.out.display()
    );
    if report.unrecorded > 0 {
        println!(
            "warning: {} statements that may write the recorded tables were not recorded (not single-row by primary key): the history may miss what they wrote, and its verdict may be wrong",
            report.unrecorded
        );
    }
    if report.unrecorded_reads > 0 {
        println!(
            "note: {} reads of several rows of the recorded tables were not recorded: the check covers the rest",
            report.unrecorded_reads
        );
    }
    Ok(ExitCode::SUCCESS)
}
