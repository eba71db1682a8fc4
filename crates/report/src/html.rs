//! The HTML report (`krait check --out DIR`): one self-contained page — no network, no external
//! script or font — with the verdict, the ladder of levels checked, each anomaly's cycle drawn
//! as SVG whose transactions can be clicked (their operations, session neighbours and
//! timestamps appear beside it), and a timeline of the sessions with aborts and unknown
//! outcomes.

use crate::svg::certificate_svg;
use crate::timeline::{timeline_svg, MAX_SESSIONS};
use crate::xml_escape as xml;
use krait_checker::{Certificate, Report, Verdict};
use krait_history::{History, OpKind, TxnId, NO_TIME};
use serde_json::{json, Value};
use std::fmt::Write;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");
/// Operations listed per transaction in the details pane before the rest are counted.
const OPS_LISTED: usize = 200;

/// One level checked (or not): a row of the ladder table.
pub struct Rung<'a> {
    /// The level, as reports name it (`serializable`, `read-committed`…).
    pub level: &'a str,
    /// `ACCEPT`, `REJECT`, `UNDECIDED` or `NOT CHECKED`.
    pub verdict: &'a str,
    /// The anomaly's sentence, what implies the verdict, or why the level was not checked.
    pub note: String,
    /// Time spent on this level.
    pub ms: f64,
    /// The certificates of a REJECT found at this level: the verdict's first, then one per
    /// other anomaly class.
    pub certificates: Vec<&'a Certificate>,
}

impl<'a> Rung<'a> {
    /// The row of a level that was checked: its verdict, the anomaly's sentence (or why it was
    /// undecided), and its certificates — the verdict's, then the further ones.
    pub fn checked(report: &'a Report, ms: f64) -> Rung<'a> {
        let (verdict, note) = match &report.verdict {
            Verdict::Accept => ("ACCEPT", String::new()),
            Verdict::Reject(c) => ("REJECT", c.summary.clone()),
            Verdict::Unknown { reason } => ("UNDECIDED", reason.clone()),
        };
        Rung {
            level: report.level,
            verdict,
            note,
            ms,
            certificates: report
                .verdict
                .certificate()
                .into_iter()
                .chain(&report.also)
                .collect(),
        }
    }
}

/// Everything the page shows.
pub struct Page<'a> {
    /// The history's path, as given.
    pub path: String,
    /// The history itself, for transaction details and the timeline.
    pub history: &'a History,
    /// The verdict in one line ("REJECT: the history is not serializable").
    pub headline: String,
    /// The levels checked, weakest first (one row for a single level).
    pub rungs: Vec<Rung<'a>>,
    /// Time to load the history.
    pub load_ms: f64,
}

/// A distinct certificate of the page, with the levels it breaks and its file name stem.
pub struct Anomaly<'a> {
    /// `1-G-single`: its place on the page and its class, for `anomalies/*.txt` and `*.svg`.
    pub stem: String,
    /// The levels whose check found it.
    pub levels: Vec<&'a str>,
    /// The certificate.
    pub certificate: &'a Certificate,
}

/// The page's certificates, each once (the ladder finds the same cycle at several levels).
pub fn anomalies<'a>(rungs: &[Rung<'a>]) -> Vec<Anomaly<'a>> {
    let mut out: Vec<Anomaly<'a>> = Vec::new();
    for r in rungs {
        for &c in &r.certificates {
            if let Some(a) = out.iter_mut().find(|a| a.certificate == c) {
                a.levels.push(r.level);
                continue;
            }
            let class = serde_json::to_value(c.anomaly)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "anomaly".into());
            out.push(Anomaly {
                stem: format!("{}-{class}", out.len() + 1),
                levels: vec![r.level],
                certificate: c,
            });
        }
    }
    out
}

/// A certificate's transaction, by the name reports give it.
fn txn_by_name(h: &History, name: &str) -> Option<TxnId> {
    h.txn_named(name)
}

