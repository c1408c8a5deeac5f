/*
 * rmm-rs: the spdlog-style pattern a rapids_logger::logger formats its lines with.
 *
 * Supported flags: %v (message), %l (level name), %L (level letter), %n (logger name),
 * %t (OS thread id), %P (process id), %Y %m %d %H %M %S (local date and time), %e (milliseconds),
 * %f (microseconds), %F (nanoseconds), %% (a percent sign). A flag may carry a width with an
 * alignment, as in spdlog: %6t (right), %-6l (left), %=6l (centred). Any other flag is copied as
 * written.
 */
#pragma once

#include <rapids_logger/log_levels.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>

#include <sys/syscall.h>
#include <unistd.h>

namespace rapids_logger {

namespace detail {

/// spdlog's long level names, indexed by level.
inline std::string_view level_name(int level) noexcept
{
  constexpr std::string_view names[] = {"trace", "debug", "info", "warning", "error", "critical", "off"};
  return (level >= 0 && level <= RAPIDS_LOGGER_LOG_LEVEL_OFF) ? names[level] : "unknown";
}

/// spdlog's one-letter level names.
inline std::string_view level_letter(int level) noexcept
{
  constexpr std::string_view letters[] = {"T", "D", "I", "W", "E", "C", "O"};
  return (level >= 0 && level <= RAPIDS_LOGGER_LOG_LEVEL_OFF) ? letters[level] : "?";
}

/// The calling thread's OS id (what spdlog prints for %t).
inline long os_thread_id() noexcept
{
  thread_local long const id = static_cast<long>(::syscall(SYS_gettid));
  return id;
}

/// `n` as decimal, at least `digits` wide with leading zeros.
inline std::string zero_padded(long long n, int digits)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", digits, n);
  return buf;
}

/// Appends `field` to `out`, padded to `width` with the given alignment ('<', '>' or '=').
inline void append_aligned(std::string& out, std::string_view field, std::size_t width, char align)
{
  std::size_t const pad = field.size() < width ? width - field.size() : 0;
  std::size_t const before = align == '>' ? pad : align == '=' ? pad / 2 : 0;
  out.append(before, ' ');
  out.append(field);
  out.append(pad - before, ' ');
}

/// Formats one line (without its end of line) of `message` at `level` from logger `name`.
inline std::string format_line(std::string_view pattern,
                               std::string_view name,
                               int level,
                               std::string_view message)
{
  using clock    = std::chrono::system_clock;
  auto const now = clock::now();
  auto const since_epoch = now.time_since_epoch();
  auto const ns = std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count() % 1000000000LL;
  std::time_t const secs = clock::to_time_t(now);
  std::tm local{};
  ::localtime_r(&secs, &local);

  std::string out;
  out.reserve(pattern.size() + message.size() + 32);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out.push_back(pattern[i]);
      continue;
    }
    std::size_t const start = i;
    ++i;
    char align = '>';
    if (pattern[i] == '-' || pattern[i] == '=') {
      align = pattern[i] == '-' ? '<' : '=';
      ++i;
    }
    std::size_t width = 0;
    while (i < pattern.size() && pattern[i] >= '0' && pattern[i] <= '9') {
      width = width * 10 + static_cast<std::size_t>(pattern[i] - '0');
      ++i;
    }
    if (i == pattern.size()) {
      out.append(pattern.substr(start));
      break;
    }
    std::string field;
    switch (pattern[i]) {
      case 'v': field = message; break;
      case 'l': field = level_name(level); break;
      case 'L': field = level_letter(level); break;
      case 'n': field = name; break;
      case 't': field = std::to_string(os_thread_id()); break;
      case 'P': field = std::to_string(static_cast<long>(::getpid())); break;
      case 'Y': field = std::to_string(local.tm_year + 1900); break;
      case 'm': field = zero_padded(local.tm_mon + 1, 2); break;
      case 'd': field = zero_padded(local.tm_mday, 2); break;
      case 'H': field = zero_padded(local.tm_hour, 2); break;
      case 'M': field = zero_padded(local.tm_min, 2); break;
      case 'S': field = zero_padded(local.tm_sec, 2); break;
      case 'e': field = zero_padded(ns / 1000000, 3); break;
      case 'f': field = zero_padded(ns / 1000, 6); break;
      case 'F': field = zero_padded(ns, 9); break;
      case '%': field = "%"; break;
      default: field = pattern.substr(start, i + 1 - start); break;
    }
    append_aligned(out, field, width, align);
  }
  return out;
}

}  // namespace detail
}  // namespace rapids_logger
