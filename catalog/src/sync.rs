//! Synchronization primitives: std normally, loom's under `--cfg loom` so the commit protocol
//! (SPEC §7) can be model-checked.

#[cfg(loom)]
pub(crate) use loom::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};
// loom's `Arc` has no `Hash`/`Eq`/`Borrow`, which the catalog's maps keyed by `Arc<BucketKey>`
// need; `Arc` only shares immutable data here, so std's serves under loom as well.
#[cfg(loom)]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::{
    Arc, Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

/// Locks a mutex, recovering the data if a panicking thread poisoned it: catalog state is kept
/// consistent by every critical section before it can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(loom)]
    {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }
    #[cfg(not(loom))]
    {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
