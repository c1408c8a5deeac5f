/*
 * rmm-rs: text forms of byte counts and streams for messages.
 */
#pragma once

#include <rmm/detail/export.hpp>

#include <cuda/stream_ref>

#include <cstddef>
#include <sstream>
#include <string>

RMM_NAMESPACE_BEGIN
namespace detail {

/// `value` bytes in the largest binary unit that keeps the number above 1024 or less, as
/// std::to_string prints a double ("1.500000 KiB").
inline std::string format_bytes(std::size_t value)
{
  static constexpr char const* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  auto size         = static_cast<double>(value);
  std::size_t index = 0;
  while (size > 1024 && index + 1 < sizeof(units) / sizeof(units[0])) {
    size /= 1024;
    ++index;
  }
  return std::to_string(size) + ' ' + units[index];
}

/// The stream's handle in hexadecimal.
inline std::string format_stream(cuda::stream_ref stream)
{
  std::ostringstream out;
  out << std::hex << static_cast<void*>(stream.get());
  return out.str();
}

}  // namespace detail
RMM_NAMESPACE_END
