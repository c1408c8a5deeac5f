//! The one error type of rmm-rs, here so that the algorithms and the resources share it. It names
//! CUDA failures only as data (a call's name and its code): nothing here calls CUDA.
//!
//! Every fallible operation returns [`Result`]. Messages say what happened and what to do about it,
//! because they reach users unchanged (as `what()` of a C++ exception through the bridge).

use std::fmt;

/// Why a free was refused. The resource is left exactly as it was before the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misuse {
    /// The pointer lies in this resource's free memory: it was freed already.
    DoubleFree {
        /// The pointer passed to `deallocate`.
        ptr: usize,
    },
    /// The pointer was never handed out by this resource.
    UnknownPointer {
        /// The pointer passed to `deallocate`.
        ptr: usize,
    },
    /// The pointer lies inside a live block but is not its start.
    InteriorPointer {
        /// The pointer passed to `deallocate`.
        ptr: usize,
        /// Where the block it points into starts.
        block_start: usize,
    },
    /// The size given to `deallocate` differs from the size given to `allocate`.
    WrongSize {
        /// The pointer passed to `deallocate`.
        ptr: usize,
        /// The size it was allocated with.
        allocated: usize,
        /// The size passed to `deallocate`.
        given: usize,
    },
    /// The block is lent whole to a resource that carves blocks out of it (a pool's chunk, see
    /// `rmm::MemoryResource::claim`): only that resource gives it back.
    ClaimedBlock {
        /// The pointer passed to `deallocate`.
        ptr: usize,
    },
    /// Memory was still handed out from a resource that is being torn down or reset.
    Outstanding {
        /// How many blocks are still handed out.
        allocations: usize,
        /// How many bytes they hold.
        bytes: usize,
    },
}

/// The state of a pool at the moment an allocation failed, so the user can tell fragmentation
/// (much free, small largest block) from exhaustion (little free).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolState {
    /// Bytes taken from the upstream.
    pub pool_size: usize,
    /// Bytes of those that are free.
    pub free_bytes: usize,
    /// The largest free block on any stream.
    pub largest_free_block: usize,
}

/// Errors of every resource, adaptor and helper of rmm-rs, and of the algorithms here.
///
/// Non-exhaustive: a later version may add a kind, so a `match` outside the crate needs a `_` arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// No memory could be found for `requested` bytes. `pool` is set when a pool refused.
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
        /// The pool's sizes when the request failed (pools only).
        pool: Option<PoolState>,
        /// What ran out: the upstream, a maximum, a limit.
        reason: String,
        /// The reason is the whole message, in RMM 26.10's words (a pool's or a limiting
        /// adaptor's refusal), and is shown alone.
        verbatim: bool,
    },
    /// Alignment must be a power of two no larger than the resource's maximum.
    BadAlignment {
        /// The alignment asked for.
        alignment: usize,
        /// The largest alignment this resource accepts.
        max: usize,
    },
    /// An argument is out of range; the message names it.
    InvalidArgument(String),
    /// `len` elements of `element_size` bytes each are more bytes than `usize` can count.
    SizeOverflow {
        /// Elements asked for.
        len: usize,
        /// Bytes per element.
        element_size: usize,
    },
    /// This machine (device, driver or operating system) lacks what the resource needs; the
    /// message names what is missing. RMM throws `rmm::logic_error` for it.
    Unsupported(String),
    /// A CUDA driver call failed.
    Cuda {
        /// The driver function that failed.
        call: &'static str,
        /// The `CUresult` value.
        code: u32,
        /// The `CUresult` name, e.g. `CUDA_ERROR_INVALID_VALUE`.
        name: String,
    },
    /// An allocating CUDA driver call (`cuMemAlloc`, `cuMemAllocManaged`, `cuMemHostAlloc`,
    /// `cuMemAllocFromPoolAsync`, `cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`) failed with an
    /// error other than out of memory, which is [`Error::OutOfMemory`]. RMM's `RMM_CUDA_TRY_ALLOC`
    /// throws `rmm::bad_alloc` for it; C++ gets that, Python a `MemoryError`. Errors of frees and
    /// queries stay [`Error::Cuda`].
    CudaAlloc {
        /// Bytes asked for.
        requested: usize,
        /// The driver function that failed.
        call: &'static str,
        /// The `CUresult` value.
        code: u32,
        /// The `CUresult` name, e.g. `CUDA_ERROR_INVALID_VALUE`.
        name: String,
    },
    /// The CUDA driver library (`libcuda.so.1`) could not be loaded, or there is no device.
    NoDriver(String),
    /// The caller broke the resource contract; nothing was changed.
    Misuse(Misuse),
    /// The upstream resource broke its contract (a null pointer for a non-zero request, or memory
    /// not aligned as asked); the message says how. Nothing was handed out and what the upstream
    /// returned was given back. RMM has no such check; the C++ face throws `rmm::logic_error`.
    BadUpstream(String),
    /// An address a caller handed over is not memory the operation can use (see
    /// `rmm::pointer::check`).
    BadPointer {
        /// The address.
        ptr: usize,
        /// Bytes from it the operation needed.
        bytes: usize,
        /// What the memory is instead.
        what: &'static str,
    },
    /// A file (for example a log) could not be opened or written.
    Io {
        /// The file.
        path: String,
        /// What the operating system said.
        message: String,
    },
}

