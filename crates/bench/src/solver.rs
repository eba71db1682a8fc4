//! `krait-bench solver`: the SAT-modulo-acyclicity solver alone on Cobra-shaped random
//! instances, under each heuristic switched off in turn, to show what each one buys.

use clap::Args;
use krait_solver::{Budget, Cdcl, CdclOptions, Engine, Outcome};
use std::process::ExitCode;
use std::time::{Duration, Instant};

// The arguments of `krait-bench solver`.
#[derive(Args)]
pub struct SolverArgs {
    #[arg(long, value_delimiter = ',', default_value = "1000,5000,20000,100000")]
    sizes: Vec<u32>,
    #[arg(long, default_value_t = 2.5)]
    constraints_per_txn: f64,
}

/// The engine configurations compared, by name.
fn configs() -> [(&'static str, CdclOptions); 6] {
    [
        ("cdcl (all heuristics)", CdclOptions::default()),
        (
            "cdcl eager decisions",
            CdclOptions {
                lazy_decisions: false,
                ..Default::default()
            },
        ),
        (
            "cdcl no order-phase",
            CdclOptions {
                order_phase: false,
                ..Default::default()
            },
        ),
        (
            "cdcl no theory-propagation",
            CdclOptions {
                theory_propagation: false,
                ..Default::default()
            },
        ),
        (
            "cdcl with two-cycle clauses",
            CdclOptions {
                two_cycle_clauses: true,
                ..Default::default()
            },
        ),
        (
            "cdcl plain",
            CdclOptions {
                order_phase: false,
                theory_propagation: false,
                two_cycle_clauses: false,
                lazy_decisions: false,
                ..Default::default()
            },
        ),
    ]
}

/// The table: per size and configuration, the result, time and solver counters.
pub fn run(a: SolverArgs) -> anyhow::Result<ExitCode> {
    println!(
        "{:>8} {:>9} {:<28} {:>7} {:>10} {:>10} {:>12} {:>9}",
        "n", "constr", "engine", "result", "ms", "conflicts", "propagations", "reorders"
    );
    for n in a.sizes {
        let k = (n as f64 * a.constraints_per_txn) as u32;
        let p = krait_solver::cobra_shaped(n, k, 24, 64, 42);
        for (name, o) in configs() {
            let mut s = Cdcl::new(o);
            let t = Instant::now();
            let out = s.solve(
                &p,
                &Budget::unlimited().with_timeout(Duration::from_secs(60)),
            );
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let st = s.stats();
            let res = match out {
                Outcome::Sat { .. } => "SAT",
                Outcome::Unsat { .. } => "UNSAT",
                Outcome::Unknown(_) => "timeout",
            };
            println!(
                "{:>8} {:>9} {:<28} {:>7} {:>10.1} {:>10} {:>12} {:>9}",
                n, k, name, res, ms, st.conflicts, st.propagations, st.reorders
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
