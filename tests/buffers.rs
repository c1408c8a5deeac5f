//! Typed buffers ([`DeviceBuffer`], [`DeviceUvector`]) and their cudarc interop. The host tests use
//! buffers over host resources (copied by the CPU); the GPU tests skip without a device.

mod common;

use common::{gpu, seed, Rng};
use parking_lot::Mutex;
use rmm::adaptor::StatisticsResourceAdaptor;
use rmm::buffer::take_drop_errors;
use rmm::resource::{CudaMemoryResource, HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStream, CudaStreamView, DeviceBuffer, DeviceUvector, Error, MemoryResource, Result, SharedResource};
use std::sync::Arc;

/// Stream handles for host tests: host resources never hand them to the driver.
// SAFETY: a stream name for resources over host memory: no driver call sees it.
const S1: CudaStreamView = unsafe { CudaStreamView::from_handle(0x1000) };
// SAFETY: a stream name for resources over host memory: no driver call sees it.
const S2: CudaStreamView = unsafe { CudaStreamView::from_handle(0x2000) };
// SAFETY: a stream name for resources over host memory: no driver call sees it.
const S3: CudaStreamView = unsafe { CudaStreamView::from_handle(0x3000) };

/// What a [`Recorder`] saw: `(allocate?, ptr, bytes, stream)`.
type Calls = Vec<(bool, usize, usize, CudaStreamView<'static>)>;

/// Passes calls to its upstream and records each one, with its stream.
struct Recorder<U> {
    upstream: U,
    calls: Mutex<Calls>,
    refuse_frees: bool,
}

impl<U: MemoryResource> Recorder<U> {
    fn new(upstream: U) -> Arc<Self> {
        Arc::new(Recorder { upstream, calls: Mutex::new(Vec::new()), refuse_frees: false })
    }
    fn calls(&self) -> Calls {
        self.calls.lock().clone()
    }
}

// SAFETY: blocks come from the upstream unchanged and go back to it (a refused free keeps the
// block live); the accessibility answers are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for Recorder<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let p = self.upstream.allocate(bytes, alignment, stream)?;
        // SAFETY: kept only to compare handles later, never given to the driver.
        self.calls.lock().push((true, p as usize, bytes, unsafe { stream.detach() }));
        Ok(p)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        // SAFETY: kept only to compare handles later, never given to the driver.
        self.calls.lock().push((false, ptr as usize, bytes, unsafe { stream.detach() }));
        if self.refuse_frees {
            return Err(Error::InvalidArgument(format!("recorder refuses to free {:#x}", ptr as usize)));
        }
        self.upstream.deallocate(ptr, bytes, alignment, stream)
    }
    fn is_device_accessible(&self) -> bool {
        self.upstream.is_device_accessible()
    }
    fn is_host_accessible(&self) -> bool {
        self.upstream.is_host_accessible()
    }
}

fn host() -> (Arc<StatisticsResourceAdaptor<HostMemoryResource>>, SharedResource) {
    let stats = Arc::new(StatisticsResourceAdaptor::new(HostMemoryResource::new()));
    let shared: SharedResource = stats.clone();
    (stats, shared)
}

fn live(stats: &StatisticsResourceAdaptor<HostMemoryResource>) -> (i64, i64) {
    (stats.allocations_counter().value, stats.bytes_counter().value)
}

#[test]
fn size_overflow_is_a_named_error_and_allocates_nothing() {
    let (stats, r) = host();
    let len = usize::MAX / 4;
    let e = DeviceBuffer::<u64>::new_in(len, S1, r.clone()).unwrap_err();
    assert_eq!(e, Error::SizeOverflow { len, element_size: 8 });
    assert!(e.to_string().contains("size overflow"), "{e}");
    assert_eq!(
        DeviceUvector::<[u32; 4]>::new_in(usize::MAX / 8, S1, r.clone()).unwrap_err(),
        Error::SizeOverflow { len: usize::MAX / 8, element_size: 16 }
    );
    // A failed resize leaves the vector as it was.
    let mut v = DeviceUvector::from_host_in(&[1u32, 2, 3], S1, r.clone()).unwrap();
    assert!(matches!(v.resize(usize::MAX / 2, S1), Err(Error::SizeOverflow { .. })));
    assert!(matches!(v.reserve(usize::MAX / 2, S1), Err(Error::SizeOverflow { .. })));
    assert_eq!((v.len(), v.capacity()), (3, 3));
    assert_eq!(v.to_vec(S1).unwrap(), [1, 2, 3]);
    drop(v);
    assert_eq!(live(&stats), (0, 0));
}