/// Shorthand used throughout rmm-rs.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An out-of-memory error with no pool state.
    pub fn out_of_memory(requested: usize, reason: impl Into<String>) -> Self {
        Error::OutOfMemory { requested, pool: None, reason: reason.into(), verbatim: false }
    }

    /// An out-of-memory error whose message is `message` alone, in RMM's words.
    pub fn out_of_memory_verbatim(requested: usize, pool: Option<PoolState>, message: impl Into<String>) -> Self {
        Error::OutOfMemory { requested, pool, reason: message.into(), verbatim: true }
    }

    /// True for [`Error::OutOfMemory`], the one error that a retry after freeing memory can fix.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Error::OutOfMemory { .. })
    }

    /// True for the errors that RMM raises as a `std::bad_alloc` whatever the call:
    /// [`Error::OutOfMemory`] (`rmm::out_of_memory`) and [`Error::CudaAlloc`] (`rmm::bad_alloc`).
    pub fn is_bad_alloc(&self) -> bool {
        matches!(self, Error::OutOfMemory { .. } | Error::CudaAlloc { .. })
    }
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Misuse::DoubleFree { ptr } => {
                write!(f, "double free: {ptr:#x} is already free in this resource")
            }
            Misuse::UnknownPointer { ptr } => write!(
                f,
                "unknown pointer: {ptr:#x} was not allocated by this resource (freed through the wrong resource?)"
            ),
            Misuse::InteriorPointer { ptr, block_start } => write!(
                f,
                "interior pointer: {ptr:#x} points inside the block that starts at {block_start:#x}; free the start"
            ),
            Misuse::WrongSize { ptr, allocated, given } => {
                write!(f, "wrong size: {ptr:#x} was allocated with {allocated} bytes but freed with {given}")
            }
            Misuse::ClaimedBlock { ptr } => write!(
                f,
                "claimed block: {ptr:#x} is a chunk another resource carves its blocks out of; free those blocks \
                 through that resource instead"
            ),
            Misuse::Outstanding { allocations, bytes } => {
                write!(f, "{allocations} allocations ({bytes} bytes) are still outstanding; free them first")
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OutOfMemory { reason, verbatim: true, .. } => f.write_str(reason),
            Error::OutOfMemory { requested, pool: Some(p), reason, .. } => write!(
                f,
                "out of memory: cannot allocate {requested} bytes ({reason}); pool size {}, free {}, largest free block {}",
                p.pool_size, p.free_bytes, p.largest_free_block
            ),
            Error::OutOfMemory { requested, pool: None, reason, .. } => {
                write!(f, "out of memory: cannot allocate {requested} bytes ({reason})")
            }
            Error::BadAlignment { alignment, max } => write!(
                f,
                "bad alignment {alignment}: must be a power of two no larger than {max}"
            ),
            Error::InvalidArgument(msg) => write!(f, "invalid argument: {msg}"),
            Error::SizeOverflow { len, element_size } => write!(
                f,
                "size overflow: {len} elements of {element_size} bytes do not fit in the address space"
            ),
            Error::Unsupported(msg) => write!(f, "not supported: {msg}"),
            Error::Cuda { call, code, name } => write!(f, "CUDA error in {call}: {name} ({code})"),
            // RMM's words (`CUDA error (failed to allocate N bytes) at: FILE:LINE: NAME TEXT`),
            // with the driver call in place of RMM's source location.
            Error::CudaAlloc { requested, call, code, name } => {
                write!(f, "CUDA error (failed to allocate {requested} bytes) in {call}: {name} ({code})")
            }
            Error::NoDriver(msg) => write!(f, "no CUDA driver: {msg}"),
            Error::Misuse(m) => write!(f, "misuse: {m}"),
            Error::BadUpstream(msg) => write!(f, "bad upstream: {msg}"),
            Error::BadPointer { ptr, bytes, what } => write!(f, "bad pointer {ptr:#x} ({bytes} bytes): {what}"),
            Error::Io { path, message } => write!(f, "cannot write {path}: {message}"),
        }
    }
}

impl std::error::Error for Error {}

/// A byte count as RMM's `format_bytes` writes it: the value divided by 1024 while above 1024,
/// with six decimals and its unit (`1024.000000 B`, `1.500000 KiB`).
pub fn format_bytes(value: usize) -> String {
    const UNITS: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    let mut size = value as f64;
    let mut unit = 0;
    while size > 1024.0 {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.6} {}", UNITS[unit])
}

impl From<Misuse> for Error {
    fn from(m: Misuse) -> Self {
        Error::Misuse(m)
    }
}
