// The C++ oracle harness: one scenario source compiled against RMM 26.10 and against rmm-rs.
// Each scenario records a trace of (label, value) pairs; the runner prints one JSON line per
// scenario. Values are ints, strings, bools, lists, or {"raises": type, "message": text} for an
// exception. Never raw pointers: only facts about them (non-null, 256-aligned).
#pragma once

#include <rmm/error.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace oracle {

/// A JSON value, already serialised.
struct json {
  std::string text;
};

std::string quote(std::string const& s);

inline json j(bool v) { return json{v ? "true" : "false"}; }
inline json j(char const* v) { return json{quote(v)}; }
inline json j(std::string const& v) { return json{quote(v)}; }
inline json j(json const& v) { return v; }
template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
json j(T v)
{
  return json{std::to_string(v)};
}
template <class T>
json j(std::vector<T> const& v)
{
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) { s += ","; }
    s += j(v[i]).text;
  }
  return json{s + "]"};
}
/// A JSON object from (key, value) pairs.
json obj(std::vector<std::pair<std::string, json>> const& kv);

/// Thrown by a scenario that cannot run here (reason recorded, status "skipped").
struct skip {
  std::string reason;
};

/// The exception in flight, as {"raises": type, "message": text}; the message only when `api`.
json describe_current_exception(bool api);

/// Strips the file and line RMM's macros put in a message ("RMM failure at: f.hpp:12: text"
/// becomes "RMM failure at <loc>: text").
std::string strip_location(std::string const& what);

/// The trace of one scenario.
class trace {
 public:
  template <class T>
  void add(std::string const& label, T const& value)
  {
    items_.emplace_back(label, j(value));
  }
  /// Runs f; records its value (or "done" for void) or the exception it throws (type only).
  template <class F>
  bool call(std::string const& label, F&& f, bool api_message = false)
  {
    try {
      if constexpr (std::is_void_v<decltype(f())>) {
        f();
        add(label, "done");
      } else {
        add(label, f());
      }
      return true;
    } catch (...) {
      items_.emplace_back(label, describe_current_exception(api_message));
      return false;
    }
  }
  /// As call, recording the exception's message too (for messages that are API).
  template <class F>
  bool call_msg(std::string const& label, F&& f)
  {
    return call(label, std::forward<F>(f), true);
  }
  /// Records facts about a pointer: non-null and 256-byte aligned.
  void ptr(std::string const& label, void const* p)
  {
    add(label + ".nonnull", p != nullptr);
    add(label + ".aligned256", reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
  }
  std::string serialise() const;

 private:
  std::vector<std::pair<std::string, json>> items_;
};

using scenario_fn = std::function<void(trace&)>;

struct scenario {
  std::string group;  ///< the child process that runs it (one per group)
  std::string name;   ///< "cpp/<area>/<name>"
  scenario_fn fn;
};

/// Every scenario, in registration order.
std::vector<scenario>& registry();

/// Registers a scenario named "cpp/<area>/<name>" in group <area>.
void add(std::string const& area, std::string const& name, scenario_fn fn);

/// The number of CUDA devices (0 when none or on error).
int device_count();

/// Skips unless at least n devices.
void need_devices(int n);

}  // namespace oracle

/// Which side this binary is (set by build.sh).
#ifndef ORACLE_SIDE
#define ORACLE_SIDE "unknown"
#endif
