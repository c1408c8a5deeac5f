//! The pool's invariants (listed at the top of `coalescing_pool.rs`), checked by tests and the
//! fuzz targets after every call.

use super::{CoalescingPool, CACHE_CLASSES};
use crate::block::{BlockId, Owner, NIL};

impl CoalescingPool {
    /// Checks every invariant listed at the top of this file; for tests. Returns a description of
    /// the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        if !self.maybe_wanted && self.sets.iter().any(|s| s.wanted) {
            return Err("a set is asked to publish but the pool says none ever was".into());
        }
        let mut free_total = 0;
        let mut cached = 0;
        let mut handed_out = 0;
        // The first block of every chain, by address: one pass, so the check is not quadratic in a
        // pool of many chunks.
        let mut firsts: Vec<(usize, BlockId)> =
            self.blocks.iter_live().filter(|(_, b)| b.prev_phys == NIL).map(|(id, b)| (b.addr, id)).collect();
        firsts.sort_unstable();
        for &(addr, size) in &self.chunks {
            let first = firsts.binary_search_by_key(&addr, |&(a, _)| a).ok().map(|i| firsts[i]);
            let Some((_, mut id)) = first else {
                return Err(format!("chunk {addr:#x} has no first block"));
            };
            let mut at = addr;
            let mut prev = NIL;
            loop {
                let b = self.blocks.get(id);
                if b.addr != at || b.prev_phys != prev {
                    return Err(format!("broken physical chain at {at:#x}"));
                }
                if b.owner() == Owner::Cached {
                    free_total += b.size();
                    cached += 1;
                    if self.allocated.get(b.addr, &self.blocks) != Some(id) {
                        return Err(format!("cached block {:#x} missing from the address map", b.addr));
                    }
                } else if b.is_free() {
                    free_total += b.size();
                    if b.next_phys != NIL && self.blocks.get(b.next_phys).owner() == b.owner() {
                        return Err(format!("adjacent free blocks at {:#x} not merged", b.addr));
                    }
                } else if self.allocated.get(b.addr, &self.blocks) != Some(id) {
                    return Err(format!("allocated block {:#x} missing from the address map", b.addr));
                } else {
                    handed_out += 1;
                }
                at = b.end();
                prev = id;
                if b.next_phys == NIL {
                    break;
                }
                id = b.next_phys;
            }
            if at != addr + size {
                return Err(format!("chunk {addr:#x} not tiled: ends at {at:#x}"));
            }
        }
        let listed: usize = self.sets.iter().map(|s| s.free_bytes).sum();
        if listed != free_total {
            return Err(format!("free lists hold {listed} bytes, blocks say {free_total}"));
        }
        let mut in_caches = 0;
        for s in &self.sets {
            for units in 1..CACHE_CLASSES {
                let mut id = s.cache[units];
                let mut n = 0;
                while id != NIL {
                    let b = self.blocks.get(id);
                    if b.owner() != Owner::Cached || b.units as usize != units {
                        return Err(format!("block {:#x} in the {units}-granule cache is not cached there", b.addr));
                    }
                    n += 1;
                    id = b.next_free;
                }
                if n != usize::from(s.cache_len[units]) {
                    return Err(format!(
                        "{units}-granule cache holds {n} blocks, its count says {}",
                        s.cache_len[units]
                    ));
                }
                in_caches += n;
            }
        }
        if in_caches != cached || cached != self.cached_blocks {
            return Err(format!("{cached} cached blocks, {in_caches} in caches, count {}", self.cached_blocks));
        }
        // Nothing else is in the address map: no entry of a block merged or gone.
        if self.allocated.len() != handed_out + cached {
            return Err(format!(
                "the address map holds {} entries for {handed_out} blocks handed out and {cached} cached",
                self.allocated.len()
            ));
        }
        let private_sets = self.sets.iter().filter(|s| s.key.is_stream() && s.published_by.is_none()).count();
        if private_sets != self.stream_count {
            return Err(format!("{private_sets} private sets of streams, count {}", self.stream_count));
        }
        self.check_set_links()
    }
}
