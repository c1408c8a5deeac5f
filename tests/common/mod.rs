//! Shared test kit: a seeded RNG, a shadow model of live blocks, and a random-trace driver that
//! checks every step against the model.
#![allow(dead_code)]

pub mod capture_order;
pub mod clock_order;
pub mod contexts;
pub mod device_bytes;
pub mod recording_order;
pub mod threads_bench;

use rmm::{CudaStreamView, MemoryResource};

/// A driver call's success, for `assert_eq!` in GPU tests.
pub const CU_OK: cudarc::driver::sys::CUresult = cudarc::driver::sys::CUresult::CUDA_SUCCESS;

/// The device whose memory `p` (a live device allocation) lies in.
pub fn device_of<T>(p: *const T) -> i32 {
    use cudarc::driver::sys;
    let mut ordinal: i32 = -1;
    // SAFETY: p is a live device allocation; the out pointer is valid for the attribute's type.
    let status = unsafe {
        sys::cuPointerGetAttribute(
            (&mut ordinal as *mut i32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            p as u64,
        )
    };
    assert_eq!(status, CU_OK);
    ordinal
}

/// True where a CUDA device is; elsewhere prints the reason a GPU test skips.
pub fn gpu() -> bool {
    if rmm::cuda_available() {
        true
    } else {
        println!("skipped: no CUDA device");
        false
    }
}

/// One allocation of 1 MiB and its free succeed on the legacy default stream: the resource kept
/// working after whatever the test did to it.
pub fn device_keeps_working(r: &dyn MemoryResource) {
    let p = r.allocate(1 << 20, 256, CudaStreamView::DEFAULT).unwrap();
    assert_eq!(p as usize % 256, 0);
    r.deallocate(p, 1 << 20, 256, CudaStreamView::DEFAULT).unwrap();
}
use std::collections::BTreeMap;

/// The generator every test draws from (SplitMix64, reproducible from a printed seed).
pub use rmm::testing::SplitMix64 as Rng;

/// The seed for a randomized test: `RMM_TEST_SEED` if set, else a fixed default. Printed so that a
/// failure can be replayed.
pub fn seed(test: &str, default: u64) -> u64 {
    let s = std::env::var("RMM_TEST_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    println!("{test}: seed {s} (replay with RMM_TEST_SEED={s})");
    s
}

/// Live blocks by start address; checks alignment and that no two live blocks overlap.
#[derive(Default)]
pub struct Model {
    live: BTreeMap<usize, usize>,
    pub live_bytes: usize,
}

impl Model {
    pub fn insert(&mut self, ptr: *mut u8, bytes: usize, alignment: usize) {
        let p = ptr as usize;
        assert!(!ptr.is_null(), "allocation of {bytes} bytes returned null");
        assert_eq!(p % alignment.max(256), 0, "{p:#x} is not {}-aligned", alignment.max(256));
        if let Some((&q, &qs)) = self.live.range(..=p).next_back() {
            assert!(q + qs <= p, "block {p:#x}+{bytes} overlaps live block {q:#x}+{qs}");
        }
        if let Some((&q, _)) = self.live.range(p..).next() {
            assert!(p + bytes <= q, "block {p:#x}+{bytes} overlaps live block at {q:#x}");
        }
        self.live.insert(p, bytes);
        self.live_bytes += bytes;
    }
    pub fn remove(&mut self, ptr: *mut u8) -> usize {
        let bytes = self.live.remove(&(ptr as usize)).expect("freeing a block the model does not know");
        self.live_bytes -= bytes;
        bytes
    }
    /// Live bytes with every block rounded up to 256, what a pool without alignment gaps uses.
    pub fn rounded_live_bytes(&self) -> usize {
        self.live.values().map(|&b| (b + 255) & !255).sum()
    }
    pub fn len(&self) -> usize {
        self.live.len()
    }
}

/// A live block as the driver keeps it.
#[derive(Clone, Copy)]
pub struct Live {
    pub ptr: *mut u8,
    pub bytes: usize,
    pub alignment: usize,
}

/// Parameters of a random trace.
pub struct Trace<'s> {
    pub ops: usize,
    pub max_live: usize,
    pub min_size: usize,
    pub max_size: usize,
    pub streams: Vec<CudaStreamView<'s>>,
    /// Probability (percent) of allocating when below `max_live`.
    pub alloc_pct: usize,
    /// Also use alignments above 256 now and then.
    pub big_alignments: bool,
}

impl Default for Trace<'_> {
    fn default() -> Self {
        Trace {
            ops: 100_000,
            max_live: 1000,
            min_size: 1,
            max_size: 1 << 20,
            streams: vec![CudaStreamView::DEFAULT],
            alloc_pct: 55,
            big_alignments: false,
        }
    }
}

