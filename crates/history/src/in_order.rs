//! Work done on every core, its results taken in order on the calling thread as soon as each
//! is ready and those before it were taken: the taking (adding parsed records to a history,
//! chaining sorted facts) overlaps the rest of the work instead of waiting for all of it.
//! Shared by the readers and the checker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// Maps every item with `map` on every core (each thread with its own scratch `S`) and hands
/// the results to `take` in item order, stopping at its first error. The calling thread takes
/// results; while the next one is not ready it maps an item itself, and it waits only when
/// every item is taken by another thread.
pub fn map_in_order<I, O, S, E>(
    items: Vec<I>,
    map: impl Fn(&mut S, I) -> O + Sync,
    mut take: impl FnMut(O) -> Result<(), E>,
) -> Result<(), E>
where
    I: Send,
    O: Send,
    S: Default,
{
    let n = items.len();
    // The items not yet claimed, with their places.
    let items = Mutex::new(items.into_iter().enumerate());
    let stop = AtomicBool::new(false);
    let claim = || {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        lock(&items).next()
    };
    // Results not taken yet, and whether a mapping thread died (so no one waits forever).
    let done: Mutex<(Vec<Option<O>>, bool)> = Mutex::new(((0..n).map(|_| None).collect(), false));
    let ready = Condvar::new();
    let put = |j: usize, o: O| {
        lock(&done).0[j] = Some(o);
        ready.notify_all();
    };
    // In place: the calling thread (which may not be one of the pool's) takes the results.
    rayon::in_place_scope(|s| {
        for _ in 1..rayon::current_num_threads().min(n) {
            s.spawn(|_| {
                let guard = Died(&done, &ready);
                let mut scratch = S::default();
                while let Some((j, item)) = claim() {
                    put(j, map(&mut scratch, item));
                }
                std::mem::forget(guard);
            });
        }
        let mut scratch = S::default();
        for i in 0..n {
            let out = loop {
                if let Some(o) = lock(&done).0[i].take() {
                    break o;
                }
                if let Some((j, item)) = claim() {
                    put(j, map(&mut scratch, item));
                    continue;
                }
                let mut g = lock(&done);
                while g.0[i].is_none() {
                    assert!(!g.1, "a thread working for map_in_order stopped");
                    g = ready.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                break g.0[i].take().expect("a result was put");
            };
            if let Err(e) = take(out) {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    })
}

/// The mutex's guard, poisoned or not: a panic is reported where it happened, not again here.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Marks the results as never all coming, should a mapping thread unwind.
struct Died<'m, O>(&'m Mutex<(Vec<Option<O>>, bool)>, &'m Condvar);

impl<O> Drop for Died<'_, O> {
    fn drop(&mut self) {
        lock(self.0).1 = true;
        self.1.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::map_in_order;

    #[test]
    fn results_come_in_order_and_stop_at_the_first_error() {
        let mut seen = Vec::new();
        let r: Result<(), ()> = map_in_order(
            (0..1000u64).collect(),
            |calls: &mut u64, i| {
                *calls += 1;
                i * i
            },
            |o| {
                seen.push(o);
                Ok(())
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(seen, (0..1000u64).map(|i| i * i).collect::<Vec<_>>());
        let mut taken = 0;
        let r = map_in_order(
            (0..1000u64).collect(),
            |_: &mut (), i| i,
            |o| {
                taken += 1;
                if o == 500 {
                    Err(o)
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!((r, taken), (Err(500), 501));
    }
}
