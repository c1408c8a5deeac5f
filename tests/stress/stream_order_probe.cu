// Does compute-sanitizer memcheck --track-stream-ordered-races accept host synchronization as
// ordering a stream-ordered allocation (cudaMallocFromPoolAsync on the legacy stream) before a
// kernel on another stream? argv[1] = sync | flags. sync: 0 none (a real race), 1
// cudaDeviceSynchronize, 2 cuCtxSynchronize, 3 cudaStreamSynchronize(0), 4 event wait.
// flags: 8 the other stream is created after the sync; 32 the kernel is launched (and the stream
// created) from another host thread started after the sync.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <thread>
__global__ void touch(int* p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = i; }
#define CK(x) do { cudaError_t st_ = (x); if (st_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(st_)); std::exit(1); } } while (0)
int main(int argc, char** argv) {
  int v = argc > 1 ? std::atoi(argv[1]) : 0;
  int sync = v & 7; bool late = v & 8; bool thread = v & 32;
  cudaMemPoolProps props{}; props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice; props.location.id = 0;
  cudaMemPool_t pool; CK(cudaMemPoolCreate(&pool, &props));
  cudaStream_t b{};
  if (!late && !thread) CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  int n = 1 << 20; int* p = nullptr;
  CK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p), n * sizeof(int), pool, cudaStream_t{0}));
  cudaEvent_t e{};
  if (sync == 1) CK(cudaDeviceSynchronize());
  if (sync == 2) {
    void* fn = nullptr; cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuCtxSynchronize", &fn, 12000, cudaEnableDefault, &q));
    if (reinterpret_cast<CUresult (*)()>(fn)() != CUDA_SUCCESS) return 1;
  }
  if (sync == 3) CK(cudaStreamSynchronize(0));
  if (sync == 4) { CK(cudaEventCreate(&e)); CK(cudaEventRecord(e, 0)); }
  auto launch = [&]() {
    if (b == cudaStream_t{}) CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    if (sync == 4) CK(cudaStreamWaitEvent(b, e, 0));
    touch<<<n / 256, 256, 0, b>>>(p, n);
    CK(cudaStreamSynchronize(b));
  };
  if (thread) { std::thread t{launch}; t.join(); } else { launch(); }
  CK(cudaFreeAsync(p, b)); CK(cudaStreamSynchronize(b));
  CK(cudaStreamDestroy(b)); CK(cudaMemPoolDestroy(pool));
  std::printf("probe %d (sync %d, stream created late %d, other thread %d): done\n", v, sync, late, thread);
  return 0;
}
