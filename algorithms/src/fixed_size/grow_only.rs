//! A list that is only ever added to, read without a lock: readers load the newest snapshot with
//! one atomic load (no write to a shared cache line); a writer, under a lock of its own, publishes
//! a new snapshot holding the old items and the new one. Old snapshots stay alive until the list
//! drops, so a reference from [`GrowOnly::read`] lives as long as the list's borrow.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

/// An append-only list of `T` with lock-free reads.
pub struct GrowOnly<T> {
    /// The newest snapshot; never null.
    current: AtomicPtr<Vec<T>>,
    /// Every snapshot ever published, the newest last: owned here, freed on drop. Boxed so that a
    /// snapshot's address stays put while this list grows.
    #[allow(clippy::vec_box)]
    all: Mutex<Vec<Box<Vec<T>>>>,
}

impl<T: Clone> GrowOnly<T> {
    /// An empty list.
    pub fn new() -> Self {
        let mut first = Box::new(Vec::new());
        let current = AtomicPtr::new(&mut *first as *mut Vec<T>);
        GrowOnly { current, all: Mutex::new(vec![first]) }
    }

    /// The newest snapshot.
    #[inline]
    pub fn read(&self) -> &[T] {
        // SAFETY: `current` always points into a box of `all`, which is never shrunk before the
        // list drops, and a published snapshot is never written again.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Publishes the snapshot `edit` makes of a copy of the newest one (for example with an
    /// item inserted), unless it returns false (then nothing changes). Writers take turns.
    pub fn update(&self, edit: impl FnOnce(&mut Vec<T>) -> bool) {
        let mut all = self.all.lock();
        let mut next = Box::new(all.last().map(|v| (**v).clone()).unwrap_or_default());
        if !edit(&mut next) {
            return;
        }
        self.current.store(&mut *next as *mut Vec<T>, Ordering::Release);
        all.push(next);
    }
}

impl<T: Clone> Default for GrowOnly<T> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: readers only get shared references to `T` (so `T: Sync`), and items are cloned and
// dropped on whichever thread writes or drops the list (so `T: Send`).
unsafe impl<T: Send + Sync> Sync for GrowOnly<T> {}
// SAFETY: as above; the raw pointer only points into the boxes the list owns.
unsafe impl<T: Send + Sync> Send for GrowOnly<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_keep_old_snapshots_while_writers_add() {
        let list = GrowOnly::<u32>::new();
        assert!(list.read().is_empty());
        list.update(|v| {
            v.push(3);
            true
        });
        let old = list.read();
        list.update(|v| {
            v.insert(0, 1);
            true
        });
        list.update(|_| false);
        assert_eq!((old, list.read()), (&[3][..], &[1, 3][..]));
    }
}
