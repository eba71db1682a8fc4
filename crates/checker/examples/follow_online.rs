//! Follow a growing history online: transactions are pushed as they arrive and checked in
//! rounds; fences (read-modify-writes of the fence key every few transactions per session) let
//! garbage collection delete what no future transaction can affect, so memory stays bounded.
//!
//! Run: `cargo run -p krait-checker --example follow_online`

use krait_checker::online::{Online, OnlineOptions, TxnRecord};
use krait_history::{OpKind, TxnStatus, NATIVE_FENCE_KEY, NO_TIME};

fn main() -> Result<(), krait_checker::online::OnlineError> {
    let mut on = Online::new(OnlineOptions::default());
    let fence = on.key(NATIVE_FENCE_KEY);
    let sessions = [on.session("alice")?, on.session("bob")?];
    let keys: Vec<_> = (0..8).map(|i| on.key(&format!("k{i}"))).collect();
    let mut last = vec![None::<u64>; keys.len()];
    let mut fence_value: Option<u64> = None;
    let mut ext = 0u64;
    let mut txn = |session, ops: Vec<(OpKind, u32, u64)>| {
        ext += 1;
        TxnRecord {
            session,
            ext,
            status: TxnStatus::Committed,
            start: NO_TIME,
            commit: NO_TIME,
            ops,
            lists: Vec::new(),
            app: Vec::new(),
            claims: Vec::new(),
        }
    };
    // A serial run, delivered as it happens: each transaction reads one key and overwrites it
    // (a read of the latest version), and every 10 transactions a session runs a fence.
    let mut value = 1u64;
    for round in 0..50 {
        for (i, &s) in sessions.iter().enumerate() {
            for j in 0..10 {
                let k = (round * 3 + i * 5 + j) % keys.len();
                let read = match last[k] {
                    Some(v) => (OpKind::Read, keys[k], v),
                    None => (OpKind::ReadInit, keys[k], 0),
                };
                value += 1;
                on.push(txn(s, vec![read, (OpKind::Write, keys[k], value)]))?;
                last[k] = Some(value);
            }
            let read = match fence_value {
                Some(v) => (OpKind::Read, fence, v),
                None => (OpKind::ReadInit, fence, 0),
            };
            value += 1;
            on.push(txn(s, vec![read, (OpKind::Write, fence, value)]))?;
            fence_value = Some(value);
        }
        if let Some(st) = on.round()? {
            if st.round % 10 == 0 {
                println!(
                    "round {}: {} new, {} held, {} deleted so far",
                    st.round, st.new, st.live, st.deleted_total
                );
            }
        }
    }
    on.finish()?;
    match on.verdict() {
        None => println!(
            "ACCEPT after {} rounds; {} transactions held",
            on.rounds(),
            on.live()
        ),
        Some(r) => println!("{:?}", r.verdict),
    }
    Ok(())
}
