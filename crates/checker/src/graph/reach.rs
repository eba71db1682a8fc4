//! Reachability in the known graph, as pruning asks it: an index over the session chains when it
//! fits in memory, else a search bounded by topological position.

use super::{Built, Label, Node, NodeRows, Rows, Target};

/// Reachability over a DAG covered by chains (sessions): for every node, the earliest position
/// it reaches in every chain. Then x ⇝ y (y on a chain) is one comparison. Memory is nodes ×
/// chains at most; nodes on no chain (gates) are answered through their predecessors.
///
/// A large index splits the chains into groups of columns, each built on a thread of its own:
/// a node's row is the minimum of its successors' rows, column by column, so columns do not
/// depend on one another.
pub struct ChainReach {
    /// chain and position of each node; chain u32::MAX for nodes on no chain.
    chain_of: Vec<(u32, u32)>,
    /// Per chain, its group of columns and its column there.
    col: Vec<(u32, u32)>,
    groups: Groups,
}

/// The groups of columns, positions held in two bytes where every chain is shorter than
/// 65,535 nodes: half the index to write and to read (read-heavy 80k transactions, 327k nodes
/// × 36 sessions, 2,222 transactions a session).
enum Groups {
    Narrow(Vec<Columns<u16>>),
    Wide(Vec<Columns<u32>>),
}

/// A position in the index: `NONE` where a node reaches nothing of a chain.
trait Pos: Copy + Ord + Send + Sync {
    const NONE: Self;
    /// `p`, below `NONE`.
    fn of(p: u32) -> Self;
    fn get(self) -> u32;
}

impl Pos for u16 {
    const NONE: u16 = u16::MAX;
    #[inline]
    fn of(p: u32) -> u16 {
        debug_assert!(p < u32::from(u16::MAX));
        p as u16
    }
    #[inline]
    fn get(self) -> u32 {
        if self == u16::MAX {
            u32::MAX
        } else {
            u32::from(self)
        }
    }
}

impl Pos for u32 {
    const NONE: u32 = u32::MAX;
    #[inline]
    fn of(p: u32) -> u32 {
        p
    }
    #[inline]
    fn get(self) -> u32 {
        self
    }
}

/// The index's columns for chains `lo..lo + width`.
struct Columns<P> {
    width: usize,
    /// Each node's row of `minpos`: row 0, shared, for the nodes that reach none of these
    /// chains (gates nothing follows yet, most nodes of a read-heavy graph before pruning
    /// decides anything: a row each was three quarters of the index, written and never read).
    row_of: Vec<u32>,
    minpos: Vec<P>,
}

impl<P: Pos> Columns<P> {
    fn build<T: Target>(
        lo: u32,
        width: usize,
        chain_of: &[(u32, u32)],
        csr: &Rows<T>,
        order: &[Node],
    ) -> Columns<P> {
        let (n, c) = (chain_of.len(), width);
        // Room for every row; what no row takes is never touched, so costs nothing.
        let mut minpos = Vec::with_capacity((n + 1) * c);
        minpos.resize(c, P::NONE);
        let mut row_of = vec![0u32; n];
        let mut rows = 1;
        let mut row = vec![P::NONE; c];
        for &x in order.iter().rev() {
            let xi = x as usize;
            row.iter_mut().for_each(|r| *r = P::NONE);
            // Successors come later in the order, so their rows are final.
            for &t in csr.succ(x) {
                let yr = row_of[t.node() as usize] as usize;
                // Merging the row of a node that reaches nothing is a no-op.
                if yr == 0 {
                    continue;
                }
                let yrow = &minpos[yr * c..yr * c + c];
                for (r, &m) in row.iter_mut().zip(yrow) {
                    *r = (*r).min(m);
                }
            }
            let (ch, pos) = chain_of[xi];
            let mine = ch.wrapping_sub(lo) as usize;
            if mine < c {
                row[mine] = row[mine].min(P::of(pos));
            } else if row.iter().all(|&r| r == P::NONE) {
                continue;
            }
            row_of[xi] = rows;
            rows += 1;
            minpos.extend_from_slice(&row);
        }
        Columns {
            width,
            row_of,
            minpos,
        }
    }

