//! The buffer's memory: made from a resource (filled from a source or not), grown or shrunk,
//! copied, and ordered after the work of another stream. The mutex rule of the parent module holds
//! here: no call into a resource happens with the state's mutex held.

use super::{DeviceBuffer, State};
use crate::copy::{copy_bytes, sync_if_default, wait_before_release};
use crate::error::IntoPy;
use crate::memory_resource::{resource_object, DeviceMemoryResource};
use crate::stream::Stream;
use parking_lot::Mutex;
use pyo3::prelude::*;
use rmm::event::CudaEvent;
use rmm::{CudaStreamView, DeviceGuard, DeviceId, SharedResource, DEFAULT_ALIGNMENT};

impl DeviceBuffer {
    /// A buffer of `size` bytes from `mr` (the current device resource when `None`) on `stream`,
    /// filled from `src` unless that is null: an address and whether it is a Python host buffer
    /// the caller holds only until this returns (then the copy is waited for on any stream, else
    /// only on the default stream, as in RMM). Inlined so that callers building the Python object
    /// at once (`for_device`) do not copy the struct on the way (measured).
    #[inline(always)]
    pub(super) fn create(
        py: Python<'_>,
        src: Option<(usize, bool)>,
        size: usize,
        stream: Bound<'_, Stream>,
        mr: Option<Bound<'_, DeviceMemoryResource>>,
    ) -> PyResult<Self> {
        // The current device is asked for once: the resource of `mr=None` is that device's.
        let (mr, current) = match mr {
            Some(mr) => (mr.unbind(), None),
            None => {
                let device = DeviceId::current().py()?;
                (resource_object(py, device.value())?, Some(device))
            }
        };
        let (resource, host_only) = (mr.get().resource(), mr.get().is_host_only());
        let device = match (host_only, current) {
            (true, _) => DeviceId::NONE,
            (false, Some(device)) => device,
            (false, None) => DeviceId::current_or_none().py()?,
        };
        // SAFETY: the buffer's state keeps the stream object (so the stream) as long as the view.
        let view = unsafe { stream.get().view().detach() };
        let ptr = allocate(py, resource, size, view)?;
        let state = State { ptr, size, capacity: size, view, stream: stream.unbind() };
        // Built before the copy: if the copy fails, dropping the buffer frees the memory.
        let buffer = DeviceBuffer { mr, device, state: Mutex::new(state) };
        if let Some((src, src_is_host)) = src.filter(|&(src, _)| src != 0 && size != 0) {
            py.detach(|| {
                // SAFETY: `ptr` holds `size` fresh bytes; a host buffer at `src` is held by the
                // caller until this returns, after the wait below; a raw address is the caller's
                // to keep valid until the copy has run (RMM's contract for `DeviceBuffer(ptr=)`).
                let enqueued = unsafe { copy_bytes(ptr, src, size, view, host_only && src_is_host)? };
                if src_is_host {
                    wait_before_release(view, enqueued)
                } else {
                    sync_if_default(view, enqueued)
                }
            })
            .py()?;
        }
        Ok(buffer)
    }

