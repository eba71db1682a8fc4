//! krait-verify: checks a verdict against the raw history, written apart from the checker, so
//! that a mistake in one is unlikely to hide in the other.
//!
//! Native JSON Lines histories (a file or a directory of `*.jsonl`) are read by the verifier's
//! own reader ([`jsonl`]), so that a bug in the shared reader is not confirmed by both; the
//! other formats (Cobra logs, Elle EDN, PolySI text, dbcop, NATS streams) still come through
//! krait-history's readers, shared with the checker.
//!
//! - REJECT with a cycle: every edge is re-derived from the history — session and real-time
//!   order, write→read, and each version order either a fact (a read-modify-write directly
//!   follows what it read; a list read orders its key) or deduced, with its deduction replayed:
//!   assuming the other order (the edge marked `assumed`, which must be the exact opposite),
//!   the deduction's cycle closes, its own edges checked the same way.
//! - REJECT with an unsatisfiable core: the two options of each choice are opposite, the cases
//!   cover every combination, and each case's cycle holds under its choices.
//! - REJECT for a single reason (aborted or intermediate read, a read of nobody, ...): a witness
//!   is found among the transactions the certificate names.
//! - REJECT of a lost update found by counting (values repeat): the named transactions that read
//!   one value and then overwrote the key outnumber the versions holding it, re-counted.
//! - ACCEPT with a serial order: the order is replayed read by read.
//!
//! Under snapshot isolation (the report's `level`), every cycle must also have no two
//! anti-dependencies in a row (such a cycle snapshot isolation allows), and an ACCEPT's order
//! is a commit order whose snapshots are replayed.

#![warn(missing_docs)]

mod counted;
mod facts;
pub mod jsonl;
mod reasons;
mod replay;
mod weak;

use facts::{Facts, Ver};
use krait_history::{History, TxnId, TxnStatus, NO_TIME};
use serde_json::Value;

/// Why a certificate was not confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Something it states does not follow from the history.
    Invalid(String),
    /// It is of a kind this checker cannot confirm from the history alone (online mode's
    /// carried or stale-read facts, Cobra's claims, cores too large to list case by case).
    Unsupported(String),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Invalid(s) => write!(f, "invalid: {s}"),
            Problem::Unsupported(s) => write!(f, "cannot be checked: {s}"),
        }
    }
}

fn invalid<T>(s: impl Into<String>) -> Result<T, Problem> {
    Err(Problem::Invalid(s.into()))
}

/// Checks a report (`krait check --json`) against the history it was made from; on success,
/// says what was confirmed.
pub fn verify(h: &History, report: &Value) -> Result<String, Problem> {
    // Checked without session order: the history it was about has every transaction a
    // session of its own.
    if report["session_order"] == false {
        let h = h.one_session_per_txn();
        let mut r = report.clone();
        r["session_order"] = true.into();
        return verify(&h, &r).map(|s| format!("{s} (no order between a session's transactions)"));
    }
    let f = Facts::new(h);
    let si = report["level"]
        .as_str()
        .is_some_and(|l| l.ends_with("snapshot-isolation"));
    if let Some(level) = report["level"].as_str().and_then(weak::of) {
        return verify_weak(&f, report, level);
    }
    match report["verdict"].as_str() {
        Some("ACCEPT") => match report.get("order").and_then(Value::as_array) {
            Some(order) if si => {
                let snaps = report["snapshots"].as_array().cloned().unwrap_or_default();
                replay::replay_si(&f, order, &snaps)
            }
            Some(order) => replay::replay(&f, order),
            None => Ok("ACCEPT without a serial order (check with --order to have one)".into()),
        },
        // Its reasoning names each read's writer by the value read.
        // A lost update found by counting is re-counted from the history.
        Some("REJECT")
            if repeated_values(h)
                && report["anomaly"] == "lost-update"
                && report["cycle"].as_array().is_none_or(|c| c.is_empty()) =>
        {
            counted::lost_update(h, report)
        }
        Some("REJECT") if repeated_values(h) => {
            Err(Problem::Unsupported(
                "a REJECT of a history where some read's value was written more than once (not checked yet)".into(),
            ))
        }
        Some("REJECT") => {
            let first = verify_reject(&f, report, si)?;
            let v = Verifier { f: &f, si };
            let also = report["also"].as_array().map_or(&[][..], |a| a.as_slice());
            for (i, c) in also.iter().enumerate() {
                let Some(cycle) = c["cycle"].as_array().filter(|c| !c.is_empty()) else {
                    return invalid(format!("also[{i}]: a further anomaly without its cycle"));
                };
                v.cycle(cycle, &[], 0).map_err(|p| match p {
                    Problem::Invalid(s) => Problem::Invalid(format!("also[{i}]: {s}")),
                    other => other,
                })?;
            }
            Ok(match also.len() {
                0 => first,
                n => format!("{first}; and the {n} further anomalies' cycles, each edge derived"),
            })
        }
        Some("UNKNOWN") => Err(Problem::Unsupported(
            "an undecided verdict (the solver's budget ran out) states nothing".into(),
        )),
        other => invalid(format!("no verdict to check ({other:?})")),
    }
}

