// Generic scenarios over every resource and adaptor configuration (factories()): construction,
// allocations of many sizes through device_async_resource_ref and allocate_sync, huge requests,
// alignment arguments, equality of copies and refs, other streams, many live blocks.
#include "common.hpp"

#include <rmm/mr/aligned_resource_adaptor.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/cuda_async_managed_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_async_view_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/prefetch_resource_adaptor.hpp>
#include <rmm/mr/sam_headroom_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/system_memory_resource.hpp>
#include <rmm/mr/thread_safe_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <optional>
#include <sstream>

namespace oracle {

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;

std::ostream& log_sink()
{
  static std::ostringstream s;
  s.str("");
  return s;
}
}  // namespace

void alloc_free(trace& t,
                std::string const& label,
                rmm::device_async_resource_ref ref,
                std::size_t bytes,
                std::size_t alignment)
{
  void* p = nullptr;
  bool ok = t.call(label + ".allocate", [&] {
    p = ref.allocate(default_stream(), bytes, alignment);
    return true;
  });
  if (!ok) { return; }
  t.ptr(label, p);
  t.call(label + ".deallocate", [&] { ref.deallocate(default_stream(), p, bytes, alignment); });
  t.add(label + ".sync", cudaStreamSynchronize(nullptr) == cudaSuccess);
}

std::vector<factory> const& factories()
{
  using namespace rmm::mr;
  static std::vector<factory> const f{
    {"cuda", [] { return any_dev{cuda_memory_resource{}}; }},
    {"managed", [] { return any_dev{managed_memory_resource{}}; }},
    {"pinned_host", [] { return any_dev{pinned_host_memory_resource{}}; }},
    {"cuda_async", [] { return any_dev{cuda_async_memory_resource{}}; }},
    {"cuda_async_sized",
     [] { return any_dev{cuda_async_memory_resource{4 * MiB, 64 * MiB}}; }},
    {"cuda_async_managed", [] { return any_dev{cuda_async_managed_memory_resource{}}; }},
    {"cuda_async_view",
     [] {
       cudaMemPool_t pool{};
       RMM_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, 0));
       return any_dev{cuda_async_view_memory_resource{pool}};
     }},
    {"pool", [] { return any_dev{pool_memory_resource{cuda_memory_resource{}, MiB}}; }},
    {"pool_max",
     [] { return any_dev{pool_memory_resource{cuda_memory_resource{}, 0, 16 * MiB}}; }},
    {"pool_managed",
     [] { return any_dev{pool_memory_resource{managed_memory_resource{}, 2 * MiB}}; }},
    {"pool_async",
     [] { return any_dev{pool_memory_resource{cuda_async_memory_resource{}, 2 * MiB}}; }},
    {"arena", [] { return any_dev{arena_memory_resource{cuda_memory_resource{}, 64 * MiB}}; }},
    {"binning", [] { return any_dev{binning_memory_resource{cuda_memory_resource{}, 3, 12}}; }},
    {"binning_nobins", [] { return any_dev{binning_memory_resource{cuda_memory_resource{}}}; }},
    {"fixed_size", [] { return any_dev{fixed_size_memory_resource{cuda_memory_resource{}}}; }},
    {"fixed_size_4k",
     [] { return any_dev{fixed_size_memory_resource{cuda_memory_resource{}, 4096, 8}}; }},
    {"aligned_4k",
     [] { return any_dev{aligned_resource_adaptor{cuda_memory_resource{}, 4096}}; }},
    {"aligned_default", [] { return any_dev{aligned_resource_adaptor{cuda_memory_resource{}}}; }},
    {"limiting",
     [] { return any_dev{limiting_resource_adaptor{cuda_memory_resource{}, 16 * MiB}}; }},
    {"statistics", [] { return any_dev{statistics_resource_adaptor{cuda_memory_resource{}}}; }},
    {"tracking", [] { return any_dev{tracking_resource_adaptor{cuda_memory_resource{}}}; }},
    {"logging",
     [] { return any_dev{logging_resource_adaptor{cuda_memory_resource{}, log_sink()}}; }},
    {"thread_safe", [] { return any_dev{thread_safe_resource_adaptor{cuda_memory_resource{}}}; }},
    {"prefetch", [] { return any_dev{prefetch_resource_adaptor{managed_memory_resource{}}}; }},
    {"failure_callback",
     [] {
       return any_dev{failure_callback_resource_adaptor<>{
         cuda_memory_resource{}, [](std::size_t, void*) { return false; }, nullptr}};
     }},
    {"callback",
     [] {
       return any_dev{callback_memory_resource{
         [](std::size_t n, cuda::stream_ref, void*) -> void* {
           void* p = nullptr;
           return cudaMalloc(&p, n) == cudaSuccess ? p : (cudaGetLastError(), nullptr);
         },
         [](void* p, std::size_t, cuda::stream_ref, void*) { cudaFree(p); }}};
     }},
    {"statistics_over_pool",
     [] {
       return any_dev{
         statistics_resource_adaptor{pool_memory_resource{cuda_memory_resource{}, MiB}}};
     }},
    {"tracking_over_binning",
     [] {
       return any_dev{tracking_resource_adaptor{
         binning_memory_resource{pool_memory_resource{cuda_memory_resource{}, 4 * MiB}, 8, 14}}};
     }},
    {"limiting_over_arena",
     [] {
       return any_dev{limiting_resource_adaptor{
         arena_memory_resource{cuda_memory_resource{}, 32 * MiB}, 8 * MiB}};
     }},
    {"pool_pinned_host",
     [] { return any_dev{pool_memory_resource{pinned_host_memory_resource{}, MiB}}; }},
    {"cuda_async_view_user_pool",
     [] {
       // A pool the user made; never destroyed (the process ends with the scenario group).
       static cudaMemPool_t pool = [] {
         cudaMemPoolProps props{};
         props.allocType     = cudaMemAllocationTypePinned;
         props.handleTypes   = cudaMemHandleTypeNone;
         props.location.type = cudaMemLocationTypeDevice;
         props.location.id   = 0;
         cudaMemPool_t p{};
         RMM_CUDA_TRY(cudaMemPoolCreate(&p, &props));
         return p;
       }();
       return any_dev{cuda_async_view_memory_resource{pool}};
     }},
    {"sam_headroom",
     [] {
       int pageable = 0;
       cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0);
       if (!pageable) { throw skip{"the device lacks pageable memory access (HMM/ATS)"}; }
       return any_dev{sam_headroom_memory_resource{MiB}};
     }},
    {"system",
     [] {
       int pageable = 0;
       cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0);
       if (!pageable) { throw skip{"the device lacks pageable memory access (HMM/ATS)"}; }
       return any_dev{system_memory_resource{}};
     }},
  };
  return f;
}

