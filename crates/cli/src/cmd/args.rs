//! The arguments `check` takes, which `watch`, `run --check`, `demo` and the benchmarks share,
//! and the checker options they stand for.

use crate::duration::parse_duration;
use clap::Args;
use krait_checker::{Level, Options, SolverKind};
use krait_history::Format;
use std::path::PathBuf;
use std::time::Duration;

// The arguments of `krait check`, also flattened into `krait watch`'s.
/// The arguments of `krait check` (also `watch`'s, `demo`'s and the benchmarks').
#[derive(Args, Clone)]
pub struct CheckArgs {
    /// The history: a file (.jsonl, .edn, .txt, dbcop .json or history.bincode), or a directory
    /// of Cobra logs or JSON Lines session files.
    pub(crate) path: PathBuf,
    /// The input's format: jsonl, cobra, edn, polysi or dbcop (default: recognized from the
    /// file), e.g. --format edn.
    #[arg(long)]
    pub(crate) format: Option<Format>,
    #[command(flatten)]
    pub(crate) flags: CheckFlags,
}

impl std::ops::Deref for CheckArgs {
    type Target = CheckFlags;
    fn deref(&self) -> &CheckFlags {
        &self.flags
    }
}

/// How to check and what to print, apart from which history: `check`'s flags, which `run
/// --check` takes too.
#[derive(Args, Clone)]
pub struct CheckFlags {
    /// Machine-readable output (watch: JSON Lines, a line per round, then the verdict).
    #[arg(long)]
    pub(crate) json: bool,
    /// The isolation level to check: ser (the default), strict-ser, si (snapshot isolation),
    /// strict-si, rc (read committed), ra (read atomic), cc (causal), or all (every level from
    /// the weakest up, as one table); Elle's names work too (serializable, snapshot-isolation,
    /// read-committed, causal…). `run --check` without it checks what the store promises.
    #[arg(long, value_enum)]
    pub(crate) level: Option<LevelArg>,
    /// Respect real time (needs timestamps): strict serializability, or with --level si
    /// strict snapshot isolation.
    #[arg(long)]
    pub(crate) strict: bool,
    /// Clock-drift allowance for --strict, e.g. 100ms, 2s, 500us, 0.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub(crate) clock_drift: Duration,
    /// Do not glue read-modify-writes into chains.
    #[arg(long)]
    pub(crate) no_combine: bool,
    /// One constraint per (reader, writer) instead of per pair of chains.
    #[arg(long)]
    pub(crate) no_coalesce: bool,
    /// Do not decide constraints by reachability before solving.
    #[arg(long)]
    pub(crate) no_prune: bool,
    /// Form the constraints between writes nobody reads too (by default, two single-write
    /// chains nobody reads get none: no read can tell their order).
    #[arg(long)]
    pub(crate) no_skip_unobserved: bool,
    /// Pair each write with every later write of its key (by default, where the known graph
    /// leads from a write through the next ones, it is paired only with the first it precedes).
    #[arg(long)]
    pub(crate) no_pair_by_heads: bool,
    /// Add every edge pruning decides (by default, of one pass's edges those another implies
    /// through a session are left out; reachability is the same).
    #[arg(long)]
    pub(crate) no_thin_edges: bool,
    /// Build the reachability index for every pruning pass (by default a pass testing a few
    /// constraints searches the graph instead, within a budget).
    #[arg(long)]
    pub(crate) no_prune_search_few: bool,
    /// Resolve every read in a pass of its own before building the graph (by default, on a
    /// history whose reads each have one write or none to have observed, graph building looks
    /// each read's writer up itself).
    #[arg(long)]
    pub(crate) no_defer_resolution: bool,
    /// Order the known graph for pruning without looking at start times (by default, of the
    /// transactions ready the one that started first comes first: on a history run in a
    /// serial order, what pruning decides then keeps that order, and the next pass needs no
    /// new one).
    #[arg(long)]
    pub(crate) no_time_order: bool,
    /// Weak levels, where values repeat: do not check serializability first (which, where it
    /// holds, settles every weaker level at once).
    #[arg(long)]
    pub(crate) no_weak_ser_first: bool,
    /// Weak levels, where values repeat: try as a read's writer also those no level allows
    /// (aborted, overwritten, the reader's own later write).
    #[arg(long)]
    pub(crate) no_weak_prune_candidates: bool,
    /// Weak levels, where values repeat: try the choices of writers one by one, learning
    /// nothing from a choice that breaks the level about the others.
    #[arg(long)]
    pub(crate) no_weak_learn: bool,
    /// Weak levels, where values repeat: give the solver no edges up front, only what each
    /// broken choice teaches.
    #[arg(long)]
    pub(crate) no_weak_encode: bool,
    /// Where values repeat: do not guess from the timestamps which write each read saw (the
    /// solver then starts from the known graph's order).
    #[arg(long)]
    pub(crate) no_time_guess: bool,
    /// Where values repeat, do not reject at once a key whose value more transactions read and
    /// then overwrote than there are versions of it (a lost update found by counting); the
    /// solver then finds it.
    #[arg(long)]
    pub(crate) no_count_versions: bool,
    /// At most this many pruning passes (each may decide constraints the last one made
    /// decidable); what is left goes to the solver, so any number keeps the verdict.
    #[arg(long, default_value_t = 64)]
    pub(crate) prune_rounds: u32,
    /// Do not seed solver decisions from the topological order.
    #[arg(long)]
    pub(crate) no_order_phase: bool,
    /// Do not propagate edges that would close cycles in the solver.
    #[arg(long)]
    pub(crate) no_theory_propagation: bool,
    /// Let the solver decide every variable (by default it leaves undecided those whose
    /// option the current topological order already agrees with).
    #[arg(long)]
    pub(crate) no_lazy_decisions: bool,
    /// The engine for what pruning leaves: cdcl (ours, conflict-driven with an acyclicity
    /// theory) or brute-force (every assignment; small problems only, for tests).
    #[arg(long, value_enum, default_value = "cdcl")]
    pub(crate) solver: SolverArg,
    /// Give up (UNDECIDED, exit 3) after this many seconds of solving; 0 for no limit.
    #[arg(long, default_value_t = 600.0)]
    pub(crate) timeout: f64,
    /// Per-phase timings.
    #[arg(long)]
    pub(crate) timings: bool,
    /// On ACCEPT, print a serial order of the transactions.
    #[arg(long)]
    pub(crate) order: bool,
    /// Write the certificate as Graphviz DOT (and render .svg/.png with `dot` if the name ends so).
    #[arg(long)]
    pub(crate) dot: Option<PathBuf>,
    /// Do not assume a session ran its transactions one after another (by default a
    /// transaction follows every committed one before it in its session): for clients that
    /// issue a session's transactions concurrently. Cycles that need session order are named
    /// `-process` (G-single-process…), so this is the switch to try on those.
    #[arg(long)]
    pub(crate) no_session_order: bool,
    /// Certificates a REJECT may carry: the verdict's, then one per other anomaly class the
    /// graph shows (G0, G1c, G-single, G2-item…), shortest first; 1 for the verdict's alone,
    /// e.g. --max-anomalies 3.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub(crate) max_anomalies: usize,
    /// Write a report directory: report.html (one self-contained page: the verdict, the levels,
    /// each anomaly drawn, click a transaction for its operations; a timeline of the sessions),
    /// verdict.json (as --json prints it), anomalies/*.txt and anomalies/*.svg (drawn without
    /// Graphviz), e.g. --report krait-report. `check --out DIR` is the same.
    #[arg(long, value_name = "DIR")]
    pub(crate) report: Option<PathBuf>,
    /// Also write the verdict as a JUnit XML report (one test case: the history's verdict) for
    /// CI systems, e.g. --junit krait.xml.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Report peak memory (for benchmarks).
    #[arg(long, hide = true)]
    pub(crate) rss: bool,
    /// Check in rounds of N transactions (online mode, with garbage collection), printing a
    /// line per round.
    #[arg(long)]
    pub(crate) round_size: Option<usize>,
    /// Online mode: keep every transaction (no garbage collection).
    #[arg(long)]
    pub(crate) no_gc: bool,
    /// Online mode: carry every path through deleted transactions as its own edge (no
    /// transitive reduction).
    #[arg(long)]
    pub(crate) no_carry_reduction: bool,
    /// Online mode: keep frontier writers until they are overwritten, instead of letting the
    /// only possible latest version of a key stand in as its initial version.
    #[arg(long)]
    pub(crate) no_fold: bool,
}

