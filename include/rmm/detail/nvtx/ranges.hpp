/*
 * rmm-rs: NVTX ranges over RMM's functions when RMM_NVTX is defined.
 *
 * With RMM_NVTX and the NVTX3 headers on the include path (<nvtx3/nvtx3.hpp>, shipped with the
 * CUDA toolkit and with RMM's packages), rmm::scoped_range is an NVTX range in the "librmm" domain
 * and RMM_FUNC_RANGE() opens one named after the enclosing function. The PyPI CUDA toolkit this
 * project builds with has no NVTX3 headers: there, with RMM_NVTX, rmm::scoped_range is a
 * documented no-op type taking the same arguments, so code written for either compiles. Without
 * RMM_NVTX, RMM_FUNC_RANGE() expands to nothing, as in RMM.
 */
#pragma once

#include <rmm/detail/export.hpp>

#if defined(RMM_NVTX)
#if __has_include(<nvtx3/nvtx3.hpp>)
#include <nvtx3/nvtx3.hpp>

RMM_NAMESPACE_BEGIN
/// The NVTX domain of RMM's ranges.
struct librmm_domain {
  static constexpr char const* name{"librmm"};  ///< The domain's name
};

/// An NVTX range in the librmm domain, open for the object's lifetime.
using scoped_range = ::nvtx3::scoped_range_in<librmm_domain>;
RMM_NAMESPACE_END

#define RMM_FUNC_RANGE() NVTX3_FUNC_RANGE_IN(rmm::librmm_domain)
#else
RMM_NAMESPACE_BEGIN
/// The NVTX domain of RMM's ranges (no NVTX3 headers here: ranges are not recorded).
struct librmm_domain {
  static constexpr char const* name{"librmm"};  ///< The domain's name
};

/// Without NVTX3 headers: takes what an NVTX scoped range takes and records nothing.
struct scoped_range {
  template <typename... Args>
  explicit scoped_range(Args&&...) noexcept
  {
  }
  scoped_range(scoped_range const&)            = delete;
  scoped_range& operator=(scoped_range const&) = delete;
};
RMM_NAMESPACE_END

#define RMM_FUNC_RANGE()
#endif
#else
#define RMM_FUNC_RANGE()
#endif
