//! `LoggingResourceAdaptor`: a CSV line per allocation and free, in a file per device.

use super::{upstream_arg, UpstreamResourceAdaptor};
use crate::error::IntoPy;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rmm::adaptor as a;
use rmm::SharedResource;
use std::path::PathBuf;
use std::sync::Arc;

/// The device whose id names the log: the current one, or 0 where there is no driver at all
/// (host-memory upstreams on a machine without a GPU).
fn log_device() -> PyResult<i32> {
    match rmm::DeviceId::current() {
        Ok(d) => Ok(d.value()),
        Err(rmm::Error::NoDriver(_)) => Ok(0),
        Err(e) => Err(crate::error::to_py(e)),
    }
}

/// The absolute file name RMM derives: `log_file_name` (else `RMM_LOG_FILE`) with `.dev<id>`
/// put before the extension, as RMM's `_append_id`.
fn log_file_path(py: Python<'_>, log_file_name: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    let os = py.import("os")?;
    let name = match log_file_name {
        Some(n) if !n.is_none() => n.clone(),
        _ => {
            let env = os.call_method1("getenv", ("RMM_LOG_FILE",))?;
            if !env.is_truthy()? {
                return Err(PyValueError::new_err(
                    "RMM log file must be specified either using log_file_name= argument or RMM_LOG_FILE \
                     environment variable",
                ));
            }
            env
        }
    };
    let path = os.getattr("path")?;
    let (stem, ext): (String, String) = path.call_method1("splitext", (name,))?.extract()?;
    let with_id = format!("{stem}.dev{}{ext}", log_device()?);
    path.call_method1("abspath", (with_id,))?.extract()
}

/// Writes a CSV line (thread, time, action, pointer, size, stream) for every allocation and free
/// to a log file (RMM's `logging_resource_adaptor`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct LoggingResourceAdaptor {
    adaptor: Arc<a::LoggingResourceAdaptor<SharedResource>>,
    file_name: String,
}

#[pymethods]
impl LoggingResourceAdaptor {
    #[new]
    #[pyo3(signature = (upstream_mr, log_file_name = None))]
    fn new(
        py: Python<'_>,
        upstream_mr: &Bound<'_, PyAny>,
        log_file_name: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let file_name = log_file_path(py, log_file_name)?;
        let path = PathBuf::from(&file_name);
        let adaptor = Arc::new(py.detach(|| a::LoggingResourceAdaptor::new(resource, Some(&path))).py()?);
        Ok(UpstreamResourceAdaptor::init(upstream, adaptor.clone())
            .add_subclass(LoggingResourceAdaptor { adaptor, file_name }))
    }

    /// Writes the buffered lines to the file.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let adaptor = &self.adaptor;
        py.detach(|| adaptor.flush()).py()
    }

    /// The absolute path of the log file, with the device suffix.
    fn get_file_name(&self) -> String {
        self.file_name.clone()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LoggingResourceAdaptor>()
}
