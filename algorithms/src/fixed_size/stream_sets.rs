//! The free blocks of a fixed-size resource, by the stream that freed them (RMM's per-stream free
//! lists of `stream_ordered_memory_resource`).
//!
//! Each stream has a *private* stack (blocks only it may reuse at once) and a *published* one
//! (blocks covered by a capture of its work: another stream may take them after waiting for it).
//! Fresh memory, which no stream has used, sits under [`StreamKey::FRESH`] and any stream takes
//! from it at once. Blocks of retired streams sit under their retired keys, all published.

use crate::{StreamIdentity, StreamKey};

/// One stream's free blocks.
struct Set {
    key: StreamKey,
    identity: StreamIdentity,
    private: Vec<usize>,
    published: Vec<usize>,
    /// Another stream found nothing usable and asked this one to publish at its next call.
    wanted: bool,
}

impl Set {
    fn new(key: StreamKey) -> Self {
        Set { key, identity: StreamIdentity::Unknown, private: Vec::new(), published: Vec::new(), wanted: false }
    }

    fn len(&self) -> usize {
        self.private.len() + self.published.len()
    }
}

/// The sets of free blocks; slot 0 is always the set of fresh memory.
pub struct StreamSets {
    sets: Vec<Set>,
    /// Sets of live streams (not fresh, retired or sealed): more than one means the streams share
    /// the blocks, and frees publish at once, as RMM records an event on every free.
    streams: usize,
}

impl Default for StreamSets {
    fn default() -> Self {
        Self::new()
    }
}

/// The slot of the fresh set.
pub const FRESH_SLOT: usize = 0;

impl StreamSets {
    /// Only an empty fresh set.
    pub fn new() -> Self {
        StreamSets { sets: vec![Set::new(StreamKey::FRESH)], streams: 0 }
    }

    /// The slot of `key`'s set, if it has one.
    #[inline]
    pub fn find(&self, key: StreamKey) -> Option<usize> {
        self.sets.iter().position(|s| s.key == key)
    }

    /// The slot of `key`'s set, made (empty, identity unknown) if it has none.
    #[inline]
    pub fn slot_of(&mut self, key: StreamKey) -> usize {
        match self.find(key) {
            Some(slot) => slot,
            None => self.add(key),
        }
    }

    #[cold]
    fn add(&mut self, key: StreamKey) -> usize {
        if key.is_stream() {
            self.streams += 1;
        }
        self.sets.push(Set::new(key));
        self.sets.len() - 1
    }

    /// The key of the set in `slot`.
    #[inline]
    pub fn key_of(&self, slot: usize) -> StreamKey {
        self.sets[slot].key
    }

    /// The identity of the stream that filled the set in `slot` (see `StreamOrder::identity`).
    #[inline]
    pub fn identity(&self, slot: usize) -> StreamIdentity {
        self.sets[slot].identity
    }

    /// Notes which stream fills the set in `slot`.
    #[inline]
    pub fn set_identity(&mut self, slot: usize, identity: StreamIdentity) {
        self.sets[slot].identity = identity;
    }

    /// Whether another stream asked the set in `slot` to publish.
    #[inline]
    pub fn is_wanted(&self, slot: usize) -> bool {
        self.sets[slot].wanted
    }

    /// Asks the set in `slot` to publish at its stream's next call.
    pub fn want(&mut self, slot: usize) {
        self.sets[slot].wanted = true;
    }

    /// True when more than one live stream has a set.
    #[inline]
    pub fn shared_by_streams(&self) -> bool {
        self.streams > 1
    }

    /// A block the stream of `slot` may use at once: its private blocks first, then its published.
    #[inline]
    pub fn pop_own(&mut self, slot: usize) -> Option<usize> {
        let set = &mut self.sets[slot];
        set.private.pop().or_else(|| set.published.pop())
    }

    /// A block of fresh memory.
    #[inline]
    pub fn pop_fresh(&mut self) -> Option<usize> {
        self.sets[FRESH_SLOT].private.pop()
    }

    /// A freed block joins the private blocks of `slot`.
    #[inline]
    pub fn push(&mut self, slot: usize, block: usize) {
        self.sets[slot].private.push(block);
    }

    /// Blocks join the fresh set.
    pub fn add_fresh(&mut self, blocks: impl IntoIterator<Item = usize>) {
        self.sets[FRESH_SLOT].private.extend(blocks);
    }

    /// The private blocks of `slot` are covered by a capture just made: they become published.
    pub fn publish(&mut self, slot: usize) {
        let set = &mut self.sets[slot];
        set.wanted = false;
        let private = std::mem::take(&mut set.private);
        set.published.extend_from_slice(&private);
        set.private = private;
        set.private.clear();
    }

