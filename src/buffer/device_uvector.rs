//! [`DeviceUvector`]: a growable vector of uninitialised elements in memory from a resource
//! (RMM's `device_uvector`).

use super::raw::{order_after, RawBuffer};
use super::{alignment_of, byte_size, check_index, check_same_len, DeviceBuffer, Pod};
use crate::device::DeviceId;
use crate::error::Result;
use crate::per_device_resource::get_current_device_resource;
use crate::resource::SharedResource;
use crate::stream::CudaStreamView;
use std::marker::PhantomData;
use std::mem::{size_of, MaybeUninit};

/// A growable vector of `T` in memory from a resource, like RMM's `device_uvector`: new elements
/// are not initialised, operations take the stream they run on (which becomes the vector's
/// stream, as in RMM), and the memory is freed on the vector's stream when dropped.
///
/// Growing past the capacity reallocates to exactly the new size and copies the elements;
/// shrinking keeps the capacity until [`shrink_to_fit`](Self::shrink_to_fit).
pub struct DeviceUvector<'s, T> {
    raw: RawBuffer<'s>,
    pub(super) len: usize,
    capacity: usize,
    _element: PhantomData<T>,
}

impl<'s, T: Pod> DeviceUvector<'s, T> {
    /// `len` uninitialised elements from the current device's resource, on `stream`.
    pub fn new(len: usize, stream: CudaStreamView<'s>) -> Result<Self> {
        Self::new_in(len, stream, get_current_device_resource()?)
    }

    /// `len` uninitialised elements from `resource`, on `stream`.
    pub fn new_in(len: usize, stream: CudaStreamView<'s>, resource: SharedResource) -> Result<Self> {
        let raw = RawBuffer::allocate(resource, byte_size::<T>(len)?, alignment_of::<T>(), stream)?;
        Ok(DeviceUvector { raw, len, capacity: len, _element: PhantomData })
    }

    /// A copy of `src` in memory from `resource`; returns once the copy is done.
    pub fn from_host_in(src: &[T], stream: CudaStreamView<'s>, resource: SharedResource) -> Result<Self> {
        let v = Self::new_in(src.len(), stream, resource)?;
        // SAFETY: `src` stays borrowed until the stream has run the copy (waited for below).
        unsafe { v.raw.write_from_host(0, src.as_ptr().cast(), v.size_bytes(), stream)? };
        v.raw.wait(stream)?;
        Ok(v)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the vector holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many elements fit without reallocating.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The size of the elements in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The address of the first element (device memory); null when nothing is allocated.
    pub fn as_ptr(&self) -> *const T {
        self.raw.ptr() as *const T
    }

    /// The address of the first element, for writing; null when nothing is allocated.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.raw.ptr() as *mut T
    }