/// An operation as the history has it (the certificate's own words are used where it has them).
fn op_text(h: &History, o: usize) -> String {
    let k = &h.keys[h.op_key[o] as usize];
    match h.op_kind[o] {
        OpKind::Write => format!("w({k}) = {}", h.value_text(o)),
        OpKind::ReadInit => format!("r({k}) = initial"),
        OpKind::Read => match h.list_of(o as u32) {
            Some(l) => format!("r({k}) = {l:?}"),
            None => format!("r({k}) = {}", h.value_text(o)),
        },
    }
}

/// What the details pane shows for transaction `t`.
fn txn_details(h: &History, t: TxnId, cert_ops: Option<&[String]>, t0: u64) -> Value {
    let s = h.session_of(t);
    let range = h.session_range(s);
    let name = |u: TxnId| h.display_txn(u);
    let ops: Vec<String> = match cert_ops {
        Some(ops) => ops.to_vec(),
        None => h.ops(t).take(OPS_LISTED).map(|o| op_text(h, o)).collect(),
    };
    let time = |v: u64| {
        if v == NO_TIME {
            Value::Null
        } else {
            json!(format!("{:.3} ms", v.saturating_sub(t0) as f64 / 1e6))
        }
    };
    json!({
        "name": name(t),
        "session": h.session_names[s],
        "position": format!("{} of {}", t - range.start + 1, range.len()),
        "status": h.txn_status[t as usize].as_str(),
        "start": time(h.txn_start[t as usize]),
        "commit": time(h.txn_commit[t as usize]),
        "ops": ops,
        "more_ops": h.ops(t).len().saturating_sub(ops.len()),
        "prev": (t > range.start).then(|| name(t - 1)),
        "next": (t + 1 < range.end).then(|| name(t + 1)),
        "in_certificate": cert_ops.is_some(),
    })
}

/// The transactions the page can show: every one a certificate names, and their session
/// neighbours; and the ids of the certificates' ones, for the timeline's marks.
fn page_txns(h: &History, certs: &[&Certificate]) -> (serde_json::Map<String, Value>, Vec<TxnId>) {
    let t0 = (0..h.num_txns())
        .map(|t| h.txn_start[t])
        .filter(|&s| s != NO_TIME)
        .min()
        .unwrap_or(0);
    let mut map = serde_json::Map::new();
    let mut marked = Vec::new();
    for c in certs {
        for ct in &c.txns {
            let Some(t) = txn_by_name(h, &ct.name) else {
                continue;
            };
            marked.push(t);
            map.insert(ct.name.clone(), txn_details(h, t, Some(&ct.ops), t0));
        }
    }
    marked.sort_unstable();
    marked.dedup();
    for &t in &marked {
        let range = h.session_range(h.session_of(t));
        for u in [t.checked_sub(1), Some(t + 1)].into_iter().flatten() {
            if range.contains(&u) && !map.contains_key(&h.display_txn(u)) {
                map.insert(h.display_txn(u), txn_details(h, u, None, t0));
            }
        }
    }
    (map, marked)
}

/// JSON inside a `<script>` element: nothing in it may close the element.
fn script_json(v: &Value) -> String {
    v.to_string()
        .replace("</", "<\\/")
        .replace("<!--", "<\\!--")
}

fn verdict_class(v: &str) -> &'static str {
    match v {
        "ACCEPT" => "accept",
        "REJECT" => "reject",
        _ => "unknown",
    }
}

