//! Two GPUs: the typed buffers record the device current when they are made and make it current
//! again for every allocation, copy and free, whichever device the caller has current, as RMM's
//! containers do. A resource that refuses to work with another device current than its own checks
//! it. The GPU tests skip, saying why, with fewer than two devices; the guard's host behaviour is
//! checked everywhere.

mod common;

use common::device_of;
use rmm::buffer::{DeviceBuffer, DeviceUvector};
use rmm::device::{device_count, set_current_device, DeviceGuard};
use rmm::resource::{CudaMemoryResource, HostMemoryResource};
use rmm::{CudaStream, CudaStreamView, DeviceId, Error, MemoryResource, Result, SharedResource};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn devices(needed: usize) -> bool {
    let n = if rmm::cuda_available() { device_count().unwrap_or(0) } else { 0 };
    if n >= needed {
        return true;
    }
    println!("skipped: needs {needed} CUDA device(s), this machine has {n}");
    false
}

fn current() -> i32 {
    DeviceId::current().unwrap().value()
}

/// Device memory that insists on the device current when it was made: allocating with another
/// device current is an error; freeing with another device current is counted (and done).
struct DeviceChecking {
    inner: CudaMemoryResource,
    device: DeviceId,
    allocations: AtomicUsize,
    outstanding: AtomicUsize,
    wrong_device_frees: AtomicUsize,
}

impl DeviceChecking {
    fn new() -> Arc<Self> {
        Arc::new(DeviceChecking {
            inner: CudaMemoryResource::new(),
            device: DeviceId::current().unwrap(),
            allocations: AtomicUsize::new(0),
            outstanding: AtomicUsize::new(0),
            wrong_device_frees: AtomicUsize::new(0),
        })
    }
}

// SAFETY: every block comes from `inner` unchanged and goes back to it; the accessibility answers
// are `inner`'s.
unsafe impl MemoryResource for DeviceChecking {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let now = DeviceId::current()?;
        if now != self.device {
            return Err(Error::InvalidArgument(format!(
                "allocate through the resource of device {} while device {} is current",
                self.device.value(),
                now.value()
            )));
        }
        let p = self.inner.allocate(bytes, alignment, stream)?;
        self.allocations.fetch_add(1, Ordering::Relaxed);
        self.outstanding.fetch_add(bytes, Ordering::Relaxed);
        Ok(p)
    }
    fn deallocate(&self, p: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if DeviceId::current()? != self.device {
            self.wrong_device_frees.fetch_add(1, Ordering::Relaxed);
        }
        self.outstanding.fetch_sub(bytes, Ordering::Relaxed);
        self.inner.deallocate(p, bytes, alignment, stream)
    }
    fn is_device_accessible(&self) -> bool {
        self.inner.is_device_accessible()
    }
    fn is_host_accessible(&self) -> bool {
        self.inner.is_host_accessible()
    }
}

/// Per device: a checking resource and a stream, each made with that device current. The current
/// device is 0 again afterwards.
fn per_device() -> (Vec<Arc<DeviceChecking>>, Vec<CudaStream>) {
    let mut resources = Vec::new();
    let mut streams = Vec::new();
    for d in 0..2 {
        let _on = DeviceGuard::new(DeviceId(d)).unwrap();
        resources.push(DeviceChecking::new());
        streams.push(CudaStream::new().unwrap());
    }
    (resources, streams)
}

fn check_clean(resources: &[Arc<DeviceChecking>]) {
    for (d, r) in resources.iter().enumerate() {
        assert_eq!(r.outstanding.load(Ordering::Relaxed), 0, "device {d}: bytes left");
        assert_eq!(r.wrong_device_frees.load(Ordering::Relaxed), 0, "device {d}: frees with another device current");
    }
}

#[test]
fn a_uvector_grows_shrinks_copies_and_frees_on_its_own_device() {
    if !devices(2) {
        return;
    }
    let (resources, streams) = per_device();
    for made_on in 0..2usize {
        let other = 1 - made_on;
        set_current_device(DeviceId(made_on as i32)).unwrap();
        let s = streams[made_on].view();
        let mr: SharedResource = resources[made_on].clone();
        let data: Vec<u32> = (0..1000).collect();
        // Another stream of the same device, for later: made first, so it outlives the vector.
        let second = {
            let _on = DeviceGuard::new(DeviceId(made_on as i32)).unwrap();
            CudaStream::new().unwrap()
        };
        let mut v = DeviceUvector::from_host_in(&data, s, mr).unwrap();
        assert_eq!(v.device(), DeviceId(made_on as i32));

        set_current_device(DeviceId(other as i32)).unwrap();
        v.reserve(4000, s).unwrap();
        assert_eq!(device_of(v.as_ptr()), made_on as i32);
        v.resize(8000, s).unwrap();
        assert_eq!(device_of(v.as_ptr()), made_on as i32);
        v.resize(700, s).unwrap();
        v.shrink_to_fit(s).unwrap(); // the crash of the report, in C++
        assert_eq!(v.capacity(), 700);
        assert_eq!(device_of(v.as_ptr()), made_on as i32);
        assert_eq!(current(), other as i32, "a member left its device current");
        assert_eq!(v.to_vec(s).unwrap(), data[..700]);

        v.set_element(3, 77, s).unwrap();
        assert_eq!(v.element(3, s).unwrap(), 77);
        v.set_element_to_zero_async(4, s).unwrap();
        assert_eq!(v.element(4, s).unwrap(), 0);

        // Another stream of the same device, then a copy: the copy belongs to the same device.
        v.set_stream(second.view()).unwrap();
        let copy = v.try_clone(second.view()).unwrap();
        assert_eq!(copy.device(), DeviceId(made_on as i32));
        assert_eq!(device_of(copy.as_ptr()), made_on as i32);
        assert_eq!(copy.element(3, second.view()).unwrap(), 77);

        let released: DeviceBuffer<u32> = v.release();
        assert_eq!(released.device(), DeviceId(made_on as i32));
        assert_eq!(released.to_vec().unwrap()[..3], [0, 1, 2]);
        drop(copy);
        released.free().unwrap(); // with `other` current
        second.synchronize().unwrap();
        assert_eq!(current(), other as i32);
    }
    set_current_device(DeviceId(0)).unwrap();
    for s in &streams {
        s.synchronize().unwrap();
    }
    check_clean(&resources);
    assert!(resources.iter().all(|r| r.allocations.load(Ordering::Relaxed) == 5));
}

