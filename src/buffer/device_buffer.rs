//! [`DeviceBuffer`]: a fixed number of elements in memory from a resource, freed on its stream.

use super::raw::{order_after, RawBuffer};
use super::{alignment_of, byte_size, check_same_len, Pod};
use crate::device::DeviceId;
use crate::error::Result;
use crate::per_device_resource::get_current_device_resource;
use crate::resource::SharedResource;
use crate::stream::CudaStreamView;
use std::marker::PhantomData;

/// `len` elements of `T` in memory from a resource, ordered on a stream and freed on that stream
/// when dropped (errors of that free go to [`take_drop_errors`](super::take_drop_errors); call
/// [`free`](Self::free) to get it instead).
///
/// The memory is usable by work on [`stream`](Self::stream); [`set_stream`](Self::set_stream)
/// moves it to another stream safely.
///
/// ```no_run
/// use rmm::buffer::DeviceBuffer;
/// use rmm::CudaStream;
/// # fn main() -> rmm::Result<()> {
/// let stream = CudaStream::new()?;
/// let buf = DeviceBuffer::from_host(&[1u32, 2, 3], stream.view())?; // current device resource
/// assert_eq!(buf.to_vec()?, [1, 2, 3]);
/// # Ok(())
/// # }
/// ```
pub struct DeviceBuffer<'s, T> {
    raw: RawBuffer<'s>,
    pub(super) len: usize,
    _element: PhantomData<T>,
}

impl<'s, T: Pod> DeviceBuffer<'s, T> {
    /// `len` uninitialised elements from the current device's resource, on `stream`.
    pub fn new(len: usize, stream: CudaStreamView<'s>) -> Result<Self> {
        Self::new_in(len, stream, get_current_device_resource()?)
    }

    /// `len` uninitialised elements from `resource`, on `stream`. The contents are whatever the
    /// memory held (any bit pattern is a valid `T`); memory of a host resource starts zeroed.
    pub fn new_in(len: usize, stream: CudaStreamView<'s>, resource: SharedResource) -> Result<Self> {
        let bytes = byte_size::<T>(len)?;
        let raw = RawBuffer::allocate(resource, bytes, alignment_of::<T>(), stream)?;
        Ok(DeviceBuffer { raw, len, _element: PhantomData })
    }

    /// `len` zeroed elements from the current device's resource, zeroed on `stream` (the buffer
    /// is ready for work on `stream`; the host does not wait).
    pub fn zeroed(len: usize, stream: CudaStreamView<'s>) -> Result<Self> {
        Self::zeroed_in(len, stream, get_current_device_resource()?)
    }

    /// `len` zeroed elements from `resource`, zeroed on `stream`.
    pub fn zeroed_in(len: usize, stream: CudaStreamView<'s>, resource: SharedResource) -> Result<Self> {
        let buf = Self::new_in(len, stream, resource)?;
        buf.raw.fill(0, buf.raw.bytes(), 0, stream)?;
        Ok(buf)
    }

    /// A copy of `src` in memory from the current device's resource; returns once the copy is
    /// done.
    pub fn from_host(src: &[T], stream: CudaStreamView<'s>) -> Result<Self> {
        Self::from_host_in(src, stream, get_current_device_resource()?)
    }

    /// A copy of `src` in memory from `resource`; returns once the copy is done.
    pub fn from_host_in(src: &[T], stream: CudaStreamView<'s>, resource: SharedResource) -> Result<Self> {
        let mut buf = Self::new_in(src.len(), stream, resource)?;
        buf.copy_from_host(src)?;
        Ok(buf)
    }

    pub(crate) fn from_raw(raw: RawBuffer<'s>, len: usize) -> Self {
        debug_assert!(len * std::mem::size_of::<T>() <= raw.bytes());
        DeviceBuffer { raw, len, _element: PhantomData }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size of the elements in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The address of the first element (device memory: do not dereference on the host unless
    /// the resource is host-accessible); null when the buffer is empty.
    pub fn as_ptr(&self) -> *const T {
        self.raw.ptr() as *const T
    }

    /// The address of the first element, for writing; null when the buffer is empty.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.raw.ptr() as *mut T
    }

    /// The stream the buffer is ordered on and freed on.
    pub fn stream(&self) -> CudaStreamView<'s> {
        self.raw.stream()
    }

