//! `krait-bench`: benchmarks that print tables, kept out of the user's `krait` binary.
//!
//! Run them with `cargo run --release -p krait-bench -- <benchmark>` (see `--help`). Each
//! measurement of a history runs in a child process (this binary again, running the `krait`
//! command's own code through `krait_cli`), so its time and peak memory are its own.

mod check;
mod common;
mod hard;
mod load;
mod nats;
mod online;
mod overhead;
mod recorder;
mod scale;
mod solver;
mod stream;
mod veristrong;
mod weak;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "krait-bench",
    version,
    about = "Benchmarks that print tables (load speed, one-shot checking, technique ablations)"
)]
struct Cli {
    #[command(subcommand)]
    what: BenchCmd,
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Parse speed and memory of loading histories.
    Load(load::LoadArgs),
    /// One-shot checking time per phase, constraints, conflicts and memory.
    Check(check::CheckArgs),
    /// Generated BlindW histories of growing size, checked one-shot (files kept in DIR).
    Scale(scale::ScaleArgs),
    /// The solver alone on Cobra-shaped instances (n transactions, 2.5n constraints).
    Solver(solver::SolverArgs),
    /// Contended histories (BlindW-WM/RW, few keys, many sessions) where the solver decides:
    /// constraints, conflicts, times and memory with today's techniques and without them.
    Hard(hard::HardArgs),
    /// The collector's overhead (the paper's C8/C9): throughput, p90 latency and history bytes
    /// with and without recording and fences, per store and client count.
    Overhead(overhead::OverheadArgs),
    /// The recorder library's cost in the application's process: the SQLite bank example's
    /// transfers per second with and without recording.
    Recorder(recorder::RecorderArgs),
    /// Online verification capacity (the paper's Figure 10): per round size, transactions per
    /// second of round time, transactions held, and peak memory.
    Online(online::OnlineArgs),
    /// An endless generated BlindW stream with fences, checked online in rounds: memory and
    /// speed at checkpoints (flat memory is the point).
    Stream(stream::StreamArgs),
    /// VeriStrong's benchmark histories (../shared/data/veristrong): krait's verdict, time and
    /// peak memory beside VeriStrong's own from that folder's README.
    Veristrong(veristrong::VeristrongArgs),
    /// The weak levels (read committed, read atomic, causal) on Cobra histories, beside AWDIT
    /// when its binary is given (--awdit PATH).
    Weak(weak::WeakArgs),
    /// Histories through NATS JetStream: publishing, the verifier reading the stream vs the
    /// files (verified txn/s), and the lag from commit to verified in a live run.
    Nats(nats::NatsArgs),
    /// (internal) load one history and print JSON with time and peak memory.
    #[command(hide = true)]
    LoadOne { path: std::path::PathBuf },
    /// (internal) `krait check`, measured in a process of its own.
    #[command(hide = true)]
    CheckOne(krait_cli::cmd::check::CheckArgs),
    /// (internal) `krait watch`, for `nats`.
    #[command(hide = true)]
    WatchOne(krait_cli::cmd::watch::WatchArgs),
    /// (internal) `krait convert`, for `nats`.
    #[command(hide = true)]
    ConvertOne(krait_cli::cmd::convert::ConvertArgs),
    /// (internal) `krait run`, for `nats`.
    #[command(hide = true)]
    RunOne(krait_cli::cmd::run::RunArgs),
    /// (internal) `krait generate`, for `scale`.
    #[command(hide = true)]
    Generate(krait_cli::cmd::generate::GenerateArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(krait_cli::exit::BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.what {
        BenchCmd::Load(a) => load::run(a),
        BenchCmd::Check(a) => check::run(a),
        BenchCmd::Scale(a) => scale::run(a),
        BenchCmd::Solver(a) => solver::run(a),
        BenchCmd::Hard(a) => hard::run(a),
        BenchCmd::Overhead(a) => overhead::run(a),
        BenchCmd::Recorder(a) => recorder::run(a),
        BenchCmd::Online(a) => online::run(a),
        BenchCmd::Stream(a) => stream::run(a),
        BenchCmd::Veristrong(a) => veristrong::run(a),
        BenchCmd::Weak(a) => weak::run(a),
        BenchCmd::Nats(a) => nats::run(a),
        BenchCmd::WatchOne(a) => krait_cli::cmd::watch::run(&a),
        BenchCmd::ConvertOne(a) => krait_cli::cmd::convert::run(&a),
        BenchCmd::RunOne(a) => krait_cli::cmd::run::run(a),
        BenchCmd::LoadOne { path } => load::one(&path),
        BenchCmd::CheckOne(a) => krait_cli::cmd::check::run(&a),
        BenchCmd::Generate(a) => krait_cli::cmd::generate::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(krait_cli::exit::BAD_INPUT)
        }
    }
}
