//! Check a history built in code: a bank of two accounts where a transfer's two writes are seen
//! half by an audit (a read skew), then the same history with the audit fixed.
//!
//! Run: `cargo run -p krait-checker --example check_in_code`

use krait_checker::{check, Options, Verdict};
use krait_history::{build_history, SimpleTxn};

fn main() {
    // Session 0 opens both accounts, then moves 10 from a to b (a: 100 → 90, b: 100 → 110).
    // Session 1 audits: it sees b after the transfer but a before it.
    let skewed = build_history(&[
        SimpleTxn::new(0, 1).w("a", 100).w("b", 101),
        SimpleTxn::new(0, 2)
            .r("a", 100)
            .r("b", 101)
            .w("a", 90)
            .w("b", 110),
        SimpleTxn::new(1, 3).r("a", 100).r("b", 110),
    ])
    .expect("a well-formed history");
    report(
        "audit reads a half-done transfer",
        &check(&skewed, &Options::default()),
    );

    let consistent = build_history(&[
        SimpleTxn::new(0, 1).w("a", 100).w("b", 101),
        SimpleTxn::new(0, 2)
            .r("a", 100)
            .r("b", 101)
            .w("a", 90)
            .w("b", 110),
        SimpleTxn::new(1, 3).r("a", 90).r("b", 110),
    ])
    .expect("a well-formed history");
    report(
        "audit reads after the transfer",
        &check(&consistent, &Options::default()),
    );
}

fn report(what: &str, r: &Result<krait_checker::Report, krait_checker::CheckError>) {
    match r {
        Ok(r) => match &r.verdict {
            Verdict::Accept => println!("{what}: ACCEPT"),
            Verdict::Reject(c) => {
                println!("{what}: REJECT, {}", c.summary);
                for e in &c.cycle {
                    println!("  {} -> {} ({:?}): {}", e.from, e.to, e.kind, e.explanation);
                }
            }
            Verdict::Unknown { reason } => println!("{what}: UNKNOWN ({reason})"),
        },
        Err(e) => println!("{what}: cannot check: {e}"),
    }
}
