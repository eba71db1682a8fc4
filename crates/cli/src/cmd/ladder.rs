//! `krait check --level all`: every level from the weakest up — read committed, read atomic,
//! causal, snapshot isolation, serializability, and with timestamps the strict ones — each
//! branch stopping at its first failure (a stronger level is implied to fail), as one table
//! (or `--json`): level, verdict, the anomaly that breaks it, time. The exit code is the
//! strongest level's, as `krait check` without `--level` would give.

use super::args::{CheckArgs, LevelArg};
use crate::exit;
use krait_checker::{Report, Verdict};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One rung: the level, and its outcome.
struct Rung {
    level: &'static str,
    outcome: Outcome,
    time: Duration,
}

enum Outcome {
    Checked(Box<Report>),
    /// A weaker level on its branch failed.
    Implied(&'static str),
    /// The level cannot be checked on this history (why).
    Cannot(String),
}

/// The ladder: (level, the weaker level whose failure implies this one's).
fn ladder(timestamps: bool) -> Vec<(LevelArg, Option<LevelArg>)> {
    let mut v = vec![
        (LevelArg::Rc, None),
        (LevelArg::Ra, Some(LevelArg::Rc)),
        (LevelArg::Cc, Some(LevelArg::Ra)),
        (LevelArg::Si, Some(LevelArg::Cc)),
        (LevelArg::Ser, Some(LevelArg::Si)),
    ];
    if timestamps {
        v.push((LevelArg::StrictSi, Some(LevelArg::Si)));
        v.push((LevelArg::StrictSer, Some(LevelArg::Ser)));
    }
    v
}

fn name(l: LevelArg) -> &'static str {
    let (level, strict) = l.level();
    level.name(strict)
}

pub(crate) fn run(
    a: &CheckArgs,
    h: &krait_history::History,
    load: Duration,
) -> anyhow::Result<ExitCode> {
    let timestamps = krait_history::summarize(h).timestamps;
    let mut rungs: Vec<(LevelArg, Rung)> = Vec::new();
    for (l, weaker) in ladder(timestamps) {
        // Strict serializability is also implied to fail by strict snapshot isolation.
        let failed_below = [
            weaker,
            (l == LevelArg::StrictSer).then_some(LevelArg::StrictSi),
        ]
        .into_iter()
        .flatten()
        .find_map(|w| {
            rungs.iter().find(|(x, r)| {
                *x == w
                    && match &r.outcome {
                        Outcome::Checked(rep) => rep.verdict.is_reject(),
                        Outcome::Implied(_) => true,
                        Outcome::Cannot(_) => false,
                    }
            })
        })
        .map(|(x, _)| name(*x));
        let t = Instant::now();
        let outcome = match failed_below {
            Some(w) => Outcome::Implied(w),
            None => {
                let mut flags = a.flags.clone();
                flags.level = Some(l);
                flags.strict = false;
                let args = CheckArgs {
                    path: a.path.clone(),
                    format: a.format,
                    flags,
                };
                match krait_checker::check(h, &args.options()) {
                    Ok(r) => Outcome::Checked(Box::new(r)),
                    Err(e) => Outcome::Cannot(e.to_string()),
                }
            }
        };
        let rung = Rung {
            level: name(l),
            outcome,
            time: t.elapsed(),
        };
        rungs.push((l, rung));
    }
    // The strongest level checked or implied decides the exit code.
    let code = rungs.iter().rev().find_map(|(_, r)| match &r.outcome {
        Outcome::Checked(rep) => Some(exit::of_verdict(Some(&rep.verdict))),
        Outcome::Implied(_) => Some(ExitCode::from(exit::REJECT)),
        Outcome::Cannot(_) => None,
    });
    let holds = rungs
        .iter()
        .filter(|(_, r)| matches!(&r.outcome, Outcome::Checked(rep) if rep.verdict.is_accept()))
        .map(|(_, r)| r.level)
        .next_back();
    let json = {
        let rows: Vec<serde_json::Value> = rungs
            .iter()
            .map(|(_, r)| {
                let mut v =
                    serde_json::json!({ "level": r.level, "ms": r.time.as_secs_f64() * 1e3 });
                match &r.outcome {
                    Outcome::Checked(rep) => {
                        let j = krait_report::report_json(rep);
                        v["verdict"] = j["verdict"].clone();
                        if let Some(c) = rep.verdict.certificate() {
                            v["anomaly"] = serde_json::to_value(c.anomaly)?;
                            v["summary"] = c.summary.clone().into();
                            v["certificate"] = j;
                        }
                    }
                    Outcome::Implied(w) => {
                        v["verdict"] = "REJECT".into();
                        v["implied_by"] = (*w).into();
                    }
                    Outcome::Cannot(why) => {
                        v["verdict"] = "NOT_CHECKED".into();
                        v["reason"] = why.clone().into();
                    }
                }
                Ok(v)
            })
            .collect::<Result<_, serde_json::Error>>()?;
        let out = serde_json::json!({
            "schema_version": krait_report::SCHEMA_VERSION,
            "path": a.path.display().to_string(),
            "level": "all",
            "holds": holds,
            "ladder": rows,
            "load_ms": load.as_secs_f64() * 1e3,
        });
        out
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        let s = krait_history::summarize(h);
        println!("{}", crate::output::stats_line(&a.path, &s));
        println!("{:<26} {:<12} {:>9}  anomaly", "level", "verdict", "ms");
        for (_, r) in &rungs {
            let ms = r.time.as_secs_f64() * 1e3;
            let (verdict, why) = match &r.outcome {
                Outcome::Checked(rep) => match &rep.verdict {
                    Verdict::Accept => ("ACCEPT", String::new()),
                    Verdict::Reject(c) => ("REJECT", c.summary.clone()),
                    Verdict::Unknown { reason } => ("UNDECIDED", reason.clone()),
                },
                Outcome::Implied(w) => ("REJECT", format!("(implied: not {w})")),
                Outcome::Cannot(why) => ("NOT CHECKED", why.clone()),
            };
            println!("{:<26} {:<12} {:>9.1}  {why}", r.level, verdict, ms);
        }
        match holds {
            Some(l) => println!("strongest level that holds: {l}"),
            None => println!("no level holds"),
        }
    }
    if let Some(dir) = &a.report {
        let page = krait_report::Page {
            path: a.path.display().to_string(),
            history: h,
            headline: match holds {
                Some(l) => format!("strongest level that holds: {l}"),
                None => "no level holds".to_string(),
            },
            rungs: rungs.iter().map(|(_, r)| page_rung(r)).collect(),
            load_ms: load.as_secs_f64() * 1e3,
        };
        if let Err(e) = crate::report_dir::write(dir, &page, &json) {
            eprintln!("warning: the report was not written: {e:#}");
        }
    }
    Ok(code.unwrap_or(ExitCode::from(exit::BAD_INPUT)))
}

/// A rung as the HTML report's ladder table shows it.
fn page_rung(r: &Rung) -> krait_report::Rung<'_> {
    let ms = r.time.as_secs_f64() * 1e3;
    let (verdict, note) = match &r.outcome {
        Outcome::Checked(rep) => return krait_report::Rung::checked(rep, ms),
        Outcome::Implied(w) => ("REJECT", format!("implied: not {w}")),
        Outcome::Cannot(why) => ("NOT CHECKED", why.clone()),
    };
    krait_report::Rung {
        level: r.level,
        verdict,
        note,
        ms,
        certificates: Vec::new(),
    }
}
