//! Reads whose value several writes wrote: which writer each one read is part of what a check
//! must find, not a fact. A [`Choice`] says that `reader` read `key` from exactly one of its
//! candidates; a [`CondEdge`] is an edge of the graph that holds only if a candidate is the one
//! read and, for an anti-dependency, only if that candidate's version comes before another
//! write's. A history whose written values are unique has none of either.

use super::{Label, Node};

/// No pair order: the edge depends on the choice alone.
pub const NO_PAIR: u32 = u32::MAX;

/// The reader read `key` from exactly one of `cands` (nodes; `INIT` for the initial state).
#[derive(Clone, Debug)]
pub struct Choice {
    pub key: u32,
    pub reader: Node,
    /// The reader's external reads of the key (all of the same value), to name the writer they
    /// were matched to once it is known.
    pub ops: Vec<u32>,
    /// Candidate writer nodes, and the write op each read (`FROM_INIT` for the initial state).
    pub cands: Vec<Node>,
    pub cand_ops: Vec<u32>,
    /// Whether each candidate is still possible (pruning rules candidates out).
    pub alive: Vec<bool>,
    /// Why each candidate that pruning ruled out is impossible.
    pub why: Vec<Option<RuledOut>>,
    /// The candidate the clients' timestamps suggest (`crate::guess`), for the solver to try
    /// first; `u32::MAX` for none.
    pub guess: u32,
}

impl Choice {
    /// The one candidate left, once the others are ruled out.
    pub fn single(&self) -> Option<usize> {
        let mut it = (0..self.cands.len()).filter(|&i| self.alive[i]);
        let first = it.next()?;
        it.next().is_none().then_some(first)
    }
    /// How many candidates are still possible.
    pub fn num_alive(&self) -> usize {
        self.alive.iter().filter(|&&a| a).count()
    }
}

/// Why a candidate writer cannot be the one read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuledOut {
    /// The reader already precedes the candidate's transaction.
    ReaderFirst,
    /// Another write of the key (`by`) already lies between the candidate and the reader.
    Overwritten { by: Node },
}

/// Edge `u → v` that holds if `choice`'s candidate `cand` is the one read and, unless `pair`
/// is [`NO_PAIR`], constraint `pair` takes its first option (`first`) or its second.
#[derive(Clone, Copy, Debug)]
pub struct CondEdge {
    pub u: Node,
    pub v: Node,
    pub label: Label,
    pub choice: u32,
    pub cand: u32,
    pub pair: u32,
    pub first: bool,
    /// The known graph already leads from `v` back to `u`: the two conditions never hold
    /// together (a clause, not an edge, for the solver).
    pub cyclic: bool,
}

/// What a condition is known to be, as far as pruning has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    True,
    False,
    Open,
}

/// Per constraint, which option pruning chose: `Open` for none yet, `True` for the first,
/// `False` for the second.
pub fn pair_state(decided: &[Known], pair: u32, first: bool) -> Known {
    if pair == NO_PAIR {
        return Known::True;
    }
    match decided.get(pair as usize).copied().unwrap_or(Known::Open) {
        Known::Open => Known::Open,
        Known::True => {
            if first {
                Known::True
            } else {
                Known::False
            }
        }
        Known::False => {
            if first {
                Known::False
            } else {
                Known::True
            }
        }
    }
}

/// Whether the condition's candidate is read: ruled out, the only one left, or still open.
pub fn cand_state(choices: &[Choice], choice: u32, cand: u32) -> Known {
    let c = &choices[choice as usize];
    if !c.alive[cand as usize] {
        Known::False
    } else if c.single().is_some() {
        Known::True
    } else {
        Known::Open
    }
}
