//! `rmmOptions_t` and `rmmAllocationMode_t`, and what resource they ask for.

use rmm::device::available_device_memory;
use rmm::error::Result;
use rmm::pool::GRANULE;
use rmm::resource::{CudaMemoryResource, ManagedMemoryResource, PoolMemoryResource, SharedResource};
use std::ffi::c_int;
use std::sync::Arc;

use super::codes::RmmError;

/// `rmmAllocationMode_t`: bit flags that may be ORed (`PoolAllocation | CudaManagedMemory` is a
/// pool of managed memory). An integer for the same reason as [`RmmError`].
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RmmAllocationMode(pub c_int);

impl RmmAllocationMode {
    /// `CudaDefaultAllocation`: device memory straight from the driver.
    pub const CUDA_DEFAULT_ALLOCATION: RmmAllocationMode = RmmAllocationMode(0);
    /// `PoolAllocation`: suballocate from a pool.
    pub const POOL_ALLOCATION: RmmAllocationMode = RmmAllocationMode(1);
    /// `CudaManagedMemory`: managed instead of device memory.
    pub const CUDA_MANAGED_MEMORY: RmmAllocationMode = RmmAllocationMode(2);

    fn has(self, flag: RmmAllocationMode) -> bool {
        self.0 & flag.0 != 0
    }
}

/// `rmmOptions_t`, field for field (the layout of the original `rmm.h`, whose last field is a C
/// `bool`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RmmOptions {
    /// The allocation strategy.
    pub allocation_mode: RmmAllocationMode,
    /// Bytes the pool takes at once (pool modes only); 0 means half of the device's total memory.
    pub initial_pool_size: usize,
    /// Record every alloc, realloc and free for `rmmWriteLog` / `rmmGetLog` when not 0.
    ///
    /// The C header declares a `bool`, one byte as here. It is read as a byte because a C caller
    /// can leave any value in it (an uninitialised struct, a `memset`, an `int` assigned through a
    /// cast): a Rust `bool` holding anything but 0 or 1 is undefined behaviour, so it cannot take
    /// the field. Any non-zero byte means true, C's rule; `rmmIsInitialized` writes back 0 or 1.
    pub enable_logging: u8,
}

impl RmmOptions {
    /// Options with `enable_logging` set from a Rust `bool`.
    pub fn new(allocation_mode: RmmAllocationMode, initial_pool_size: usize, enable_logging: bool) -> Self {
        RmmOptions { allocation_mode, initial_pool_size, enable_logging: u8::from(enable_logging) }
    }

    /// Whether the event log records calls: `enable_logging` is not 0.
    pub fn logging_enabled(&self) -> bool {
        self.enable_logging != 0
    }

    /// The same options with `enable_logging` as 0 or 1, the two values a C `bool` may hold: what
    /// the session keeps and `rmmIsInitialized` hands back.
    pub(crate) fn normalized(self) -> Self {
        RmmOptions { enable_logging: u8::from(self.logging_enabled()), ..self }
    }

    /// Checks the options, so that a bad value is refused before anything is built.
    pub(crate) fn validate(&self) -> std::result::Result<(), RmmError> {
        let known = RmmAllocationMode::POOL_ALLOCATION.0 | RmmAllocationMode::CUDA_MANAGED_MEMORY.0;
        if self.allocation_mode.0 & !known != 0 {
            return Err(RmmError::INVALID_ARGUMENT);
        }
        if self.initial_pool_size.checked_next_multiple_of(GRANULE).is_none() {
            return Err(RmmError::INVALID_ARGUMENT);
        }
        Ok(())
    }

    /// Builds the resource the options name. The pool's initial size is rounded up to a multiple
    /// of 256 bytes (the original took any size; the pool here needs whole granules).
    pub(crate) fn make_resource(&self) -> Result<SharedResource> {
        let managed = self.allocation_mode.has(RmmAllocationMode::CUDA_MANAGED_MEMORY);
        if !self.allocation_mode.has(RmmAllocationMode::POOL_ALLOCATION) {
            return Ok(if managed {
                Arc::new(ManagedMemoryResource::new())
            } else {
                Arc::new(CudaMemoryResource::new())
            });
        }
        let size = self.pool_size()?;
        Ok(if managed {
            Arc::new(PoolMemoryResource::new(ManagedMemoryResource::new(), size, None)?)
        } else {
            Arc::new(PoolMemoryResource::new(CudaMemoryResource::new(), size, None)?)
        })
    }

    fn pool_size(&self) -> Result<usize> {
        if self.initial_pool_size != 0 {
            // validate() checked that this does not overflow.
            return Ok(self.initial_pool_size.next_multiple_of(GRANULE));
        }
        let (_, total) = available_device_memory()?;
        Ok(total / 2 / GRANULE * GRANULE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_mode_bits_and_overflowing_sizes_are_refused() {
        let ok = |mode, size| RmmOptions::new(RmmAllocationMode(mode), size, false);
        for mode in 0..4 {
            assert_eq!(ok(mode, 1000).validate(), Ok(()));
        }
        assert_eq!(ok(4, 0).validate(), Err(RmmError::INVALID_ARGUMENT));
        assert_eq!(ok(-1, 0).validate(), Err(RmmError::INVALID_ARGUMENT));
        assert_eq!(ok(1, usize::MAX).validate(), Err(RmmError::INVALID_ARGUMENT));
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn layout_matches_the_c_struct() {
        // enum (int, 4), padding to 8, size_t, bool, padding: 24 bytes, as a C compiler lays it out.
        assert_eq!(std::mem::size_of::<RmmOptions>(), 24);
        assert_eq!(std::mem::offset_of!(RmmOptions, initial_pool_size), 8);
        assert_eq!(std::mem::offset_of!(RmmOptions, enable_logging), 16);
        assert_eq!(std::mem::size_of_val(&RmmOptions::default().enable_logging), 1, "a C bool is one byte");
    }

    #[test]
    fn any_non_zero_logging_byte_is_true_and_normalizes_to_one() {
        // The bytes a C caller may leave in the struct, read as C code lays them out.
        for byte in 0..=u8::MAX {
            let mut raw = [0u8; std::mem::size_of::<RmmOptions>()];
            raw[std::mem::offset_of!(RmmOptions, enable_logging)] = byte;
            // SAFETY: RmmOptions is repr(C) of an i32, a usize and a u8: every bit pattern of its
            // size is a valid value, and read_unaligned needs no alignment of `raw`.
            let o: RmmOptions = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
            assert_eq!(o.logging_enabled(), byte != 0, "byte {byte}");
            assert_eq!(o.normalized().enable_logging, u8::from(byte != 0), "byte {byte}");
        }
    }
}
