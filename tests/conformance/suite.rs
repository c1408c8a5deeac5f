//! The tests every resource passes, written once over `&dyn MemoryResource`, and the macro that
//! instantiates them for one resource.

use crate::common::Rng;
use rmm::{CudaStreamView, MemoryResource};

/// What a resource is, as far as the suite is concerned.
#[derive(Clone, Copy)]
pub struct Spec {
    /// Needs a GPU (skipped without one).
    pub gpu: bool,
    /// The largest alignment it honours (larger ones are refused).
    pub max_alignment: usize,
    pub device_accessible: bool,
    pub host_accessible: bool,
    /// On a GPU, whether this machine has what the resource needs; prints why not when it lacks it.
    pub supported_here: fn() -> bool,
}

/// For resources that need nothing beyond a GPU.
fn always() -> bool {
    true
}

impl Spec {
    /// Memory from the driver: a GPU, alignments up to 256.
    pub const DRIVER: Spec =
        Spec { gpu: true, max_alignment: 256, device_accessible: true, host_accessible: false, supported_here: always };
    /// Host memory for tests, no GPU.
    pub const HOST: Spec = Spec {
        gpu: false,
        max_alignment: 4096,
        device_accessible: false,
        host_accessible: true,
        supported_here: always,
    };

    pub const fn host_accessible(self) -> Spec {
        Spec { host_accessible: true, ..self }
    }
    pub const fn max_alignment(self, max_alignment: usize) -> Spec {
        Spec { max_alignment, ..self }
    }
    /// Runs the tests only where `supported` (called on a GPU) says the machine can.
    pub const fn supported_when(self, supported: fn() -> bool) -> Spec {
        Spec { supported_here: supported, ..self }
    }
    /// False (and says why) where the resource needs a GPU and there is none, or a capability the
    /// machine lacks.
    pub fn runs_here(&self) -> bool {
        !self.gpu || (crate::common::gpu() && (self.supported_here)())
    }
}

const S: CudaStreamView = CudaStreamView::DEFAULT;

/// Writes and reads every block's first and last byte where the host may touch it, so that two
/// blocks given the same bytes would show.
fn touch(r: &dyn MemoryResource, p: *mut u8, bytes: usize, tag: u8) {
    if r.is_host_accessible() && bytes > 0 {
        // SAFETY: `p` is a live block of `bytes` bytes that host code may access.
        unsafe {
            p.write(tag);
            p.add(bytes - 1).write(tag);
        }
    }
}

fn check_touch(r: &dyn MemoryResource, p: *mut u8, bytes: usize, tag: u8) {
    if r.is_host_accessible() && bytes > 0 {
        // SAFETY: as in `touch`; the block is still live.
        let (first, last) = unsafe { (p.read(), p.add(bytes - 1).read()) };
        assert_eq!((first, last), (tag, tag), "block {p:p} of {bytes} bytes was written by another");
    }
}

pub fn zero_bytes_is_null_and_freeing_null_does_nothing(r: &dyn MemoryResource) {
    let p = r.allocate(0, 256, S).unwrap();
    assert!(p.is_null(), "a 0-byte request returns null");
    r.deallocate(std::ptr::null_mut(), 0, 256, S).unwrap();
    r.deallocate(p, 0, 256, S).unwrap();
}

pub fn sizes_from_one_byte_to_sixteen_mib_round_trip(r: &dyn MemoryResource) {
    for bytes in [1, 7, 255, 256, 257, 4095, 4096, 65537, 1 << 20, (3 << 20) + 5, 16 << 20] {
        let p = r.allocate(bytes, 256, S).unwrap_or_else(|e| panic!("allocate({bytes}): {e}"));
        assert!(!p.is_null() && (p as usize).is_multiple_of(256), "allocate({bytes}) gave {p:p}");
        touch(r, p, bytes, 0x5A);
        check_touch(r, p, bytes, 0x5A);
        r.deallocate(p, bytes, 256, S).unwrap();
    }
}

pub fn live_blocks_never_overlap(r: &dyn MemoryResource, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut live: Vec<(usize, usize, u8)> = Vec::new();
    for i in 0..400u32 {
        if !live.is_empty() && rng.below(3) == 0 {
            let (p, bytes, tag) = live.swap_remove(rng.below(live.len()));
            check_touch(r, p as *mut u8, bytes, tag);
            r.deallocate(p as *mut u8, bytes, 256, S).unwrap();
        } else {
            let bytes = rng.log_uniform(1, 1 << 20);
            let p = r.allocate(bytes, 256, S).unwrap() as usize;
            let tag = (i % 251) as u8;
            touch(r, p as *mut u8, bytes, tag);
            live.push((p, bytes, tag));
        }
    }
    let mut ranges: Vec<(usize, usize)> = live.iter().map(|&(p, b, _)| (p, p + b)).collect();
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(w[0].1 <= w[1].0, "live blocks {:#x}..{:#x} and {:#x}.. overlap", w[0].0, w[0].1, w[1].0);
    }
    for (p, bytes, tag) in live {
        check_touch(r, p as *mut u8, bytes, tag);
        r.deallocate(p as *mut u8, bytes, 256, S).unwrap();
    }
}