    /// The stream the vector's memory is freed on.
    pub fn stream(&self) -> CudaStreamView<'s> {
        self.raw.stream()
    }

    /// Moves the vector to `stream`, after the work already enqueued on the old one.
    pub fn set_stream(&mut self, stream: CudaStreamView<'s>) -> Result<()> {
        self.raw.set_stream(stream)
    }

    /// The resource the memory came from and goes back to.
    pub fn resource(&self) -> &SharedResource {
        self.raw.resource()
    }

    /// The device that was current when the vector was made: it is made current again for each
    /// of the vector's allocations, copies and its free, whichever device is current then.
    /// [`DeviceId::NONE`] for memory of a host resource, or where no driver is installed.
    pub fn device(&self) -> DeviceId {
        self.raw.device()
    }

    /// Makes room for at least `capacity` elements, on `stream`: a larger capacity reallocates to
    /// exactly `capacity` and copies the elements; a smaller one does nothing.
    pub fn reserve(&mut self, capacity: usize, stream: CudaStreamView<'s>) -> Result<()> {
        self.set_stream(stream)?;
        if capacity > self.capacity {
            self.reallocate(capacity, stream)?;
        }
        Ok(())
    }

    /// Sets the length to `len`, on `stream`, keeping the first `min(len, self.len())` elements;
    /// new elements are not initialised. Growing past the capacity reallocates to exactly `len`.
    pub fn resize(&mut self, len: usize, stream: CudaStreamView<'s>) -> Result<()> {
        self.reserve(len, stream)?;
        self.len = len;
        Ok(())
    }

    /// Reallocates to exactly the length, on `stream`, when the capacity is larger.
    pub fn shrink_to_fit(&mut self, stream: CudaStreamView<'s>) -> Result<()> {
        self.set_stream(stream)?;
        if self.capacity > self.len {
            self.reallocate(self.len, stream)?;
        }
        Ok(())
    }

    /// Replaces the memory by `capacity` elements' worth on `stream` (the vector's stream), the
    /// elements copied over; the old memory is freed on `stream` after the copy.
    fn reallocate(&mut self, capacity: usize, stream: CudaStreamView<'s>) -> Result<()> {
        let bytes = byte_size::<T>(capacity)?;
        let fresh = self.raw.allocate_like(bytes, stream)?;
        let kept = self.len.min(capacity) * size_of::<T>();
        fresh.copy_from(0, &self.raw, 0, kept, stream)?;
        let mut old = std::mem::replace(&mut self.raw, fresh);
        self.capacity = capacity;
        self.len = self.len.min(capacity);
        old.free()
    }

    /// Enqueues writing `*value` to element `index` on `stream` (RMM's `set_element_async`).
    ///
    /// `stream` becomes the vector's stream (see [`set_stream`](Self::set_stream)), so the free
    /// never overtakes the write.
    ///
    /// # Safety
    /// `value` must stay alive and unchanged until `stream` has run the copy (a value in pageable
    /// memory, such as a local, has been read when this returns).
    pub unsafe fn set_element_async(&mut self, index: usize, value: &T, stream: CudaStreamView<'s>) -> Result<()> {
        check_index(index, self.len)?;
        self.set_stream(stream)?;
        let at = index * size_of::<T>();
        // SAFETY: the caller keeps `value` alive until the copy ran; `index` is in range.
        unsafe { self.raw.write_from_host(at, (value as *const T).cast(), size_of::<T>(), stream) }
    }

    /// Writes `value` to element `index` on `stream` and waits for the write.
    pub fn set_element(&mut self, index: usize, value: T, stream: CudaStreamView<'s>) -> Result<()> {
        // SAFETY: `value` lives on this frame until the stream has run the copy (waited for below).
        unsafe { self.set_element_async(index, &value, stream)? };
        self.raw.wait(stream)
    }

    /// Enqueues zeroing element `index` on `stream` (RMM's `set_element_to_zero_async`); `stream`
    /// becomes the vector's stream.
    pub fn set_element_to_zero_async(&mut self, index: usize, stream: CudaStreamView<'s>) -> Result<()> {
        check_index(index, self.len)?;
        self.set_stream(stream)?;
        self.raw.fill(index * size_of::<T>(), size_of::<T>(), 0, stream)
    }

    /// Element `index`, copied to the host on `stream`; waits for the stream (RMM's `element`).
    pub fn element(&self, index: usize, stream: CudaStreamView<'s>) -> Result<T> {
        check_index(index, self.len)?;
        self.raw.order_use_on(stream)?;
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: `out` lives on this frame until the stream has run the copy (waited for below).
        unsafe { self.raw.read_to_host(index * size_of::<T>(), out.as_mut_ptr().cast(), size_of::<T>(), stream)? };
        self.raw.wait(stream)?;
        // SAFETY: the copy wrote all bytes of `out`, and any bytes are a valid `T` (`Pod`).
        Ok(unsafe { out.assume_init() })
    }

    /// The first element (see [`element`](Self::element)).
    pub fn front_element(&self, stream: CudaStreamView<'s>) -> Result<T> {
        self.element(0, stream)
    }

    /// The last element (see [`element`](Self::element)).
    pub fn back_element(&self, stream: CudaStreamView<'s>) -> Result<T> {
        self.element(self.len.wrapping_sub(1), stream)
    }

    /// Copies `src` into the vector on `stream` and waits for the copy; `src` must have
    /// [`len`](Self::len) elements. `stream` becomes the vector's stream.
    pub fn copy_from_host(&mut self, src: &[T], stream: CudaStreamView<'s>) -> Result<()> {
        check_same_len("copy_from_host", src.len(), self.len)?;
        self.set_stream(stream)?;
        // SAFETY: `src` stays borrowed until the stream has run the copy (waited for below).
        unsafe { self.raw.write_from_host(0, src.as_ptr().cast(), self.size_bytes(), stream)? };
        self.raw.wait(stream)
    }

    /// The elements, copied to a new `Vec` on `stream` (waits for the stream).
    pub fn to_vec(&self, stream: CudaStreamView<'s>) -> Result<Vec<T>> {
        self.raw.order_use_on(stream)?;
        let mut out = Vec::<T>::with_capacity(self.len);
        // SAFETY: the spare capacity holds `len` elements and is owned by `out` alone until the
        // stream has run the copy, waited for before `set_len`.
        unsafe { self.raw.read_to_host(0, out.as_mut_ptr().cast(), self.size_bytes(), stream)? };
        self.raw.wait(stream)?;
        // SAFETY: the copy wrote all `len` elements, and any bytes are a valid `T` (`Pod`).
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// A copy of the elements (capacity = length) from the same resource, ordered on `stream`
    /// after the vector's work; the vector's later work and free wait for the copy.
    pub fn try_clone(&self, stream: CudaStreamView<'s>) -> Result<Self> {
        let raw = self.raw.allocate_like(self.size_bytes(), stream)?;
        let ordered = !self.raw.host_only() && self.size_bytes() > 0;
        self.raw.order_use_on(stream)?;
        raw.copy_from(0, &self.raw, 0, self.size_bytes(), stream)?;
        if ordered {
            let _on_device = self.raw.on_device()?;
            order_after(self.stream(), stream)?;
        }
        Ok(DeviceUvector { raw, len: self.len, capacity: self.len, _element: PhantomData })
    }

    /// Gives up the memory as a [`DeviceBuffer`] of the vector's elements, leaving nothing
    /// allocated here (RMM's `release`); the buffer keeps the whole capacity until freed.
    pub fn release(self) -> DeviceBuffer<'s, T> {
        DeviceBuffer::from_raw(self.raw, self.len)
    }

    /// Frees the memory now, on the vector's stream, and reports the free's outcome.
    pub fn free(mut self) -> Result<()> {
        self.raw.free()
    }
}

impl<T> std::fmt::Debug for DeviceUvector<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceUvector")
            .field("ptr", &format_args!("{:#x}", self.raw.ptr()))
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("stream", &self.raw.stream())
            .finish()
    }
}

impl<'s, T> DeviceUvector<'s, T> {
    pub(crate) fn raw(&self) -> &RawBuffer<'s> {
        &self.raw
    }
}