impl CheckFlags {
    /// The level checked and whether real time counts (`--level strict-…` or `--strict`).
    pub(crate) fn level(&self) -> (Level, bool) {
        let (l, strict) = self.level.unwrap_or(LevelArg::Ser).level();
        (l, strict || self.strict)
    }
    /// The level checked, as reports name it (`serializable`, `strict-snapshot-isolation`…).
    pub(crate) fn level_name(&self) -> &'static str {
        let (l, strict) = self.level();
        l.name(strict)
    }
}

impl Default for CheckFlags {
    /// Every flag at its command-line default.
    fn default() -> CheckFlags {
        CheckFlags {
            json: false,
            level: None,
            strict: false,
            clock_drift: Duration::from_millis(100),
            no_combine: false,
            no_coalesce: false,
            no_prune: false,
            no_skip_unobserved: false,
            no_pair_by_heads: false,
            no_thin_edges: false,
            no_prune_search_few: false,
            no_defer_resolution: false,
            no_time_order: false,
            no_weak_ser_first: false,
            no_weak_prune_candidates: false,
            no_weak_learn: false,
            no_weak_encode: false,
            no_time_guess: false,
            no_count_versions: false,
            prune_rounds: 64,
            no_order_phase: false,
            no_theory_propagation: false,
            no_lazy_decisions: false,
            solver: SolverArg::Cdcl,
            timeout: 600.0,
            timings: false,
            order: false,
            dot: None,
            max_anomalies: 8,
            no_session_order: false,
            report: None,
            junit: None,
            rss: false,
            round_size: None,
            no_gc: false,
            no_carry_reduction: false,
            no_fold: false,
        }
    }
}

