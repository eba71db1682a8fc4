//! krait-report: renders a checker [`Report`] for people and programs.
//!
//! Input: a `krait_checker::Report` (verdict, certificate, stats, timings). Output: plain text
//! (the default), JSON, a Graphviz DOT drawing of a certificate's cycle, an SVG drawing made
//! without Graphviz, and a self-contained HTML report (`krait check --out DIR`).

#![warn(missing_docs)]

mod html;
mod svg;
mod timeline;

pub use html::{anomalies, report_html, Anomaly, Page, Rung};
pub use svg::certificate_svg;
pub use timeline::timeline_svg;

use krait_checker::{CertEdge, Certificate, Report, Verdict};
use std::fmt::Write;

/// " on KEY" for an edge about a key, else nothing.
fn on_key(e: &CertEdge) -> String {
    e.key
        .as_deref()
        .map(|k| format!(" on {k}"))
        .unwrap_or_default()
}

fn edge_line(out: &mut String, i: usize, e: &CertEdge) {
    let key = on_key(e);
    let _ = writeln!(
        out,
        "  {:>2}. {} --{}{}--> {}",
        i + 1,
        e.from,
        e.kind.short(),
        key,
        e.to
    );
    let _ = writeln!(out, "      {}", e.explanation);
    if let Some(f) = &e.forced_because {
        let _ = writeln!(out, "      (deduced: {f})");
    }
}

/// The certificate in words.
pub fn certificate_text(c: &Certificate) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "anomaly: {}", c.anomaly.name());
    let _ = writeln!(out, "{}", c.summary);
    if !c.cycle.is_empty() {
        let _ = writeln!(out, "\ncycle ({} edges):", c.cycle.len());
        for (i, e) in c.cycle.iter().enumerate() {
            edge_line(&mut out, i, e);
        }
    }
    if !c.constraints.is_empty() {
        let _ = writeln!(
            out,
            "\nconstraints that admit no acyclic choice ({}):",
            c.constraints.len()
        );
        for (i, con) in c.constraints.iter().enumerate() {
            let _ = writeln!(out, "  constraint {} on key {}:", i + 1, con.key);
            for (j, opt) in con.options.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "    option {}: {}",
                    (b'a' + j as u8) as char,
                    opt.choice
                );
                for e in &opt.edges {
                    let _ = writeln!(
                        out,
                        "      needs {} --{}--> {}: {}",
                        e.from,
                        e.kind.short(),
                        e.to,
                        e.explanation
                    );
                }
                if !opt.closes_cycle.is_empty() {
                    let names: Vec<&str> =
                        opt.closes_cycle.iter().map(|e| e.from.as_str()).collect();
                    let _ = writeln!(
                        out,
                        "      impossible on its own: closes {} -> {}",
                        names.join(" -> "),
                        names[0]
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "      possible on its own; excluded together with the other constraints"
                    );
                }
            }
        }
    }
    if !c.cases.is_empty() {
        let _ = writeln!(out, "\nevery combination closes a cycle:");
        for (i, case) in c.cases.iter().enumerate() {
            let _ = writeln!(out, "  case {}: {}", i + 1, case.choices.join("; "));
            for (j, e) in case.cycle.iter().enumerate() {
                let key = on_key(e);
                let _ = writeln!(
                    out,
                    "    {}. {} --{}{}--> {}: {}",
                    j + 1,
                    e.from,
                    e.kind.short(),
                    key,
                    e.to,
                    e.explanation
                );
            }
        }
    }
    if !c.txns.is_empty() {
        let _ = writeln!(out, "\ntransactions:");
        let keys = certificate_keys(c);
        for t in &c.txns {
            let _ = writeln!(
                out,
                "  {} (session {}, {}): {}",
                t.name,
                t.session,
                t.status,
                folded_ops(&t.ops, &keys)
            );
        }
    }
    out
}

/// Operations a transaction shows in words before it is folded.
const OPS_UNFOLDED: usize = 8;

