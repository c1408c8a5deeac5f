//! Each thread's small stacks of free blocks (magazines), one per resource and stream: what lets a
//! fixed-size resource hand out and take back blocks without touching a cache line another
//! thread uses.
//!
//! A magazine holds blocks its stream may reuse at once, exactly as the private blocks of that
//! stream's set in [`StreamSets`](super::StreamSets). It has its own small lock, which only its
//! thread takes on the common path; the resource keeps every magazine in a registry and takes a
//! magazine's lock from another thread only on rare paths: to move its blocks back to the shared
//! sets before it grows or reports out-of-memory, when the stream retires, and for statistics.
//! The thread's cache finds its magazine by `(resource, stream)` with no lock; a thread that exits
//! leaves its magazines in the registry, where the next reclaim takes their blocks.

use crate::{SpinMutex, StreamKey};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// The blocks of one magazine and what may be done with them.
#[derive(Debug, Default)]
pub struct MagazineState {
    /// Free blocks, most recently freed last.
    pub blocks: Vec<usize>,
    /// The blocks may be handed out on the magazine's stream at once: the stream's set was known
    /// to belong to the stream its key names now when the magazine was last filled. Cleared when
    /// the stream retires; until refilled, every call takes the shared path.
    pub usable: bool,
    /// Another stream asked this stream to publish its free blocks: the next call on the stream
    /// takes the shared path, which moves the magazine's blocks there and publishes them.
    pub wanted: bool,
    /// The stream retired and the resource forgot this magazine: it never serves again (a new
    /// stream with the same handle gets a new magazine).
    pub retired: bool,
}

/// One thread's free blocks of one resource for one stream.
#[derive(Debug)]
pub struct Magazine {
    /// The stream whose blocks these are.
    pub key: StreamKey,
    /// The blocks, under the magazine's own lock.
    pub state: SpinMutex<MagazineState>,
}

impl Magazine {
    /// An empty magazine for `key`, not yet usable.
    pub fn new(key: StreamKey) -> Self {
        Magazine { key, state: SpinMutex::new(MagazineState::default()) }
    }

    /// A block the stream may use at once, if the magazine is usable and not wanted elsewhere.
    #[inline]
    pub fn pop(&self) -> Option<usize> {
        let mut st = self.state.lock();
        if !st.usable || st.wanted {
            return None;
        }
        st.blocks.pop()
    }

    /// Keeps a block freed on the stream, if the magazine is usable, not wanted elsewhere and
    /// holds fewer than `capacity` blocks; false (nothing kept) otherwise.
    #[inline]
    pub fn push(&self, block: usize, capacity: usize) -> bool {
        let mut st = self.state.lock();
        if !st.usable || st.wanted || st.blocks.len() >= capacity {
            return false;
        }
        st.blocks.push(block);
        true
    }

    /// Blocks held now.
    pub fn held(&self) -> usize {
        self.state.lock().blocks.len()
    }
}

/// Magazines a thread keeps in its cache at most; the oldest leaves first (the resource's registry
/// still has it, so its blocks are not lost).
const CAPACITY: usize = 64;

struct Entry {
    resource: u64,
    key: StreamKey,
    magazine: Arc<Magazine>,
}

/// A thread's magazines, with the last one found in a cell of its own: the common path reads it
/// without taking the list's `RefCell` borrow.
struct Cache {
    /// `(resource, key, magazine)` of the last lookup's hit (resource 0: none; resources are
    /// numbered from 1), an entry of `entries`: reset whenever `entries` changes.
    last: Cell<(u64, StreamKey, *const Magazine)>,
    entries: RefCell<Vec<Entry>>,
}

const NO_HIT: (u64, StreamKey, *const Magazine) = (0, StreamKey::UNUSED, std::ptr::null());

thread_local!(static CACHE: Cache = const { Cache { last: Cell::new(NO_HIT), entries: RefCell::new(Vec::new()) } });