#[test]
fn a_buffer_copies_and_is_dropped_on_its_own_device() {
    if !devices(2) {
        return;
    }
    let (resources, streams) = per_device();
    for made_on in 0..2usize {
        let other = 1 - made_on;
        set_current_device(DeviceId(made_on as i32)).unwrap();
        let s = streams[made_on].view();
        let data: Vec<u64> = (0..512).map(|i| i * 3).collect();
        // A second stream of the device, made first so that it outlives the buffers.
        let second = {
            let _on = DeviceGuard::new(DeviceId(made_on as i32)).unwrap();
            CudaStream::new().unwrap()
        };
        let mut b = DeviceBuffer::from_host_in(&data, s, resources[made_on].clone()).unwrap();
        let zeroed = DeviceBuffer::<u8>::zeroed_in(100, s, resources[made_on].clone()).unwrap();

        set_current_device(DeviceId(other as i32)).unwrap();
        let clone = b.try_clone(s).unwrap();
        assert_eq!(device_of(clone.as_ptr()), made_on as i32);
        assert_eq!(clone.to_vec().unwrap(), data);
        b.copy_from_host(&vec![5u64; 512]).unwrap();
        assert_eq!(b.to_vec().unwrap(), vec![5u64; 512]);
        assert_eq!(zeroed.to_vec().unwrap(), vec![0u8; 100]);
        b.set_stream(second.view()).unwrap();
        drop((b, clone, zeroed)); // all freed with `other` current
        second.synchronize().unwrap();
        assert_eq!(current(), other as i32);
    }
    set_current_device(DeviceId(0)).unwrap();
    for s in &streams {
        s.synchronize().unwrap();
    }
    check_clean(&resources);
    let (errors, count) = rmm::buffer::take_drop_errors();
    assert_eq!(count, 0, "{errors:?}");
}

#[test]
fn the_guard_switches_restores_and_nests() {
    if !devices(2) {
        return;
    }
    set_current_device(DeviceId(1)).unwrap();
    {
        let _zero = DeviceGuard::new(DeviceId(0)).unwrap();
        assert_eq!(current(), 0);
        {
            let _same = DeviceGuard::new(DeviceId(0)).unwrap();
            let _none = DeviceGuard::new(DeviceId::NONE).unwrap();
            assert_eq!(current(), 0);
            let _one = DeviceGuard::new(DeviceId(1)).unwrap();
            assert_eq!(current(), 1);
        }
        assert_eq!(current(), 0);
    }
    assert_eq!(current(), 1);
    let n = device_count().unwrap() as i32;
    assert!(matches!(DeviceGuard::new(DeviceId(n)), Err(Error::InvalidArgument(_))));
    assert_eq!(current(), 1, "a refused guard changed the current device");
    set_current_device(DeviceId(0)).unwrap();
}

/// Host memory has no device: its buffers record none and never query or switch one, so they
/// work without a driver.
#[test]
fn host_buffers_record_no_device() {
    let host: SharedResource = Arc::new(HostMemoryResource::new());
    let mut v = DeviceUvector::<u32>::new_in(10, CudaStreamView::DEFAULT, host.clone()).unwrap();
    assert_eq!(v.device(), DeviceId::NONE);
    v.resize(100, CudaStreamView::DEFAULT).unwrap();
    v.shrink_to_fit(CudaStreamView::DEFAULT).unwrap();
    assert_eq!(v.device(), DeviceId::NONE);
    let b = DeviceBuffer::from_host_in(&[1u8, 2, 3], CudaStreamView::DEFAULT, host).unwrap();
    assert_eq!(b.device(), DeviceId::NONE);
    assert_eq!(b.try_clone(CudaStreamView::DEFAULT).unwrap().device(), DeviceId::NONE);
    // A guard for no device changes nothing and asks the driver nothing.
    let _none = DeviceGuard::new(DeviceId::NONE).unwrap();
}

/// Without a driver a guard for a real device is `NoDriver`, not a panic; with one, the device
/// current is current again after a guard for it.
#[test]
fn a_guard_without_a_driver_is_no_driver() {
    if rmm::cuda_available() {
        let before = current();
        drop(DeviceGuard::new(DeviceId(before)).unwrap());
        assert_eq!(current(), before);
    } else if !matches!(DeviceId::current(), Err(Error::Cuda { .. })) {
        assert!(matches!(DeviceGuard::new(DeviceId(0)), Err(Error::NoDriver(_))));
        assert_eq!(DeviceId::current_or_none().unwrap(), DeviceId::NONE);
    }
}
