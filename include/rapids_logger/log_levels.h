/*
 * rmm-rs: the numeric log levels of rapids-logger (and spdlog), as C macros so that C code and
 * preprocessor tests (RMM_LOG_ACTIVE_LEVEL) can use them. RMM 26.10 exposes them through
 * <rmm/logger_macros.hpp>.
 */
#pragma once

#define RAPIDS_LOGGER_LOG_LEVEL_TRACE    0
#define RAPIDS_LOGGER_LOG_LEVEL_DEBUG    1
#define RAPIDS_LOGGER_LOG_LEVEL_INFO     2
#define RAPIDS_LOGGER_LOG_LEVEL_WARN     3
#define RAPIDS_LOGGER_LOG_LEVEL_ERROR    4
#define RAPIDS_LOGGER_LOG_LEVEL_CRITICAL 5
#define RAPIDS_LOGGER_LOG_LEVEL_OFF      6