/// Runs a random allocate/free trace on `r`, checking every result against a [`Model`], and calls
/// `after_step(model)` after each operation (statistics checks go there). Frees everything at the end.
/// Out-of-memory errors are allowed (they are counted and returned) when `allow_oom` is true.
pub fn run_trace<R: MemoryResource + ?Sized>(
    r: &R,
    t: &Trace,
    rng: &mut Rng,
    allow_oom: bool,
    mut after_step: impl FnMut(&Model),
) -> usize {
    let mut model = Model::default();
    let mut live: Vec<Live> = Vec::with_capacity(t.max_live);
    let mut ooms = 0;
    for _ in 0..t.ops {
        let stream = t.streams[rng.below(t.streams.len())];
        let allocate = live.len() < t.max_live && (live.is_empty() || rng.below(100) < t.alloc_pct);
        if allocate {
            let bytes = rng.log_uniform(t.min_size, t.max_size);
            let alignment = if t.big_alignments && rng.below(16) == 0 { 256 << rng.below(5) } else { 256 };
            match r.allocate(bytes, alignment, stream) {
                Ok(ptr) => {
                    model.insert(ptr, bytes, alignment);
                    live.push(Live { ptr, bytes, alignment });
                }
                Err(e) if allow_oom && e.is_out_of_memory() => ooms += 1,
                Err(e) => panic!("allocate({bytes}, {alignment}) failed: {e}"),
            }
        } else {
            let i = rng.below(live.len());
            let b = live.swap_remove(i);
            model.remove(b.ptr);
            r.deallocate(b.ptr, b.bytes, b.alignment, stream)
                .unwrap_or_else(|e| panic!("deallocate({:p}, {}) failed: {e}", b.ptr, b.bytes));
        }
        after_step(&model);
    }
    for b in live.drain(..) {
        model.remove(b.ptr);
        r.deallocate(b.ptr, b.bytes, b.alignment, t.streams[0]).expect("final free failed");
        after_step(&model);
    }
    ooms
}

/// A pool over host memory that grows on demand: the upstream of the adaptors' tests.
pub fn host_pool() -> rmm::resource::PoolMemoryResource<rmm::resource::HostMemoryResource> {
    rmm::resource::PoolMemoryResource::new(rmm::resource::HostMemoryResource::new(), 0, None).unwrap()
}

/// On a GPU: whether the current device has `what` (`check` says), printing the skip reason when
/// it has not. For tests of resources that need more than a GPU.
pub fn device_supports(what: &str, check: fn(rmm::DeviceId) -> rmm::Result<bool>) -> bool {
    let device = rmm::DeviceId::current().unwrap();
    if check(device).unwrap() {
        true
    } else {
        println!("skipped: device {} does not support {what}", device.0);
        false
    }
}

/// Operations for a model test: `RMM_MODEL_OPS` if set, else `release` in release builds and a
/// hundredth of it in debug builds (which check the same things, only fewer times).
pub fn ops(test: &str, release: usize) -> usize {
    let n = match std::env::var("RMM_MODEL_OPS") {
        Ok(v) => v
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("RMM_MODEL_OPS={v:?} is not a whole number of operations")),
        Err(_) if cfg!(debug_assertions) => release / 100,
        Err(_) => release,
    };
    println!("{test}: {n} operations (RMM_MODEL_OPS sets the count)");
    n
}

/// `n` distinct stream handles that no driver call ever sees (host-only tests).
pub fn fake_streams(n: usize) -> Vec<rmm::CudaStreamView<'static>> {
    // SAFETY: the names are for resources over host memory: no driver call sees them.
    (1..=n).map(|i| unsafe { rmm::CudaStreamView::from_handle(0x10_000 * i) }).collect()
}

/// True when the test runs under compute-sanitizer (it sets this variable for the programs it
/// injects into). Its tools take device memory of their own as a program allocates, so
/// free-memory measurements mean nothing there.
pub fn under_sanitizer() -> bool {
    std::env::var_os("NV_SANITIZER_INJECTION_PORT_BASE").is_some()
}

/// Memory no resource handed out: a free of an address in it is an unknown pointer.
static FOREIGN: [u64; 64] = [0; 64];

/// A random address inside [`FOREIGN`].
pub fn foreign_pointer(rng: &mut Rng) -> *mut u8 {
    FOREIGN.as_ptr().wrapping_add(rng.below(FOREIGN.len())) as *mut u8
}
