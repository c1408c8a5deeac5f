//! `VirtualPoolMemoryResource`: the pool over one reserved range of device addresses, backed by
//! physical memory mapped in granules on demand (not in RMM 26.10: an addition of rmm-rs).

use super::capture::CapturePool;
use super::DeviceMemoryResource;
use crate::error::IntoPy;
use crate::helper::{c_int_arg, optional_size_arg, CSize};
use crate::stream::StreamArg;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rmm::resource::virtual_pool::VirtualMemoryOptions;
use rmm::resource::VirtualPoolMemoryResource as Rust;
use rmm::DeviceId;
use std::sync::Arc;

/// Checks the sizes a virtual pool is asked for before any driver call (`maximum` is `None` when
/// the device's memory is to be asked for): a `ValueError` for a zero maximum or an initial size
/// above it.
fn checked_sizes(maximum: Option<usize>, initial: Option<usize>) -> PyResult<()> {
    if maximum == Some(0) {
        return Err(PyValueError::new_err("maximum_pool_size of a virtual pool must be positive"));
    }
    if let (Some(m), Some(i)) = (maximum, initial) {
        if i > m {
            return Err(PyValueError::new_err(format!(
                "initial_pool_size ({i} bytes) exceeds maximum_pool_size ({m} bytes)"
            )));
        }
    }
    Ok(())
}

/// A pool of device memory over one reserved range of addresses (``cuMemAddressReserve``), backed
/// by physical memory created and mapped in granules as it grows, right after its free tail, so
/// the two are one block. ``release()`` gives memory back to the device with every address
/// unchanged.
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct VirtualPoolMemoryResource {
    pool: Arc<Rust>,
}

#[pymethods]
impl VirtualPoolMemoryResource {
    #[new]
    #[pyo3(signature = (
        maximum_pool_size = None,
        initial_pool_size = None,
        *,
        peer_devices = None,
        device = None,
        granularity = None,
        export_posix_fd = false,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        maximum_pool_size: Option<&Bound<'_, PyAny>>,
        initial_pool_size: Option<&Bound<'_, PyAny>>,
        peer_devices: Option<Vec<Bound<'_, PyAny>>>,
        device: Option<&Bound<'_, PyAny>>,
        granularity: Option<&Bound<'_, PyAny>>,
        export_posix_fd: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let maximum = optional_size_arg(maximum_pool_size)?;
        let initial = optional_size_arg(initial_pool_size)?;
        checked_sizes(maximum, initial)?;
        let granule = optional_size_arg(granularity)?;
        if granule == Some(0) {
            return Err(PyValueError::new_err("granularity must be positive (or None for the device's)"));
        }
        let options = VirtualMemoryOptions {
            device: device.filter(|d| !d.is_none()).map(c_int_arg).transpose()?.map(DeviceId),
            peers: peer_devices
                .unwrap_or_default()
                .iter()
                .map(|p| c_int_arg(p).map(DeviceId))
                .collect::<PyResult<_>>()?,
            granule,
            export_posix_fd,
        };
        let pool = py
            .detach(|| {
                // The whole pool is made with its device current, as a pool made after
                // `setDevice` would be.
                let _on = options.device.map(rmm::DeviceGuard::new).transpose()?;
                // The device's memory when no maximum is given: addresses cost nothing, and no more
                // can be mapped on the device alone.
                let maximum = match maximum {
                    Some(m) => m,
                    None => rmm::available_device_memory()?.1,
                };
                if initial.is_some_and(|i| i > maximum) {
                    return Err(rmm::Error::InvalidArgument(format!(
                        "initial_pool_size ({} bytes) exceeds maximum_pool_size ({maximum} bytes, the device's memory)",
                        initial.unwrap_or(0)
                    )));
                }
                Rust::with_options(maximum, initial.unwrap_or(0), &options)
            })
            .py()?;
        let pool = Arc::new(pool);
        Ok(PyClassInitializer::from(DeviceMemoryResource::new(pool.clone()))
            .add_subclass(VirtualPoolMemoryResource { pool }))
    }

    /// Unmaps the physical memory of every whole free granule, after synchronising every stream;
    /// the addresses stay reserved and are mapped again as the pool grows. Returns the bytes
    /// unmapped.
    fn release(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| self.pool.release()).py()
    }

    /// Like ``release()``, but stops once the pool holds at most ``nbytes`` bytes. Returns the
    /// bytes unmapped.
    fn release_above(&self, py: Python<'_>, nbytes: CSize) -> PyResult<usize> {
        py.detach(|| self.pool.release_above(nbytes.0)).py()
    }

    /// Bytes of physical memory mapped into the reservation.
    fn mapped_bytes(&self) -> usize {
        self.pool.mapped_bytes()
    }

    /// Bytes of addresses reserved: the most the pool may grow to.
    fn reserved_bytes(&self) -> usize {
        self.pool.reserved_bytes()
    }

    /// Bytes of one granule: the unit of every map and unmap.
    fn granularity(&self) -> usize {
        self.pool.granularity()
    }

    /// Bytes the pool holds (handed out and free).
    fn pool_size(&self) -> usize {
        self.pool.pool_size()
    }

    /// A POSIX file descriptor for the physical memory of the mapped granule holding ``ptr`` (an
    /// int), for another process to import; the caller closes it (``os.close``). ``RuntimeError``
    /// unless the pool was made with ``export_posix_fd=True`` on a device that supports it.
    fn export_posix_fd(&self, ptr: CSize) -> PyResult<i32> {
        self.pool.export_posix_fd(ptr.0).py()
    }

    /// Announces that ``stream`` (a ``Stream``), whose CUDA graph capture has begun, allocates
    /// from memory private to its capture from now on (an addition of rmm-rs, not in RMM 26.10).
    /// Returns the capture's id, the key of ``release_capture``. ``ValueError`` when the stream
    /// is not being captured. See ``rmm.mr.capture_allocations`` for the usual way to call it.
    fn begin_capture(&self, py: Python<'_>, stream: StreamArg<'_>) -> PyResult<u64> {
        let stream = stream.resolve(py)?;
        let stream = stream.get().view();
        let pool = CapturePool::Virtual(&self.pool);
        py.detach(|| pool.begin(stream)).py()
    }

    /// The capture on ``stream`` ended: its allocations come from the shared memory again. The
    /// capture's private memory is kept until ``release_capture``. A stream never marked is left
    /// alone.
    fn end_capture(&self, py: Python<'_>, stream: StreamArg<'_>) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        let stream = stream.get().view();
        CapturePool::Virtual(&self.pool).end(stream);
        Ok(())
    }

    /// Gives capture ``capture_id``'s private memory back to the pool; call it once every graph
    /// captured with it (and every executable graph made from those) is destroyed. ``ValueError``,
    /// with nothing changed, for an unknown id, while a stream is still marked for the capture,
    /// or while blocks it allocated are live.
    fn release_capture(&self, py: Python<'_>, capture_id: u64) -> PyResult<()> {
        let pool = CapturePool::Virtual(&self.pool);
        py.detach(|| pool.release(capture_id)).py()
    }

    /// The ids of the captures whose private memory the pool keeps.
    fn captures(&self) -> Vec<u64> {
        CapturePool::Virtual(&self.pool).captures()
    }

    /// Bytes of private memory the pool keeps for capture ``capture_id`` (0 for an unknown one).
    fn capture_pool_size(&self, capture_id: u64) -> usize {
        CapturePool::Virtual(&self.pool).pool_size(capture_id)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<VirtualPoolMemoryResource>()
}
