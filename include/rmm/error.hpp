/*
 * rmm-rs: RMM's exception types and error macros.
 *
 * The exception types are plain C++ (the bridge compiled without CUDA uses them too). The macros
 * RMM_CUDA_TRY* name CUDA runtime functions only where they are expanded.
 */
#pragma once

#include <rmm/detail/export.hpp>

#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#endif
#endif

namespace rmm {

/// A precondition was violated (RMM_EXPECTS), or a resource was misused.
struct logic_error : public std::logic_error {
  using std::logic_error::logic_error;
};

/// A CUDA call failed.
struct cuda_error : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An allocation failed.
class bad_alloc : public std::bad_alloc {
 public:
  bad_alloc(const char* msg) : what_{std::string{std::bad_alloc::what()} + ": " + msg} {}
  bad_alloc(std::string const& msg) : bad_alloc{msg.c_str()} {}
  [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

/// An allocation failed because the memory ran out; `what()` carries the sizes.
class out_of_memory : public bad_alloc {
 public:
  out_of_memory(const char* msg) : bad_alloc{std::string{"out_of_memory: "} + msg} {}
  out_of_memory(std::string const& msg) : out_of_memory{msg.c_str()} {}
};

/// An index was outside its range.
class out_of_range : public std::out_of_range {
  using std::out_of_range::out_of_range;
};

/// An argument was invalid.
class invalid_argument : public std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace rmm

#define STRINGIFY_DETAIL(x) #x
#define RMM_STRINGIFY(x)    STRINGIFY_DETAIL(x)

/**
 * @brief RMM_EXPECTS(condition, reason[, exception_type]): throws `exception_type`
 * (default rmm::logic_error) naming file and line when `condition` is false.
 */
#define RMM_EXPECTS(...)                                           \
  GET_RMM_EXPECTS_MACRO(__VA_ARGS__, RMM_EXPECTS_3, RMM_EXPECTS_2) \
  (__VA_ARGS__)
#define GET_RMM_EXPECTS_MACRO(_1, _2, _3, NAME, ...) NAME
#define RMM_EXPECTS_3(_condition, _reason, _exception_type)                                     \
  do {                                                                                          \
    static_assert(std::is_base_of_v<std::exception, _exception_type>);                          \
    (!!(_condition)) ? static_cast<void>(0)                                                     \
                     : throw _exception_type{std::string{"RMM failure at: "} + __FILE__ + ":" + \
                                             RMM_STRINGIFY(__LINE__) + ": " + _reason};         \
  } while (0)
#define RMM_EXPECTS_2(_condition, _reason) RMM_EXPECTS_3(_condition, _reason, rmm::logic_error)

/// RMM_FAIL(reason[, exception_type]): always throws.
#define RMM_FAIL(...)                                     \
  GET_RMM_FAIL_MACRO(__VA_ARGS__, RMM_FAIL_2, RMM_FAIL_1) \
  (__VA_ARGS__)
#define GET_RMM_FAIL_MACRO(_1, _2, NAME, ...) NAME
#define RMM_FAIL_2(_what, _exception_type)                                                       \
  throw _exception_type                                                                          \
  {                                                                                              \
    std::string{"RMM failure at:"} + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + ": " + (_what) \
  }
#define RMM_FAIL_1(_what) RMM_FAIL_2(_what, rmm::logic_error)

/// RMM_CUDA_TRY(call[, exception_type]): throws (default rmm::cuda_error) when `call` fails.
#define RMM_CUDA_TRY(...)                                             \
  GET_RMM_CUDA_TRY_MACRO(__VA_ARGS__, RMM_CUDA_TRY_2, RMM_CUDA_TRY_1) \
  (__VA_ARGS__)
#define GET_RMM_CUDA_TRY_MACRO(_1, _2, NAME, ...) NAME
#define RMM_CUDA_TRY_2(_call, _exception_type)                                               \
  do {                                                                                       \
    cudaError_t const error = (_call);                                                       \
    if (cudaSuccess != error) {                                                              \
      cudaGetLastError();                                                                    \
      throw _exception_type{std::string{"CUDA error at: "} + __FILE__ + ":" +                \
                            RMM_STRINGIFY(__LINE__) + ": " + cudaGetErrorName(error) + " " + \
                            cudaGetErrorString(error)};                                      \
    }                                                                                        \
  } while (0)
#define RMM_CUDA_TRY_1(_call) RMM_CUDA_TRY_2(_call, rmm::cuda_error)

/// RMM_CUDA_TRY_ALLOC(call[, bytes]): rmm::out_of_memory for cudaErrorMemoryAllocation, else
/// rmm::bad_alloc.
#define RMM_CUDA_TRY_ALLOC(...)                                                         \
  GET_RMM_CUDA_TRY_ALLOC_MACRO(__VA_ARGS__, RMM_CUDA_TRY_ALLOC_2, RMM_CUDA_TRY_ALLOC_1) \
  (__VA_ARGS__)
#define GET_RMM_CUDA_TRY_ALLOC_MACRO(_1, _2, NAME, ...) NAME
#define RMM_CUDA_TRY_ALLOC_2(_call, num_bytes)                                          \
  do {                                                                                  \
    cudaError_t const error = (_call);                                                  \
    if (cudaSuccess != error) {                                                         \
      cudaGetLastError();                                                               \
      auto const msg = std::string{"CUDA error (failed to allocate "} +                 \
                       std::to_string(num_bytes) + " bytes) at: " + __FILE__ + ":" +    \
                       RMM_STRINGIFY(__LINE__) + ": " + cudaGetErrorName(error) + " " + \
                       cudaGetErrorString(error);                                       \
      if (cudaErrorMemoryAllocation == error) { throw rmm::out_of_memory{msg}; }        \
      throw rmm::bad_alloc{msg};                                                        \
    }                                                                                   \
  } while (0)
#define RMM_CUDA_TRY_ALLOC_1(_call)                                                                \
  do {                                                                                             \
    cudaError_t const error = (_call);                                                             \
    if (cudaSuccess != error) {                                                                    \
      cudaGetLastError();                                                                          \
      auto const msg = std::string{"CUDA error at: "} + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + \
                       ": " + cudaGetErrorName(error) + " " + cudaGetErrorString(error);           \
      if (cudaErrorMemoryAllocation == error) { throw rmm::out_of_memory{msg}; }                   \
      throw rmm::bad_alloc{msg};                                                                   \
    }                                                                                              \
  } while (0)

/// RMM_ASSERT_CUDA_SUCCESS(call): in debug builds, reports and asserts a failed call; in release
/// builds just runs it. For destructors and other noexcept paths.
#ifdef NDEBUG
#define RMM_ASSERT_CUDA_SUCCESS(_call) \
  do {                                 \
    (void)(_call);                     \
  } while (0)
#else
#include <cassert>
#include <iostream>
#define RMM_ASSERT_CUDA_SUCCESS(_call)                                          \
  do {                                                                          \
    cudaError_t const status__ = (_call);                                       \
    if (status__ != cudaSuccess) {                                              \
      std::cerr << "CUDA Error detected. " << cudaGetErrorName(status__) << " " \
                << cudaGetErrorString(status__) << std::endl;                   \
    }                                                                           \
    assert(status__ == cudaSuccess);                                            \
  } while (0)
#endif

/// RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(call): RMM_ASSERT_CUDA_SUCCESS that also accepts
/// cudaErrorCudartUnloading, which a destructor of a static object gets once the runtime has shut
/// down at process exit (nothing is left to clean up then).
#ifdef NDEBUG
#define RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(_call) \
  do {                                               \
    (void)(_call);                                   \
  } while (0)
#else
#define RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(_call)                                  \
  do {                                                                                \
    cudaError_t const status__ = (_call);                                             \
    if (status__ != cudaSuccess && status__ != cudaErrorCudartUnloading) {            \
      std::cerr << "CUDA Error detected. " << cudaGetErrorName(status__) << " "       \
                << cudaGetErrorString(status__) << std::endl;                         \
    }                                                                                 \
    assert(status__ == cudaSuccess || status__ == cudaErrorCudartUnloading);          \
  } while (0)
#endif
