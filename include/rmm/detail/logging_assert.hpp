/*
 * rmm-rs: RMM_LOGGING_ASSERT(expr): in debug builds (no NDEBUG), logs a failed assertion at
 * critical level to rmm::default_logger(), flushes it and then asserts; nothing in release builds.
 */
#pragma once

#if !defined(NDEBUG)
#include <rmm/error.hpp>
#include <rmm/logger.hpp>

#include <cassert>
#endif

#ifdef NDEBUG
#define RMM_LOGGING_ASSERT(_expr) (void)0
#elif RMM_LOG_ACTIVE_LEVEL < RAPIDS_LOGGER_LOG_LEVEL_OFF
#define RMM_LOGGING_ASSERT(_expr)                                                               \
  do {                                                                                          \
    bool const rmm_assert_ok_ = static_cast<bool>(_expr);                                       \
    if (!rmm_assert_ok_) {                                                                      \
      RMM_LOG_CRITICAL("[" __FILE__ ":" RMM_STRINGIFY(__LINE__) "] Assertion " #_expr " failed."); \
      rmm::default_logger().flush();                                                            \
      assert(rmm_assert_ok_);                                                                   \
    }                                                                                           \
  } while (0)
#else
#define RMM_LOGGING_ASSERT(_expr) assert((_expr))
#endif