/// The calling thread's magazine for `key` of resource `resource`, if cached. The pointer stays
/// valid until this thread next calls [`insert`]: the cache holds an `Arc` to the magazine. The
/// cache is scanned in place: a thread uses few `(resource, stream)` pairs at once (a binning
/// resource's bins take turns on one stream), and moving entries would cost more than the scan.
#[inline(always)]
pub fn lookup(resource: u64, key: StreamKey) -> Option<*const Magazine> {
    CACHE
        .try_with(|cache| {
            let (r, k, m) = cache.last.get();
            if r == resource && k == key {
                return Some(m);
            }
            let entries = cache.entries.try_borrow().ok()?;
            let m =
                entries.iter().find(|e| e.resource == resource && e.key == key).map(|e| Arc::as_ptr(&e.magazine))?;
            cache.last.set((resource, key, m));
            Some(m)
        })
        .ok()
        .flatten()
}

/// The calling thread's magazine for `key` of resource `resource`, if cached, as a new handle.
pub fn find(resource: u64, key: StreamKey) -> Option<Arc<Magazine>> {
    CACHE
        .try_with(|cache| {
            let entries = cache.entries.try_borrow().ok()?;
            entries.iter().find(|e| e.resource == resource && e.key == key).map(|e| e.magazine.clone())
        })
        .ok()
        .flatten()
}

/// Caches `magazine` as the calling thread's for `key` of `resource`, in place of any other.
/// Entries of resources that are gone (only the cache holds the magazine) leave now. False, with
/// nothing cached, while the thread's locals are torn down.
pub fn insert(resource: u64, key: StreamKey, magazine: &Arc<Magazine>) -> bool {
    CACHE
        .try_with(|cache| {
            let Ok(mut entries) = cache.entries.try_borrow_mut() else {
                return false;
            };
            // The entry `last` names may leave now.
            cache.last.set(NO_HIT);
            entries.retain(|e| Arc::strong_count(&e.magazine) > 1 && (e.resource, e.key) != (resource, key));
            entries.truncate(CAPACITY - 1);
            entries.insert(0, Entry { resource, key, magazine: magazine.clone() });
            true
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_magazine_serves_only_while_usable_and_not_wanted() {
        let m = Arc::new(Magazine::new(StreamKey::of_handle(0x1000)));
        assert!(!m.push(0x100, 2), "not usable yet");
        m.state.lock().usable = true;
        assert!(m.push(0x100, 2) && m.push(0x200, 2) && !m.push(0x300, 2));
        assert_eq!(m.pop(), Some(0x200));
        m.state.lock().wanted = true;
        assert_eq!((m.pop(), m.held()), (None, 1));
        assert!(insert(7, StreamKey::of_handle(0x1000), &m));
        assert_eq!(lookup(7, StreamKey::of_handle(0x1000)), Some(Arc::as_ptr(&m)));
        assert_eq!(lookup(7, StreamKey::of_handle(0x2000)), None);
        // The last hit is remembered, and forgotten when the cache changes.
        let other = Arc::new(Magazine::new(StreamKey::of_handle(0x2000)));
        assert!(insert(8, StreamKey::of_handle(0x2000), &other));
        assert_eq!(lookup(8, StreamKey::of_handle(0x2000)), Some(Arc::as_ptr(&other)));
        assert_eq!(lookup(7, StreamKey::of_handle(0x1000)), Some(Arc::as_ptr(&m)));
        assert_eq!(lookup(7, StreamKey::of_handle(0x1000)), Some(Arc::as_ptr(&m)), "the last hit");
        drop(m);
        // Only the cache holds the first magazine now: the next insert drops it.
        let third = Arc::new(Magazine::new(StreamKey::of_handle(0x3000)));
        assert!(insert(9, StreamKey::of_handle(0x3000), &third));
        assert_eq!(lookup(7, StreamKey::of_handle(0x1000)), None, "gone, not remembered");
        assert_eq!(lookup(8, StreamKey::of_handle(0x2000)), Some(Arc::as_ptr(&other)));
    }
}
