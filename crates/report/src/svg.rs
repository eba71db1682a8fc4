//! A certificate drawn as SVG without Graphviz: the cycle's transactions on a circle in cycle
//! order (so every cycle edge joins neighbours and no edge crosses the drawing), each edge a
//! curve bent away from its opposite-direction twin so labels never sit on each other. Every
//! transaction is a `<g class="txn" data-txn="NAME">`, which the HTML report makes clickable.

use crate::xml_escape as xml;
use krait_checker::{CertEdge, CertTxn, Certificate, EdgeKind};
use std::collections::HashMap;
use std::f64::consts::PI;
use std::fmt::Write;

/// At most `n` characters, an ellipsis marking the cut.
pub(crate) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Colour and dash pattern per edge kind, the same as the DOT drawing's.
pub(crate) fn edge_style(k: EdgeKind) -> (&'static str, &'static str) {
    match k {
        EdgeKind::Rw => ("#c62828", "6 4"),
        EdgeKind::Ww => ("#1565c0", ""),
        EdgeKind::Wr => ("#2e7d32", ""),
        EdgeKind::Session => ("#616161", "2 3"),
        EdgeKind::RealTime => ("#ef6c00", "2 3"),
        EdgeKind::Carried => ("#6a1b9a", "6 4"),
        EdgeKind::Within => ("#9e9e9e", "2 3"),
    }
}

const KINDS: [EdgeKind; 7] = [
    EdgeKind::Rw,
    EdgeKind::Ww,
    EdgeKind::Wr,
    EdgeKind::Session,
    EdgeKind::RealTime,
    EdgeKind::Carried,
    EdgeKind::Within,
];

/// Operations shown in a box before the rest are counted.
const OPS_SHOWN: usize = 4;
const LINE: f64 = 15.0;
const CHAR: f64 = 6.7;

struct Node {
    name: String,
    lines: Vec<String>,
    status: String,
    w: f64,
    h: f64,
    x: f64,
    y: f64,
}

/// The lines of a transaction's box: name, session and status, then the operations on the keys
/// its edges are about (the ones that matter), the rest counted.
fn node_lines(name: &str, t: Option<&CertTxn>, keys: &[&str]) -> Vec<String> {
    let Some(t) = t else {
        return vec![name.to_string()];
    };
    let mut lines = vec![
        format!("{} · {}", t.name, t.status),
        format!("session {}", t.session),
    ];
    let relevant: Vec<&String> = t
        .ops
        .iter()
        .filter(|o| keys.iter().any(|k| o.contains(&format!("({k})"))))
        .collect();
    let shown: Vec<&String> = if relevant.is_empty() {
        t.ops.iter().take(OPS_SHOWN).collect()
    } else {
        relevant.into_iter().take(OPS_SHOWN).collect()
    };
    for o in &shown {
        lines.push(clip(o, 46));
    }
    if t.ops.len() > shown.len() {
        lines.push(format!("… {} more ops", t.ops.len() - shown.len()));
    }
    lines
}

/// Every edge the certificate draws: the cycle, then each constraint option's edges.
fn edges_of(c: &Certificate) -> Vec<(&CertEdge, bool)> {
    let mut v: Vec<(&CertEdge, bool)> = c.cycle.iter().map(|e| (e, false)).collect();
    for con in &c.constraints {
        for o in &con.options {
            v.extend(o.edges.iter().map(|e| (e, true)));
        }
    }
    v
}

/// An edge's label: its kind and key.
fn label_of(e: &CertEdge) -> String {
    match &e.key {
        Some(k) => format!("{} {}", e.kind.short(), clip(k, 24)),
        None => e.kind.short().to_string(),
    }
}

/// Where the segment from the centre of box `n` towards `(tx, ty)` leaves the box.
fn boundary(n: &Node, tx: f64, ty: f64) -> (f64, f64) {
    let (dx, dy) = (tx - n.x, ty - n.y);
    let sx = if dx.abs() < 1e-9 {
        f64::INFINITY
    } else {
        (n.w / 2.0 + 3.0) / dx.abs()
    };
    let sy = if dy.abs() < 1e-9 {
        f64::INFINITY
    } else {
        (n.h / 2.0 + 3.0) / dy.abs()
    };
    let s = sx.min(sy).min(1.0);
    (n.x + dx * s, n.y + dy * s)
}

