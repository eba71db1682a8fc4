//! The sessions as a timeline: one row per session, each transaction placed by its timestamps
//! (or, without them, by its position in the session), committed ones green, aborted red,
//! unknown outcomes grey, and the transactions a certificate names marked and clickable. Rows
//! are drawn per pixel column, not per transaction, so a million transactions make a drawing
//! of the same size as a hundred.

use crate::xml_escape as xml;
use krait_history::{History, TxnId, TxnStatus, NO_TIME};
use std::fmt::Write;

/// Rows drawn before the rest are counted.
pub const MAX_SESSIONS: usize = 80;
const WIDTH: f64 = 900.0;
const ROW: f64 = 18.0;
const LEFT: f64 = 140.0;

/// A column's colour: the worst outcome among the transactions that fall in it.
fn rank(s: TxnStatus) -> u8 {
    match s {
        TxnStatus::Committed => 1,
        TxnStatus::Unknown => 2,
        TxnStatus::Aborted => 3,
    }
}

fn color(rank: u8) -> &'static str {
    match rank {
        1 => "#81c784",
        2 => "#9e9e9e",
        _ => "#e53935",
    }
}

/// Where transaction `t` lies on the x axis, as a fraction pair (from, to) of the width.
struct Axis {
    timed: bool,
    t0: u64,
    span: f64,
    longest: f64,
}

impl Axis {
    fn new(h: &History) -> Axis {
        let timed = h.has_timestamps();
        let (mut t0, mut t1) = (u64::MAX, 0u64);
        if timed {
            for t in 0..h.num_txns() {
                let (s, c) = (h.txn_start[t], h.txn_commit[t]);
                if s != NO_TIME {
                    t0 = t0.min(s);
                    t1 = t1.max(s);
                }
                if c != NO_TIME {
                    t1 = t1.max(c);
                }
            }
        }
        let longest = (0..h.num_sessions())
            .map(|s| h.session_range(s).len())
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        Axis {
            timed: timed && t0 < u64::MAX,
            t0,
            span: (t1.saturating_sub(t0)).max(1) as f64,
            longest,
        }
    }

    fn place(&self, h: &History, t: TxnId, first: TxnId) -> (f64, f64) {
        let i = t as usize;
        if self.timed && h.txn_start[i] != NO_TIME {
            let s = (h.txn_start[i] - self.t0) as f64 / self.span;
            let c = match h.txn_commit[i] {
                NO_TIME => s,
                c => (c.saturating_sub(self.t0)) as f64 / self.span,
            };
            (s, c.max(s))
        } else {
            let k = (t - first) as f64;
            (k / self.longest, (k + 1.0) / self.longest)
        }
    }
}

/// The timeline as SVG; `marked` are the transactions to mark (the certificates'), by id.
pub fn timeline_svg(h: &History, marked: &[TxnId]) -> String {
    let axis = Axis::new(h);
    let shown = h.num_sessions().min(MAX_SESSIONS);
    let height = shown as f64 * ROW + 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" viewBox=\"0 0 {:.0} {height:.0}\" width=\"{:.0}\" height=\"{height:.0}\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">",
        LEFT + WIDTH + 20.0,
        LEFT + WIDTH + 20.0
    );
    let cols = WIDTH as usize;
    for s in 0..shown {
        let y = 10.0 + s as f64 * ROW;
        let _ = writeln!(
            out,
            "<text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            y + 12.0,
            xml(&crate::svg::clip(&h.session_names[s], 18))
        );
        let range = h.session_range(s);
        let mut col = vec![0u8; cols];
        for t in range.clone() {
            let (a, b) = axis.place(h, t, range.start);
            let (ca, cb) = (
                ((a * WIDTH) as usize).min(cols - 1),
                ((b * WIDTH) as usize).min(cols - 1),
            );
            let r = rank(h.txn_status[t as usize]);
            for c in &mut col[ca..=cb.max(ca)] {
                *c = (*c).max(r);
            }
        }
        // Runs of one colour become one rectangle.
        let mut c = 0;
        while c < cols {
            let r = col[c];
            let mut e = c + 1;
            while e < cols && col[e] == r {
                e += 1;
            }
            if r > 0 {
                let _ = writeln!(
                    out,
                    "<rect x=\"{:.0}\" y=\"{:.1}\" width=\"{}\" height=\"{:.0}\" fill=\"{}\"/>",
                    LEFT + c as f64,
                    y + 2.0,
                    e - c,
                    ROW - 5.0,
                    color(r)
                );
            }
            c = e;
        }
    }
    for &t in marked {
        let s = h.session_of(t);
        if s >= shown {
            continue;
        }
        let (a, b) = axis.place(h, t, h.session_range(s).start);
        let (x, y) = (LEFT + (a + b) / 2.0 * WIDTH, 10.0 + s as f64 * ROW + 8.5);
        let name = h.display_txn(t);
        let _ = writeln!(
            out,
            "<g class=\"txn mark\" data-txn=\"{}\" tabindex=\"0\" role=\"button\"><title>{}</title><circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5.5\" fill=\"#ffca28\" stroke=\"#263238\" stroke-width=\"1.2\"/></g>",
            xml(&name),
            xml(&name)
        );
    }
    let y = 10.0 + shown as f64 * ROW + 14.0;
    let axis_text = if axis.timed {
        format!(
            "time → ({:.3} ms from the first start to the last commit)",
            axis.span / 1e6
        )
    } else {
        "position in the session → (no timestamps)".to_string()
    };
    let _ = writeln!(
        out,
        "<text x=\"{LEFT:.0}\" y=\"{y:.1}\">{}</text>",
        xml(&axis_text)
    );
    out.push_str("</svg>\n");
    out
}
