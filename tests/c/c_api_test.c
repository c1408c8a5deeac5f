/*
 * The legacy C API seen from a C compiler: the layout of rmmOptions_t and the enum values are the
 * original header's, and the answers that need no device (error strings, calls before
 * rmmInitialize, null arguments) are right. On a GPU it also runs one initialise .. finalise round
 * in every allocation mode. Prints "c_api_test: N checks passed" or the failed checks; exit 1 on
 * failure.
 */
#include <cuda_runtime_api.h>
#include <rmm/rmm.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
static int checks = 0;

#define EXPECT(cond)                                                   \
  do {                                                                 \
    ++checks;                                                          \
    if (!(cond)) {                                                     \
      ++failures;                                                      \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                  \
  } while (0)

static void layout(void)
{
  EXPECT(RMM_SUCCESS == 0 && RMM_ERROR_CUDA_ERROR == 1 && RMM_ERROR_INVALID_ARGUMENT == 2);
  EXPECT(RMM_ERROR_NOT_INITIALIZED == 3 && RMM_ERROR_OUT_OF_MEMORY == 4 && RMM_ERROR_UNKNOWN == 5);
  EXPECT(RMM_ERROR_IO == 6 && N_RMM_ERROR == 7);
  EXPECT(CudaDefaultAllocation == 0 && PoolAllocation == 1 && CudaManagedMemory == 2);
  EXPECT(sizeof(rmmError_t) == sizeof(int));
  EXPECT(offsetof(rmmOptions_t, allocation_mode) == 0);
  EXPECT(offsetof(rmmOptions_t, initial_pool_size) == sizeof(size_t));
  EXPECT(offsetof(rmmOptions_t, enable_logging) == 2 * sizeof(size_t));
}

static void without_initialize(void)
{
  EXPECT(strcmp(rmmGetErrorString(RMM_SUCCESS), "RMM_SUCCESS") == 0);
  EXPECT(strcmp(rmmGetErrorString(RMM_ERROR_OUT_OF_MEMORY), "RMM_ERROR_OUT_OF_MEMORY") == 0);
  EXPECT(strcmp(rmmGetErrorString(N_RMM_ERROR), "Internal error. Unknown error code.") == 0);
  EXPECT(!rmmIsInitialized(NULL));
  EXPECT(rmmFinalize() == RMM_ERROR_NOT_INITIALIZED);

  void* p = (void*)&p; /* anything but null: a failed rmmAlloc must set it to null */
  EXPECT(RMM_ALLOC(&p, 256, 0) == RMM_ERROR_NOT_INITIALIZED);
  EXPECT(p == NULL);
  EXPECT(RMM_FREE(NULL, 0) == RMM_ERROR_NOT_INITIALIZED);
  size_t free_bytes = 0, total_bytes = 0;
  EXPECT(rmmGetInfo(&free_bytes, &total_bytes, 0) == RMM_ERROR_NOT_INITIALIZED);
  EXPECT(rmmWriteLog(NULL) == RMM_ERROR_INVALID_ARGUMENT);
  EXPECT(rmmGetLog(NULL, 10) == RMM_ERROR_INVALID_ARGUMENT);
}

static void one_round(rmmAllocationMode_t mode)
{
  rmmOptions_t options = {mode, 1u << 20, true};
  EXPECT(rmmInitialize(&options) == RMM_SUCCESS);
  int* p = NULL;
  EXPECT(RMM_ALLOC(&p, 1000, 0) == RMM_SUCCESS && p != NULL);
  EXPECT(((size_t)p & 255) == 0);
  EXPECT(RMM_ALLOC(NULL, 1000, 0) == RMM_ERROR_INVALID_ARGUMENT);
  /* Written before the realloc copies it (compute-sanitizer initcheck: no uninitialised reads). */
  EXPECT(cudaMemsetAsync(p, 7, 1000, 0) == cudaSuccess);
  EXPECT(RMM_REALLOC(&p, 5000, 0) == RMM_SUCCESS && p != NULL);
  unsigned char first[1000];
  EXPECT(cudaMemcpy(first, p, sizeof first, cudaMemcpyDeviceToHost) == cudaSuccess);
  EXPECT(first[0] == 7 && first[999] == 7);
  EXPECT(RMM_FREE(p, 0) == RMM_SUCCESS);
  EXPECT(RMM_FREE(p, 0) == RMM_ERROR_INVALID_ARGUMENT);
  /* Three events, each with this file in its location column. */
  char log[4096] = {0};
  size_t size = rmmLogSize();
  EXPECT(size > 0 && size < sizeof log);
  EXPECT(rmmGetLog(log, sizeof log - 1) == RMM_SUCCESS);
  EXPECT(strstr(log, "Alloc,") && strstr(log, "Realloc,") && strstr(log, "Free,"));
  EXPECT(strstr(log, "c_api_test.c:") != NULL);
  EXPECT(rmmFinalize() == RMM_SUCCESS);
}

/* enable_logging is a C bool, but a C program can leave any byte there (memset, a cast): any
 * non-zero byte means true, and rmmIsInitialized hands back a valid bool. */
static void logging_byte_of_two(void)
{
  rmmOptions_t options;
  memset(&options, 0, sizeof options);
  options.allocation_mode = CudaDefaultAllocation;
  unsigned char two = 2;
  memcpy((unsigned char*)&options + offsetof(rmmOptions_t, enable_logging), &two, 1);
  EXPECT(rmmInitialize(&options) == RMM_SUCCESS);
  void* p = NULL;
  EXPECT(RMM_ALLOC(&p, 1000, 0) == RMM_SUCCESS);
  EXPECT(RMM_FREE(p, 0) == RMM_SUCCESS);
  char log[4096] = {0};
  EXPECT(rmmLogSize() < sizeof log);
  EXPECT(rmmGetLog(log, sizeof log - 1) == RMM_SUCCESS);
  EXPECT(strstr(log, "Alloc,") != NULL && strstr(log, "Free,") != NULL);
  rmmOptions_t seen;
  memset(&seen, 0xff, sizeof seen);
  EXPECT(rmmIsInitialized(&seen));
  unsigned char byte = 0;
  memcpy(&byte, (unsigned char*)&seen + offsetof(rmmOptions_t, enable_logging), 1);
  EXPECT(byte == 1);
  EXPECT(rmmFinalize() == RMM_SUCCESS);
}

int main(void)
{
  layout();
  without_initialize();
  if (rmmInitialize(NULL) == RMM_ERROR_CUDA_ERROR) {
    printf("c_api_test: %d checks passed (GPU part skipped: no CUDA device)\n", checks - failures);
    return failures ? 1 : 0;
  }
  EXPECT(rmmFinalize() == RMM_SUCCESS);
  one_round(CudaDefaultAllocation);
  one_round(PoolAllocation);
  one_round(CudaManagedMemory);
  one_round((rmmAllocationMode_t)(PoolAllocation | CudaManagedMemory));
  logging_byte_of_two();
  if (failures) {
    fprintf(stderr, "c_api_test: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  printf("c_api_test: %d checks passed\n", checks);
  return 0;
}