    /// The groups of columns cut at `bounds`, each built on a thread of its own.
    fn groups<T: Target>(
        bounds: &[usize],
        chain_of: &[(u32, u32)],
        csr: &Rows<T>,
        order: &[Node],
    ) -> Vec<Columns<P>> {
        use rayon::prelude::*;
        bounds
            .par_windows(2)
            .map(|w| Columns::build(w[0] as u32, w[1] - w[0], chain_of, csr, order))
            .collect()
    }

    #[inline]
    fn first_reached(&self, x: Node, i: u32) -> u32 {
        self.minpos[self.row_of[x as usize] as usize * self.width + i as usize].get()
    }
}

/// From this many cells (nodes × chains) on, the index is built in groups of columns at once:
/// read-heavy 80k transactions, 327k nodes × 36 sessions, builds in 40 ms instead of 50–66;
/// 8k, 43k nodes × 36, in 11–13 ms instead of 15–16 (ten runs each, alternating).
const GROUPS_FROM: usize = 1 << 20;

impl ChainReach {
    /// Memory the index may need (the bound [`ChainReach::build`] is held to).
    pub fn memory_needed(n: usize, nchains: usize) -> usize {
        n * nchains * 4
    }

    pub fn build<T: Target>(
        n: usize,
        nchains: usize,
        chain_of: Vec<(u32, u32)>,
        csr: &Rows<T>,
        order: &[Node],
    ) -> ChainReach {
        // Each group walks every edge and merges rows narrower than one group's would be,
        // which costs more in all (a 24-session history of 100k transactions: 16 % more
        // instructions for the whole check, for no time saved on two cores). Only a large
        // index is split, into groups of 16 columns at least.
        let groups = if n * nchains >= GROUPS_FROM {
            rayon::current_num_threads().min(nchains / 16)
        } else {
            1
        };
        // Positions are below the chains' lengths; u16::MAX is "none".
        let narrow = chain_of
            .iter()
            .all(|&(ch, p)| ch == u32::MAX || p < u32::from(u16::MAX));
        ChainReach::build_in(n, nchains, chain_of, csr, order, groups.max(1), narrow)
    }

    /// [`ChainReach::build`] in `groups` groups of columns, positions in two bytes where
    /// `narrow` (every position below `u16::MAX`).
    fn build_in<T: Target>(
        n: usize,
        nchains: usize,
        chain_of: Vec<(u32, u32)>,
        csr: &Rows<T>,
        order: &[Node],
        groups: usize,
        narrow: bool,
    ) -> ChainReach {
        debug_assert_eq!(chain_of.len(), n);
        let bounds: Vec<usize> = (0..=groups).map(|g| g * nchains / groups).collect();
        let widths: Vec<usize> = bounds.windows(2).map(|w| w[1] - w[0]).collect();
        let groups = if narrow {
            Groups::Narrow(Columns::groups(&bounds, &chain_of, csr, order))
        } else {
            Groups::Wide(Columns::groups(&bounds, &chain_of, csr, order))
        };
        let mut col = Vec::with_capacity(nchains);
        for (g, &width) in widths.iter().enumerate() {
            col.extend((0..width as u32).map(|i| (g as u32, i)));
        }
        ChainReach {
            chain_of,
            col,
            groups,
        }
    }

    /// The chain and position of `x` (chain `u32::MAX` for a node on none).
    #[inline]
    pub fn chain_pos(&self, x: Node) -> (u32, u32) {
        self.chain_of[x as usize]
    }
    /// The earliest position on chain `ch` that `x` reaches (`u32::MAX`: none).
    #[inline]
    pub fn first_reached(&self, x: Node, ch: u32) -> u32 {
        let (g, i) = self.col[ch as usize];
        match &self.groups {
            Groups::Narrow(gs) => gs[g as usize].first_reached(x, i),
            Groups::Wide(gs) => gs[g as usize].first_reached(x, i),
        }
    }
    /// x ⇝ y for y on a chain.
    #[inline]
    pub fn reaches_chained(&self, x: Node, y: Node) -> bool {
        let (ch, pos) = self.chain_of[y as usize];
        debug_assert_ne!(ch, u32::MAX);
        self.first_reached(x, ch) <= pos
    }
}

