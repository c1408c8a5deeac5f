//! The pool's invariants, checked for tests and debugging.

use super::PoolMemoryResource;
use crate::resource::MemoryResource;

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Checks the pool's internal invariants; for tests and debugging.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let total = self.shards.check_invariants()?;
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
