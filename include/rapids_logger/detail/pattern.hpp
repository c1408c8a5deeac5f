/*
 * rmm-rs: the spdlog-style pattern a rapids_logger::logger formats its lines with.
 *
 * Supported flags: %v (message), %l (level name), %L (level letter), %n (logger name),
 * %t (OS thread id), %P (process id), %Y %m %d %H %M %S (local date and time, from a time zone
 * asked once: see local_time_at), %e (milliseconds),
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

/// The UTC offset in seconds of the local time `secs` after the epoch, from the time zone the
/// Rust side asked once (src/logger/local_time.rs in librmm): formatting a line then reads no
/// environment, so it cannot race with setenv("TZ", ...) on another thread as localtime_r does.
extern "C" std::int64_t rmm_rs_log_utc_offset(std::int64_t secs) noexcept;

namespace rapids_logger {

namespace detail {

/// Local calendar date and time of day, computed from the cached UTC offset.
struct local_time {
  long long year;
  int month, day, hour, minute, second;
};

/// `secs` after the epoch in local time, with no C library time function (a proleptic Gregorian
/// calendar, Howard Hinnant's civil_from_days).
inline local_time local_time_at(std::int64_t secs) noexcept
{
  std::int64_t const local = secs + rmm_rs_log_utc_offset(secs);
  std::int64_t days        = local / 86400;
  std::int64_t in_day      = local % 86400;
  if (in_day < 0) {
    in_day += 86400;
    --days;
  }
  days += 719468;
  std::int64_t const era = (days >= 0 ? days : days - 146096) / 146097;
  auto const doe         = static_cast<unsigned>(days - era * 146097);
  unsigned const yoe     = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned const doy     = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned const mp      = (5 * doy + 2) / 153;
  unsigned const d       = doy - (153 * mp + 2) / 5 + 1;
  unsigned const m       = mp < 10 ? mp + 3 : mp - 9;
  long long const y      = static_cast<long long>(yoe) + era * 400 + (m <= 2 ? 1 : 0);
  return local_time{y,
                    static_cast<int>(m),
                    static_cast<int>(d),
                    static_cast<int>(in_day / 3600),
                    static_cast<int>(in_day / 60 % 60),
                    static_cast<int>(in_day % 60)};
}

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
  auto const local = local_time_at(static_cast<std::int64_t>(clock::to_time_t(now)));

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
      case 'Y': field = std::to_string(local.year); break;
      case 'm': field = zero_padded(local.month, 2); break;
      case 'd': field = zero_padded(local.day, 2); break;
      case 'H': field = zero_padded(local.hour, 2); break;
      case 'M': field = zero_padded(local.minute, 2); break;
      case 'S': field = zero_padded(local.second, 2); break;
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