void register_resources()
{
  using namespace rmm::mr;
  std::vector<std::size_t> const sizes{0,    1,     8,       255,     256,    257,
                                       1000, 4096,  65536,   1 << 20, 3 << 20};
  std::vector<std::size_t> const alignments{1, 2, 64, 128, 256, 512, 4096, 3};
  for (auto const& fac : factories()) {
    auto const area = "resource/" + fac.name;
    auto const make = fac.make;
    add(area, "construct", [make](trace& t) {
      t.add("gpus>0", device_count() > 0);
      t.call("construct", [&] {
        auto r = make();
        return true;
      });
    });
    for (auto n : sizes) {
      add(area, "ref_alloc_" + std::to_string(n), [make, n](trace& t) {
        auto r = make();
        alloc_free(t, "a", rmm::device_async_resource_ref{r}, n);
      });
    }
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4096}}) {
      add(area, "sync_alloc_" + std::to_string(n), [make, n](trace& t) {
        auto r  = make();
        void* p = nullptr;
        if (!t.call("allocate_sync", [&] {
              p = r.allocate_sync(n, 256);
              return true;
            })) {
          return;
        }
        t.ptr("p", p);
        t.call("deallocate_sync", [&] { r.deallocate_sync(p, n, 256); });
      });
    }
    add(area, "huge", [make](trace& t) {
      auto r = make();
      alloc_free(t, "pb", rmm::device_async_resource_ref{r}, std::size_t{1} << 50);
      alloc_free(t, "after", rmm::device_async_resource_ref{r}, 1000);
    });
    add(area, "max_size_t", [make](trace& t) {
      auto r = make();
      alloc_free(t, "max", rmm::device_async_resource_ref{r}, ~std::size_t{0} - 255);
      alloc_free(t, "after", rmm::device_async_resource_ref{r}, 1000);
    });
    for (auto a : alignments) {
      add(area, "align_" + std::to_string(a), [make, a](trace& t) {
        auto r = make();
        alloc_free(t, "a", rmm::device_async_resource_ref{r}, 1000, a);
      });
    }
    add(area, "equality", [make](trace& t) {
      auto r    = make();
      auto copy = r;
      auto other = make();
      t.add("copy==", r == copy);
      t.add("other==", r == other);
      rmm::device_async_resource_ref ra{r}, rc{copy}, ro{other};
      t.add("ref copy==", ra == rc);
      t.add("ref other==", ra == ro);
      t.add("ref self==", ra == rmm::device_async_resource_ref{r});
      static rmm::mr::cuda_memory_resource cm;
      t.add("ref ==cuda", ra == rmm::device_async_resource_ref{cm});
    });
    add(area, "free_other_stream", [make](trace& t) {
      auto r = make();
      rmm::cuda_stream s1, s2;
      rmm::device_async_resource_ref ref{r};
      void* p = nullptr;
      if (!t.call("allocate_s1", [&] {
            p = ref.allocate(cuda::stream_ref{s1}, 3000, 256);
            return true;
          })) {
        return;
      }
      t.call("deallocate_s2", [&] { ref.deallocate(cuda::stream_ref{s2}, p, 3000, 256); });
      s1.synchronize();
      s2.synchronize();
      alloc_free(t, "again_s1", ref, 3000);
      alloc_free(t, "again_default", ref, 3000);
    });
    // The same sequence through adaptors stacked over this resource.
    add(area, "statistics_over", [make](trace& t) {
      statistics_resource_adaptor st{make()};
      std::vector<std::pair<void*, std::size_t>> live;
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, MiB, std::size_t{0}}) {
        try {
          live.emplace_back(st.allocate(default_stream(), n, 256), n);
        } catch (...) {
          t.add("fail" + std::to_string(n), describe_current_exception(false));
        }
      }
      auto b = st.get_bytes_counter();
      auto a = st.get_allocations_counter();
      t.add("bytes", std::vector<long long>{b.value, b.peak, b.total});
      t.add("allocs", std::vector<long long>{a.value, a.peak, a.total});
      for (auto& [p, n] : live) { st.deallocate(default_stream(), p, n, 256); }
      t.add("bytes_end", st.get_bytes_counter().value);
      t.add("allocs_end", st.get_allocations_counter().value);
    });
    add(area, "tracking_over", [make](trace& t) {
      tracking_resource_adaptor tr{make()};
      std::vector<std::pair<void*, std::size_t>> live;
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, MiB, std::size_t{0}}) {
        try {
          live.emplace_back(tr.allocate(default_stream(), n, 256), n);
        } catch (...) {
          t.add("fail" + std::to_string(n), describe_current_exception(false));
        }
      }
      t.add("outstanding", tr.get_outstanding_allocations().size());
      t.add("bytes", tr.get_allocated_bytes());
      for (auto& [p, n] : live) { tr.deallocate(default_stream(), p, n, 256); }
      t.add("outstanding_end", tr.get_outstanding_allocations().size());
      t.add("bytes_end", tr.get_allocated_bytes());
    });
    add(area, "limiting_over", [make](trace& t) {
      limiting_resource_adaptor lim{make(), 2 * MiB};
      std::vector<std::pair<void*, std::size_t>> live;
      for (std::size_t n : {std::size_t{0}, std::size_t{1000}, MiB, MiB, std::size_t{256}}) {
        try {
          live.emplace_back(lim.allocate(default_stream(), n, 256), n);
          t.add("ok" + std::to_string(live.size()), lim.get_allocated_bytes());
        } catch (...) {
          t.add("fail" + std::to_string(n), describe_current_exception(false));
        }
      }
      for (auto& [p, n] : live) { lim.deallocate(default_stream(), p, n, 256); }
      t.add("end", lim.get_allocated_bytes());
    });
    add(area, "pool_over", [make](trace& t) {
      std::optional<pool_memory_resource> pool;
      if (!t.call("construct", [&] {
            pool.emplace(make(), 0, 8 * MiB);
            return true;
          })) {
        return;
      }
      std::vector<std::pair<void*, std::size_t>> live;
      for (std::size_t n : {std::size_t{1000}, 3 * MiB, 3 * MiB, 3 * MiB, std::size_t{0}}) {
        try {
          live.emplace_back(pool->allocate(default_stream(), n, 256), n);
          t.add("ok" + std::to_string(live.size()), pool->pool_size());
        } catch (...) {
          t.add("fail" + std::to_string(n), describe_current_exception(false));
        }
      }
      for (auto& [p, n] : live) { pool->deallocate(default_stream(), p, n, 256); }
      t.add("end", pool->pool_size());
    });
    for (std::uint64_t seed : {11, 12, 13}) {
      add(area, "random_seed" + std::to_string(seed), [make, seed](trace& t) {
        statistics_resource_adaptor st{make()};
        random_sequence(t, rmm::device_async_resource_ref{st}, seed, MiB + 3, 200);
        auto b = st.get_bytes_counter();
        auto a = st.get_allocations_counter();
        t.add("bytes", std::vector<long long>{b.value, b.peak, b.total});
        t.add("allocs", std::vector<long long>{a.value, a.peak, a.total});
      });
    }
    add(area, "free_order", [make](trace& t) {
      // Allocate a few sizes, free in allocation order, allocate again: pointers reused or not
      // is not compared (addresses); only success and alignment.
      auto r = make();
      rmm::device_async_resource_ref ref{r};
      std::vector<std::pair<void*, std::size_t>> v;
      for (std::size_t n : {std::size_t{512}, std::size_t{70000}, std::size_t{2} << 20}) {
        try {
          v.emplace_back(ref.allocate(default_stream(), n, 256), n);
        } catch (...) {
          t.add("fail" + std::to_string(n), describe_current_exception(false));
        }
      }
      t.add("got", v.size());
      for (auto& [p, n] : v) { ref.deallocate(default_stream(), p, n, 256); }
      alloc_free(t, "after", ref, 70000);
    });
    add(area, "stream", [make](trace& t) {
      auto r = make();
      rmm::cuda_stream s;
      rmm::device_async_resource_ref ref{r};
      void* p = nullptr;
      if (!t.call("allocate", [&] {
            p = ref.allocate(cuda::stream_ref{s}, 5000, 256);
            return true;
          })) {
        return;
      }
      t.ptr("p", p);
      t.add("memset", cudaMemsetAsync(p, 1, 5000, s.value()) == cudaSuccess);
      t.call("deallocate", [&] { ref.deallocate(cuda::stream_ref{s}, p, 5000, 256); });
      t.add("sync", cudaStreamSynchronize(s.value()) == cudaSuccess);
    });
    add(area, "many", [make](trace& t) {
      auto r = make();
      rmm::device_async_resource_ref ref{r};
      std::vector<std::pair<void*, std::size_t>> live;
      int fails = 0, unaligned = 0;
      for (int i = 0; i < 64; ++i) {
        std::size_t n = std::size_t{1} << (i % 17);
        try {
          void* p = ref.allocate(default_stream(), n, 256);
          if (reinterpret_cast<std::uintptr_t>(p) % 256 != 0) { ++unaligned; }
          live.emplace_back(p, n);
        } catch (...) {
          ++fails;
        }
      }
      t.add("live", live.size());
      t.add("fails", fails);
      t.add("unaligned", unaligned);
      for (auto it = live.rbegin(); it != live.rend(); ++it) {
        ref.deallocate(default_stream(), it->first, it->second, 256);
      }
      t.add("sync", cudaDeviceSynchronize() == cudaSuccess);
    });
    add(area, "reuse", [make](trace& t) {
      auto r = make();
      rmm::device_async_resource_ref ref{r};
      for (int i = 0; i < 3; ++i) {
        void* p = nullptr;
        if (!t.call("alloc" + std::to_string(i), [&] {
              p = ref.allocate(default_stream(), 12345, 256);
              return true;
            })) {
          return;
        }
        ref.deallocate(default_stream(), p, 12345, 256);
      }
      t.add("sync", cudaDeviceSynchronize() == cudaSuccess);
    });
  }
}

}  // namespace oracle
