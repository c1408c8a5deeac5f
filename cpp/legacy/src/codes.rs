//! `rmmError_t`: the error codes of the legacy API, their names, and how a crate error maps to one.

use rmm::error::Error;
use std::ffi::{c_char, c_int};

/// `rmmError_t`. A C enum crosses the ABI as an `int`, and C may pass any value, so this is an
/// integer with named constants rather than a Rust enum (an out-of-range Rust enum is undefined
/// behaviour).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RmmError(pub c_int);

impl RmmError {
    /// `RMM_SUCCESS`.
    pub const SUCCESS: RmmError = RmmError(0);
    /// `RMM_ERROR_CUDA_ERROR`: a CUDA call failed, or there is no driver or device.
    pub const CUDA_ERROR: RmmError = RmmError(1);
    /// `RMM_ERROR_INVALID_ARGUMENT`: a null or unknown pointer, or an option out of range.
    pub const INVALID_ARGUMENT: RmmError = RmmError(2);
    /// `RMM_ERROR_NOT_INITIALIZED`: called before `rmmInitialize` or after `rmmFinalize`.
    pub const NOT_INITIALIZED: RmmError = RmmError(3);
    /// `RMM_ERROR_OUT_OF_MEMORY`: the resource could not find the memory.
    pub const OUT_OF_MEMORY: RmmError = RmmError(4);
    /// `RMM_ERROR_UNKNOWN`: anything else (an internal panic, caught; an upstream resource that
    /// broke its contract).
    pub const UNKNOWN: RmmError = RmmError(5);
    /// `RMM_ERROR_IO`: the event log could not be written.
    pub const IO: RmmError = RmmError(6);
    /// `N_RMM_ERROR`: the number of codes.
    pub const COUNT: c_int = 7;

    /// The code a crate error becomes.
    pub fn from_error(e: &Error) -> RmmError {
        match e {
            Error::OutOfMemory { .. } => RmmError::OUT_OF_MEMORY,
            Error::Cuda { .. } | Error::CudaAlloc { .. } | Error::NoDriver(_) | Error::Unsupported(_) => {
                RmmError::CUDA_ERROR
            }
            Error::InvalidArgument(_) | Error::BadAlignment { .. } | Error::SizeOverflow { .. } | Error::Misuse(_) => {
                RmmError::INVALID_ARGUMENT
            }
            Error::Io { .. } => RmmError::IO,
            // A broken upstream, and any kind of error the core adds later.
            _ => RmmError::UNKNOWN,
        }
    }

    /// The enumerator's name, as the original `rmmGetErrorString` returned it, NUL-terminated.
    fn name(self) -> &'static [u8] {
        match self.0 {
            0 => b"RMM_SUCCESS\0",
            1 => b"RMM_ERROR_CUDA_ERROR\0",
            2 => b"RMM_ERROR_INVALID_ARGUMENT\0",
            3 => b"RMM_ERROR_NOT_INITIALIZED\0",
            4 => b"RMM_ERROR_OUT_OF_MEMORY\0",
            5 => b"RMM_ERROR_UNKNOWN\0",
            6 => b"RMM_ERROR_IO\0",
            _ => b"Internal error. Unknown error code.\0",
        }
    }
}

/// The result of an entry point's body: `Err` carries the code to return.
pub(crate) type Status = std::result::Result<(), RmmError>;

/// Turns a crate result into a status.
pub(crate) fn status<T>(r: rmm::error::Result<T>) -> std::result::Result<T, RmmError> {
    r.map_err(|e| RmmError::from_error(&e))
}

/// The code of a finished body.
pub(crate) fn code(s: Status) -> RmmError {
    s.err().unwrap_or(RmmError::SUCCESS)
}

/// `const char* rmmGetErrorString(rmmError_t errcode)`: the code's name (`"RMM_ERROR_IO"`), or
/// `"Internal error. Unknown error code."` for a value outside the enum. The string is static.
pub fn rmmGetErrorString(errcode: RmmError) -> *const c_char {
    errcode.name().as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_allocating_cuda_call_is_a_cuda_error_and_out_of_memory_stays_out_of_memory() {
        let failed =
            Error::CudaAlloc { requested: 256, call: "cuMemAlloc", code: 1, name: "CUDA_ERROR_INVALID_VALUE".into() };
        assert_eq!(RmmError::from_error(&failed), RmmError::CUDA_ERROR);
        assert_eq!(RmmError::from_error(&Error::out_of_memory(256, "x")), RmmError::OUT_OF_MEMORY);
    }
}
