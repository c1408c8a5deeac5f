//! The pool's invariants, checked for tests and debugging.

use super::PoolMemoryResource;
use crate::resource::MemoryResource;

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Checks the pool's internal invariants; for tests and debugging.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        // One lock at a time (shard locks are taken before the segment map's elsewhere).
        let mut tiled = Vec::with_capacity(self.shards.len());
        for (i, shard) in self.shards.iter().enumerate() {
            let core = shard.0.lock();
            core.check_invariants().map_err(|e| format!("shard {i}: {e}"))?;
            tiled.push(core.pool_size());
        }
        let segments = self.segments.read();
        for (i, &bytes) in tiled.iter().enumerate() {
            if segments.bytes_of(i) != bytes {
                return Err(format!(
                    "shard {i} tiles {bytes} bytes but owns {} in the segment map",
                    segments.bytes_of(i)
                ));
            }
        }
        let total: usize = tiled.iter().sum();
        let captured = self.captures.check_invariants()?;
        // A chunk's bytes past its last 256-byte multiple are never handed out.
        let (listed, usable) = self.growth.listed_bytes();
        let upstream = listed + captured;
        if total != usable || upstream != self.pool_size() {
            return Err(format!(
                "shards tile {total} bytes, upstream chunks hold {upstream}, pool size says {}",
                self.pool_size()
            ));
        }
        Ok(())
    }
}
