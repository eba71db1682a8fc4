//! The `krait` command: parse the command line and hand it to the subcommand (in
//! `krait_cli::cmd`). Exit codes: 0 ACCEPT, 1 REJECT, 2 bad input or usage, 3 UNKNOWN (solver
//! budget exhausted), 4 a run stopped by its database.

use clap::{Parser, Subcommand};
use krait_cli::cmd::{
    check, convert, demo, generate, proxy, run, stats, verify_certificate, watch,
};
use krait_cli::exit;
use std::process::ExitCode;

#[global_allocator]
static ALLOC: krait_cli::alloc::HugePages = krait_cli::alloc::HugePages;

#[derive(Parser)]
#[command(
    name = "krait",
    version,
    about = "Black-box serializability checking of database histories"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check whether a history is serializable: ACCEPT (exit 0) or REJECT with a certificate (exit 1).
    Check(check::CheckCmd),
    /// Load a history and print its counts.
    Stats(stats::StatsArgs),
    /// Convert between formats: OUT ending in .jsonl is native JSON Lines, otherwise a Cobra log directory.
    Convert(convert::ConvertArgs),
    /// Run a workload against a database with N recording clients; optionally check the history.
    Run(run::RunArgs),
    /// Generate a history with the built-in simulated store (no database needed).
    Generate(generate::GenerateArgs),
    /// BlindW-RW with 8 clients on embedded SQLite, recorded and checked.
    Demo(demo::DemoArgs),
    /// Check a verdict against the raw history, apart from the checker: every edge of a
    /// REJECT's cycle re-derived (deductions replayed), an unsatisfiable core case by case, a
    /// single reason by a witness, an ACCEPT's serial order (`check --order`) read by read.
    /// Exit 0: confirmed; 1: refuted; 2: bad input; 3: of a kind it cannot confirm.
    VerifyCertificate(verify_certificate::VerifyCertificateArgs),
    /// Record an unmodified application: a PostgreSQL proxy that forwards every byte and
    /// records the single-row statements by primary key on the tables named (--table).
    Proxy(proxy::ProxyArgs),
    /// Follow logs that are still being written (native JSON Lines or Cobra) and check them in
    /// rounds, garbage-collecting what no future transaction can affect.
    Watch(watch::WatchArgs),
}

/// Standard output that cannot be written (a full disk, a closed descriptor) ends the command
/// with a line on stderr and [`exit::OUTPUT_FAILED`], not a panic that hides what happened and
/// the exit code. `print!` and `println!` fail only by panicking, with this message, wherever
/// a command prints; the hook is the one place all of them pass.
fn output_failure_is_an_exit_code() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if let Some(cause) = text.strip_prefix("failed printing to stdout: ") {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "error: the output could not be written ({cause}): what was checked or recorded is unaffected, but the result was not shown"
            );
            std::process::exit(exit::OUTPUT_FAILED.into());
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    krait_cli::alloc::configure();
    // Output piped into `head` and the like: stop quietly when the reader goes away, as Unix
    // tools do, instead of panicking on a failed print.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    output_failure_is_an_exit_code();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(exit::BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // With --json, an error is a JSON object on stdout too, so a script reads one shape.
    let json = match &cli.cmd {
        Cmd::Check(a) => a.wants_json(),
        Cmd::Watch(a) => a.wants_json(),
        _ => false,
    };
    let result = match cli.cmd {
        Cmd::Check(a) => check::run(&a.into_args()),
        Cmd::Stats(a) => stats::run(&a),
        Cmd::Convert(a) => convert::run(&a),
        Cmd::VerifyCertificate(a) => verify_certificate::run(&a),
        Cmd::Generate(a) => generate::run(&a),
        Cmd::Demo(a) => demo::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Watch(a) => watch::run(&a),
        Cmd::Proxy(a) => proxy::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            if json {
                println!("{}", krait_report::error_json(&e));
            }
            ExitCode::from(exit::BAD_INPUT)
        }
    }
}
