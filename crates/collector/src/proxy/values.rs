//! Column values as the history records them: decoded from the wire's text or binary format
//! into the text PostgreSQL prints (so a write by parameter and a read of the same value
//! agree), hashed into history values, and named as `TABLE/KEY/COLUMN` keys.

use super::sql::TableSpec;

/// A value in the text form PostgreSQL prints it in, whichever format it travelled in, so a
/// write by parameter and a read of the same value agree (integers and booleans decoded; text
/// as is; other binary values as hex, which only matches itself).
pub(crate) fn normalize(v: &[u8], oid: u32, binary: bool) -> Vec<u8> {
    if !binary {
        return v.to_vec();
    }
    let int = |b: &[u8]| -> Option<i64> {
        Some(match b.len() {
            2 => i16::from_be_bytes(b.try_into().ok()?) as i64,
            4 => i32::from_be_bytes(b.try_into().ok()?) as i64,
            8 => i64::from_be_bytes(b.try_into().ok()?),
            _ => return None,
        })
    };
    match oid {
        20 | 21 | 23 => int(v).map_or_else(|| v.to_vec(), |i| i.to_string().into_bytes()),
        16 => (if v.first() == Some(&1) { "t" } else { "f" }).into(),
        _ if std::str::from_utf8(v).is_ok() && matches!(oid, 0 | 19 | 25 | 1042 | 1043) => {
            v.to_vec()
        }
        _ => {
            let mut s = String::from("\\x");
            for b in v {
                s.push_str(&format!("{b:02x}"));
            }
            s.into_bytes()
        }
    }
}

/// Whether value `i` travels in binary, by the format codes of a Bind: none means text for
/// all, one applies to all, else one per value.
pub(crate) fn fmt_of(formats: &[i16], i: usize) -> bool {
    match formats.len() {
        0 => false,
        1 => formats[0] == 1,
        _ => formats.get(i) == Some(&1),
    }
}

/// A column value as a history value: a hash of its text form (NULL its own value).
pub(crate) fn value_id(v: Option<&[u8]>) -> u64 {
    match v {
        Some(v) => krait_history::hash_bytes(v),
        None => krait_history::hash_bytes(b"\0NULL"),
    }
}

/// A column value as the application sees it, for certificates (NULL has none).
pub(crate) fn app_of(v: Option<&[u8]>) -> Option<std::borrow::Cow<'_, str>> {
    v.map(String::from_utf8_lossy)
}

/// `TABLE/KEY/COLUMN`: one history key per column of a row.
pub(crate) fn key_of(t: &TableSpec, key: &[u8], col: &str) -> String {
    format!("{}/{}/{col}", t.name, String::from_utf8_lossy(key))
}
