//! The fixed-size resource's side of the threads' magazines (see
//! [`rmm_algorithms::fixed_size::magazine`]): finding the calling thread's, filling it from the stream's
//! own blocks, and taking the blocks of every thread's magazines back into the shared sets.

use super::FixedSizeMemoryResource;
use crate::resource::MemoryResource;
use rmm_algorithms::fixed_size::magazine::{self, Magazine};
use rmm_algorithms::fixed_size::FixedSizeFreeList;
use rmm_algorithms::{StreamIdentity, StreamKey};
use std::sync::Arc;

impl<U: MemoryResource> FixedSizeMemoryResource<U> {
    /// True when the stream of `slot` may keep its blocks in a magazine: its set is known to be
    /// filled by the stream its key names now, and no other stream waits for it to publish.
    pub(super) fn serves_at_once(&self, st: &FixedSizeFreeList, slot: usize) -> bool {
        !self.ordered || (st.sets.identity(slot) == StreamIdentity::Trusted && !st.sets.is_wanted(slot))
    }

    /// The calling thread's magazine for `key`, made and registered if it has none (or only a
    /// retired one) and the stream may keep blocks in one (a stream whose set is not known to be
    /// the stream's its key names now gets none); a magazine another stream wanted gives its
    /// blocks to the stream's set first, where this call publishes them. `None` when magazines
    /// are off or the thread is exiting.
    pub(super) fn magazine_of(&self, st: &mut FixedSizeFreeList, key: StreamKey) -> Option<Arc<Magazine>> {
        if self.magazine_capacity == 0 {
            return None;
        }
        let m = match magazine::find(self.id, key) {
            Some(m) if !m.state.lock().retired => m,
            _ => {
                let trusted = st.sets.find(key).is_some_and(|slot| st.sets.identity(slot) == StreamIdentity::Trusted);
                if self.ordered && !trusted {
                    return None;
                }
                let m = Arc::new(Magazine::new(key));
                if !magazine::insert(self.id, key, &m) {
                    return None;
                }
                let mut magazines = self.shared.magazines.lock();
                // Magazines of exited threads that hold nothing go now.
                magazines.retain(|m| Arc::strong_count(m) > 1 || m.held() > 0);
                magazines.push(m.clone());
                m
            }
        };
        let mut ms = m.state.lock();
        if ms.wanted {
            ms.wanted = false;
            let slot = st.sets.slot_of(key);
            for b in ms.blocks.drain(..) {
                st.sets.push(slot, b);
            }
        }
        drop(ms);
        Some(m)
    }

    /// Fills the magazine `m` of `key` to half its capacity from the stream's own blocks, where
    /// the stream may keep them there.
    pub(super) fn refill(&self, st: &mut FixedSizeFreeList, m: &Magazine, key: StreamKey) {
        let Some(slot) = st.sets.find(key) else { return };
        if !self.serves_at_once(st, slot) {
            return;
        }
        let mut ms = m.state.lock();
        if ms.retired {
            return;
        }
        ms.usable = true;
        let want = self.magazine_capacity.div_ceil(2);
        while ms.blocks.len() < want {
            let Some(b) = st.sets.pop_own(slot) else { break };
            ms.blocks.push(b);
        }
    }

    /// Takes the blocks out of every thread's magazine but the calling thread's stream's own use:
    /// blocks of `key` (from other threads) join its set, usable at once; unordered memory joins
    /// the fresh set; other streams' blocks join their streams' sets, which are asked to publish
    /// (or, with `everything`, all join their sets, for a synchronisation to make fresh). Forgets
    /// the empty magazines of threads that exited. True when a block became usable by `key`.
    pub(super) fn reclaim(&self, st: &mut FixedSizeFreeList, key: StreamKey, everything: bool) -> bool {
        let mut usable = false;
        let mut magazines = self.shared.magazines.lock();
        magazines.retain(|m| {
            let mut ms = m.state.lock();
            if !ms.blocks.is_empty() {
                if !self.ordered {
                    st.sets.add_fresh(ms.blocks.drain(..));
                    usable = true;
                } else {
                    let slot = st.sets.slot_of(m.key);
                    for b in ms.blocks.drain(..) {
                        st.sets.push(slot, b);
                    }
                    if m.key == key && !everything {
                        usable = true;
                    } else {
                        st.sets.want(slot);
                        ms.wanted = true;
                    }
                }
            }
            Arc::strong_count(m) > 1
        });
        usable
    }
}