#[test]
fn zero_length_buffers_allocate_nothing() {
    let (stats, r) = host();
    let b = DeviceBuffer::<f64>::new_in(0, S1, r.clone()).unwrap();
    assert!(b.is_empty() && b.as_ptr().is_null());
    assert_eq!(b.to_vec().unwrap(), Vec::<f64>::new());
    let c = b.try_clone(S2).unwrap();
    assert!(c.as_ptr().is_null());
    let mut v = DeviceUvector::<u16>::new_in(0, S1, r.clone()).unwrap();
    assert_eq!((v.len(), v.capacity()), (0, 0));
    v.shrink_to_fit(S1).unwrap();
    // Zero-sized elements take no bytes whatever the length.
    let z = DeviceBuffer::<[u32; 0]>::new_in(1 << 40, S1, r.clone()).unwrap();
    assert_eq!((z.len(), z.size_bytes()), (1 << 40, 0));
    assert_eq!(stats.allocations_counter().total, 0, "nothing reached the resource");
    // Empty buffers of a device resource make no driver call either, so this runs without a GPU.
    let cuda: SharedResource = Arc::new(CudaMemoryResource::new());
    let mut e = DeviceBuffer::<u32>::new_in(0, S1, cuda.clone()).unwrap();
    e.copy_from_host(&[]).unwrap();
    assert_eq!(e.to_vec().unwrap(), Vec::<u32>::new());
    e.set_stream(S2).unwrap();
    e.free().unwrap();
    let mut u = DeviceUvector::<u32>::new_in(0, S1, cuda).unwrap();
    u.shrink_to_fit(S2).unwrap();
    assert_eq!(u.to_vec(S2).unwrap(), Vec::<u32>::new());
    drop((b, c, v, z));
    assert_eq!(live(&stats), (0, 0));
}

#[test]
fn host_round_trip_zeroed_and_length_checks() {
    let (stats, r) = host();
    let data: Vec<i32> = (0..1000).map(|i| i * 7 - 300).collect();
    let mut b = DeviceBuffer::from_host_in(&data, S1, r.clone()).unwrap();
    assert_eq!(b.len(), 1000);
    assert_eq!(b.as_ptr() as usize % 256, 0);
    assert_eq!(b.to_vec().unwrap(), data);
    let mut out = vec![0; 1000];
    b.copy_to_host(&mut out).unwrap();
    assert_eq!(out, data);
    // Wrong lengths are refused and change nothing.
    assert!(matches!(b.copy_from_host(&data[..10]), Err(Error::InvalidArgument(_))));
    assert!(matches!(b.copy_to_host(&mut out[..999]), Err(Error::InvalidArgument(_))));
    assert_eq!(b.to_vec().unwrap(), data);
    let rev: Vec<i32> = data.iter().rev().copied().collect();
    b.copy_from_host(&rev).unwrap();
    assert_eq!(b.to_vec().unwrap(), rev);
    let z = DeviceBuffer::<f32>::zeroed_in(333, S2, r.clone()).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![0.0; 333]);
    assert_eq!(live(&stats).0, 2);
    drop((b, z));
    assert_eq!(live(&stats), (0, 0));
}

#[test]
fn clone_is_an_independent_copy() {
    let (stats, r) = host();
    let mut a = DeviceBuffer::from_host_in(&[1u8, 2, 3, 4], S1, r.clone()).unwrap();
    let b = a.try_clone(S2).unwrap();
    assert_ne!(a.as_ptr(), b.as_ptr());
    assert_eq!(b.stream(), S2);
    a.copy_from_host(&[9, 9, 9, 9]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [1, 2, 3, 4]);
    let v = DeviceUvector::from_host_in(&[5u64, 6], S1, r.clone()).unwrap();
    let w = v.try_clone(S3).unwrap();
    drop(v);
    assert_eq!(w.to_vec(S3).unwrap(), [5, 6]);
    drop((a, b, w));
    assert_eq!(live(&stats), (0, 0));
}