/// The verdict's own certificate of a REJECT: a core case by case, a cycle edge by edge, or a
/// single reason by its witness.
fn verify_reject(f: &Facts, report: &Value, si: bool) -> Result<String, Problem> {
    let v = Verifier { f, si };
    // Two that read one version and both overwrote it: the cycle given has two
    // anti-dependencies in a row, so under snapshot isolation the witness is the
    // definition's. (A lost update of another shape is a cycle checked as any.)
    if si && report["anomaly"] == "lost-update" {
        if let Ok(s) = reasons::reason(f, report) {
            return Ok(s);
        }
    }
    if let Some(cases) = report["cases"].as_array().filter(|c| !c.is_empty()) {
        v.core(report, cases)
    } else if let Some(cycle) = report["cycle"].as_array().filter(|c| !c.is_empty()) {
        v.cycle(cycle, &[], 0)?;
        Ok(format!(
            "REJECT: a cycle of {} edges, each derived",
            cycle.len()
        ))
    } else if report["constraints"]
        .as_array()
        .is_some_and(|c| !c.is_empty())
    {
        Err(Problem::Unsupported(
            "an unsatisfiable core too large to be listed case by case".into(),
        ))
    } else {
        reasons::reason(f, report)
    }
}

/// A verdict at a weak level: the commit order against the axiom, or the cycle edge by edge
/// (a REJECT for one reason, such as an aborted read, as at every level).
fn verify_weak(f: &Facts, report: &Value, level: weak::Weak) -> Result<String, Problem> {
    match report["verdict"].as_str() {
        Some("ACCEPT") => match report.get("order").and_then(Value::as_array) {
            Some(order) => weak::replay(f, order, level),
            None => Ok("ACCEPT without a commit order (check with --order to have one)".into()),
        },
        Some("REJECT") => {
            let Some(cycle) = report["cycle"].as_array().filter(|c| !c.is_empty()) else {
                return reasons::reason(f, report);
            };
            let v = Verifier { f, si: false };
            for (i, e) in cycle.iter().enumerate() {
                let next = &cycle[(i + 1) % cycle.len()];
                if e["to"] != next["from"] {
                    return invalid(format!("the cycle is broken after edge {}: {e}", i + 1));
                }
                let from = weak::node(f.h, e["from"].as_str().unwrap_or(""))?;
                let to = weak::node(f.h, e["to"].as_str().unwrap_or(""))?;
                match (e["kind"].as_str(), from, to) {
                    (Some("ww"), None, Some(t)) => {
                        // The initial version precedes every write of the key.
                        let k = v.key(e)?;
                        if f.last_write(t, k).is_none() {
                            return invalid(format!("{} does not write {}", e["to"], e["key"]));
                        }
                    }
                    (Some("ww"), Some(a), b) => weak::forced(f, level, a, b, v.key(e)?)?,
                    (Some("session" | "wr"), Some(_), Some(_)) => v.edge(e, &[], 0)?,
                    _ => return invalid(format!("an edge a weak level does not derive: {e}")),
                }
            }
            Ok(format!(
                "REJECT: a cycle of {} edges, each derived",
                cycle.len()
            ))
        }
        Some("UNKNOWN") => Err(Problem::Unsupported(
            "an undecided verdict states nothing".into(),
        )),
        other => invalid(format!("no verdict to check ({other:?})")),
    }
}