/// Every key the certificate's edges are about.
fn certificate_keys(c: &Certificate) -> Vec<&str> {
    let mut keys: Vec<&str> = c
        .cycle
        .iter()
        .chain(
            c.constraints
                .iter()
                .flat_map(|k| k.options.iter().flat_map(|o| &o.edges)),
        )
        .chain(c.cases.iter().flat_map(|k| &k.cycle))
        .filter_map(|e| e.key.as_deref())
        .collect();
    keys.extend(c.constraints.iter().map(|k| k.key.as_str()));
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// A transaction's operations, a long one folded to those on the certificate's keys (the ones
/// that matter) with the rest counted: a 40-operation transaction stays one readable line.
fn folded_ops(ops: &[String], keys: &[&str]) -> String {
    if ops.len() <= OPS_UNFOLDED {
        return ops.join(", ");
    }
    let on_key = |o: &String| keys.iter().any(|k| o.contains(&format!("({k})")));
    let shown: Vec<&str> = ops
        .iter()
        .filter(|o| on_key(o))
        .take(OPS_UNFOLDED)
        .map(String::as_str)
        .collect();
    let shown = if shown.is_empty() {
        ops.iter().take(OPS_UNFOLDED).map(String::as_str).collect()
    } else {
        shown
    };
    format!(
        "{} … and {} more ops (--json lists them all)",
        shown.join(", "),
        ops.len() - shown.len()
    )
}

/// A history's counts in words: `N sessions, M transactions (…), … reads (…), … writes, …
/// keys, … fences`, as `krait stats` and `check` print them and the HTML report shows them.
pub fn counts_text(s: &krait_history::Summary) -> String {
    format!(
        "{} sessions, {} transactions ({} committed, {} aborted, {} unknown), {} reads ({} of the initial state), {} writes{}, {} keys, {} fences{}",
        s.sessions,
        s.txns,
        s.committed,
        s.aborted,
        s.unknown,
        s.reads,
        s.initial_reads,
        s.writes,
        match s.repeated_writes {
            0 => String::new(),
            n => format!(" ({n} of a value written before)"),
        },
        s.keys,
        s.fences,
        if s.timestamps { ", with timestamps" } else { "" }
    )
}

/// A level's name (as the report gives it) as an adjective: "strictly serializable".
pub fn level_words(level: &str) -> &'static str {
    match level {
        "strict-serializable" => "strictly serializable",
        "snapshot-isolation" => "snapshot isolated",
        "strict-snapshot-isolation" => "strictly snapshot isolated",
        "read-committed" => "read committed",
        "read-atomic" => "read atomic",
        "causal" => "causally consistent",
        _ => "serializable",
    }
}

/// The order an ACCEPT found, in words: a serial order, or under snapshot isolation the commit
/// order with each transaction's snapshot (`T5@2`: its snapshot holds the first 2 before it).
pub fn order_text(r: &Report) -> Option<String> {
    let order = r.order.as_ref()?;
    if r.snapshots.len() == order.len() {
        let shown: Vec<String> = order
            .iter()
            .zip(&r.snapshots)
            .map(|(t, s)| format!("T{t}@{s}"))
            .collect();
        Some(format!(
            "commit order (T@n: its snapshot holds the first n transactions): {}",
            shown.join(" ")
        ))
    } else {
        let shown: Vec<String> = order.iter().map(|t| format!("T{t}")).collect();
        Some(format!("serial order: {}", shown.join(" ")))
    }
}

/// The verdict in one line: "REJECT: the history is not serializable".
pub fn headline(r: &Report) -> String {
    match &r.verdict {
        Verdict::Accept => format!("ACCEPT: the history is {}", level_words(r.level)),
        Verdict::Reject(_) => format!("REJECT: the history is not {}", level_words(r.level)),
        Verdict::Unknown { reason } => format!("UNDECIDED: {reason}; neither verdict is claimed"),
    }
}

/// The whole report as text: verdict line, certificate, statistics.
pub fn report_text(r: &Report, timings: bool) -> String {
    let mut out = String::new();
    match &r.verdict {
        Verdict::Accept => {
            let _ = writeln!(out, "{}", headline(r));
        }
        Verdict::Reject(c) => {
            let _ = writeln!(out, "{}", headline(r));
            out.push_str(&certificate_text(c));
            if !r.also.is_empty() {
                let _ = writeln!(
                    out,
                    "\nalso found: {} more anomaly {} (one certificate each; --max-anomalies 1 for the first alone)",
                    r.also.len(),
                    if r.also.len() == 1 { "class" } else { "classes" }
                );
                for (i, c) in r.also.iter().enumerate() {
                    let _ = writeln!(out, "\n[{}] {}", i + 2, certificate_text(c));
                }
            }
        }
        Verdict::Unknown { reason } => {
            // More time helps only where time is what ran out.
            let hint = if reason.contains("time") || reason.contains("Time") {
                " (raise --timeout, or 0 for no limit)"
            } else {
                ""
            };
            let _ = writeln!(out, "UNDECIDED: {reason}; neither verdict is claimed{hint}");
        }
    }
    if !r.session_order {
        let _ = writeln!(
            out,
            "(no order assumed between a session's transactions: --no-session-order)"
        );
    }
    let s = &r.stats;
    // A REJECT found by the per-transaction checks never built the graph: no counts to show.
    if s.txns_checked > 0 {
        let _ = writeln!(
            out,
            "\nchecked {} transactions: {} constraints ({} formed), {} after pruning ({} rounds), {} solver components, {} conflicts",
            s.txns_checked, s.constraints, s.constraints_formed, s.constraints_after_prune, s.prune_rounds, s.components, s.conflicts
        );
    }
    if s.ambiguous_reads > 0 {
        let _ = writeln!(
            out,
            "{} reads of a value several writes wrote: {} settled by pruning, {} left to the solver ({} conditional edges)",
            s.ambiguous_reads,
            s.ambiguous_reads - s.ambiguous_after_prune,
            s.ambiguous_after_prune,
            s.conditional_edges
        );
    }
    if s.unknown_outcome_excluded > 0 {
        let _ = writeln!(
            out,
            "{} transactions with unknown outcome were never read from and were left out",
            s.unknown_outcome_excluded
        );
    }
    if timings {
        let t = &r.timings;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let _ = writeln!(
            out,
            "timings (ms): resolve {:.1}, graph {:.1}, prune {:.1}, solve {:.1}, certificate {:.1}",
            ms(t.resolve),
            ms(t.graph),
            ms(t.prune),
            ms(t.solve),
            ms(t.certificate)
        );
    }
    out
}