#[test]
fn uvector_resize_reserve_shrink_and_elements() {
    let (stats, r) = host();
    let mut v = DeviceUvector::from_host_in(&[10u32, 11, 12], S1, r.clone()).unwrap();
    v.reserve(2, S1).unwrap(); // smaller: nothing happens
    assert_eq!(v.capacity(), 3);
    v.resize(100, S1).unwrap();
    assert_eq!((v.len(), v.capacity()), (100, 100));
    assert_eq!(&v.to_vec(S1).unwrap()[..3], [10, 11, 12]);
    v.set_element(99, 42, S1).unwrap();
    assert_eq!(v.back_element(S1).unwrap(), 42);
    assert_eq!(v.front_element(S1).unwrap(), 10);
    v.resize(2, S1).unwrap();
    assert_eq!((v.len(), v.capacity()), (2, 100), "shrinking keeps the capacity");
    assert!(matches!(v.element(2, S1), Err(Error::InvalidArgument(_))));
    assert!(matches!(v.set_element(5, 1, S1), Err(Error::InvalidArgument(_))));
    v.set_element_to_zero_async(1, S1).unwrap();
    v.shrink_to_fit(S1).unwrap();
    assert_eq!((v.len(), v.capacity()), (2, 2));
    assert_eq!(v.to_vec(S1).unwrap(), [10, 0]);
    assert_eq!(live(&stats), (1, 8), "every old allocation was freed");
    v.reserve(50, S1).unwrap();
    let b = v.release();
    assert_eq!(b.to_vec().unwrap(), [10, 0]);
    assert_eq!(live(&stats), (1, 200), "the released buffer keeps the capacity");
    drop(b);
    assert_eq!(live(&stats), (0, 0));
    let mut e = DeviceUvector::<u8>::new_in(0, S1, r).unwrap();
    assert!(matches!(e.back_element(S1), Err(Error::InvalidArgument(_))));
    e.resize(3, S1).unwrap();
    assert_eq!(e.to_vec(S1).unwrap(), [0, 0, 0], "host memory starts zeroed");
}

#[test]
fn frees_go_to_the_buffers_stream() {
    let rec = Recorder::new(HostMemoryResource::new());
    let r: SharedResource = rec.clone();
    let mut b = DeviceBuffer::<u32>::new_in(10, S1, r.clone()).unwrap();
    b.set_stream(S2).unwrap();
    assert_eq!(b.stream(), S2);
    let p = b.as_ptr() as usize;
    drop(b);
    assert_eq!(rec.calls(), [(true, p, 40, S1), (false, p, 40, S2)]);

    let rec = Recorder::new(HostMemoryResource::new());
    let r: SharedResource = rec.clone();
    let mut v = DeviceUvector::<u64>::new_in(4, S1, r).unwrap();
    let first = v.as_ptr() as usize;
    v.resize(8, S3).unwrap(); // reallocates on S3: the vector moves there
    let second = v.as_ptr() as usize;
    assert_eq!(v.stream(), S3);
    drop(v);
    assert_eq!(
        rec.calls(),
        [(true, first, 32, S1), (true, second, 64, S3), (false, first, 32, S3), (false, second, 64, S3)]
    );
    assert_eq!(rec.upstream.outstanding(), (0, 0));
}

#[test]
fn free_errors_are_returned_or_recorded_never_panics() {
    let rec =
        Arc::new(Recorder { upstream: HostMemoryResource::new(), calls: Mutex::new(Vec::new()), refuse_frees: true });
    let r: SharedResource = rec.clone();
    let b = DeviceBuffer::<u8>::new_in(64, S1, r.clone()).unwrap();
    let p = b.as_ptr() as usize;
    let msg = format!("recorder refuses to free {p:#x}");
    assert_eq!(b.free(), Err(Error::InvalidArgument(msg)));
    let c = DeviceBuffer::<u8>::new_in(64, S1, r).unwrap();
    let q = c.as_ptr() as usize;
    drop(c);
    let (errors, count) = take_drop_errors();
    let msg = format!("recorder refuses to free {q:#x}");
    assert!(errors.contains(&Error::InvalidArgument(msg)), "{errors:?}");
    assert!(count >= 1);
}