/// Whether some read's value may have more than one writer: a value written twice, or (formats
/// whose keys start at a value) a write of the initial value.
fn repeated_values(h: &History) -> bool {
    h.has_duplicates()
        || h.init_value
            .is_some_and(|v| h.write_index.ops().any(|o| h.op_value[o as usize] == v))
}

/// A version-order statement: on key `k`, version `a` comes before transaction `b`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Order {
    k: u32,
    a: Ver,
    b: TxnId,
}

/// How deep deductions may nest before a certificate is refused as unverifiable.
const MAX_DEPTH: u32 = 64;

struct Verifier<'a> {
    f: &'a Facts<'a>,
    /// Snapshot isolation: a cycle with two anti-dependencies in a row proves nothing.
    si: bool,
}

/// A name in a certificate: a transaction, or (in a choice) the readers of a chain's last
/// version, which stand for that version.
/// The transactions a certificate names (its `txns`), those the history has.
fn named_txns(h: &History, report: &Value) -> Vec<TxnId> {
    report["txns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| txn_of(h, t["name"].as_str().unwrap_or("")))
        .collect()
}

fn txn_of(h: &History, name: &str) -> Option<TxnId> {
    let name = name.strip_prefix("the readers of ").unwrap_or(name);
    h.txn_named(name)
}

impl Verifier<'_> {
    fn key(&self, e: &Value) -> Result<u32, Problem> {
        let name = e["key"]
            .as_str()
            .ok_or(Problem::Invalid(format!("edge {} has no key", e)))?;
        self.f
            .h
            .keys
            .iter()
            .position(|k| k == name)
            .map(|k| k as u32)
            .ok_or(Problem::Invalid(format!("no key {name:?} in the history")))
    }

    fn txn(&self, e: &Value, end: &str) -> Result<TxnId, Problem> {
        let name = e[end].as_str().unwrap_or("");
        match txn_of(self.f.h, name) {
            Some(t) if self.f.took_part[t as usize] => Ok(t),
            Some(_) => invalid(format!("{name} did not commit, yet it is on a cycle")),
            None => invalid(format!("no transaction {name:?} in the history")),
        }
    }

    /// Two runs of direct successions, each wholly before the other in exactly one way.
    fn opposite(&self, x: &Order, y: &Order) -> bool {
        let f = self.f;
        let run = |v: Ver| f.run_head(x.k, v);
        x.k == y.k
            && x.a != Ver::Of(x.b)
            && ((y.a == Ver::Of(x.b) && Ver::Of(y.b) == x.a)
                || (run(y.a) == run(Ver::Of(x.b))
                    && run(Ver::Of(y.b)) == run(x.a)
                    && run(x.a) != run(Ver::Of(x.b))))
    }

    /// Whether the statement follows from the facts or the assumptions (a run wholly before
    /// another puts each of its versions before each of the other's).
    fn holds(&self, o: &Order, assumed: &[Order]) -> bool {
        let f = self.f;
        if o.a == Ver::Init || f.before(o.k, o.a, Ver::Of(o.b)) {
            return true;
        }
        let run = |v: Ver| f.run_head(o.k, v);
        assumed.iter().any(|s| {
            s == o
                || (s.k == o.k
                    && run(s.a) != run(Ver::Of(s.b))
                    && run(s.a) == run(o.a)
                    && run(Ver::Of(s.b)) == run(Ver::Of(o.b)))
        })
    }

    /// The version order an edge states, for ww and rw edges.
    fn order_of(&self, e: &Value, from: TxnId, to: TxnId) -> Result<Order, Problem> {
        let k = self.key(e)?;
        let f = self.f;
        if !f.writes(to, k) {
            return invalid(format!("{} does not write {}", e["to"], e["key"]));
        }
        let a = match e["kind"].as_str() {
            Some("ww") => {
                if !f.writes(from, k) {
                    return invalid(format!("{} does not write {}", e["from"], e["key"]));
                }
                Ver::Of(from)
            }
            // A gate: the readers of `from`'s last version.
            _ if e["from"]
                .as_str()
                .is_some_and(|s| s.starts_with("the readers of ")) =>
            {
                Ver::Of(from)
            }
            // A reader precedes whatever overwrote what it read; a version a list shows
            // directly after another precedes whatever overwrote that other one just the same.
            _ => match f
                .version_read(from, k)
                .or_else(|| f.direct_pred(k, Ver::Of(from)))
            {
                Some(v) => v,
                None => {
                    return invalid(format!(
                        "{} read no installed version of {} before writing it",
                        e["from"], e["key"]
                    ))
                }
            },
        };
        Ok(Order { k, a, b: to })
    }

    /// One edge, under the assumptions.
    fn edge(&self, e: &Value, assumed: &[Order], depth: u32) -> Result<(), Problem> {
        let f = self.f;
        let h = f.h;
        let from_name = e["from"].as_str().unwrap_or("");
        let from = if from_name.starts_with("the readers of ") {
            txn_of(h, from_name).ok_or(Problem::Invalid(format!("no chain {from_name:?}")))?
        } else {
            self.txn(e, "from")?
        };
        let to = self.txn(e, "to")?;
        match e["kind"].as_str().unwrap_or("") {
            "session" => {
                let ok = f.session[from as usize] == f.session[to as usize]
                    && f.pos[from as usize] < f.pos[to as usize]
                    && h.txn_status[from as usize] == TxnStatus::Committed;
                if !ok {
                    return invalid(format!(
                        "{from_name} does not commit before {} in one session",
                        e["to"]
                    ));
                }
            }
            "rt" => {
                let (c, s) = (h.txn_commit[from as usize], h.txn_start[to as usize]);
                let ok = h.txn_status[from as usize] == TxnStatus::Committed
                    && c != NO_TIME
                    && s != NO_TIME
                    && c < s;
                if !ok {
                    return invalid(format!(
                        "{from_name} did not commit before {} began",
                        e["to"]
                    ));
                }
            }
            "wr" => {
                let k = self.key(e)?;
                let w = f.last_write(from, k);
                let ok = w.is_some()
                    && from != to
                    && f.external_reads(to, k)
                        .iter()
                        .any(|&o| f.seen(o) == facts::Seen::Write(w.unwrap()));
                if !ok {
                    return invalid(format!(
                        "{} did not read {} from {from_name}",
                        e["to"], e["key"]
                    ));
                }
            }
            "ww" | "rw" => {
                let o = self.order_of(e, from, to)?;
                if e["assumed"].as_bool() == Some(true) {
                    if !assumed
                        .iter()
                        .any(|s| *s == o || self.holds(&o, std::slice::from_ref(s)))
                    {
                        return invalid(format!(
                            "edge {e} is marked assumed, but nothing assumes it"
                        ));
                    }
                } else if !self.holds(&o, assumed) {
                    match e.get("deduced") {
                        Some(d) => self.deduction(&o, d, assumed, depth)?,
                        None => {
                            return invalid(format!(
                                "{from_name} -{}-> {} on {}: the version order it needs is neither a fact nor deduced",
                                e["kind"].as_str().unwrap_or(""),
                                e["to"],
                                e["key"]
                            ))
                        }
                    }
                }
            }
            "carried" => {
                return Err(Problem::Unsupported(
                    "an online round's carried edge (a path through collected transactions)".into(),
                ))
            }
            other => return invalid(format!("unknown edge kind {other:?}")),
        }
        Ok(())
    }

    /// A deduced statement: its deduction must assume the exact opposite and close a cycle.
    fn deduction(
        &self,
        o: &Order,
        d: &Value,
        assumed: &[Order],
        depth: u32,
    ) -> Result<(), Problem> {
        if depth > MAX_DEPTH {
            return Err(Problem::Unsupported("deductions nested too deep".into()));
        }
        let cycle = d["cycle"]
            .as_array()
            .ok_or(Problem::Invalid("a deduction without a cycle".into()))?;
        let mut opposite = None;
        for e in cycle
            .iter()
            .filter(|e| e["assumed"].as_bool() == Some(true))
        {
            let from = txn_of(self.f.h, e["from"].as_str().unwrap_or(""));
            let to = txn_of(self.f.h, e["to"].as_str().unwrap_or(""));
            if let (Some(from), Some(to)) = (from, to) {
                let s = self.order_of(e, from, to)?;
                if self.opposite(o, &s) {
                    opposite = Some(s);
                }
            }
        }
        let Some(s) = opposite else {
            return invalid(format!(
                "the deduction of {o:?} does not assume the opposite version order"
            ));
        };
        let mut more = assumed.to_vec();
        more.push(s);
        self.cycle(cycle, &more, depth + 1)
    }

    /// A closed cycle whose every edge holds.
    fn cycle(&self, cycle: &[Value], assumed: &[Order], depth: u32) -> Result<(), Problem> {
        for (i, e) in cycle.iter().enumerate() {
            let next = &cycle[(i + 1) % cycle.len()];
            if e["to"] != next["from"] {
                return invalid(format!("the cycle is broken after edge {}: {e}", i + 1));
            }
            if self.si && e["kind"] == "rw" && next["kind"] == "rw" {
                return invalid(format!(
                    "edges {} and {} are two anti-dependencies in a row, which snapshot isolation allows",
                    i + 1,
                    (i + 1) % cycle.len() + 1
                ));
            }
            self.edge(e, assumed, depth)?;
        }
        Ok(())
    }

    /// An unsatisfiable core listed case by case.
    fn core(&self, report: &Value, cases: &[Value]) -> Result<String, Problem> {
        let constraints = report["constraints"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let n = constraints.len();
        if n == 0 || cases.len() != 1 << n {
            return invalid(format!("{} cases for {n} choices", cases.len()));
        }
        // Each choice's two options must be opposite orders.
        let mut options: Vec<[(String, Vec<Order>); 2]> = Vec::new();
        for c in &constraints {
            let mut pair: Vec<(String, Vec<Order>)> = Vec::new();
            for opt in c["options"].as_array().into_iter().flatten() {
                let mut orders = Vec::new();
                for e in opt["edges"].as_array().into_iter().flatten() {
                    let from = txn_of(self.f.h, e["from"].as_str().unwrap_or(""));
                    let to = txn_of(self.f.h, e["to"].as_str().unwrap_or(""));
                    match (from, to) {
                        (Some(from), Some(to)) => orders.push(self.order_of(e, from, to)?),
                        _ => return invalid(format!("an option's edge names nobody: {e}")),
                    }
                }
                pair.push((opt["choice"].as_str().unwrap_or("").to_string(), orders));
            }
            let [a, b]: [(String, Vec<Order>); 2] = pair
                .try_into()
                .map_err(|_| Problem::Invalid("a choice without two options".into()))?;
            if !a.1.iter().any(|x| b.1.iter().any(|y| self.opposite(x, y))) {
                return invalid(format!(
                    "the options {:?} and {:?} are not opposite",
                    a.0, b.0
                ));
            }
            options.push([a, b]);
        }
        let mut seen = std::collections::HashSet::new();
        for case in cases {
            let choices: Vec<&str> = case["choices"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if choices.len() != n {
                return invalid("a case that does not choose for every constraint");
            }
            let mut mask = 0usize;
            let mut assumed = Vec::new();
            for (j, c) in choices.iter().enumerate() {
                let which = options[j]
                    .iter()
                    .position(|o| o.0 == *c)
                    .ok_or(Problem::Invalid(format!("case choice {c:?} is no option")))?;
                mask |= which << j;
                assumed.extend(options[j][which].1.iter().copied());
            }
            seen.insert(mask);
            let cycle = case["cycle"].as_array().cloned().unwrap_or_default();
            if cycle.is_empty() {
                return invalid("a case without a cycle");
            }
            self.cycle(&cycle, &assumed, 0)?;
        }
        if seen.len() != 1 << n {
            return invalid("the cases repeat a combination and miss another");
        }
        Ok(format!(
            "REJECT: {n} choices, each of the {} combinations closing a derived cycle",
            1 << n
        ))
    }
}
