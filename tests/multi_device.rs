//! Two GPUs from Rust: the per-device table switching with the current device, the current
//! resource wrapped and restored on each device, a pool per device under eight threads, and
//! copies between two pools' blocks on different devices, and the stream order's events for a
//! stream of one device made while the other is current. Each test skips, saying why, on a
//! machine with fewer than two devices; one test (the wrap-and-restore) also runs on one.

mod common;

use common::{device_of, CU_OK};
use cudarc::driver::sys;
use rmm::adaptor::StatisticsResourceAdaptor;
use rmm::device::{device_count, set_current_device};
use rmm::per_device_resource::{
    get_current_device_resource, reset_per_device_resource, set_current_device_resource, set_per_device_resource,
};
use rmm::pool::{next_retirement_number, StreamIdentity, StreamKey, StreamOrder};
use rmm::resource::{CudaEventOrder, CudaMemoryResource, PoolMemoryResource};
use rmm::{CudaStream, CudaStreamView, DeviceId, MemoryResource, SharedResource};
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;

/// The per-device table is process-wide: the tests that change it take turns.
static TABLE: Mutex<()> = Mutex::new(());

fn devices(needed: usize) -> bool {
    let n = if rmm::cuda_available() { device_count().unwrap_or(0) } else { 0 };
    if n >= needed {
        return true;
    }
    println!("skipped: needs {needed} CUDA device(s), this machine has {n}");
    false
}

/// A pool on each of the first two devices, made with that device current, set in the table.
fn pool_per_device() -> Vec<SharedResource> {
    (0..2)
        .map(|d| {
            set_current_device(DeviceId(d)).unwrap();
            let pool: SharedResource =
                Arc::new(PoolMemoryResource::new(CudaMemoryResource::new(), 64 * MIB, None).unwrap());
            set_per_device_resource(DeviceId(d), pool.clone());
            pool
        })
        .collect()
}

fn reset_table() {
    for d in 0..2 {
        reset_per_device_resource(DeviceId(d));
    }
    set_current_device(DeviceId(0)).unwrap();
}

#[test]
fn the_table_follows_the_current_device() {
    if !devices(2) {
        return;
    }
    let _turn = TABLE.lock().unwrap();
    let pools = pool_per_device();
    for round in 0..4 {
        for (d, pool) in pools.iter().enumerate() {
            set_current_device(DeviceId(d as i32)).unwrap();
            let current = get_current_device_resource().unwrap();
            assert!(Arc::ptr_eq(&current, pool), "round {round}, device {d}");
            let p = current.allocate(1000, 256, CudaStreamView::DEFAULT).unwrap();
            assert_eq!(device_of(p), d as i32);
            current.deallocate(p, 1000, 256, CudaStreamView::DEFAULT).unwrap();
        }
    }
    reset_table();
}

/// Wrap the current resource in a statistics adaptor, allocate, restore; on every device.
#[test]
fn the_current_resource_is_wrapped_and_restored_a_thousand_times_on_each_device() {
    if !devices(1) {
        return;
    }
    let _turn = TABLE.lock().unwrap();
    let n = device_count().unwrap().min(2);
    for round in 0..1000 {
        let d = DeviceId((round % n) as i32);
        set_current_device(d).unwrap();
        let previous = get_current_device_resource().unwrap();
        let stats = Arc::new(StatisticsResourceAdaptor::new(previous.clone()));
        set_current_device_resource(stats.clone()).unwrap();
        let r = get_current_device_resource().unwrap();
        let p = r.allocate(1000, 256, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(stats.bytes_counter().value, 1000);
        set_current_device_resource(previous).unwrap();
        // Freed through the adaptor while another device is current.
        set_current_device(DeviceId(((round + 1) % n) as i32)).unwrap();
        set_current_device(d).unwrap();
        r.deallocate(p, 1000, 256, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(stats.bytes_counter().value, 0, "round {round}");
    }
    reset_table();
}

#[test]
fn a_pool_per_device_under_eight_threads() {
    if !devices(2) {
        return;
    }
    let _turn = TABLE.lock().unwrap();
    let _pools = pool_per_device();
    std::thread::scope(|scope| {
        for t in 0..8usize {
            scope.spawn(move || {
                let d = t % 2;
                set_current_device(DeviceId(d as i32)).unwrap();
                let mr = get_current_device_resource().unwrap();
                let stream = CudaStream::new().unwrap();
                let s = stream.view();
                let mut live: Vec<(*mut u8, usize, u8)> = Vec::new();
                for i in 0..2000usize {
                    let bytes = 256 << (i % 10);
                    let p = mr.allocate(bytes, 256, s).unwrap();
                    assert_eq!(device_of(p), d as i32);
                    let value = (t * 31 + i) as u8 | 1;
                    // SAFETY: p is a live block of `bytes` bytes; the stream is alive.
                    assert_eq!(unsafe { sys::cuMemsetD8Async(p as u64, value, bytes, s.as_raw()) }, CU_OK);
                    live.push((p, bytes, value));
                    if live.len() > 32 {
                        let (q, n, v) = live.remove(0);
                        check(q, n, v, s);
                        mr.deallocate(q, n, 256, s).unwrap();
                    }
                }
                for (q, n, v) in live {
                    check(q, n, v, s);
                    mr.deallocate(q, n, 256, s).unwrap();
                }
                stream.synchronize().unwrap();
            });
        }
    });
    reset_table();
}

/// Reads a block back after the work on `s` and checks every byte.
fn check(p: *mut u8, bytes: usize, value: u8, s: CudaStreamView) {
    s.synchronize().unwrap();
    let mut back = vec![0u8; bytes];
    // SAFETY: a synchronous copy of a live block into a buffer of its size.
    assert_eq!(unsafe { sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), p as u64, bytes) }, CU_OK);
    assert!(back.iter().all(|&b| b == value), "block {p:p} was overwritten");
}

