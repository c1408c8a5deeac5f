//! Typed device buffers from a pool, lent to cudarc.
//!
//! Allocates from a pool on a stream, copies numbers in, lets cudarc copy them into a second
//! buffer and zero the first, grows the second, copies both out and prints them. Without a CUDA
//! device it says so and exits successfully.
//!
//! Run with `cargo run --release --example rust_buffers`.

use cudarc::driver::CudaContext;
use rmm::adaptor::StatisticsResourceAdaptor;
use rmm::resource::{CudaMemoryResource, PoolMemoryResource};
use rmm::{CudaStream, DeviceBuffer, DeviceUvector, SharedResource};
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return Ok(());
    }
    let pool =
        Arc::new(StatisticsResourceAdaptor::new(PoolMemoryResource::new(CudaMemoryResource::new(), 64 << 20, None)?));
    let resource: SharedResource = pool.clone();
    let stream = CudaStream::new()?;

    // Copy in: eight numbers in pool memory, ordered on `stream`.
    let input: Vec<f32> = (1..=8).map(|i| i as f32).collect();
    let mut a = DeviceBuffer::from_host_in(&input, stream.view(), resource.clone())?;

    // cudarc works on our memory through views (it never frees them). The cudarc stream here is
    // ours, borrowed, so no synchronisation is needed between the two libraries.
    let ctx = CudaContext::new(0)?;
    // SAFETY: `stream` outlives `cu_stream`, and both live in the primary context of device 0.
    let cu_stream = unsafe { stream.view().as_cudarc_stream(&ctx) };
    let mut b = DeviceUvector::<f32>::new_in(input.len(), stream.view(), resource.clone())?;
    cu_stream.memcpy_dtod(&a.cudarc_view(&ctx)?, &mut b.cudarc_view_mut(&ctx)?)?;
    cu_stream.memset_zeros(&mut a.cudarc_view_mut(&ctx)?)?;

    // Grow the vector (contents kept), zero its new tail with a memset, copy out.
    b.resize(12, stream.view())?;
    for i in 8..12 {
        b.set_element_to_zero_async(i, stream.view())?;
    }
    println!("a = {:?}", a.to_vec()?);
    println!("b = {:?}", b.to_vec(stream.view())?);
    println!("pool: {} bytes in {} allocations live", pool.bytes_counter().value, pool.allocations_counter().value);
    drop((a, b, cu_stream));
    println!("after drop: {} bytes live, peak {}", pool.bytes_counter().value, pool.bytes_counter().peak);
    Ok(())
}
