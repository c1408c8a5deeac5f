//! What the C++ oracle showed of the limiting adaptor, the pool and the statistics adaptor: the
//! limiting adaptor counts sizes rounded to its own allocation alignment, and the out-of-memory
//! messages are RMM 26.10's words. Host memory only.

use rmm::adaptor::{LimitingResourceAdaptor, StatisticsResourceAdaptor};
use rmm::error::format_bytes;
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource};

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn limited(limit: usize) -> LimitingResourceAdaptor<HostMemoryResource> {
    LimitingResourceAdaptor::new(HostMemoryResource::new(), limit)
}

#[test]
fn format_bytes_writes_rmms_units() {
    assert_eq!(format_bytes(0), "0.000000 B");
    assert_eq!(format_bytes(1024), "1024.000000 B");
    assert_eq!(format_bytes(1025), "1.000977 KiB");
    assert_eq!(format_bytes(1 << 20), "1024.000000 KiB");
    assert_eq!(format_bytes(3 << 20), "3.000000 MiB");
    assert_eq!(format_bytes(1_536_000), "1.464844 MiB");
    assert_eq!(format_bytes(usize::MAX), "16.000000 EiB");
}

#[test]
fn the_limiting_adaptor_counts_sizes_at_its_allocation_alignment() {
    // (alignment, size, counted): RMM's align_up(size, alignment), whatever each request asks.
    for (alignment, size, counted) in
        [(1, 1, 1), (1, 255, 255), (1, 257, 257), (1, 1000, 1000), (4096, 1, 4096), (4096, 1000, 4096), (256, 257, 512)]
    {
        let limiting = LimitingResourceAdaptor::with_alignment(HostMemoryResource::new(), 1 << 20, alignment).unwrap();
        assert_eq!(limiting.allocation_alignment(), alignment);
        let p = limiting.allocate(size, 256, S).unwrap();
        assert_eq!(limiting.allocated_bytes(), counted, "alignment {alignment}, size {size}");
        limiting.deallocate(p, size, 256, S).unwrap();
        assert_eq!(limiting.allocated_bytes(), 0);
    }
    assert_eq!(limited(1).allocation_alignment(), 256);
    assert!(matches!(
        LimitingResourceAdaptor::with_alignment(HostMemoryResource::new(), 1 << 20, 3),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn the_limiting_adaptor_refuses_in_rmms_words() {
    let limiting = limited(1 << 20);
    let p = limiting.allocate(1000, 256, S).unwrap();
    let e = limiting.allocate(1 << 20, 256, S).unwrap_err();
    assert!(e.is_out_of_memory());
    assert_eq!(e.to_string(), "Exceeded memory limit 1048576; Allocated bytes 1024; Requested bytes 1048576\n");
    limiting.deallocate(p, 1000, 256, S).unwrap();
}

#[test]
fn a_pool_without_room_refuses_in_rmms_words() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, Some(0)).unwrap();
    let e = pool.allocate(1000, 256, S).unwrap_err();
    assert!(e.is_out_of_memory());
    assert_eq!(
        e.to_string(),
        "Maximum pool size exceeded (failed to allocate 1024.000000 B): Not enough room to grow, \
         current/max/try size = 0.000000 B, 0.000000 B, 1024.000000 B"
    );
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 1 << 20, Some(2 << 20)).unwrap();
    let e = pool.allocate(3 << 20, 256, S).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Maximum pool size exceeded (failed to allocate 3.000000 MiB): Not enough room to grow, \
         current/max/try size = 1024.000000 KiB, 2.000000 MiB, 3.000000 MiB"
    );
}

#[test]
fn a_pool_whose_upstream_refuses_quotes_the_upstream() {
    let pool = PoolMemoryResource::new(limited(6000), 0, Some(8192)).unwrap();
    let a = pool.allocate(1000, 256, S).unwrap();
    let e = pool.allocate(4000, 256, S).unwrap_err();
    assert!(e.is_out_of_memory());
    assert_eq!(
        e.to_string(),
        "Maximum pool size exceeded (failed to allocate 4.000000 KiB): std::bad_alloc: out_of_memory: \
         Exceeded memory limit 6000; Allocated bytes 4096; Requested bytes 4096\n"
    );
    pool.deallocate(a, 1000, 256, S).unwrap();
}

#[test]
fn popping_with_nothing_pushed_says_rmms_text() {
    let stats = StatisticsResourceAdaptor::new(HostMemoryResource::new());
    assert_eq!(stats.pop_counters(), Err(Error::InvalidArgument("cannot pop the last counter pair".into())));
}
