/*
 * The legacy C API of the original RMM from plain C: initialise a pool, allocate, fill with the
 * CUDA runtime, grow (the contents move along) and free with the RMM_* macros, print the device's
 * memory, finalise. Built with a C compiler (not nvcc) against librmm_cpp.a and the CUDA runtime:
 *   cc -std=c11 -Iinclude -I$CUDA_HOME/include legacy_api.c target/release/librmm_cpp.a \
 *      -L$CUDA_HOME/lib -l:libcudart_static.a -lrt -lstdc++ -lpthread -ldl -lm
 * Without a CUDA device it prints a skip line and exits 0.
 */
#include <cuda_runtime_api.h>
#include <rmm/rmm.h>

#include <stdio.h>

/* Prints what failed and returns 1 from main. */
#define CHECK(call)                                                                  \
  do {                                                                               \
    rmmError_t e_ = (call);                                                          \
    if (e_ != RMM_SUCCESS) {                                                         \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,          \
              rmmGetErrorString(e_));                                                \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(void)
{
  rmmOptions_t options = {PoolAllocation, 64u << 20, false};
  rmmError_t init = rmmInitialize(&options);
  if (init == RMM_ERROR_CUDA_ERROR) {
    printf("skipped: no CUDA device (rmmInitialize: %s)\n", rmmGetErrorString(init));
    return 0;
  }
  CHECK(init);

  rmmOptions_t in_use;
  if (!rmmIsInitialized(&in_use) || in_use.allocation_mode != PoolAllocation) {
    fprintf(stderr, "rmmIsInitialized does not report the pool\n");
    return 1;
  }

  cudaStream_t stream = 0; /* the legacy default stream */
  float* values = NULL;
  CHECK(RMM_ALLOC(&values, 1000 * sizeof(float), stream));
  printf("allocated 1000 floats at %p from the pool\n", (void*)values);

  float host[1000];
  for (int i = 0; i < 1000; ++i) host[i] = (float)i;
  if (cudaMemcpyAsync(values, host, sizeof host, cudaMemcpyHostToDevice, stream) != cudaSuccess) return 1;

  CHECK(RMM_REALLOC(&values, 4000 * sizeof(float), stream));
  float back[1000];
  if (cudaMemcpyAsync(back, values, sizeof back, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return 1;
  for (int i = 0; i < 1000; ++i) {
    if (back[i] != (float)i) {
      fprintf(stderr, "value %d is %f after the realloc\n", i, back[i]);
      return 1;
    }
  }
  printf("grew them to 4000 floats at %p; the first 1000 came along\n", (void*)values);

  offset_t offset = -1;
  CHECK(rmmGetAllocationOffset(&offset, values, stream));
  printf("offset in its pool chunk: %ld bytes\n", offset);

  size_t free_bytes = 0, total_bytes = 0;
  CHECK(rmmGetInfo(&free_bytes, &total_bytes, stream));
  printf("device memory: %zu MiB free of %zu MiB\n", free_bytes >> 20, total_bytes >> 20);

  CHECK(RMM_FREE(values, stream));
  rmmError_t again = RMM_FREE(values, stream);
  printf("freeing it again: %s\n", rmmGetErrorString(again));
  if (again != RMM_ERROR_INVALID_ARGUMENT) return 1;

  CHECK(rmmFinalize());
  printf("finalized; initialized now: %s\n", rmmIsInitialized(NULL) ? "yes" : "no");
  return 0;
}
