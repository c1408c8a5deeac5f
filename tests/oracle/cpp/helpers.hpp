// Helpers of the adaptor and pool scenarios: allocate-and-record, counters of statistics and
// tracking adaptors.
#pragma once

#include "common.hpp"

#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

namespace oracle {

using ref_t = rmm::device_async_resource_ref;

/// Allocates through ref; records success (and pointer facts) or the exception; returns the
/// pointer (nullptr on failure).
inline void* try_alloc(trace& t, std::string const& label, ref_t ref, std::size_t n, bool api_msg = false)
{
  void* p = nullptr;
  bool ok = t.call(
    label,
    [&] {
      p = ref.allocate(default_stream(), n, 256);
      return true;
    },
    api_msg);
  if (ok) { t.add(label + ".nonnull", p != nullptr); }
  return p;
}

inline void free_(ref_t ref, void* p, std::size_t n)
{
  if (p != nullptr) { ref.deallocate(default_stream(), p, n, 256); }
}

inline void counters(trace& t, std::string const& label, rmm::mr::statistics_resource_adaptor const& s)
{
  auto b = s.get_bytes_counter();
  auto a = s.get_allocations_counter();
  t.add(label + ".bytes", std::vector<long long>{b.value, b.peak, b.total});
  t.add(label + ".allocs", std::vector<long long>{a.value, a.peak, a.total});
}

template <class P>
void pair_counters(trace& t, std::string const& label, P const& p)
{
  t.add(label + ".bytes", std::vector<long long>{p.first.value, p.first.peak, p.first.total});
  t.add(label + ".allocs", std::vector<long long>{p.second.value, p.second.peak, p.second.total});
}

inline void tracked(trace& t, std::string const& label, rmm::mr::tracking_resource_adaptor const& r)
{
  t.add(label + ".outstanding", r.get_outstanding_allocations().size());
  t.add(label + ".bytes", r.get_allocated_bytes());
  std::size_t sum = 0;
  for (auto const& kv : r.get_outstanding_allocations()) { sum += kv.second.allocation_size; }
  t.add(label + ".sum_sizes", sum);
}

}  // namespace oracle
