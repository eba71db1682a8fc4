//! Jepsen/Elle histories in EDN (`history.edn`): a sequence of operation maps (one per line, or
//! all inside one vector), where each `:invoke` of a `:process` is completed by that process's
//! next `:ok`, `:fail` or `:info`. Transactions are `:f :txn` ops whose `:value` is a vector of
//! micro-ops: rw-register `[:r k v]`/`[:w k v]` and list-append `[:append k v]`/`[:r k [..]]`.
//! See `docs/history-format.md`.
//!
//! This is the meaning of the forms that `edn` reads: pairing invocations with completions and
//! turning micro-ops into krait's model.

use super::edn::{describe, each_form, Node, Val};
use super::gather::{Collector, POp, PTxn};
use super::{Format, Loaded};
use crate::error::{InputError, Location, Warning};
use crate::model::{OpKind, TxnStatus, NO_TIME};
use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::Path;

/// Reads an Elle history file, as it parses it.
pub fn read_file(path: &Path) -> Result<Loaded, InputError> {
    let f = std::fs::File::open(path).map_err(|e| InputError::io(path, e))?;
    read_from(f, path)
}

/// Reads an Elle history from `input`; `path` names it in errors. The input is read as it is
/// parsed, an operation at a time: it is never held whole.
pub fn read(input: impl BufRead, path: &Path) -> Result<Loaded, InputError> {
    read_from(input, path)
}

fn read_from(input: impl Read, path: &Path) -> Result<Loaded, InputError> {
    let mut r = Reader {
        path,
        col: Collector::new(),
        pending: HashMap::new(),
        ordinal: 0,
        other_f: 0,
        warnings: Vec::new(),
    };
    each_form(input, path, |n| r.op(n))?;
    r.finish()
}

/// A process as Jepsen names it; a history without `:process` is one nameless process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Proc {
    Nil,
    Int(i128),
}

impl Proc {
    fn name(self) -> String {
        match self {
            Proc::Nil => "nil".to_string(),
            Proc::Int(i) => i.to_string(),
        }
    }
}

struct Invoke {
    line: u64,
    ext: u64,
    time: u64,
    value: Option<Node>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Type {
    Invoke,
    Ok,
    Fail,
    Info,
}

struct Reader<'a> {
    path: &'a Path,
    col: Collector,
    pending: HashMap<Proc, Invoke>,
    /// Position of the next operation among all operations: Jepsen's `:index` when absent.
    ordinal: u64,
    other_f: usize,
    warnings: Vec<Warning>,
}

fn push(col: &mut Collector, t: &mut PTxn, key: &str, kind: OpKind, value: u64, at: Location) {
    let key = col.key(key);
    t.ops.push(POp {
        kind,
        key,
        value,
        at,
    });
}

fn untag(mut n: Node) -> Node {
    while let Val::Tagged(_, inner) = n.val {
        n = *inner;
    }
    n
}

