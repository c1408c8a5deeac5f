//! Where a stream short of free blocks of its own finds memory it may take: fresh memory, its
//! own sets, or another stream's published set.

use super::{search_size, CoalescingPool, SetId, StreamKey, GRANULE_SHIFT};
use crate::size_class::{map_ceil, Class};

impl CoalescingPool {
    /// A set of free lists other than `set`'s private ones that holds a fitting block and may hand
    /// it over: fresh memory or `set`'s own published set first, else another stream's published
    /// set (the caller must then wait for that stream's capture). Other streams' private sets with
    /// a fitting block are asked to publish (`wanted`), so a later request finds them ready. With
    /// `ordered == false` (memory no device uses) every set qualifies.
    pub fn find_donor(&mut self, set: SetId, size: usize, align: usize, ordered: bool) -> Option<SetId> {
        let key = self.sets[set].key;
        self.find_set(Some(set), key, map_ceil(search_size(size, align) >> GRANULE_SHIFT), ordered, true)
    }

    /// The sets whose free blocks `key` may use without waiting for another stream: fresh memory
    /// and `key`'s own sets (private or published), or every set where `ordered` is false.
    pub fn sets_usable_at_once(&self, key: StreamKey, ordered: bool) -> Vec<SetId> {
        self.set_ids()
            .filter(|&i| !ordered || self.sets[i].key == StreamKey::FRESH || self.sets[i].key == key)
            .collect()
    }

    /// Like [`find_donor`](Self::find_donor) for a stream that may have no free lists here (a
    /// request from another shard, whose own sets here another thread filled): fresh memory or a
    /// set of `key` first, then (with `waiting_too`) another stream's published set, holding a
    /// block of at least `min` bytes. With `waiting_too`, private sets with such a block are asked
    /// to publish.
    pub fn find_shared_set(&mut self, key: StreamKey, min: usize, ordered: bool, waiting_too: bool) -> Option<SetId> {
        self.flush_caches();
        self.find_set(None, key, map_ceil(min >> GRANULE_SHIFT), ordered, waiting_too)
    }

    /// The search behind both: a set other than `skip` with a block of class `c` or above; fresh
    /// memory, a set of `key` or (unordered) any set at once, else (`waiting_too`) the first
    /// published set of another stream, asking private sets on the way to publish.
    fn find_set(
        &mut self,
        skip: Option<SetId>,
        key: StreamKey,
        c: Class,
        ordered: bool,
        waiting_too: bool,
    ) -> Option<SetId> {
        let mut found = None;
        for (i, s) in self.sets.iter_mut().enumerate() {
            let i = SetId::at(i);
            if Some(i) == skip || s.free.class_at_or_above(c).is_none() {
                continue;
            }
            if !ordered || s.key == StreamKey::FRESH || s.key == key {
                return Some(i);
            }
            if !waiting_too {
                continue;
            }
            // A set waiting for a synchronisation can go to no stream before it.
            if s.key.is_sealed() {
                continue;
            }
            if s.published_by.is_some() || (s.key.is_retired() && !s.key.waits_for_sync()) {
                found.get_or_insert(i);
            } else if s.key.is_stream() {
                s.wanted = true;
                self.maybe_wanted = true;
            }
        }
        found
    }
}