/// Predecessors of gate nodes, which reachability queries go through.
pub(crate) fn gate_preds(b: &Built) -> NodeRows {
    let n = b.num_nodes;
    let fg = b.first_gate;
    if let Some(rows) = preds_in_order(n, fg, &b.edges) {
        return rows;
    }
    // Most of a read-heavy graph's edges go into gates: no copy of them first.
    NodeRows::build_from(n, || {
        b.edges
            .iter()
            .filter(move |&&(_, v)| v >= fg)
            .map(|&(u, v)| (v, u))
    })
}

/// The rows [`gate_preds`] builds, where the edges into gates come gate after gate (`None`
/// where they do not). Chaining adds each gate's edges together, right after making it, so
/// before pruning adds any they do: then each row is a run of the edges' sources, in edge
/// order, gathered in one pass instead of counted in one and scattered in another (at 80k
/// read-heavy transactions, 5 million of the 6 million edges, 26 ms on one thread).
fn preds_in_order(n: usize, fg: Node, edges: &[(Node, Node)]) -> Option<NodeRows> {
    let mut start = vec![0u32; n + 1];
    // Room for every edge, touched only as far as the gates' take.
    let mut targets: Vec<Node> = Vec::with_capacity(edges.len());
    let mut last = fg;
    for &(u, v) in edges {
        if v < fg {
            continue;
        }
        if v < last {
            return None;
        }
        last = v;
        start[v as usize + 1] += 1;
        targets.push(u);
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    Some(Rows { start, targets })
}

pub(crate) enum Reach {
    Chains(ChainReach),
    /// Fallback without an index: search bounded by topological position.
    Search {
        pos: Vec<u32>,
    },
    /// A few questions: searches bounded by topological position and by a budget of edges
    /// visited in all, where the index would cost nodes × chains to build (a later pruning
    /// round that tests a handful of constraints on a large graph).
    Few(Budgeted),
}

/// Searches with a shared budget. Past it, [`Budgeted::exhausted`] is set and every answer
/// from then on is "no": the caller throws the answers away and builds the index.
pub(crate) struct Budgeted {
    pos: Vec<u32>,
    state: std::sync::Mutex<SearchState>,
}

struct SearchState {
    /// Per node, the search that last visited it (no set to clear between searches).
    seen: Vec<u32>,
    search: u32,
    stack: Vec<Node>,
    edges_left: usize,
    exhausted: bool,
}

impl Budgeted {
    /// `pos`: topological positions; at most `budget` edges are visited over all searches.
    pub(crate) fn new(pos: Vec<u32>, budget: usize) -> Budgeted {
        let n = pos.len();
        Budgeted {
            pos,
            state: std::sync::Mutex::new(SearchState {
                seen: vec![0; n],
                search: 0,
                stack: Vec::new(),
                edges_left: budget,
                exhausted: false,
            }),
        }
    }

    /// Whether the budget ran out (so some answer may be wrong).
    pub(crate) fn exhausted(&self) -> bool {
        self.state.lock().map_or(true, |s| s.exhausted)
    }

    fn reaches(&self, csr: &NodeRows, more: Option<&NodeRows>, x: Node, y: Node) -> bool {
        let py = self.pos[y as usize];
        if self.pos[x as usize] > py {
            return false;
        }
        let Ok(mut st) = self.state.lock() else {
            return false;
        };
        let st = &mut *st;
        if st.exhausted {
            return false;
        }
        st.search += 1;
        let mark = st.search;
        st.stack.clear();
        st.stack.push(x);
        st.seen[x as usize] = mark;
        while let Some(u) = st.stack.pop() {
            let (succ, extra) = (csr.succ(u), more.map_or(&[][..], |m| m.succ(u)));
            let n = succ.len() + extra.len();
            if n > st.edges_left {
                st.exhausted = true;
                return false;
            }
            st.edges_left -= n;
            for &v in succ.iter().chain(extra) {
                if v == y {
                    return true;
                }
                if self.pos[v as usize] < py && st.seen[v as usize] != mark {
                    st.seen[v as usize] = mark;
                    st.stack.push(v);
                }
            }
        }
        false
    }
}

pub(crate) struct ReachCtx<'a> {
    pub reach: Reach,
    pub csr: &'a NodeRows,
    /// Edges added since `csr` was built, which only [`Reach::Few`] searches look at (every
    /// other kind is given the whole graph in `csr`).
    pub more: Option<&'a NodeRows>,
    pub preds: &'a NodeRows,
    pub first_gate: Node,
}