impl Reader<'_> {
    fn err(&self, line: u64, msg: impl Into<String>) -> InputError {
        InputError::new(self.path, Location::Line(line), msg)
    }

    fn nat(&self, n: &Node, field: &str, max: u64) -> Result<u64, InputError> {
        match n.val {
            Val::Int(i) if (0..=max as i128).contains(&i) => Ok(i as u64),
            ref other => Err(self.err(
                n.line,
                format!(
                    "{field} must be an integer from 0 to {max}, not {}",
                    describe(other)
                ),
            )),
        }
    }

    fn op(&mut self, node: Node) -> Result<(), InputError> {
        let ordinal = self.ordinal;
        self.ordinal += 1;
        let node = untag(node);
        let line = node.line;
        let Val::Map(pairs) = node.val else {
            return Err(self.err(
                line,
                format!(
                    "expected an operation map {{:type ..., :process ..., :value ...}}, found {}",
                    describe(&node.val)
                ),
            ));
        };
        let (mut ty, mut process, mut f, mut value, mut time, mut index) =
            (None, None, None, None, None, None);
        for (k, v) in pairs {
            if let Val::Kw(name) = &k.val {
                match name.as_str() {
                    "type" => ty = Some(v),
                    "process" => process = Some(v),
                    "f" => f = Some(v),
                    "value" => value = Some(v),
                    "time" => time = Some(v),
                    "index" => index = Some(v),
                    _ => {}
                }
            }
        }
        let ty = match ty {
            Some(Node {
                val: Val::Kw(t), ..
            }) => t,
            Some(n) => {
                return Err(self.err(
                    n.line,
                    format!(
                        ":type must be :invoke, :ok, :fail or :info, not {}",
                        describe(&n.val)
                    ),
                ))
            }
            None => return Err(self.err(line, "an operation without :type")),
        };
        let kind = match ty.as_str() {
            "invoke" => Type::Invoke,
            "ok" => Type::Ok,
            "fail" => Type::Fail,
            "info" => Type::Info,
            _ => {
                return Err(self.err(
                    line,
                    format!("unknown :type :{ty}; expected :invoke, :ok, :fail or :info"),
                ))
            }
        };
        let proc = match process.map(|n| n.val) {
            None | Some(Val::Nil) => Proc::Nil,
            Some(Val::Int(i)) => Proc::Int(i),
            // :nemesis and other processes that are not clients run no transactions.
            Some(_) => return Ok(()),
        };
        match f.as_ref().map(|n| &n.val) {
            None => {}
            Some(Val::Kw(f)) if f == "txn" => {}
            Some(_) => {
                self.other_f += 1;
                return Ok(());
            }
        }
        let time = match &time {
            None => NO_TIME,
            Some(n) => self.nat(n, ":time", NO_TIME - 1)?,
        };
        let ext = match &index {
            None => ordinal,
            Some(n) => self.nat(n, ":index", u64::MAX)?,
        };
        if kind == Type::Invoke {
            if let Some(prev) = self.pending.get(&proc) {
                return Err(self.err(
                    line,
                    format!(
                        "process {} invokes again before its invocation on line {} completed",
                        proc.name(),
                        prev.line
                    ),
                ));
            }
            self.pending.insert(
                proc,
                Invoke {
                    line,
                    ext,
                    time,
                    value,
                },
            );
            return Ok(());
        }
        let Some(inv) = self.pending.remove(&proc) else {
            return Err(self.err(
                line,
                format!(
                    "a :{ty} completion of process {} that has no invocation before it",
                    proc.name()
                ),
            ));
        };
        if time != NO_TIME && inv.time != NO_TIME && time < inv.time {
            return Err(self.err(
                line,
                format!(
                    "the completion's :time {time} is before its invocation's :time {} (line {})",
                    inv.time, inv.line
                ),
            ));
        }
        // A completed transaction says what it read; a failed or indeterminate one is known
        // only by what it was asked to do (its writes), which its invocation holds.
        let (status, value, commit) = match kind {
            Type::Ok => (TxnStatus::Committed, value, time),
            Type::Fail => (TxnStatus::Aborted, inv.value.or(value), time),
            _ => (TxnStatus::Unknown, inv.value.or(value), NO_TIME),
        };
        let Some(value) = value else {
            return Err(self.err(line, format!("a :{ty} completion without a :value")));
        };
        self.txn(proc, inv.ext, status, inv.time, commit, inv.line, &value)
    }

    fn key_name(&self, n: &Node) -> Result<String, InputError> {
        match &n.val {
            Val::Int(i) => Ok(i.to_string()),
            Val::Kw(k) | Val::Str(k) => Ok(k.clone()),
            other => Err(self.err(
                n.line,
                format!(
                    "a key must be an integer, keyword or string, not {}",
                    describe(other)
                ),
            )),
        }
    }

    fn txn(
        &mut self,
        proc: Proc,
        ext: u64,
        status: TxnStatus,
        start: u64,
        commit: u64,
        line: u64,
        value: &Node,
    ) -> Result<(), InputError> {
        let mops = match &value.val {
            Val::Vector(v) | Val::List(v) => v,
            other => {
                return Err(self.err(
                    value.line,
                    format!(
                        ":value must be a vector of micro-operations, not {}",
                        describe(other)
                    ),
                ))
            }
        };
        // These come from the invocation, where a nil read is one not yet performed.
        let drop_nil_reads = status != TxnStatus::Committed;
        let mut t = PTxn::new(ext, status, Location::Line(line));
        t.start = start;
        t.commit = commit;
        for m in mops {
            let parts = match &m.val {
                Val::Vector(p) | Val::List(p) => p,
                other => {
                    return Err(self.err(
                        m.line,
                        format!(
                            "a micro-operation must be a vector [f key value], not {}",
                            describe(other)
                        ),
                    ))
                }
            };
            if parts.len() != 3 {
                return Err(self.err(
                    m.line,
                    format!(
                        "a micro-operation is [f key value]; this one has {} elements",
                        parts.len()
                    ),
                ));
            }
            let f = match &parts[0].val {
                Val::Kw(f) => f.as_str(),
                other => {
                    return Err(self.err(
                        parts[0].line,
                        format!(
                            "a micro-operation's f must be :r, :w or :append, not {}",
                            describe(other)
                        ),
                    ))
                }
            };
            let name = self.key_name(&parts[1])?;
            let v = &parts[2];
            let at = Location::Line(m.line);
            match f {
                "w" | "append" => {
                    let value = self.nat(v, "a written value", u64::MAX)?;
                    push(&mut self.col, &mut t, &name, OpKind::Write, value, at);
                }
                "r" => match &v.val {
                    Val::Nil if drop_nil_reads => {}
                    Val::Nil => push(&mut self.col, &mut t, &name, OpKind::ReadInit, 0, at),
                    Val::Int(_) | Val::Num(_) => {
                        let value = self.nat(v, "a read value", u64::MAX)?;
                        push(&mut self.col, &mut t, &name, OpKind::Read, value, at);
                    }
                    Val::Vector(items) | Val::List(items) => {
                        let vals = items
                            .iter()
                            .map(|i| self.nat(i, "an element of a read list", u64::MAX))
                            .collect::<Result<Vec<u64>, _>>()?;
                        match vals.last() {
                            None => push(&mut self.col, &mut t, &name, OpKind::ReadInit, 0, at),
                            Some(&last) => {
                                push(&mut self.col, &mut t, &name, OpKind::Read, last, at)
                            }
                        }
                        t.lists.push(((t.ops.len() - 1) as u32, vals));
                    }
                    other => {
                        return Err(self.err(
                            v.line,
                            format!(
                            "a read's value must be nil, an integer or a list of integers, not {}",
                            describe(other)
                        ),
                        ))
                    }
                },
                other => {
                    return Err(self.err(
                        parts[0].line,
                        format!("unknown micro-operation :{other}; expected :r, :w or :append"),
                    ))
                }
            }
        }
        let s = self.col.session(&proc.name());
        self.col.push(s, t);
        Ok(())
    }

    fn finish(mut self) -> Result<Loaded, InputError> {
        // Jepsen leaves an operation outstanding when the test ends before it completes: its
        // outcome is as unknown as an :info's.
        let mut open: Vec<(Proc, Invoke)> = std::mem::take(&mut self.pending).into_iter().collect();
        open.sort_by_key(|(_, inv)| inv.line);
        for (proc, inv) in open {
            let Some(value) = &inv.value else {
                return Err(self.err(inv.line, "an :invoke without a :value"));
            };
            self.warnings.push(Warning {
                path: self.path.to_path_buf(),
                location: Location::Line(inv.line),
                message: format!(
                    "the invocation of process {} never completed: read as a transaction with outcome unknown",
                    proc.name()
                ),
            });
            self.txn(
                proc,
                inv.ext,
                TxnStatus::Unknown,
                inv.time,
                NO_TIME,
                inv.line,
                value,
            )?;
        }
        if self.other_f > 0 {
            self.warnings.push(Warning {
                path: self.path.to_path_buf(),
                location: Location::Nowhere,
                message: format!(
                    "skipped {} client operations whose :f is not :txn",
                    self.other_f
                ),
            });
        }
        Ok(Loaded {
            history: self.col.finish(self.path, false)?,
            warnings: self.warnings,
            format: Format::Edn,
        })
    }
}
