//! Zeroed room for a table looked up at random, advised onto huge pages: at 80k read-heavy
//! transactions the table of writes is 16 MB, 4,096 pages of 4 KiB, and a lookup some reads
//! ahead then missed the TLB nearly every time; the prefetch that asks for its slot waited
//! on the page walk (a tenth of the check's samples sat on that one instruction), where on 2
//! MiB pages the table is eight.
//!
//! Only tables: on this project's VM a huge page first touched costs more than the 512 small
//! ones it replaces (see `docs/architecture.md`), which arrays filled once, in order, never
//! win back.

/// A type every all-zero bit pattern of which is a valid value.
///
/// # Safety
/// Implement only for types of plain integers (and padding) whose all-zero bytes are a value.
pub(crate) unsafe trait Zeroable: Copy {}

// SAFETY: an integer.
unsafe impl Zeroable for u128 {}

/// `len` zeroed `T`s, in an anonymous mapping whose 2 MiB-aligned part is advised onto huge
/// pages (Linux's transparent huge pages; elsewhere, or refused, small pages as usual), or in
/// a vector where the mapping fails.
pub(crate) enum Room<T: Zeroable> {
    Mapped {
        map: memmap2::MmapMut,
        /// Where the first `T` starts in `map`.
        at: usize,
        len: usize,
        _t: std::marker::PhantomData<T>,
    },
    Vec(Vec<T>),
}

const HUGE: usize = 2 << 20;

impl<T: Zeroable> Room<T> {
    pub(crate) fn zeroed(len: usize) -> Room<T> {
        let bytes = len * std::mem::size_of::<T>();
        // Below a huge page there is nothing to advise.
        if bytes < HUGE {
            return Room::Vec(Self::vec(len));
        }
        let Ok(map) = memmap2::MmapMut::map_anon(bytes + HUGE) else {
            return Room::Vec(Self::vec(len));
        };
        let base = map.as_ptr() as usize;
        let at = base.next_multiple_of(HUGE) - base;
        #[cfg(target_os = "linux")]
        {
            // Advice only: refused, the room is the same on small pages.
            let _ = map.advise_range(memmap2::Advice::HugePage, at, bytes);
        }
        Room::Mapped {
            map,
            at,
            len,
            _t: std::marker::PhantomData,
        }
    }

    fn vec(len: usize) -> Vec<T> {
        let mut v = Vec::with_capacity(len);
        // SAFETY: all-zero bytes are a `T` (`Zeroable`), and there is room for `len`.
        unsafe {
            std::ptr::write_bytes(v.as_mut_ptr(), 0, len);
            v.set_len(len);
        }
        v
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            // SAFETY: the mapping holds `at + len * size_of::<T>()` bytes, zeroed by the
            // system or written as `T`s since; `at` is a multiple of 2 MiB from a
            // page-aligned start, so aligned for any `T`; the borrow is tied to `self`.
            Room::Mapped { map, at, len, .. } => unsafe {
                std::slice::from_raw_parts(map.as_ptr().add(*at).cast::<T>(), *len)
            },
            Room::Vec(v) => v,
        }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            // SAFETY: as in `as_slice`, borrowed mutably through `self`.
            Room::Mapped { map, at, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(map.as_mut_ptr().add(*at).cast::<T>(), *len)
            },
            Room::Vec(v) => v,
        }
    }
}

impl<T: Zeroable> Clone for Room<T> {
    fn clone(&self) -> Room<T> {
        let mut r = Room::zeroed(self.as_slice().len());
        r.as_mut_slice().copy_from_slice(self.as_slice());
        r
    }
}

impl<T: Zeroable + std::fmt::Debug> std::fmt::Debug for Room<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Room({} entries)", self.as_slice().len())
    }
}

impl<T: Zeroable> Default for Room<T> {
    fn default() -> Room<T> {
        Room::Vec(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small rooms are vectors, large ones mapped at a 2 MiB boundary; both start zeroed and
    /// keep what is written, clones included.
    #[test]
    fn room_is_zeroed_aligned_and_kept() {
        for len in [0usize, 5, (HUGE / 16) * 3 + 7] {
            let mut r = Room::<u128>::zeroed(len);
            assert_eq!(r.as_slice().len(), len);
            assert!(r.as_slice().iter().all(|&x| x == 0));
            if let Some(x) = r.as_mut_slice().last_mut() {
                *x = u128::MAX;
            }
            let c = r.clone();
            assert_eq!(c.as_slice(), r.as_slice());
            if len * 16 >= HUGE {
                assert!(matches!(r, Room::Mapped { .. }));
                assert_eq!(r.as_slice().as_ptr() as usize % HUGE, 0);
            }
        }
    }
}