// The level `--level` names.
/// `--level`: the isolation level to check.
// Variant doc comments would become clap's help text and change `--help`'s layout.
#[allow(missing_docs)]
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelArg {
    #[value(alias = "serializable")]
    Ser,
    #[value(alias = "strict-serializable")]
    StrictSer,
    #[value(alias = "snapshot-isolation")]
    Si,
    #[value(alias = "strict-snapshot-isolation")]
    StrictSi,
    #[value(alias = "read-committed")]
    Rc,
    #[value(alias = "read-atomic")]
    Ra,
    #[value(alias = "causal")]
    Cc,
    // Every level from the weakest up, as one table (`cmd::ladder`).
    All,
}

impl LevelArg {
    /// The checker's level, and whether the name asks for real time.
    pub fn level(self) -> (Level, bool) {
        match self {
            LevelArg::Ser => (Level::Serializable, false),
            LevelArg::StrictSer => (Level::Serializable, true),
            LevelArg::Si => (Level::SnapshotIsolation, false),
            LevelArg::StrictSi => (Level::SnapshotIsolation, true),
            LevelArg::Rc => (Level::ReadCommitted, false),
            LevelArg::Ra => (Level::ReadAtomic, false),
            LevelArg::Cc => (Level::Causal, false),
            // The ladder (`cmd::ladder`) checks each level itself; alone, `all` is no level.
            LevelArg::All => (Level::Serializable, false),
        }
    }
}

// Which engine decides the constraints left after pruning.
/// `--solver`: which engine decides what pruning leaves (`cdcl`, or `brute-force` for
/// comparison).
// Variant doc comments would become clap's help text and change `--help`'s layout.
#[allow(missing_docs)]
#[derive(clap::ValueEnum, Clone, Copy)]
pub enum SolverArg {
    Cdcl,
    BruteForce,
}

impl CheckArgs {
    /// The level checked, as reports name it (`serializable`, `strict-snapshot-isolation`…).
    pub(crate) fn level_name(&self) -> &'static str {
        self.flags.level_name()
    }
    /// Whether the output is JSON (then an error is a JSON object too).
    pub fn wants_json(&self) -> bool {
        self.json
    }
    /// `krait check PATH --timings` with every other default (the demo's check).
    pub(crate) fn defaults(path: PathBuf) -> CheckArgs {
        CheckArgs::of_run(
            path,
            CheckFlags {
                timings: true,
                ..CheckFlags::default()
            },
        )
    }
    /// `krait check PATH` on the JSON Lines logs `krait run` wrote, with its check flags.
    pub(crate) fn of_run(path: PathBuf, flags: CheckFlags) -> CheckArgs {
        CheckArgs {
            path,
            format: Some(Format::Jsonl),
            flags,
        }
    }

    /// The checker's options these switches ask for.
    pub(crate) fn options(&self) -> Options {
        let (level, strict) = self.flags.level();
        let mut o = Options {
            level,
            combine: !self.no_combine,
            coalesce: !self.no_coalesce,
            prune: !self.no_prune,
            skip_unobserved: !self.no_skip_unobserved,
            pair_by_heads: !self.no_pair_by_heads,
            thin_edges: !self.no_thin_edges,
            prune_search_few: !self.no_prune_search_few,
            defer_resolution: if self.no_defer_resolution {
                krait_checker::Defer::Never
            } else {
                krait_checker::Defer::WherePays
            },
            time_order: !self.no_time_order,
            weak_ser_first: !self.no_weak_ser_first,
            weak_prune_candidates: !self.no_weak_prune_candidates,
            weak_learn: !self.no_weak_learn,
            weak_encode: !self.no_weak_encode,
            time_guess: !self.no_time_guess,
            count_versions: !self.no_count_versions,
            prune_rounds: self.prune_rounds,
            strict: strict.then_some(self.clock_drift.as_nanos() as u64),
            solver: match self.solver {
                SolverArg::Cdcl => SolverKind::Cdcl,
                SolverArg::BruteForce => SolverKind::BruteForce,
            },
            solver_order_phase: !self.no_order_phase,
            solver_theory_propagation: !self.no_theory_propagation,
            solver_lazy: !self.no_lazy_decisions,
            want_order: self.order,
            max_anomalies: self.max_anomalies.max(1),
            session_order: !self.no_session_order,
            ..Options::default()
        };
        // Per check (each online round has its own), counted from the check's start.
        if self.timeout > 0.0 {
            o.timeout = Some(Duration::from_secs_f64(self.timeout));
        }
        o
    }
}