pub fn alignments_up_to_the_limit_are_honoured(r: &dyn MemoryResource, max_alignment: usize) {
    let mut align = 1;
    while align <= max_alignment {
        for bytes in [1, 300, 5000] {
            let p = r.allocate(bytes, align, S).unwrap_or_else(|e| panic!("allocate({bytes}, {align}): {e}"));
            assert_eq!(p as usize % align.max(256), 0, "allocate({bytes}, {align}) gave {p:p}");
            r.deallocate(p, bytes, align, S).unwrap();
        }
        align *= 2;
    }
}

pub fn alignments_that_are_no_power_of_two_are_refused(r: &dyn MemoryResource) {
    for align in [3, 257, 1000] {
        assert!(r.allocate(64, align, S).is_err(), "alignment {align} accepted");
    }
    let p = r.allocate(64, 256, S).unwrap();
    r.deallocate(p, 64, 256, S).unwrap();
}

pub fn a_resource_equals_itself(r: &dyn MemoryResource) {
    assert!(r.is_equal(r));
}

pub fn accessibility_is_as_declared(r: &dyn MemoryResource, spec: Spec) {
    assert_eq!(r.is_device_accessible(), spec.device_accessible, "device accessible");
    assert_eq!(r.is_host_accessible(), spec.host_accessible, "host accessible");
}

pub fn threads_allocate_and_free_at_once(r: &dyn MemoryResource, seed: u64) {
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            scope.spawn(move || {
                let mut rng = Rng::new(seed + t);
                let mut live = Vec::new();
                for _ in 0..300 {
                    if live.len() < 16 && rng.below(2) == 0 {
                        let bytes = rng.log_uniform(1, 64 << 10);
                        live.push((r.allocate(bytes, 256, S).unwrap(), bytes));
                    } else if let Some((p, bytes)) = live.pop() {
                        r.deallocate(p, bytes, 256, S).unwrap();
                    }
                }
                for (p, bytes) in live {
                    r.deallocate(p, bytes, 256, S).unwrap();
                }
            });
        }
    });
}

/// The suite for one resource: `conformance!(SPEC, || make a resource)` in a module named after it.
macro_rules! conformance {
    ($spec:expr, $make:expr) => {
        use $crate::suite::{self, Spec};
        const SPEC: Spec = $spec;

        fn resource() -> impl rmm::MemoryResource {
            ($make)()
        }

        #[test]
        fn zero_bytes_is_null_and_freeing_null_does_nothing() {
            if SPEC.runs_here() {
                suite::zero_bytes_is_null_and_freeing_null_does_nothing(&resource());
            }
        }

        #[test]
        fn sizes_from_one_byte_to_sixteen_mib_round_trip() {
            if SPEC.runs_here() {
                suite::sizes_from_one_byte_to_sixteen_mib_round_trip(&resource());
            }
        }

        #[test]
        fn live_blocks_never_overlap() {
            if SPEC.runs_here() {
                let seed = $crate::common::seed(module_path!(), 7);
                suite::live_blocks_never_overlap(&resource(), seed);
            }
        }

        #[test]
        fn alignments_up_to_the_limit_are_honoured() {
            if SPEC.runs_here() {
                suite::alignments_up_to_the_limit_are_honoured(&resource(), SPEC.max_alignment);
            }
        }

        #[test]
        fn alignments_that_are_no_power_of_two_are_refused() {
            if SPEC.runs_here() {
                suite::alignments_that_are_no_power_of_two_are_refused(&resource());
            }
        }

        #[test]
        fn a_resource_equals_itself() {
            if SPEC.runs_here() {
                suite::a_resource_equals_itself(&resource());
            }
        }

        #[test]
        fn accessibility_is_as_declared() {
            if SPEC.runs_here() {
                suite::accessibility_is_as_declared(&resource(), SPEC);
            }
        }

        #[test]
        fn threads_allocate_and_free_at_once() {
            if SPEC.runs_here() {
                let seed = $crate::common::seed(module_path!(), 11);
                suite::threads_allocate_and_free_at_once(&resource(), seed);
            }
        }
    };
}
