//! Untyped storage shared by the typed buffers: one allocation from a resource, the stream it is
//! ordered on, the device it belongs to, and the byte-level copies and fills the typed buffers are
//! made of.
//!
//! The device current when the storage is made is recorded, and made current again (a
//! [`DeviceGuard`]) for every driver call the storage makes afterwards (the free, copies, the
//! events that order streams), as RMM's `device_buffer` does: storage made on device 0 and used
//! while device 1 is current still allocates, copies and frees on device 0. Where its device is
//! already current that costs one current-device query.

use crate::device::{DeviceGuard, DeviceId};
use crate::driver::{self, DevicePtr};
use crate::error::Result;
use crate::event::CudaEvent;
use crate::resource::SharedResource;
use crate::stream::CudaStreamView;

/// `bytes` bytes from `resource`, freed on `stream` when dropped. Zero bytes allocate nothing.
///
/// Memory of a resource that kernels cannot reach (a host resource) is copied and filled by the
/// CPU, synchronously; everything else goes through the driver, ordered on a stream.
pub(crate) struct RawBuffer<'s> {
    resource: SharedResource,
    ptr: usize,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView<'s>,
    host_only: bool,
    /// The device current when it was made ([`DeviceId::NONE`] for host memory or without a driver).
    device: DeviceId,
}

impl<'s> RawBuffer<'s> {
    /// Allocates `bytes` from `resource` for use on `stream`, on the current device (which the
    /// storage records).
    pub(crate) fn allocate(
        resource: SharedResource,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'s>,
    ) -> Result<Self> {
        let host_only = !resource.is_device_accessible();
        let device = if host_only { DeviceId::NONE } else { DeviceId::current_or_none()? };
        Self::allocate_here(device, resource, bytes, alignment, stream)
    }

    /// Allocates `bytes` from `resource` for use on `stream`; `device` is current (or NONE) and
    /// the storage records it.
    fn allocate_here(
        device: DeviceId,
        resource: SharedResource,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'s>,
    ) -> Result<Self> {
        let host_only = !resource.is_device_accessible();
        let ptr = if bytes == 0 { 0 } else { resource.allocate(bytes, alignment, stream)? as usize };
        if host_only && bytes > 0 {
            // Host memory fresh from an allocator is uninitialised to Rust; reading it back into a
            // value would be undefined, so it starts zeroed (device memory is written by the driver).
            // SAFETY: a resource that is not device accessible hands out host memory, `bytes` of it
            // at `ptr`, that no one else uses (`MemoryResource`'s contract); nothing references it yet.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
        }
        Ok(RawBuffer { resource, ptr, bytes, alignment, stream, host_only, device })
    }

    /// New storage of `bytes` from this storage's resource, on `stream`, on this storage's device
    /// whichever device is current (for a reallocation or a copy).
    pub(crate) fn allocate_like(&self, bytes: usize, stream: CudaStreamView<'s>) -> Result<Self> {
        let _on_device = self.on_device()?;
        Self::allocate_here(self.device, self.resource.clone(), bytes, self.alignment, stream)
    }

    /// Makes this storage's device current until the guard is dropped (nothing for host memory).
    pub(crate) fn on_device(&self) -> Result<DeviceGuard> {
        DeviceGuard::new(self.device)
    }

    /// The device the storage belongs to ([`DeviceId::NONE`] for host memory or without a driver).
    pub(crate) fn device(&self) -> DeviceId {
        self.device
    }

    /// The start of the allocation; 0 when it is empty.
    pub(crate) fn ptr(&self) -> usize {
        self.ptr
    }

    /// Bytes allocated.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The resource the memory came from.
    pub(crate) fn resource(&self) -> &SharedResource {
        &self.resource
    }

