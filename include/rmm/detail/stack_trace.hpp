/*
 * rmm-rs: rmm::detail::stack_trace, a call stack captured on construction and printed later
 * (host-side), as RMM's.
 */
#pragma once

#include <rmm/error.hpp>

// backtrace() and dladdr() are glibc's; elsewhere a stack_trace prints that traces are disabled.
#if (defined(__GNUC__) && !defined(__MINGW32__) && !defined(__MINGW64__))
#define RMM_ENABLE_STACK_TRACES
#endif

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#if defined(RMM_ENABLE_STACK_TRACES)
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#endif

namespace rmm::detail {

/**
 * @brief A call stack captured on construction, printed by `operator<<` one frame a line:
 * `#<i> in <symbol> from <object>`.
 *
 * rmm-rs also builds one from frames already resolved elsewhere (the Rust tracking adaptor
 * captures the stack where an allocation is made): those print as `#<i> in <frame>`.
 */
class stack_trace {
 public:
  /// Captures the calling thread's stack (at most 64 frames).
  stack_trace()
  {
#if defined(RMM_ENABLE_STACK_TRACES)
    constexpr int max_depth = 64;
    stack_ptrs.resize(max_depth);
    auto const depth = ::backtrace(stack_ptrs.data(), max_depth);
    stack_ptrs.resize(depth > 0 ? static_cast<std::size_t>(depth) : 0);
#endif
  }

  /// A stack whose frames, innermost first, were resolved to text already.
  explicit stack_trace(std::vector<std::string> resolved_frames)
    : resolved_{std::move(resolved_frames)}, has_resolved_{true}
  {
  }

  /// Prints the stack, one frame a line.
  friend std::ostream& operator<<(std::ostream& os, stack_trace const& trace)
  {
    if (trace.has_resolved_) {
      for (std::size_t i = 0; i < trace.resolved_.size(); ++i) {
        os << "#" << i << " in " << trace.resolved_[i] << std::endl;
      }
      return os;
    }
#if defined(RMM_ENABLE_STACK_TRACES)
    std::unique_ptr<char*, decltype(&::free)> symbols(
      ::backtrace_symbols(trace.stack_ptrs.data(), static_cast<int>(trace.stack_ptrs.size())),
      &::free);
    RMM_EXPECTS(symbols != nullptr, "Unexpected null stack trace symbols");
    for (std::size_t i = 0; i < trace.stack_ptrs.size(); ++i) {
      os << "#" << i << " in " << describe(trace.stack_ptrs[i], symbols.get()[i]) << std::endl;
    }
#else
    os << "stack traces disabled" << std::endl;
#endif
    return os;
  }

 private:
#if defined(RMM_ENABLE_STACK_TRACES)
  /// `symbol from object` (the symbol demangled when it can be), else backtrace_symbols' text.
  static std::string describe(void* address, char const* fallback)
  {
    Dl_info info{};
    if (::dladdr(address, &info) != 0 && info.dli_sname != nullptr) {
      int status = -1;
      std::unique_ptr<char, decltype(&::free)> demangled(
        abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status), &::free);
      char const* name = status == 0 ? demangled.get() : info.dli_sname;
      return std::string{name} + " from " + (info.dli_fname != nullptr ? info.dli_fname : "?");
    }
    return std::string{fallback != nullptr ? fallback : "?"};
  }

  std::vector<void*> stack_ptrs;
#endif
  std::vector<std::string> resolved_;
  bool has_resolved_{false};
};

}  // namespace rmm::detail
