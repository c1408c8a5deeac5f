//! Quick start: a typed buffer from a Rust pool. Run with `cargo run --release --example quick_start`.
use rmm::resource::{CudaMemoryResource, PoolMemoryResource};
use rmm::{CudaStream, DeviceBuffer, SharedResource};

fn main() -> Result<(), rmm::Error> {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return Ok(());
    }
    let pool: SharedResource = std::sync::Arc::new(PoolMemoryResource::new(CudaMemoryResource::new(), 1 << 26, None)?);
    let stream = CudaStream::new()?;
    let squares: Vec<u64> = (0..1000).map(|i| i * i).collect();
    let buf = DeviceBuffer::from_host_in(&squares, stream.view(), pool.clone())?; // freed on drop
    assert_eq!(buf.to_vec()?, squares);
    println!("{} squares went to the GPU and back", buf.len());
    Ok(())
}
