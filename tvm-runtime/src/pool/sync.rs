//! The pool's synchronization primitives: std's, or loom's under `cfg(loom)`, where
//! `loom.rs` model-checks the pool's protocol. The std side is what the pool always
//! runs on; each item here compiles to the std operation it names.

#[cfg(not(loom))]
pub(super) use std::sync::{
    atomic::{AtomicBool, AtomicUsize},
    Condvar, Mutex,
};

#[cfg(loom)]
pub(super) use loom::sync::{
    atomic::{AtomicBool, AtomicUsize},
    Condvar, Mutex,
};

/// std's `UnsafeCell` behind loom's access API (`with`, `with_mut`), so that loom can
/// check every access to the cell against the others.
#[cfg(not(loom))]
pub(super) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(super) const fn new(value: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    #[inline(always)]
    pub(super) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(super) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(super) use loom::cell::UnsafeCell;

/// A busy-wait hint (under loom, a yield to another thread of the model).
#[inline(always)]
pub(super) fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::hint::spin_loop();
}

/// Orders a sequentially consistent store (or read-modify-write) before the sequentially
/// consistent load that follows it in the same thread, as the C++ memory model orders
/// them: nothing with std, where the operations themselves are `SeqCst`. Loom models
/// `SeqCst` loads and stores as acquire/release (its README: it would report handshakes
/// like the pool's, a store then a load on each side, as broken when they are not), but
/// models `SeqCst` fences exactly; the fence gives it the order the operations have.
#[inline(always)]
pub(super) fn seq_cst_order() {
    #[cfg(loom)]
    loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(not(loom))]
std::thread_local! {
    /// Whether this thread is one of a pool's workers.
    pub(super) static WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(loom)]
loom::thread_local! {
    /// Whether this thread (of the model) is one of a pool's workers.
    pub(super) static WORKER: std::cell::Cell<bool> = std::cell::Cell::new(false);
}
