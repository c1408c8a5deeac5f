/*
 * rmm-rs: the legacy C API of the original RMM (before 0.15), over the Rust resources.
 *
 * Pure C (C11; also valid C++): link against librmm_cpp.a with -lstdc++ -lpthread -ldl -lm. The
 * enumerator values, the struct layout and the signatures are those of the original header, so a
 * program built against it links and runs unchanged. No CUDA header is needed: cudaStream_t is
 * declared as CUDA declares it (a pointer to struct CUstream_st); a translation unit that also
 * includes <cuda_runtime_api.h> gets the identical type.
 *
 * Semantics (cpp/legacy/src/ documents each function):
 * - rmmInitialize makes the resource the options ask for the current resource of the current
 *   device; again while initialised it does nothing and returns RMM_SUCCESS.
 * - rmmAlloc / rmmRealloc / rmmFree allocate from the current device resource with 256-byte
 *   alignment, stream-ordered on `stream`. Freeing a pointer this API did not hand out is
 *   RMM_ERROR_INVALID_ARGUMENT and changes nothing.
 * - rmmFinalize frees every allocation still live and restores the previous resource.
 * - Every function is thread-safe.
 */
#ifndef RMM_RMM_API_H
#define RMM_RMM_API_H

#include <stdbool.h>
#include <stddef.h>

#ifndef __DRIVER_TYPES_H__
typedef struct CUstream_st* cudaStream_t;
#endif

/** The offset type of rmmGetAllocationOffset (the original's name and type). */
typedef long int offset_t;

#ifdef __cplusplus
extern "C" {
#endif

/** RMM error codes. */
typedef enum {
  RMM_SUCCESS = 0,            /**< Success */
  RMM_ERROR_CUDA_ERROR,       /**< A CUDA error occurred, or there is no driver or device */
  RMM_ERROR_INVALID_ARGUMENT, /**< A null or unknown pointer, or an option out of range */
  RMM_ERROR_NOT_INITIALIZED,  /**< Called before rmmInitialize() or after rmmFinalize() */
  RMM_ERROR_OUT_OF_MEMORY,    /**< The memory resource could not allocate the memory */
  RMM_ERROR_UNKNOWN,          /**< An unknown (internal) error occurred */
  RMM_ERROR_IO,               /**< The event log could not be written */
  N_RMM_ERROR                 /**< The number of error codes */
} rmmError_t;

/** Allocation modes; they may be ORed: PoolAllocation | CudaManagedMemory is a pool of managed
 * memory. */
typedef enum {
  CudaDefaultAllocation = 0, /**< Device memory from the driver for each allocation */
  PoolAllocation        = 1, /**< Suballocate from a pool */
  CudaManagedMemory     = 2  /**< Managed instead of device memory */
} rmmAllocationMode_t;

/** Options of rmmInitialize. */
typedef struct {
  rmmAllocationMode_t allocation_mode; /**< Allocation strategy */
  size_t initial_pool_size; /**< Bytes the pool takes at once (rounded up to a multiple of 256);
                                 0: half of the device's total memory */
  bool enable_logging;      /**< Record alloc/realloc/free events for rmmWriteLog/rmmGetLog; the
                                 byte is read as C reads a bool, any non-zero value meaning true */
} rmmOptions_t;

/** Initialises the memory manager with `options` (the defaults when NULL). RMM_SUCCESS,
 * RMM_ERROR_CUDA_ERROR (no driver or device), RMM_ERROR_INVALID_ARGUMENT (unknown mode bits) or
 * RMM_ERROR_OUT_OF_MEMORY (the pool's initial size). */
rmmError_t rmmInitialize(rmmOptions_t* options);

/** Frees every allocation still live and shuts the memory manager down. RMM_SUCCESS, or
 * RMM_ERROR_NOT_INITIALIZED if it is not initialised. */
rmmError_t rmmFinalize(void);

/** True if rmmInitialize succeeded and rmmFinalize has not run since; then the options in use are
 * written to `options` unless it is NULL. */
bool rmmIsInitialized(rmmOptions_t* options);

/** The name of an error code ("RMM_ERROR_OUT_OF_MEMORY"); a static string. */
const char* rmmGetErrorString(rmmError_t errcode);

/** Allocates `size` bytes on `stream` into `*ptr` (NULL for 0 bytes; NULL after any failure).
 * `file` and `line` are recorded in the event log. */
rmmError_t rmmAlloc(void** ptr, size_t size, cudaStream_t stream, const char* file, unsigned int line);

/** Moves `*ptr` to a new allocation of `new_size` bytes, copying what fits on `stream`, and frees
 * the old one on `stream`. A NULL `*ptr` allocates; `new_size` 0 frees. On failure `*ptr` and its
 * memory are unchanged and nothing else stays allocated (a new block whose old one could not be
 * freed is given back). */
rmmError_t rmmRealloc(void** ptr, size_t new_size, cudaStream_t stream, const char* file, unsigned int line);

/** Frees `ptr` on `stream`. NULL is a no-op; a pointer not handed out by rmmAlloc/rmmRealloc (or
 * freed already) is RMM_ERROR_INVALID_ARGUMENT. */
rmmError_t rmmFree(void* ptr, cudaStream_t stream, const char* file, unsigned int line);

/** The distance of `ptr` (inside a live allocation) from the start of the driver allocation it was
 * carved from, e.g. a pool's chunk. */
rmmError_t rmmGetAllocationOffset(offset_t* offset, void* ptr, cudaStream_t stream);

/** Free and total memory of the device in bytes. */
rmmError_t rmmGetInfo(size_t* freeSize, size_t* totalSize, cudaStream_t stream);

/** Writes the event log as CSV to `filename` (replacing it). RMM_ERROR_IO on failure. */
rmmError_t rmmWriteLog(const char* filename);

/** The length of the CSV event log in bytes, without a terminating NUL. */
size_t rmmLogSize(void);

/** Copies the first `buffer_size` bytes of the CSV event log to `buffer` (no NUL added). */
rmmError_t rmmGetLog(char* buffer, size_t buffer_size);

#ifdef __cplusplus
}
#endif

#endif /* RMM_RMM_API_H */
