//! The host benchmark loop of the thread tests: several threads allocating and freeing through one
//! resource at once.

use super::Rng;
use rmm::{CudaStreamView, MemoryResource};

/// Nanoseconds per allocate-or-free, all threads together (wall time over all operations), for
/// `threads` threads each making `ops` calls on `stream_of(thread)`, cycling a window of 64 live
/// blocks of 256 B to 64 KiB.
pub fn ns_per_op<'s>(
    r: &dyn MemoryResource,
    threads: usize,
    ops: usize,
    stream_of: impl Fn(usize) -> CudaStreamView<'s> + Sync,
) -> f64 {
    let start = std::time::Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let stream_of = &stream_of;
            scope.spawn(move || {
                let s = stream_of(t);
                let mut rng = Rng::new(t as u64 + 1);
                let mut live = vec![(std::ptr::null_mut::<u8>(), 0usize); 64];
                for i in 0..ops / 2 {
                    let slot = &mut live[i % 64];
                    if !slot.0.is_null() {
                        r.deallocate(slot.0, slot.1, 256, s).unwrap();
                    }
                    let bytes = 256 << rng.below(9);
                    *slot = (r.allocate(bytes, 256, s).unwrap(), bytes);
                }
                for (p, bytes) in live {
                    r.deallocate(p, bytes, 256, s).unwrap();
                }
            });
        }
    });
    start.elapsed().as_nanos() as f64 / (threads * ops) as f64
}
