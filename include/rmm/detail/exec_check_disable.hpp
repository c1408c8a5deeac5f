/*
 * rmm-rs: silences nvcc's host/device call checks on functions that are only called on the host.
 */
#pragma once

#if defined(__CUDACC__) && !defined(__clang__)
#define RMM_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define RMM_EXEC_CHECK_DISABLE
#endif

/// __host__ __device__ under nvcc, nothing otherwise.
#if defined(__CUDACC__)
#define RMM_HOST_DEVICE __host__ __device__
#else
#define RMM_HOST_DEVICE
#endif