#[test]
fn uvector_matches_a_vec_model() {
    let mut rng = Rng::new(seed("uvector_matches_a_vec_model", 0xB0FF));
    let (stats, r) = host();
    let mut v = DeviceUvector::<u32>::new_in(0, S1, r.clone()).unwrap();
    let mut model: Vec<u32> = Vec::new();
    for step in 0..20_000 {
        match rng.below(6) {
            0 => {
                let n = rng.below(300);
                v.resize(n, S1).unwrap();
                let kept = model.len().min(n);
                assert_eq!(v.to_vec(S1).unwrap()[..kept], model[..kept], "step {step}: resize lost elements");
                // New elements are unspecified: give them known values.
                model.resize(n, rng.next_u64() as u32);
                v.copy_from_host(&model, S1).unwrap();
            }
            1 => {
                let c = rng.below(400);
                v.reserve(c, S1).unwrap();
                assert!(v.capacity() >= c.max(v.len()));
            }
            2 => v.shrink_to_fit(S1).unwrap(),
            3 if !model.is_empty() => {
                let i = rng.below(model.len());
                let x = rng.next_u64() as u32;
                v.set_element(i, x, S1).unwrap();
                model[i] = x;
            }
            4 if !model.is_empty() => {
                let i = rng.below(model.len());
                assert_eq!(v.element(i, S1).unwrap(), model[i], "step {step}");
            }
            _ => {
                let c = v.try_clone(S2).unwrap();
                assert_eq!(c.len(), model.len());
                v = c;
                v.set_stream(S1).unwrap();
            }
        }
        assert_eq!(v.len(), model.len());
        assert!(v.capacity() >= v.len());
        assert_eq!(v.to_vec(S1).unwrap(), model, "step {step}");
    }
    drop(v);
    assert_eq!(live(&stats), (0, 0));
}

// ---- GPU ------------------------------------------------------------------------------------

/// A pool over device memory, counted, as a shared resource.
type GpuStats = StatisticsResourceAdaptor<PoolMemoryResource<CudaMemoryResource>>;

fn gpu_pool() -> (Arc<GpuStats>, SharedResource) {
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 64 << 20, None).unwrap();
    let stats = Arc::new(StatisticsResourceAdaptor::new(pool));
    let shared: SharedResource = stats.clone();
    (stats, shared)
}

#[test]
fn gpu_round_trip_zeroed_and_clone() {
    if !gpu() {
        return;
    }
    let (stats, r) = gpu_pool();
    let (s1, s2) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let data: Vec<f64> = (0..100_000).map(|i| i as f64 * 0.5).collect();
    let mut b = DeviceBuffer::from_host_in(&data, s1.view(), r.clone()).unwrap();
    assert_eq!(b.to_vec().unwrap(), data);
    let z = DeviceBuffer::<u16>::zeroed_in(12_345, s2.view(), r.clone()).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![0; 12_345]);
    let c = b.try_clone(s2.view()).unwrap();
    let rev: Vec<f64> = data.iter().rev().copied().collect();
    b.copy_from_host(&rev).unwrap();
    assert_eq!(c.to_vec().unwrap(), data, "the clone is independent");
    assert_eq!(b.to_vec().unwrap(), rev);
    // Moving a buffer between streams keeps its contents.
    b.set_stream(s2.view()).unwrap();
    assert_eq!(b.to_vec().unwrap(), rev);
    // The current device resource serves buffers that name none.
    let d = DeviceBuffer::from_host(&[3u8, 1, 4], s1.view()).unwrap();
    assert_eq!(d.to_vec().unwrap(), [3, 1, 4]);
    drop((b, c, z, d));
    assert_eq!(live_gpu(&stats), (0, 0));
}

fn live_gpu(stats: &GpuStats) -> (i64, i64) {
    (stats.allocations_counter().value, stats.bytes_counter().value)
}