    /// Forgets a request to publish (the capture failed; the next request asks again).
    pub fn clear_wanted(&mut self, slot: usize) {
        self.sets[slot].wanted = false;
    }

    /// True when the set in `slot` has published blocks.
    #[inline]
    pub fn has_published(&self, slot: usize) -> bool {
        !self.sets[slot].published.is_empty()
    }

    /// True when the set in `slot` has private blocks.
    #[inline]
    pub fn has_private(&self, slot: usize) -> bool {
        !self.sets[slot].private.is_empty()
    }

    /// Moves the published blocks of `from` to the private blocks of `to` (whose stream has waited
    /// for their capture); with `all`, the private ones too (memory that needs no waiting).
    pub fn take(&mut self, from: usize, to: usize, all: bool) {
        debug_assert_ne!(from, to);
        let mut moved = std::mem::take(&mut self.sets[from].published);
        if all {
            moved.append(&mut self.sets[from].private);
        }
        self.sets[to].private.append(&mut moved);
    }

    /// Slots other than `slot` that hold free blocks.
    pub fn others_with_blocks(&self, slot: usize) -> Vec<usize> {
        (0..self.sets.len()).filter(|&s| s != slot && self.sets[s].len() > 0).collect()
    }

    /// The set of `key` (a stream about to be destroyed, or found replaced) goes under `retired`,
    /// a key no stream has, all its blocks published under that key's capture. Slots of other sets
    /// do not change.
    pub fn retire_key(&mut self, key: StreamKey, retired: StreamKey) {
        let Some(slot) = self.find(key) else { return };
        if key.is_stream() {
            self.streams -= 1;
        }
        let set = &mut self.sets[slot];
        set.key = retired;
        set.wanted = false;
        set.identity = StreamIdentity::Trusted;
        let mut private = std::mem::take(&mut set.private);
        set.published.append(&mut private);
    }

    /// After a synchronisation of everything: every free block is fresh. Empty sets of retired
    /// streams go.
    pub fn make_all_fresh(&mut self) {
        let mut all = Vec::new();
        for set in &mut self.sets[1..] {
            all.append(&mut set.private);
            all.append(&mut set.published);
            set.wanted = false;
        }
        self.sets[FRESH_SLOT].private.append(&mut all);
        self.prune();
    }

    /// Drops empty sets of keys no stream has (retired, sealed); returns how many remain.
    pub fn prune(&mut self) -> usize {
        let mut i = 1;
        while i < self.sets.len() {
            if !self.sets[i].key.is_stream() && self.sets[i].len() == 0 {
                self.sets.swap_remove(i);
            } else {
                i += 1;
            }
        }
        self.sets.len()
    }

    /// True when some set has the key `key`.
    pub fn has_key(&self, key: StreamKey) -> bool {
        self.find(key).is_some()
    }

    /// Every free block, in no order (for invariant checks).
    pub fn all_blocks(&self) -> impl Iterator<Item = usize> + '_ {
        self.sets.iter().flat_map(|s| s.private.iter().chain(s.published.iter()).copied())
    }

    /// Free blocks in all sets.
    pub fn free_blocks(&self) -> usize {
        self.sets.iter().map(Set::len).sum()
    }

    /// Sets in use, the fresh set included.
    pub fn sets_in_use(&self) -> usize {
        self.sets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_take_retire_and_freshen() {
        let mut s = StreamSets::new();
        s.add_fresh([0x100, 0x200]);
        let a = s.slot_of(StreamKey::of_handle(0x1000));
        let b = s.slot_of(StreamKey::of_handle(0x2000));
        assert!(s.shared_by_streams());
        assert_eq!(s.pop_fresh(), Some(0x200));
        s.push(a, 0x200);
        assert_eq!(s.pop_own(b), None);
        s.publish(a);
        assert!(s.has_published(a) && !s.has_private(a));
        s.take(a, b, false);
        assert_eq!(s.pop_own(b), Some(0x200));
        s.push(a, 0x300);
        s.retire_key(StreamKey::of_handle(0x1000), StreamKey::retired_after_sync(5));
        assert!(!s.shared_by_streams() && s.find(StreamKey::of_handle(0x1000)).is_none());
        assert_eq!(s.others_with_blocks(b), vec![FRESH_SLOT, a]);
        s.make_all_fresh();
        assert_eq!(s.sets_in_use(), 2, "the empty retired set went, the live stream's stayed");
        let mut free: Vec<usize> = s.all_blocks().collect();
        free.sort();
        assert_eq!(free, vec![0x100, 0x300]);
    }
}
