//! The driver's handles as types: a device pointer, a stream, an event, a memory pool, a context
//! and a device ordinal each have their own, so that a call cannot be handed the wrong one.
//!
//! Each is a `#[repr(transparent)]` copy of the raw value (the pointer-like handles as an integer,
//! so that they are `Send`, `Sync` and hashable): making or reading one costs nothing. A handle
//! says nothing about whether the object it names is alive; the functions that free or release
//! one are `unsafe` and say what the caller promises.

use cudarc::driver::sys;

/// A CUDA device ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct DeviceId(pub i32);

impl DeviceId {
    /// No device (RMM's `cuda_device_id{-1}`): what a buffer records where no driver is
    /// installed; a [`DeviceGuard`](crate::device::DeviceGuard) for it changes nothing.
    pub const NONE: DeviceId = DeviceId(-1);

    /// The ordinal.
    pub const fn value(self) -> i32 {
        self.0
    }
}

/// An address the driver can address (`CUdeviceptr`): device, managed, or, with unified
/// addressing, pinned or pageable host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub(crate) struct DevicePtr(usize);

impl DevicePtr {
    /// The address `addr`.
    #[inline]
    pub(crate) const fn new(addr: usize) -> Self {
        DevicePtr(addr)
    }

    /// The address of `ptr`.
    #[inline]
    pub(crate) fn from_ptr<T>(ptr: *const T) -> Self {
        DevicePtr(ptr as usize)
    }

    /// The address as an integer.
    #[inline]
    pub(crate) const fn addr(self) -> usize {
        self.0
    }

    /// The address as a pointer.
    #[inline]
    pub(crate) fn as_mut_ptr(self) -> *mut u8 {
        self.0 as *mut u8
    }

    /// The address as the driver takes it.
    #[inline]
    pub(super) const fn raw(self) -> sys::CUdeviceptr {
        self.0 as sys::CUdeviceptr
    }
}

/// A stream (`CUstream`, the same type as `cudaStream_t`), including the special handles of the
/// default streams (0, `cudaStreamLegacy`, `cudaStreamPerThread`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub(crate) struct StreamHandle(usize);

impl StreamHandle {
    /// The stream whose handle is `handle`.
    #[inline]
    pub(crate) const fn new(handle: usize) -> Self {
        StreamHandle(handle)
    }

    /// The handle as an integer.
    #[inline]
    pub(crate) const fn value(self) -> usize {
        self.0
    }

    /// The handle as the driver takes it.
    #[inline]
    pub(super) fn raw(self) -> sys::CUstream {
        self.0 as sys::CUstream
    }
}

/// An event (`CUevent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub(crate) struct EventHandle(usize);

impl EventHandle {
    /// The event `event`, as the driver wrote it.
    #[inline]
    pub(super) fn from_raw(event: sys::CUevent) -> Self {
        EventHandle(event as usize)
    }

    /// The handle as the driver takes it.
    #[inline]
    pub(super) fn raw(self) -> sys::CUevent {
        self.0 as sys::CUevent
    }
}

/// A memory pool of the stream-ordered allocator (`CUmemoryPool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub(crate) struct MemPoolHandle(usize);

impl MemPoolHandle {
    /// The pool `pool`, as the driver or a caller of the public API hands it over.
    #[inline]
    pub(crate) fn from_raw(pool: sys::CUmemoryPool) -> Self {
        MemPoolHandle(pool as usize)
    }

    /// The handle as the driver takes it.
    #[inline]
    pub(crate) fn raw(self) -> sys::CUmemoryPool {
        self.0 as sys::CUmemoryPool
    }

    /// True for the null handle (no pool).
    #[inline]
    pub(crate) const fn is_null(self) -> bool {
        self.0 == 0
    }
}

/// A context (`CUcontext`), never null. Opaque outside the crate: only the crate makes one and
/// hands it to the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct ContextHandle(usize);

impl ContextHandle {
    /// The context `ctx`, or `None` for the null handle.
    #[inline]
    pub(crate) fn from_raw(ctx: sys::CUcontext) -> Option<Self> {
        (!ctx.is_null()).then_some(ContextHandle(ctx as usize))
    }

    /// A made-up context for values built in tests that never reach the driver.
    #[cfg(test)]
    pub(crate) const fn for_tests(value: usize) -> Self {
        ContextHandle(value)
    }

    /// The handle as an integer (to compare with a handle from elsewhere, or to print).
    #[inline]
    pub(crate) const fn value(self) -> usize {
        self.0
    }

    /// The handle as the driver takes it.
    #[inline]
    pub(super) fn raw(self) -> sys::CUcontext {
        self.0 as sys::CUcontext
    }
}

impl std::fmt::LowerHex for ContextHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

impl std::fmt::LowerHex for MemPoolHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}