/// Places boxes on a circle in their order, first at the top, going clockwise (two side by
/// side), far enough apart that neighbours cannot touch.
fn circle(nodes: &mut [Node], label_w: f64) {
    let n = nodes.len();
    if n == 2 {
        let gap = (nodes[0].w + nodes[1].w) / 2.0 + label_w + 30.0;
        nodes[0].x = -gap / 2.0;
        nodes[1].x = gap / 2.0;
        return;
    }
    if n < 2 {
        return;
    }
    // Neighbours are a chord 2r·sin(π/n) apart; that chord must hold both half-widths and room
    // for an edge label (`label_w` wide) between them.
    let step = 2.0 * (PI / n as f64).sin();
    let r = (0..n)
        .map(|i| {
            let (a, b) = (&nodes[i], &nodes[(i + 1) % n]);
            ((a.w + b.w) / 2.0 + label_w).max((a.h + b.h) / 2.0 + 60.0) / step
        })
        .fold(110.0, f64::max);
    for (i, b) in nodes.iter_mut().enumerate() {
        let a = -PI / 2.0 + 2.0 * PI * i as f64 / n as f64;
        b.x = r * a.cos();
        b.y = r * a.sin();
    }
}

/// The certificate as a standalone SVG document; `id` keeps its marker ids apart from other
/// drawings on the same page.
pub fn certificate_svg(c: &Certificate, id: &str) -> String {
    let edges = edges_of(c);
    let txn_of: HashMap<&str, &CertTxn> = c.txns.iter().map(|t| (t.name.as_str(), t)).collect();
    // Cycle order first, so consecutive cycle transactions are neighbours on the circle.
    let mut order: Vec<&str> = Vec::new();
    let names = edges
        .iter()
        .flat_map(|(e, _)| [e.from.as_str(), e.to.as_str()])
        .chain(c.txns.iter().map(|t| t.name.as_str()));
    for n in names {
        if !order.contains(&n) {
            order.push(n);
        }
    }
    let mut nodes: Vec<Node> = order
        .iter()
        .map(|&name| {
            let keys: Vec<&str> = edges
                .iter()
                .filter(|(e, _)| e.from == name || e.to == name)
                .filter_map(|(e, _)| e.key.as_deref())
                .collect();
            let t = txn_of.get(name).copied();
            let lines = node_lines(name, t, &keys);
            let longest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(4);
            Node {
                name: name.to_string(),
                status: t.map(|t| t.status.clone()).unwrap_or_default(),
                w: (longest as f64 * CHAR + 18.0).clamp(90.0, 330.0),
                h: lines.len() as f64 * LINE + 10.0,
                lines,
                x: 0.0,
                y: 0.0,
            }
        })
        .collect();
    // The cycle on a circle; transactions the certificate names beside it (the reader whose
    // reads justify an edge, say) in a row below, so the cycle keeps its shape.
    let on_circle = if c.cycle.is_empty() {
        nodes.len()
    } else {
        let mut k = 0;
        while k < nodes.len() && c.cycle.iter().any(|e| e.from == nodes[k].name) {
            k += 1;
        }
        k.max(1)
    };
    let label_w = edges
        .iter()
        .map(|(e, _)| label_of(e).chars().count() as f64 * 6.3 + 20.0)
        .fold(60.0, f64::max);
    circle(&mut nodes[..on_circle], label_w);
    let bottom = nodes[..on_circle]
        .iter()
        .map(|b| b.y + b.h / 2.0)
        .fold(f64::MIN, f64::max);
    let row_w: f64 = nodes[on_circle..].iter().map(|b| b.w + 30.0).sum();
    let mut x = -row_w / 2.0;
    for b in &mut nodes[on_circle..] {
        b.x = x + b.w / 2.0;
        b.y = bottom + 70.0 + b.h / 2.0;
        x += b.w + 30.0;
    }
    let index: HashMap<&str, usize> = order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let has = |a: usize, b: usize| {
        edges
            .iter()
            .any(|(e, _)| index[e.from.as_str()] == a && index[e.to.as_str()] == b)
    };
    let mut body = String::new();
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    let (mut minx, mut miny, mut maxx, mut maxy) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for b in &nodes {
        minx = minx.min(b.x - b.w / 2.0);
        maxx = maxx.max(b.x + b.w / 2.0);
        miny = miny.min(b.y - b.h / 2.0);
        maxy = maxy.max(b.y + b.h / 2.0);
    }
    for (e, optional) in &edges {
        let (a, b) = (index[e.from.as_str()], index[e.to.as_str()]);
        let k = seen.entry((a, b)).or_insert(0);
        let nth = *k as f64;
        *k += 1;
        let (pa, pb) = (&nodes[a], &nodes[b]);
        let (lo, hi) = if a < b { (pa, pb) } else { (pb, pa) };
        let (dx, dy) = (hi.x - lo.x, hi.y - lo.y);
        let len = (dx * dx + dy * dy).sqrt().max(1e-9);
        let (mx, my) = ((pa.x + pb.x) / 2.0, (pa.y + pb.y) / 2.0);
        // The normal of the (lo, hi) chord pointing away from the circle's centre.
        let (mut nx, mut ny) = (-dy / len, dx / len);
        if nx * mx + ny * my < 0.0 || (mx.abs() < 1e-6 && my.abs() < 1e-6 && ny > 0.0) {
            (nx, ny) = (-nx, -ny);
        }
        // Outward, unless the pair has edges both ways: then the backward one bends inward.
        let side = if a > b && has(b, a) { -1.0 } else { 1.0 };
        let bend = side * (28.0 + 26.0 * nth);
        let (cx, cy) = (mx + nx * bend, my + ny * bend);
        let (x0, y0) = boundary(pa, cx, cy);
        let (x1, y1) = boundary(pb, cx, cy);
        let (color, dash) = edge_style(e.kind);
        let label = label_of(e);
        let (lx, ly) = (
            0.25 * x0 + 0.5 * cx + 0.25 * x1 + nx * side * 10.0,
            0.25 * y0 + 0.5 * cy + 0.25 * y1 + ny * side * 10.0 + 4.0,
        );
        minx = minx.min(lx - 60.0);
        maxx = maxx.max(lx + 60.0);
        miny = miny.min(ly - 14.0);
        maxy = maxy.max(ly + 6.0);
        let dash_attr = if dash.is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{dash}\"")
        };
        let _ = writeln!(
            body,
            "<g class=\"edge{}\" data-kind=\"{}\"><title>{}</title><path d=\"M{x0:.1},{y0:.1} Q{cx:.1},{cy:.1} {x1:.1},{y1:.1}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.6\"{dash_attr}{} marker-end=\"url(#{id}-{})\"/><text x=\"{lx:.1}\" y=\"{ly:.1}\" text-anchor=\"middle\" fill=\"{color}\" stroke=\"#fff\" stroke-width=\"4\" paint-order=\"stroke\" font-size=\"11\">{}</text></g>",
            if *optional { " option" } else { "" },
            e.kind.short(),
            xml(&e.explanation),
            if *optional { " opacity=\"0.55\"" } else { "" },
            e.kind.short(),
            xml(&label),
        );
    }
    for b in &nodes {
        let (stroke, dash) = match b.status.as_str() {
            "aborted" => ("#c62828", " stroke-dasharray=\"5 3\""),
            "unknown" => ("#757575", " stroke-dasharray=\"2 2\""),
            "" => ("#9e9e9e", ""),
            _ => ("#263238", ""),
        };
        let (x, y) = (b.x - b.w / 2.0, b.y - b.h / 2.0);
        let _ = write!(
            body,
            "<g class=\"txn\" data-txn=\"{}\" tabindex=\"0\" role=\"button\"><title>{}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"7\" fill=\"#fffdf7\" stroke=\"{stroke}\" stroke-width=\"1.4\"{dash}/>",
            xml(&b.name),
            xml(&format!("{}: click for its operations and session", b.name)),
            b.w,
            b.h
        );
        for (i, l) in b.lines.iter().enumerate() {
            let weight = if i == 0 { " font-weight=\"bold\"" } else { "" };
            let _ = write!(
                body,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11.5\"{weight}>{}</text>",
                x + 8.0,
                y + 16.0 + i as f64 * LINE,
                xml(l)
            );
        }
        let _ = writeln!(body, "</g>");
    }
    let title = c.anomaly.name();
    let (pad, top) = (24.0, 34.0);
    let (w, h) = (maxx - minx + 2.0 * pad, maxy - miny + pad + top);
    let w = w.max(title.chars().count() as f64 * 7.5 + 2.0 * pad);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"certificate\" viewBox=\"{:.1} {:.1} {w:.1} {h:.1}\" width=\"{w:.0}\" height=\"{h:.0}\" font-family=\"Helvetica, Arial, sans-serif\">",
        minx - pad,
        miny - top
    );
    let _ = writeln!(out, "<defs>");
    for k in KINDS {
        let (color, _) = edge_style(k);
        let _ = writeln!(
            out,
            "<marker id=\"{id}-{}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{color}\"/></marker>",
            k.short()
        );
    }
    let _ = writeln!(out, "</defs>");
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"14\" font-weight=\"bold\">{}</text>",
        minx - pad + 8.0,
        miny - top + 20.0,
        xml(title)
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}