    /// `size` bytes from the current resource of `device` on `stream`, the buffer the CuPy
    /// allocator hook hands out (as RMM's does), and its address.
    pub fn for_device<'py>(
        py: Python<'py>,
        size: usize,
        stream: Bound<'py, Stream>,
        device: i32,
    ) -> PyResult<(Bound<'py, Self>, usize)> {
        let mr = resource_object(py, device)?.into_bound(py);
        let mut buffer = Self::create(py, None, size, stream, Some(mr))?;
        let ptr = buffer.state.get_mut().ptr;
        Ok((Bound::new(py, buffer)?, ptr))
    }

    /// The resource the memory comes from (the resource object's, which the buffer keeps alive).
    pub(super) fn resource(&self) -> &SharedResource {
        self.mr.get().resource()
    }

    /// True when the resource's memory is host memory only: the CPU copies it.
    pub(super) fn host_only(&self) -> bool {
        self.mr.get().is_host_only()
    }

    /// Makes the buffer's device current until the guard is dropped (nothing for host memory).
    pub(super) fn on_device(&self) -> rmm::Result<DeviceGuard> {
        DeviceGuard::new(self.device)
    }

    /// Orders `view` after the work enqueued so far on the buffer's stream, so that memory used
    /// there from now on (copies, the free) is never touched while the old stream may still use
    /// it. Changes nothing in the buffer: the caller moves it once everything else succeeded.
    pub(super) fn order_after(&self, st: &State, view: CudaStreamView) -> rmm::Result<()> {
        if view != st.view && !self.host_only() && st.capacity > 0 {
            let event = CudaEvent::for_stream(st.view)?;
            event.record(st.view)?;
            event.wait_on(view)?;
        }
        Ok(())
    }

    /// `reserve` and `resize`: grows the allocation to `capacity` bytes if it is smaller, sets the
    /// size to `new_size` if given, and moves the buffer to `stream`. A larger block is allocated
    /// before the lock is taken and the block it replaces is freed after the lock is released: a
    /// resource may run Python, which takes the GIL (see the module documentation). In between,
    /// under one hold of the lock, the contents move to the new block and the stream, the object
    /// that keeps it alive, the allocation and the size change together, only once nothing can
    /// fail: after an error the buffer is as it was and the new block is freed again.
    pub(super) fn change(
        &self,
        py: Python<'_>,
        stream: Bound<'_, Stream>,
        capacity: usize,
        new_size: Option<usize>,
    ) -> PyResult<()> {
        // SAFETY: `stream` keeps the stream object, then the state does (or it drops after use).
        let view = unsafe { stream.get().view().detach() };
        // Swapped with the buffer's stream object on success, so that whichever object leaves
        // (the old one, or on failure the new one) is dropped here with the GIL held.
        let mut stream = stream.unbind();
        py.detach(|| -> rmm::Result<()> {
            let _on_device = self.on_device()?;
            // The capacity never shrinks: a buffer large enough now stays large enough.
            let fresh = if capacity > self.state.lock().capacity {
                Some((self.resource().allocate(capacity, DEFAULT_ALIGNMENT, view)? as usize, capacity))
            } else {
                None
            };
            match self.swap_in(fresh, view, &mut stream, new_size) {
                // Freed on the new stream, after the copy. A failed free leaves the buffer changed
                // (consistent) and that block leaked; the error says so.
                Ok(Some((ptr, bytes))) if bytes > 0 => {
                    self.resource().deallocate(ptr as *mut u8, bytes, DEFAULT_ALIGNMENT, view)
                }
                Ok(_) => Ok(()),
                Err(e) => {
                    if let Some((ptr, bytes)) = fresh {
                        // Unused: the error that matters is the one that stopped the change.
                        let _ = self.resource().deallocate(ptr as *mut u8, bytes, DEFAULT_ALIGNMENT, view);
                    }
                    Err(e)
                }
            }
        })
        .py()?;
        drop(stream);
        Ok(())
    }

    /// The locked part of [`change`](Self::change): orders `view` after the buffer's stream,
    /// moves the contents into `fresh` (a new block and its size) where that is larger than the
    /// buffer's allocation, and moves the buffer to `view`, `stream` and `new_size`. Returns the
    /// block the buffer let go of (its old one, or `fresh` unused where another thread grew the
    /// buffer meanwhile) for the caller to free once the lock is released. On an error nothing
    /// changed.
    pub(super) fn swap_in(
        &self,
        fresh: Option<(usize, usize)>,
        view: CudaStreamView<'static>,
        stream: &mut Py<Stream>,
        new_size: Option<usize>,
    ) -> rmm::Result<Option<(usize, usize)>> {
        let mut st = self.state.lock();
        self.order_after(&st, view)?;
        let released = match fresh {
            Some((ptr, capacity)) if capacity > st.capacity => {
                // SAFETY: both allocations are live and distinct; `size <= capacity` of each; the
                // copy is on `view`, which is ordered after the buffer's stream (`order_after`),
                // and the old block is freed on `view` after it.
                unsafe { copy_bytes(ptr, st.ptr, st.size, view, self.host_only())? };
                let old = (st.ptr, st.capacity);
                (st.ptr, st.capacity) = (ptr, capacity);
                Some(old)
            }
            unused => unused,
        };
        st.view = view;
        std::mem::swap(&mut st.stream, stream);
        if let Some(size) = new_size {
            st.size = size;
        }
        Ok(released)
    }

    /// The locked part of `copy()`: copies the buffer's `size` bytes into `dst` on `view` if the
    /// buffer is still on `view` with `size` bytes (false, and nothing copied, where `reserve` or
    /// `resize` changed it meanwhile).
    pub(super) fn copy_into(&self, dst: usize, size: usize, view: CudaStreamView) -> rmm::Result<bool> {
        let st = self.state.lock();
        if st.view != view || st.size != size {
            return Ok(false);
        }
        // SAFETY: `dst` is a fresh allocation of `size` bytes, distinct from the buffer's live one
        // of `size` bytes; both are used on the buffer's stream.
        let enqueued = unsafe { copy_bytes(dst, st.ptr, size, view, self.host_only())? };
        sync_if_default(view, enqueued)?;
        Ok(true)
    }

    pub(super) fn size_now(&self) -> usize {
        self.state.lock().size
    }
}

/// `size` bytes from `resource` on `view` (null for 0 bytes). The GIL stays held where the resource
/// serves at once (a pool's free block of this stream); anything that may wait runs without it.
fn allocate(py: Python<'_>, resource: &SharedResource, size: usize, view: CudaStreamView) -> PyResult<usize> {
    if size == 0 {
        return Ok(0);
    }
    if let Some(ptr) = resource.try_allocate_immediately(size, DEFAULT_ALIGNMENT, view) {
        return Ok(ptr as usize);
    }
    py.detach(|| resource.allocate(size, DEFAULT_ALIGNMENT, view).map(|p| p as usize)).py()
}
