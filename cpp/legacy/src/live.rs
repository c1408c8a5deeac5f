//! The live-allocation table: every pointer `rmmAlloc` / `rmmRealloc` handed out, with its size and
//! the resource it came from, since `rmmFree` is given neither.

use parking_lot::Mutex;
use rmm::resource::SharedResource;
use std::collections::BTreeMap;

/// One live allocation.
pub(crate) struct Live {
    /// The size asked for.
    pub bytes: usize,
    /// The resource that allocated it; it is freed there even if the current resource changed.
    pub resource: SharedResource,
}

/// Live allocations by start address, ordered so that an interior pointer finds its block.
#[derive(Default)]
pub(crate) struct LiveTable {
    blocks: Mutex<BTreeMap<usize, Live>>,
}

impl LiveTable {
    /// Records an allocation.
    pub fn insert(&self, ptr: usize, live: Live) {
        self.blocks.lock().insert(ptr, live);
    }

    /// Takes the allocation that starts at `ptr` out of the table; `None` for any other pointer.
    /// Taking it first makes two threads freeing one pointer safe: only one gets it.
    pub fn take(&self, ptr: usize) -> Option<Live> {
        self.blocks.lock().remove(&ptr)
    }

    /// The start of the live allocation that contains `ptr` (its last byte included).
    pub fn containing(&self, ptr: usize) -> Option<usize> {
        let blocks = self.blocks.lock();
        let (&start, live) = blocks.range(..=ptr).next_back()?;
        (ptr - start < live.bytes).then_some(start)
    }

    /// How many allocations are live.
    pub fn len(&self) -> usize {
        self.blocks.lock().len()
    }

    /// Empties the table, returning what was in it.
    pub fn drain(&self) -> Vec<(usize, Live)> {
        std::mem::take(&mut *self.blocks.lock()).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm::resource::HostMemoryResource;
    use std::sync::Arc;

    #[test]
    fn take_and_containing_find_only_live_blocks() {
        let r: SharedResource = Arc::new(HostMemoryResource::new());
        let t = LiveTable::default();
        t.insert(1000, Live { bytes: 100, resource: r.clone() });
        t.insert(2000, Live { bytes: 1, resource: r });
        assert_eq!(t.containing(1000), Some(1000));
        assert_eq!(t.containing(1099), Some(1000));
        assert_eq!(t.containing(1100), None);
        assert_eq!(t.containing(999), None);
        assert_eq!(t.containing(2000), Some(2000));
        assert!(t.take(1050).is_none());
        assert_eq!(t.len(), 2);
        assert_eq!(t.take(1000).map(|l| l.bytes), Some(100));
        assert!(t.take(1000).is_none());
        assert_eq!(t.drain().len(), 1);
        assert_eq!(t.len(), 0);
    }
}