/// The version of krait's JSON output (docs/json.md): raised when a field changes meaning or
/// goes away, not when one is added.
pub const SCHEMA_VERSION: u64 = 1;

/// The whole report as JSON (`krait check --json`): the report's own serialization, so field
/// names follow `krait_checker::Report`, with the schema version.
pub fn report_json(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).expect("report serializes");
    v.as_object_mut()
        .expect("a report is an object")
        .insert("schema_version".into(), SCHEMA_VERSION.into());
    v
}

/// The JSON object for a run that ended in an error (exit 2) rather than a verdict: the
/// message, and for bad input the file and the place in it.
pub fn error_json(e: &anyhow::Error) -> serde_json::Value {
    let mut v = serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "verdict": "ERROR",
        "error": { "message": format!("{e:#}") },
    });
    if let Some(ie) = e.downcast_ref::<krait_history::InputError>() {
        let err = &mut v["error"];
        err["message"] = ie.message.clone().into();
        err["path"] = ie.path.display().to_string().into();
        match ie.location {
            krait_history::Location::Line(l) => err["line"] = l.into(),
            krait_history::Location::Offset(o) => err["offset"] = o.into(),
            krait_history::Location::Nowhere => {}
        }
    }
    v
}

/// Text fit for XML content and attribute values (the HTML report, its drawings, JUnit):
/// markup characters as entities, and control characters other than tab, newline and return —
/// which XML 1.0 does not allow — written out.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// Text fit for a DOT string: quotes and backslashes escaped, control characters (a newline in
/// a session name) written out rather than breaking the file.
fn dot_escape(s: &str) -> String {
    let s: String = s
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A Graphviz drawing of the certificate: the cycle's transactions with their operations, and
/// each edge labelled with its kind and key.
pub fn certificate_dot(c: &Certificate) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph certificate {{");
    let _ = writeln!(
        out,
        "  label=\"{}\"; labelloc=t; fontname=\"Helvetica\";",
        dot_escape(c.anomaly.name())
    );
    let _ = writeln!(
        out,
        "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];"
    );
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=10];");
    for t in &c.txns {
        let label = format!(
            "{} ({})\\n{}",
            dot_escape(&t.name),
            dot_escape(&t.session),
            t.ops
                .iter()
                .map(|o| dot_escape(o))
                .collect::<Vec<_>>()
                .join("\\n")
        );
        let _ = writeln!(out, "  \"{}\" [label=\"{}\"];", dot_escape(&t.name), label);
    }
    let mut edges: Vec<&CertEdge> = c.cycle.iter().collect();
    for con in &c.constraints {
        for o in &con.options {
            edges.extend(o.edges.iter());
        }
    }
    for e in edges {
        let (color, style) = match e.kind {
            krait_checker::EdgeKind::Rw => ("red", "dashed"),
            krait_checker::EdgeKind::Ww => ("blue", "solid"),
            krait_checker::EdgeKind::Wr => ("darkgreen", "solid"),
            krait_checker::EdgeKind::Session => ("gray40", "dotted"),
            krait_checker::EdgeKind::RealTime => ("orange", "dotted"),
            krait_checker::EdgeKind::Carried => ("purple", "dashed"),
            krait_checker::EdgeKind::Within => ("gray70", "dotted"),
        };
        let key = e
            .key
            .as_deref()
            .map(|k| format!(" {k}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\" [label=\"{}{}\", color={color}, fontcolor={color}, style={style}];",
            dot_escape(&e.from),
            dot_escape(&e.to),
            e.kind.short(),
            dot_escape(&key)
        );
    }
    let _ = writeln!(out, "}}");
    out
}
