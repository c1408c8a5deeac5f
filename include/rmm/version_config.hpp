/*
 * rmm-rs: the RMM version whose C++ API these headers provide.
 */
#pragma once

#define RMM_VERSION_MAJOR 26
#define RMM_VERSION_MINOR 10
#define RMM_VERSION_PATCH 0

#ifndef RMM_VERSION
#define RMM_VERSION "26.10.0"
#endif

/// Compares (major, minor, patch) triples lexicographically with this version.
#define RMM_DETAIL_VERSION_CMP(maj, min, pat)                                          \
  ((RMM_VERSION_MAJOR != (maj))   ? (RMM_VERSION_MAJOR > (maj) ? 1 : -1)               \
   : (RMM_VERSION_MINOR != (min)) ? (RMM_VERSION_MINOR > (min) ? 1 : -1)               \
   : (RMM_VERSION_PATCH != (pat)) ? (RMM_VERSION_PATCH > (pat) ? 1 : -1)               \
                                  : 0)

#ifndef RMM_VERSION_GT
#define RMM_VERSION_GT(maj, min, pat) (RMM_DETAIL_VERSION_CMP(maj, min, pat) > 0)
#endif

#ifndef RMM_VERSION_LT
#define RMM_VERSION_LT(maj, min, pat) (RMM_DETAIL_VERSION_CMP(maj, min, pat) < 0)
#endif

#ifndef RMM_VERSION_EQ
#define RMM_VERSION_EQ(maj, min, pat) (RMM_DETAIL_VERSION_CMP(maj, min, pat) == 0)
#endif