/// The page.
pub fn report_html(p: &Page) -> String {
    let h = p.history;
    let anomalies = anomalies(&p.rungs);
    let certs: Vec<&Certificate> = anomalies.iter().map(|a| a.certificate).collect();
    let (txns, marked) = page_txns(h, &certs);
    let overall = p
        .rungs
        .last()
        .map(|r| verdict_class(r.verdict))
        .unwrap_or("unknown");
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>krait: {}</title><style>{CSS}</style></head><body>\n<main>\n<h1>krait report</h1>\n<p class=\"path\">{}</p>\n<p id=\"verdict\" class=\"verdict {overall}\">{}</p>\n",
        xml(&p.path),
        xml(&p.path),
        xml(&p.headline)
    );
    let _ = writeln!(
        o,
        "<p class=\"counts\">{}; loaded in {:.1} ms.</p>",
        xml(&crate::counts_text(&krait_history::summarize(h))),
        p.load_ms
    );
    let _ = writeln!(
        o,
        "<h2>Levels</h2>\n<table id=\"ladder\"><thead><tr><th>level</th><th>verdict</th><th>ms</th><th>why</th></tr></thead><tbody>"
    );
    for r in &p.rungs {
        let _ = writeln!(
            o,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{:.1}</td><td>{}</td></tr>",
            verdict_class(r.verdict),
            xml(r.level),
            xml(r.verdict),
            r.ms,
            xml(&r.note)
        );
    }
    let _ = writeln!(o, "</tbody></table>");
    if !anomalies.is_empty() {
        let _ = writeln!(
            o,
            "<h2>Anomalies</h2>\n<p class=\"hint\">Click a transaction (or focus it and press Enter) to see its operations, its session neighbours and its timestamps.</p>"
        );
    }
    for (i, a) in anomalies.iter().enumerate() {
        let c = a.certificate;
        let _ = writeln!(
            o,
            "<section class=\"anomaly\" id=\"anomaly-{}\"><h3>{}. {}</h3>\n<p class=\"breaks\">breaks: {}</p>\n<p class=\"summary\">{}</p>\n<div class=\"drawing\">{}</div>",
            i + 1,
            i + 1,
            xml(c.anomaly.name()),
            xml(&a.levels.join(", ")),
            xml(&c.summary),
            certificate_svg(c, &format!("a{}", i + 1))
        );
        if !c.cycle.is_empty() {
            let _ = writeln!(o, "<ol class=\"cycle\">");
            for e in &c.cycle {
                let key = e
                    .key
                    .as_deref()
                    .map(|k| format!(" on {k}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    o,
                    "<li><span class=\"kind {}\">{}</span> <button class=\"ref\" data-txn=\"{}\">{}</button> → <button class=\"ref\" data-txn=\"{}\">{}</button>{}: {}</li>",
                    e.kind.short(),
                    e.kind.short(),
                    xml(&e.from),
                    xml(&e.from),
                    xml(&e.to),
                    xml(&e.to),
                    xml(&key),
                    xml(&e.explanation)
                );
            }
            let _ = writeln!(o, "</ol>");
        }
        let _ = writeln!(
            o,
            "<details><summary>the whole certificate as text</summary><pre>{}</pre></details></section>",
            xml(&crate::certificate_text(c))
        );
    }
    let more = h.num_sessions().saturating_sub(MAX_SESSIONS);
    let _ = writeln!(
        o,
        "<h2>Sessions</h2>\n<p class=\"hint\">Green: committed; red: aborted; grey: unknown outcome; yellow marks: transactions an anomaly names.{}</p>\n<div class=\"drawing\">{}</div>",
        if more > 0 {
            format!(" The first {MAX_SESSIONS} sessions are drawn; {more} more are not.")
        } else {
            String::new()
        },
        timeline_svg(h, &marked)
    );
    let _ = writeln!(
        o,
        "<p class=\"footer\">krait {} · JSON schema {} (verdict.json beside this page)</p>\n</main>\n<aside id=\"details\" aria-live=\"polite\"><p class=\"hint\">No transaction selected.</p></aside>",
        env!("CARGO_PKG_VERSION"),
        crate::SCHEMA_VERSION
    );
    let data = json!({ "txns": Value::Object(txns) });
    let _ = write!(
        o,
        "<script type=\"application/json\" id=\"krait-data\">{}</script>\n<script>{JS}</script>\n</body></html>\n",
        script_json(&data)
    );
    o
}