#[test]
fn copies_between_two_pools_blocks_on_different_devices() {
    if !devices(2) {
        return;
    }
    let pools: Vec<PoolMemoryResource<CudaMemoryResource>> = (0..2)
        .map(|d| {
            set_current_device(DeviceId(d)).unwrap();
            PoolMemoryResource::new(CudaMemoryResource::new(), 16 * MIB, None).unwrap()
        })
        .collect();
    let bytes = 4 * MIB;
    set_current_device(DeviceId(0)).unwrap();
    let a = pools[0].allocate(bytes, 256, CudaStreamView::DEFAULT).unwrap();
    // SAFETY: a is a live block of `bytes` bytes on device 0.
    assert_eq!(unsafe { sys::cuMemsetD8_v2(a as u64, 0xA5, bytes) }, CU_OK);
    set_current_device(DeviceId(1)).unwrap();
    let b = pools[1].allocate(bytes, 256, CudaStreamView::DEFAULT).unwrap();
    assert_eq!((device_of(a), device_of(b)), (0, 1));
    // SAFETY: two live blocks of `bytes` bytes; unified addressing lets the driver find both.
    assert_eq!(unsafe { sys::cuMemcpy(b as u64, a as u64, bytes) }, CU_OK);
    check(b, bytes, 0xA5, CudaStreamView::DEFAULT);
    pools[1].deallocate(b, bytes, 256, CudaStreamView::DEFAULT).unwrap();
    set_current_device(DeviceId(0)).unwrap();
    pools[0].deallocate(a, bytes, 256, CudaStreamView::DEFAULT).unwrap();
    // Each pool is dropped with device 0 current; the pool of device 1 synchronises its own device.
}

/// A stream of device 1 freed on or destroyed while device 0 is current (a C++ `rmm::cuda_stream`
/// going out of scope after `cudaSetDevice(0)`): the pool's order records an event on it then,
/// and `cuEventRecord` refuses an event of another context. The events are made in the stream's
/// context, so both calls succeed: an event made in the current context fails with an invalid
/// handle, which the pool survives by synchronising but the sanitizers report.
#[test]
fn the_order_records_on_a_stream_of_another_device_than_the_current_one() {
    if !devices(2) {
        return;
    }
    set_current_device(DeviceId(1)).unwrap();
    let s1 = CudaStream::new().unwrap();
    set_current_device(DeviceId(0)).unwrap();
    let key = StreamKey::of_handle(s1.view().handle());
    let order = CudaEventOrder::new();
    order.record(key, StreamIdentity::Trusted).unwrap();
    order.retire(key, StreamKey::retired_after_capture(next_retirement_number())).unwrap();
    let fresh = CudaEventOrder::new();
    fresh.retire(key, StreamKey::retired_after_capture(next_retirement_number())).unwrap();
    s1.synchronize().unwrap();
}
