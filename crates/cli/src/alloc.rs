//! The process's allocator: the system's, with large blocks advised onto transparent huge
//! pages where `KRAIT_HUGE_PAGES=1` asks for it. A read-heavy check fills arrays of hundreds of
//! megabytes once each (reads, their facts, sorted copies, edges); with 4 KiB pages a fifth of
//! its time can go to page faults, one per page on first touch. Where the kernel offers huge
//! pages on request (Linux's `transparent_hugepage=madvise`, its usual default), a block of
//! 8 MiB or more is then asked to be backed by 2 MiB pages before it is touched: a 512th of the
//! faults.
//!
//! Off by default: in a virtual machine whose host takes back the guest's free memory (free
//! page reporting hands back free blocks of 2 MiB and more, exactly where huge pages come
//! from), every huge page a run first touches is fetched back from the host, and a run started
//! a few seconds after the last one (as a user runs a check) was half as slow again with them
//! on this project's machine (see `docs/architecture.md`). On bare metal they may pay; set
//! `KRAIT_HUGE_PAGES=1` to compare. Elsewhere than Linux it does nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// The system allocator, advising large blocks onto huge pages (see the module's header).
pub struct HugePages;

static ON: AtomicBool = AtomicBool::new(false);

/// Blocks of at least this many bytes are advised; smaller ones would round up to a huge page
/// for little gain.
const LARGE: usize = 8 << 20;

/// Reads `KRAIT_HUGE_PAGES` (1 or on: advice); called once at the start of `main`.
pub fn configure() {
    let on = std::env::var("KRAIT_HUGE_PAGES").is_ok_and(|v| v == "1" || v == "on");
    ON.store(on, Ordering::Relaxed);
}

#[cfg(target_os = "linux")]
fn advise(p: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if p.is_null() || len < LARGE || !ON.load(Ordering::Relaxed) {
        return;
    }
    // Only the whole huge pages inside the block: advice covers whole pages of the mapping.
    let start = (p as usize).next_multiple_of(HUGE);
    let end = (p as usize + len) & !(HUGE - 1);
    if end > start {
        // SAFETY: the range lies inside a block just allocated to us; the advice changes how
        // its pages are backed, never their contents. A refusal (no THP) leaves it as it was.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_: *mut u8, _: usize) {}

// SAFETY: every call is the system allocator's, with its contract; `advise` only adds advice
// on memory the call returned.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(l) };
        advise(p, l.size());
        p
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(l) };
        advise(p, l.size());
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded; `p` came from this allocator with layout `l`.
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: forwarded; `p` came from this allocator with layout `l`.
        let q = unsafe { System.realloc(p, l, new) };
        advise(q, new);
        q
    }
}
