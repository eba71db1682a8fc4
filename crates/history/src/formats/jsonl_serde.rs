//! serde's reading of a JSON Lines record: every shape the format allows, with serde_json's
//! exact errors. The common shape is read faster by `jsonl_scan`; this is the fallback and the
//! definition it must agree with.

use serde::Deserialize;
use std::borrow::Cow;

#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum Name<'a> {
    Str(#[serde(borrow)] Cow<'a, str>),
    Int(i64),
}

impl Name<'_> {
    pub(crate) fn to_key(&self) -> Cow<'_, str> {
        match self {
            Name::Str(s) => Cow::Borrowed(s.as_ref()),
            Name::Int(i) => Cow::Owned(i.to_string()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LineIn<'a> {
    #[serde(borrow)]
    pub(crate) session: Name<'a>,
    pub(crate) txn: u64,
    #[serde(default, borrow)]
    pub(crate) status: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) start: Option<u64>,
    #[serde(default)]
    pub(crate) commit: Option<u64>,
    #[serde(borrow)]
    pub(crate) ops: Vec<OpIn<'a>>,
}

/// One operation: `[kind, key, value]`, or `[kind, key, value, app]` with the application's
/// own value (a string) that `value` stands for.
pub(crate) struct OpIn<'a> {
    pub(crate) kind: Cow<'a, str>,
    pub(crate) key: Name<'a>,
    pub(crate) value: OpVal,
    pub(crate) app: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for OpIn<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = OpIn<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "an operation [kind, key, value] or [kind, key, value, application value]",
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<OpIn<'a>, A::Error> {
                use serde::de::Error;
                let kind: Cow<'a, str> = a
                    .next_element::<BorrowedCow<'a>>()?
                    .ok_or_else(|| A::Error::invalid_length(0, &self))?
                    .0;
                let key = a
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(1, &self))?;
                let value = a
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(2, &self))?;
                let app = a.next_element::<BorrowedCow<'a>>()?.map(|c| c.0);
                if a.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::invalid_length(5, &self));
                }
                Ok(OpIn {
                    kind,
                    key,
                    value,
                    app,
                })
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// A string borrowed from the input where it has no escapes.
struct BorrowedCow<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for BorrowedCow<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct W<'a>(#[serde(borrow)] Cow<'a, str>);
        W::deserialize(d).map(|w| BorrowedCow(w.0))
    }
}

/// An op's value: a number, `null` (the initial state), or a list (a list-append read).
pub(crate) enum OpVal {
    Null,
    Num(u64),
    List(Vec<u64>),
}

impl<'de> Deserialize<'de> for OpVal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // By hand rather than `untagged`, which would buffer every value.
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OpVal;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an unsigned integer, null or a list of unsigned integers")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<OpVal, E> {
                Ok(OpVal::Num(v))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<OpVal, E> {
                Ok(OpVal::Null)
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<OpVal, E> {
                Ok(OpVal::Null)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<OpVal, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element::<u64>()? {
                    v.push(x);
                }
                Ok(OpVal::List(v))
            }
        }
        d.deserialize_any(V)
    }
}