#[test]
fn gpu_uvector_resize_preserves_contents() {
    if !gpu() {
        return;
    }
    let (stats, r) = gpu_pool();
    let (s1, s2) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let data: Vec<u32> = (0..5000).collect();
    let mut v = DeviceUvector::from_host_in(&data, s1.view(), r.clone()).unwrap();
    v.resize(20_000, s2.view()).unwrap();
    assert_eq!(v.stream(), s2.view());
    // The 15,000 new elements are uninitialised (as in RMM): read back only the kept ones, so
    // compute-sanitizer's initcheck has nothing to report.
    let kept: Vec<u32> = (0..5000).map(|i| v.element(i, s2.view()).unwrap()).collect();
    assert_eq!(kept, data);
    v.set_element(19_999, 7, s1.view()).unwrap();
    assert_eq!(v.element(19_999, s2.view()).unwrap(), 7);
    v.set_element_to_zero_async(0, s1.view()).unwrap();
    assert_eq!(v.front_element(s1.view()).unwrap(), 0);
    v.resize(10, s1.view()).unwrap();
    v.shrink_to_fit(s1.view()).unwrap();
    assert_eq!(v.capacity(), 10);
    assert_eq!(v.to_vec(s1.view()).unwrap(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let w = v.try_clone(s2.view()).unwrap();
    let b = v.release();
    assert_eq!(b.to_vec().unwrap(), w.to_vec(s2.view()).unwrap());
    drop((b, w));
    assert_eq!(live_gpu(&stats), (0, 0));
}

#[test]
fn gpu_drop_frees_on_the_buffers_stream() {
    if !gpu() {
        return;
    }
    let rec = Recorder::new(StatisticsResourceAdaptor::new(
        PoolMemoryResource::new(CudaMemoryResource::new(), 16 << 20, None).unwrap(),
    ));
    let r: SharedResource = rec.clone();
    let (s1, s2) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let mut b = DeviceBuffer::<u8>::zeroed_in(1 << 20, s1.view(), r.clone()).unwrap();
    b.set_stream(s2.view()).unwrap();
    let p = b.as_ptr() as usize;
    drop(b);
    assert_eq!(rec.calls(), [(true, p, 1 << 20, s1.view()), (false, p, 1 << 20, s2.view())]);
    assert_eq!(rec.upstream.allocations_counter().value, 0);
    assert_eq!(rec.upstream.bytes_counter().value, 0);
    s2.synchronize().unwrap();
}

#[test]
fn gpu_cudarc_interop_round_trip() {
    if !gpu() {
        return;
    }
    use cudarc::driver::CudaContext;
    let ctx = CudaContext::new(0).unwrap();
    let (stats, r) = gpu_pool();
    let cu = ctx.new_stream().unwrap();
    let ours = CudaStreamView::from(&*cu);
    assert_eq!(ours.as_raw(), cu.cu_stream());
    let data: Vec<i64> = (0..4096).map(|i| i * i).collect();
    // cudarc writes into our buffer on the buffer's own stream.
    let mut a = DeviceBuffer::<i64>::new_in(4096, ours, r.clone()).unwrap();
    cu.memcpy_htod(&data, &mut a.cudarc_view_mut(&ctx).unwrap()).unwrap();
    assert_eq!(a.to_vec().unwrap(), data);
    // cudarc copies between two of our buffers on another stream: ordered both ways.
    let other = ctx.new_stream().unwrap();
    let b_stream = CudaStream::new().unwrap();
    let mut b = DeviceUvector::<i64>::new_in(4096, b_stream.view(), r.clone()).unwrap();
    other.memcpy_dtod(&a.cudarc_view(&ctx).unwrap(), &mut b.cudarc_view_mut(&ctx).unwrap()).unwrap();
    assert_eq!(b.to_vec(b_stream.view()).unwrap(), data);
    // cudarc zeroes, reads back through cudarc.
    cu.memset_zeros(&mut a.cudarc_view_mut(&ctx).unwrap()).unwrap();
    assert_eq!(cu.clone_dtoh(&a.cudarc_view(&ctx).unwrap()).unwrap(), vec![0; 4096]);
    // Our stream as a cudarc stream (borrowed: cudarc does not destroy it).
    let s = CudaStream::new().unwrap();
    // SAFETY: `s` outlives `wrapped`, and both belong to the primary context of device 0.
    let wrapped = unsafe { s.view().as_cudarc_stream(&ctx) };
    let c = DeviceBuffer::from_host_in(&data, s.view(), r.clone()).unwrap();
    assert_eq!(wrapped.clone_dtoh(&c.cudarc_view(&ctx).unwrap()).unwrap(), data);
    drop(wrapped);
    s.synchronize().unwrap();
    assert_eq!(c.device_ptr(), c.as_ptr() as u64);
    drop((a, b, c));
    assert_eq!(live_gpu(&stats), (0, 0));
}
