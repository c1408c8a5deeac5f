/*
 * rmm-rs: silences nvcc's host/device call checks on functions that are only called on the host.
 */
#pragma once

#if defined(__CUDACC__) && !defined(__clang__)
#define RMM_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define RMM_EXEC_CHECK_DISABLE
#endif