impl ReachCtx<'_> {
    /// x ⇝ y in the known graph.
    pub fn reaches(&self, x: Node, y: Node) -> bool {
        if x == y {
            return true;
        }
        match &self.reach {
            Reach::Chains(cr) => {
                if y >= self.first_gate {
                    self.preds
                        .succ(y)
                        .iter()
                        .any(|&p| p == x || cr.reaches_chained(x, p))
                } else {
                    cr.reaches_chained(x, y)
                }
            }
            Reach::Search { pos } => {
                let py = pos[y as usize];
                if pos[x as usize] > py {
                    return false;
                }
                let mut seen = std::collections::HashSet::new();
                let mut stack = vec![x];
                seen.insert(x);
                while let Some(u) = stack.pop() {
                    for &v in self.csr.succ(u) {
                        if v == y {
                            return true;
                        }
                        if pos[v as usize] < py && seen.insert(v) {
                            stack.push(v);
                        }
                    }
                }
                false
            }
            Reach::Few(s) => s.reaches(self.csr, self.more, x, y),
        }
    }
    /// Whether the known graph already orders `gate` (or, for a gate node, all its
    /// predecessors) before `head`, so the edge gate → head is implied.
    pub fn implied(&self, gate: Node, head: Node) -> bool {
        if gate >= self.first_gate {
            let preds = self.preds.succ(gate);
            !preds.is_empty() && preds.iter().all(|&p| self.reaches(p, head))
        } else {
            self.reaches(gate, head)
        }
    }

    /// Whether adding all these edges would close a cycle with the known graph.
    pub fn closes_cycle(&self, edges: &[(Node, Node, Label)]) -> bool {
        edges.iter().any(|&(u, v, _)| self.reaches(v, u))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path 0 → 1 → … → 9 in topological positions 0..10.
    fn path() -> (NodeRows, Vec<u32>) {
        let edges: Vec<(Node, Node)> = (0..9).map(|i| (i, i + 1)).collect();
        (NodeRows::build(10, &edges, false), (0..10).collect())
    }

    /// On random DAGs over chains and gates, every node's first position reached on every
    /// chain is the one a search finds, however the columns are grouped.
    #[test]
    fn the_index_answers_as_searches_do_in_any_grouping() {
        let mut rng = super::super::test_rng::Rng(0x2545_f491_4f6c_dd1du64);
        let mut next = move |n: u64| rng.below(n);
        for (nchains, per_chain, gates, extra) in [(1, 5, 3, 10), (9, 6, 20, 80), (20, 8, 60, 300)]
        {
            let n = nchains * per_chain + gates;
            // A random order of the nodes; edges go forward in it.
            let mut order: Vec<Node> = (0..n as Node).collect();
            for i in (1..n).rev() {
                order.swap(i, next(i as u64 + 1) as usize);
            }
            let mut chain_of = vec![(u32::MAX, 0); n];
            let mut seen = vec![0u32; nchains];
            let mut edges = Vec::new();
            let mut last: Vec<Option<Node>> = vec![None; nchains];
            for &x in &order {
                if (x as usize) < nchains * per_chain {
                    let ch = x as usize % nchains;
                    chain_of[x as usize] = (ch as u32, seen[ch]);
                    seen[ch] += 1;
                    if let Some(p) = last[ch] {
                        edges.push((p, x));
                    }
                    last[ch] = Some(x);
                }
            }
            let pos: Vec<usize> = {
                let mut p = vec![0; n];
                for (i, &x) in order.iter().enumerate() {
                    p[x as usize] = i;
                }
                p
            };
            for _ in 0..extra {
                let (a, b) = (next(n as u64) as Node, next(n as u64) as Node);
                if pos[a as usize] < pos[b as usize] {
                    edges.push((a, b));
                }
            }
            let csr = super::super::Csr::build(n, &edges, false);
            for (groups, narrow) in [1, 2, 3, nchains]
                .into_iter()
                .flat_map(|g| [(g, true), (g, false)])
            {
                let cr = ChainReach::build_in(
                    n,
                    nchains,
                    chain_of.clone(),
                    &csr,
                    &order,
                    groups,
                    narrow,
                );
                for x in 0..n as Node {
                    let mut first = vec![u32::MAX; nchains];
                    let mut stack = vec![x];
                    let mut seen = vec![false; n];
                    seen[x as usize] = true;
                    while let Some(u) = stack.pop() {
                        let (ch, p) = chain_of[u as usize];
                        if ch != u32::MAX {
                            first[ch as usize] = first[ch as usize].min(p);
                        }
                        for &(v, _) in csr.succ(u) {
                            if !std::mem::replace(&mut seen[v as usize], true) {
                                stack.push(v);
                            }
                        }
                    }
                    for (ch, &want) in first.iter().enumerate() {
                        assert_eq!(
                            cr.first_reached(x, ch as u32),
                            want,
                            "groups {groups}, narrow {narrow}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn budgeted_searches_answer_within_their_budget() {
        let (csr, pos) = path();
        let s = Budgeted::new(pos, 100);
        assert!(s.reaches(&csr, None, 0, 9));
        assert!(!s.reaches(&csr, None, 9, 0));
        assert!(s.reaches(&csr, None, 3, 5));
        assert!(!s.exhausted());
    }

    #[test]
    fn a_budget_spent_says_so_and_no_answer_after_it_is_yes() {
        let (csr, pos) = path();
        // Nine edges to walk from 0 to 9: four are not enough.
        let s = Budgeted::new(pos, 4);
        assert!(!s.reaches(&csr, None, 0, 9));
        assert!(s.exhausted());
        assert!(
            !s.reaches(&csr, None, 0, 1),
            "answers past the budget are not to be used"
        );
    }

    /// Edges into gates given gate after gate (with edges between other nodes among them) give
    /// the rows counting and scattering gives; given out of gate order, none.
    #[test]
    fn gate_rows_gathered_in_order_are_the_scattered_ones() {
        let mut rng = super::super::test_rng::Rng(5);
        let (n, fg) = (60usize, 40 as Node);
        let mut edges = Vec::new();
        for g in fg..n as Node {
            for _ in 0..rng.below(5) {
                if rng.below(3) == 0 {
                    edges.push((rng.below(40) as Node, rng.below(40) as Node));
                }
                edges.push((rng.below(40) as Node, g));
            }
        }
        let scattered = |edges: &[(Node, Node)]| {
            NodeRows::build_from(n, || {
                edges
                    .iter()
                    .filter(|&&(_, v)| v >= fg)
                    .map(|&(u, v)| (v, u))
            })
        };
        let want = scattered(&edges);
        assert!(want.targets.len() > 40);
        let got = preds_in_order(n, fg, &edges).expect("in gate order");
        assert_eq!((got.start, got.targets), (want.start, want.targets));
        // A decided edge into an earlier gate, appended as pruning does.
        edges.push((3, fg + 1));
        assert!(preds_in_order(n, fg, &edges).is_none());
        assert!(scattered(&edges).succ(fg + 1).contains(&3));
    }
}