    /// Moves the buffer to `stream`: later copies and the free happen there, after the work
    /// already enqueued on the old stream (an event orders the two when they differ).
    pub fn set_stream(&mut self, stream: CudaStreamView<'s>) -> Result<()> {
        self.raw.set_stream(stream)
    }

    /// The resource the memory came from and goes back to.
    pub fn resource(&self) -> &SharedResource {
        self.raw.resource()
    }

    /// The device that was current when the buffer was made: it is made current again for each
    /// of the buffer's allocations, copies and its free, whichever device is current then.
    /// [`DeviceId::NONE`] for memory of a host resource, or where no driver is installed.
    pub fn device(&self) -> DeviceId {
        self.raw.device()
    }

    /// Enqueues a copy of `src` into the buffer on its stream.
    ///
    /// # Safety
    /// `src` must stay alive and unchanged until the stream has run the copy (a copy from
    /// pageable memory, such as a `Vec`, has read it when this returns; pinned memory has not).
    pub unsafe fn copy_from_host_async(&mut self, src: &[T]) -> Result<()> {
        check_same_len("copy_from_host", src.len(), self.len)?;
        // SAFETY: the caller keeps `src` alive until the copy ran; sizes are equal.
        unsafe { self.raw.write_from_host(0, src.as_ptr().cast(), self.size_bytes(), self.stream()) }
    }

    /// Copies `src` into the buffer and waits for the stream to finish it.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        // SAFETY: `src` is borrowed until the stream has run the copy (waited for below).
        unsafe { self.copy_from_host_async(src)? };
        self.raw.wait(self.stream())
    }

    /// Enqueues a copy of the buffer into `dst` on its stream.
    ///
    /// # Safety
    /// `dst` must stay alive, and be neither read nor written, until the stream has run the copy.
    pub unsafe fn copy_to_host_async(&self, dst: &mut [T]) -> Result<()> {
        check_same_len("copy_to_host", dst.len(), self.len)?;
        // SAFETY: the caller keeps `dst` to the copy until it ran; sizes are equal.
        unsafe { self.raw.read_to_host(0, dst.as_mut_ptr().cast(), self.size_bytes(), self.stream()) }
    }

    /// Copies the buffer into `dst` and waits for the stream to finish it.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        // SAFETY: `dst` is borrowed mutably until the stream has run the copy (waited for below).
        unsafe { self.copy_to_host_async(dst)? };
        self.raw.wait(self.stream())
    }

    /// The elements, copied to a new `Vec` (waits for the stream).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len);
        // SAFETY: the spare capacity holds `len` elements and is owned by `out` alone until the
        // stream has run the copy, waited for before `set_len`.
        unsafe { self.raw.read_to_host(0, out.as_mut_ptr().cast(), self.size_bytes(), self.stream())? };
        self.raw.wait(self.stream())?;
        // SAFETY: the copy wrote all `len` elements, and any bytes are a valid `T` (`Pod`).
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// A copy of the buffer in new memory from the same resource, ordered on `stream`: the copy
    /// runs after the work enqueued on this buffer's stream, and this buffer's later work and
    /// free wait for the copy.
    pub fn try_clone(&self, stream: CudaStreamView<'s>) -> Result<Self> {
        let raw = self.raw.allocate_like(self.size_bytes(), stream)?;
        let ordered = !self.raw.host_only() && self.size_bytes() > 0;
        self.raw.order_use_on(stream)?;
        raw.copy_from(0, &self.raw, 0, self.size_bytes(), stream)?;
        if ordered {
            let _on_device = self.raw.on_device()?;
            order_after(self.stream(), stream)?;
        }
        Ok(DeviceBuffer { raw, len: self.len, _element: PhantomData })
    }

    /// Frees the memory now, on the buffer's stream, and reports the free's outcome (which
    /// `Drop` can only record).
    pub fn free(mut self) -> Result<()> {
        self.raw.free()
    }
}

impl<T> std::fmt::Debug for DeviceBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.raw.ptr()))
            .field("len", &self.len)
            .field("stream", &self.raw.stream())
            .finish()
    }
}

impl<'s, T> DeviceBuffer<'s, T> {
    pub(crate) fn raw(&self) -> &RawBuffer<'s> {
        &self.raw
    }
}