    /// The stream the memory is freed on.
    pub(crate) fn stream(&self) -> CudaStreamView<'s> {
        self.stream
    }

    /// True when the CPU copies and fills this memory (its resource is not device-accessible).
    pub(crate) fn host_only(&self) -> bool {
        self.host_only
    }

    /// Makes `stream` the stream the memory is used and freed on. Work later enqueued on `stream`
    /// first waits for the work already enqueued on the old one, so that a free on the new stream
    /// never lets the memory be reused while the old stream may still touch it.
    pub(crate) fn set_stream(&mut self, stream: CudaStreamView<'s>) -> Result<()> {
        if !self.host_only && self.bytes > 0 {
            let _on_device = self.on_device()?;
            order_after(stream, self.stream)?;
        }
        self.stream = stream;
        Ok(())
    }

    /// Makes work enqueued on `stream` from now on see the work enqueued on the buffer's stream
    /// so far, for a read on another stream that the caller waits for.
    pub(crate) fn order_use_on(&self, stream: CudaStreamView) -> Result<()> {
        if !self.host_only && self.bytes > 0 {
            let _on_device = self.on_device()?;
            order_after(stream, self.stream)?;
        }
        Ok(())
    }

    /// Copies `n` bytes from host memory at `src` to offset `at`, on `stream`.
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes until `stream` has run the copy (for pageable host
    /// memory the copy has read it when this returns), and `at + n <= self.bytes()`.
    pub(crate) unsafe fn write_from_host(
        &self,
        at: usize,
        src: *const u8,
        n: usize,
        stream: CudaStreamView,
    ) -> Result<()> {
        debug_assert!(at + n <= self.bytes);
        if n == 0 {
            return Ok(());
        }
        if self.host_only {
            // SAFETY: the caller keeps `src` readable for `n` bytes; `at + n` is inside this host
            // block (the resource's contract makes it host memory of `bytes` bytes), which `src`
            // cannot overlap (it is borrowed mutably by the caller).
            unsafe { std::ptr::copy_nonoverlapping(src, (self.ptr + at) as *mut u8, n) };
            return Ok(());
        }
        let _on_device = self.on_device()?;
        let (dst, src) = (DevicePtr::new(self.ptr + at), DevicePtr::from_ptr(src));
        // SAFETY: the caller keeps `src` readable for `n` bytes until the copy has run; `at + n` is
        // inside this block, which `src` cannot overlap (it is borrowed mutably by the caller).
        unsafe { driver::memcpy_async(dst, src, n, stream.stream_handle()) }
    }

    /// Copies `n` bytes at offset `at` to host memory at `dst`, on `stream`.
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes, and neither read nor written by anything else, until
    /// `stream` has run the copy; `at + n <= self.bytes()`.
    pub(crate) unsafe fn read_to_host(&self, at: usize, dst: *mut u8, n: usize, stream: CudaStreamView) -> Result<()> {
        debug_assert!(at + n <= self.bytes);
        if n == 0 {
            return Ok(());
        }
        if self.host_only {
            // SAFETY: the caller owns `dst` for `n` bytes; the source range is inside this host
            // block (the resource's contract), which `dst` cannot overlap.
            unsafe { std::ptr::copy_nonoverlapping((self.ptr + at) as *const u8, dst, n) };
            return Ok(());
        }
        let _on_device = self.on_device()?;
        let (dst, src) = (DevicePtr::from_ptr(dst), DevicePtr::new(self.ptr + at));
        // SAFETY: the caller owns `dst` for `n` bytes until the copy has run; the source range is
        // inside this block, which `dst` cannot overlap.
        unsafe { driver::memcpy_async(dst, src, n, stream.stream_handle()) }
    }

    /// Copies `n` bytes from offset `from` of `src` to offset `at` of `self`, on `stream`. The two
    /// must be different allocations.
    pub(crate) fn copy_from(
        &self,
        at: usize,
        src: &RawBuffer<'_>,
        from: usize,
        n: usize,
        stream: CudaStreamView,
    ) -> Result<()> {
        assert!(at + n <= self.bytes && from + n <= src.bytes, "copy range outside the buffers");
        if n == 0 {
            return Ok(());
        }
        if self.host_only && src.host_only {
            // SAFETY: both ranges lie inside live host blocks (asserted above; host memory by their
            // resources' contract), and two live blocks never overlap (the same contract; the
            // callers copy into a fresh block).
            unsafe { std::ptr::copy_nonoverlapping((src.ptr + from) as *const u8, (self.ptr + at) as *mut u8, n) };
            return Ok(());
        }
        let _on_device = self.on_device()?;
        let (dst, src) = (DevicePtr::new(self.ptr + at), DevicePtr::new(src.ptr + from));
        // SAFETY: both ranges lie inside live blocks (asserted above) that stay live until the
        // copy has run (a block is freed on a stream ordered after it), and two live blocks never
        // overlap (the resources' contract; the callers copy into a fresh block).
        unsafe { driver::memcpy_async(dst, src, n, stream.stream_handle()) }
    }

    /// Sets `n` bytes at offset `at` to `value`, on `stream`.
    pub(crate) fn fill(&self, at: usize, n: usize, value: u8, stream: CudaStreamView) -> Result<()> {
        assert!(at + n <= self.bytes, "fill range outside the buffer");
        if n == 0 {
            return Ok(());
        }
        if self.host_only {
            // SAFETY: the range lies inside this live host block (asserted above; host memory by
            // the resource's contract).
            unsafe { std::ptr::write_bytes((self.ptr + at) as *mut u8, value, n) };
            return Ok(());
        }
        let _on_device = self.on_device()?;
        // SAFETY: the range lies inside this live block (asserted above), which stays live until
        // the fill has run (it is freed on a stream ordered after it).
        unsafe { driver::memset_d8_async(DevicePtr::new(self.ptr + at), value, n, stream.stream_handle()) }
    }

    /// Blocks until `stream` has run the work enqueued on it (nothing to wait for on host memory
    /// or when nothing is allocated: no copy was enqueued).
    pub(crate) fn wait(&self, stream: CudaStreamView) -> Result<()> {
        if self.host_only || self.bytes == 0 {
            Ok(())
        } else {
            stream.synchronize()
        }
    }

    /// Frees the memory now, on its stream with its device current, and reports the outcome;
    /// afterwards the buffer is empty. A failed free leaks rather than risking a second free;
    /// when its device cannot be made current nothing is freed yet (a later `free` or the drop
    /// tries again).
    pub(crate) fn free(&mut self) -> Result<()> {
        if self.bytes == 0 {
            return Ok(());
        }
        let _on_device = self.on_device()?;
        let (ptr, bytes) = (std::mem::take(&mut self.ptr), std::mem::take(&mut self.bytes));
        self.resource.deallocate(ptr as *mut u8, bytes, self.alignment, self.stream)
    }
}

impl Drop for RawBuffer<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.free() {
            super::record_drop_error(e);
        }
    }
}

/// Makes work enqueued on `later` from now on wait for the work enqueued on `earlier` so far.
pub(crate) fn order_after(later: CudaStreamView, earlier: CudaStreamView) -> Result<()> {
    if later == earlier {
        return Ok(());
    }
    let event = CudaEvent::for_stream(earlier)?;
    event.record(earlier)?;
    event.wait_on(later)
    // The event may be destroyed at once: the driver keeps what a pending wait needs.
}
