//! Each thread's arenas, by resource and stream: the O(1) way to the calling thread's arena that
//! takes no lock. The most recently used arena is first; others are found by a short scan.

use super::Arena;
use rmm_algorithms::StreamKey;
use std::cell::RefCell;
use std::sync::Arc;

/// Arenas a thread keeps at most; the least recently used leaves first (the resource's registry
/// still has it).
const CAPACITY: usize = 64;

struct Entry {
    resource: u64,
    key: StreamKey,
    arena: Arc<Arena>,
}

thread_local!(static CACHE: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) });

/// The calling thread's arena for `key` of resource `resource`, if cached. The pointer stays valid
/// until this thread next calls [`insert`]: the cache holds an `Arc` to the arena.
#[inline(always)]
pub(super) fn lookup(resource: u64, key: StreamKey) -> Option<*const Arena> {
    CACHE
        .try_with(|cache| {
            let cache = cache.try_borrow().ok()?;
            match cache.first() {
                Some(e) if e.resource == resource && e.key == key => Some(Arc::as_ptr(&e.arena)),
                _ => None,
            }
        })
        .ok()
        .flatten()
        .or_else(|| lookup_further(resource, key))
}

/// Looks past the first entry and moves a hit to the front.
#[cold]
#[inline(never)]
fn lookup_further(resource: u64, key: StreamKey) -> Option<*const Arena> {
    CACHE
        .try_with(|cache| {
            let mut cache = cache.try_borrow_mut().ok()?;
            let i = cache.iter().position(|e| e.resource == resource && e.key == key)?;
            cache.swap(0, i);
            Some(Arc::as_ptr(&cache[0].arena))
        })
        .ok()
        .flatten()
}

/// Caches `arena` as the calling thread's arena for `key` of `resource`. Entries whose resource is
/// gone (only the cache holds the arena) leave now. Without effect while the thread's locals are
/// torn down.
pub(super) fn insert(resource: u64, key: StreamKey, arena: &Arc<Arena>) {
    let _ = CACHE.try_with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return;
        };
        cache.retain(|e| Arc::strong_count(&e.arena) > 1);
        cache.truncate(CAPACITY - 1);
        cache.insert(0, Entry { resource, key, arena: arena.clone() });
    });
}
