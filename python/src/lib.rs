//! `rmm._native`: the Rust half of the Python package `rmm`.
//!
//! The classes here are thin: each Python resource holds an `Arc` of a Rust resource from the
//! `rmm` crate, and every call that may block (allocate, free, copy, synchronise) releases the GIL.
//! The pure-Python modules under `python/rmm/` re-export these classes under RMM 26.10's module
//! paths and add what is naturally Python (reinitialize, statistics, the allocator hooks).

use pyo3::prelude::*;

mod copy;
mod cupy_allocator;
mod device_buffer;
mod error;
mod gpu;
mod helper;
mod host_buffer;
mod legacy;
mod logger;
mod memory_resource;
mod resource_cache;
mod stream;
mod stream_pool;
mod torch_allocator;
mod torch_capture;
mod torch_empty_cache;

/// The module `rmm._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    error::register(m)?;
    helper::register(m)?;
    stream::register(m)?;
    memory_resource::register(m)?;
    gpu::register(m)?;
    logger::register(m)?;
    cupy_allocator::register(m)?;
    copy::register(m)?;
    device_buffer::register(m)?;
    stream_pool::register(m)?;
    legacy::register(m)?;
    torch_capture::register(m)?;
    torch_empty_cache::register(m)?;
    m.add_function(wrap_pyfunction!(build_cuda_major, m)?)?;
    Ok(())
}

/// The CUDA major this extension was built for, 12 or 13 (the crate feature `cuda-12` or
/// `cuda-13`; `rmm::build_cuda_major()` in Rust, `rmm::rs::build_cuda_major()` in C++).
#[pyfunction]
fn build_cuda_major() -> u32 {
    rmm::build_cuda_major()
}
